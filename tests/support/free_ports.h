// Loopback ports for test nodes: a node binds its port over UDP (datagrams) and TCP (its bulk
// channel), so a port is handed out only when both are free right now.
//
// Ports come from below the kernel's ephemeral range (net.ipv4.ip_local_port_range): a port the
// kernel may give any outgoing connection (an SSH session, an engine's connection to a peer) can
// be taken between the check here and the node's bind, and then the node fails with "Address
// already in use". Each process walks its own part of the range from a pid-dependent start and
// never hands a port out twice, so suites running side by side, and a test after one whose
// engines are still exiting, get different ports.
#pragma once

#include <QList>

namespace test_support {

// The first of `count` consecutive ports, each free over UDP and TCP on 127.0.0.1; -1 if none.
int free_port_block(int count);

// `n` distinct ports free over UDP and TCP on 127.0.0.1 (consecutive ones).
QList<int> free_node_ports(int n);
inline int free_node_port() { return free_node_ports(1).first(); }

}  // namespace test_support
