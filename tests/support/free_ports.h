// Loopback ports for test nodes: a node binds its port over UDP (datagrams) and TCP (its bulk
// channel), so a port is handed out only when both are free right now.
#pragma once

#include <QList>

namespace test_support {

// `n` distinct ports free over UDP and TCP on 127.0.0.1 (all held while picking, then released).
QList<int> free_node_ports(int n);
inline int free_node_port() { return free_node_ports(1).first(); }

}  // namespace test_support
