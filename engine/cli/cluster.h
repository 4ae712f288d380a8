// The multi-node part of `thresher-engine train`: parses --nodes, loads the run secret (never
// from a command-line value) and binds this node's UDP port and TCP channel. The protocol itself
// (the link, the master wired to it) is dist::ClusterNode (dist/masters/cluster_node.h).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/masters.h"
#include "dist/masters/cluster_node.h"
#include "dist/net/bulk_channel.h"
#include "dist/net/udp_transport.h"

namespace thresher::cli {

struct ClusterOptions {
    std::string nodes;        // "H:P,H:P,..." (empty: one node)
    int node_rank = 0;
    std::string secret_file;  // mode 0600; else THRESHER_SECRET
    std::optional<dist::Secret> secret;  // already read (--secret-stdin, see stdin_control.h); wins
    std::string bind;         // --bind ADDR
    std::string network_mask; // --network-mask CIDR
    std::uint64_t run_id = 0; // 0: derived from the run key, so every node agrees without saying
    // --run-nonce, decoded (dist/net/run_key.h): mixed into the run key and id, so runs that
    // reuse a secret are kept apart. Empty: the secret alone, as hand-started runs had it.
    std::vector<std::uint8_t> run_nonce;
    double join_wait_s = 30;  // --join-wait: how long the controller waits for every node at the start
    std::string topology = "auto";  // --topology (dist/masters/topology.h)
    int fanout = 2;                 // --fanout
    dist::LinkSpec link;            // --link-rate/--link-delay/--link-loss: the emulated egress link
};

std::vector<dist::UdpEndpoint> parse_nodes(const std::string& nodes);

// Owns what a multi-node run needs beyond the master, for the length of the run.
class ClusterSession {
public:
    // `bulk`: also open the TCP bulk channel (training's averaging rounds); predict needs only UDP.
    ClusterSession(const ClusterOptions&, train::ClusterShape& shape, events::EventWriter& events, bool bulk = true);
    // A factory whose masters talk to the other nodes.
    train::MasterFactory factory(const StrategyOptions&);
    // The transport to the other nodes, or null for a single node (commands other than train).
    dist::Transport* transport() { return transport_.get(); }
    const train::ClusterShape& shape() const { return shape_; }

private:
    train::ClusterShape shape_;
    events::EventWriter& events_;
    std::chrono::milliseconds join_wait_{30000};
    dist::Topology topology_;
    std::unique_ptr<dist::Transport> transport_;  // until the node takes it
    std::unique_ptr<dist::BulkChannel> bulk_;     // TCP on the same port number, ditto
    std::unique_ptr<dist::ClusterNode> node_;
};

}  // namespace thresher::cli
