// ClusterNode: one node of a multi-node run, wired up -- its NodeLink on a transport (UDP between
// processes, MemoryTransport for ranks as threads) and the training master that talks through it.
// Everything of the protocol past the command line lives here, so that a test runs whole nodes
// (join, rounds, drain, relays, reconcile, evaluation merge) in one process over the in-memory
// transport with the same code the engine runs; engine/cli only parses options, loads the secret
// and binds the sockets (cli/cluster.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "dist/masters/gradient_sharing.h"
#include "dist/masters/node_link.h"
#include "dist/masters/parameter_averaging.h"
#include "dist/masters/topology.h"
#include "train/trainer.h"

namespace thresher::dist {

struct ClusterNodeOptions {
    std::string strategy = "gradient-sharing";  // or "parameter-averaging"
    GradientSharingOptions sharing;
    ParameterAveragingOptions averaging;
    std::chrono::milliseconds join_wait{30000};  // how long the controller waits for every node at the start
    Topology topology;
    LinkDeadlines deadlines;
    // Every deadline and wait of the link and the masters (a VirtualClock in protocol tests, with
    // the channels' twins and run_training on the same clock).
    Clock* clock = &real_clock();
};

class ClusterNode {
public:
    // `bulk` (optional): the TCP channel for averaging rounds and joins; without it all goes over
    // `transport`. Throws ConfigError for a strategy other than the two multi-node ones.
    ClusterNode(std::unique_ptr<Transport> transport, std::unique_ptr<Stream> bulk, const train::ClusterShape&,
                events::EventWriter* events, ClusterNodeOptions options);
    // The factory run_training calls once the model is known: it makes the link and the master,
    // wires them together and starts the link. Valid while this ClusterNode lives; call once.
    train::MasterFactory factory();
    // Null until the factory has run.
    NodeLink* link() { return link_.get(); }
    const train::ClusterShape& shape() const { return shape_; }

private:
    train::ClusterShape shape_;
    events::EventWriter* events_;
    ClusterNodeOptions options_;
    std::unique_ptr<Transport> transport_;  // until the link takes it
    std::unique_ptr<Stream> bulk_;     // ditto
    std::unique_ptr<NodeLink> link_;
};

}  // namespace thresher::dist
