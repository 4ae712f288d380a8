// NodeLink: this node's side of a multi-node run, on a Transport (UDP between processes, or
// in memory for ranks-as-threads tests). A receive thread routes what arrives:
//   Update         another node's gradient-sharing message -> every local replica
//   Average        (node 0, the controller) a node's parameter sums for an averaging round
//   AverageResult  the cluster's sums for a round, sent by node 0
//   Control        "done": a node's workers stopped, with how many updates it sent
// Draining a gradient-sharing run: every node announces "done, I sent k messages"; a node has
// drained when each peer said done and all k of its messages have arrived. The transport
// delivers exactly once, so counting is enough; a peer the transport gives up on is reported
// in a warning and no longer waited for.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dist/masters/gradient_sharing.h"
#include "dist/masters/parameter_averaging.h"
#include "dist/net/bulk_channel.h"
#include "dist/net/transport.h"
#include "events/event_writer.h"

namespace thresher::dist {

class NodeLink {
public:
    // `bulk` (optional) carries the averaging rounds over TCP; without it they go over `transport`.
    NodeLink(std::unique_ptr<Transport>, const train::ClusterShape&, std::size_t param_count,
             events::EventWriter* events = nullptr, std::unique_ptr<BulkChannel> bulk = nullptr);
    ~NodeLink();
    NodeLink(const NodeLink&) = delete;
    NodeLink& operator=(const NodeLink&) = delete;

    // Starts the receive thread. Call once the master is wired up (attach, reducer): messages
    // from faster peers may already be waiting and must not be taken before there is a taker.
    void start();

    // Gradient sharing: where local messages go, and the node-level drain.
    GradientSharing::Outbox outbox();
    void attach(GradientSharing&);
    void drain_remote();  // blocks until every peer's messages have arrived (or it is gone)
    // One averaging round of the local replicas among all surviving nodes (see
    // GradientSharing::set_reconcile); warns instead when the controller itself is gone.
    void reconcile(const std::vector<nn::Network*>& replicas);

    // Parameter averaging: this node's sums in, the cluster's sums out (via node 0).
    ParameterAveraging::Reducer reducer();

    // Distributed evaluation: the other nodes send their shard's result for `epoch` to node 0,
    // which gets every node's part back (its own first); nullopt on the other nodes.
    std::optional<std::vector<nlohmann::json>> gather_evaluation(int epoch, const nlohmann::json& local);

    nlohmann::json traffic() const;
    Transport& transport() { return *transport_; }
    std::uint64_t rejected_updates() const { return rejected_; }

private:
    void receive_loop();
    void bulk_loop();
    void send_large(int dest, MessageType type, const std::vector<std::uint8_t>& payload);
    void handle(Message&& m);
    void warn(const std::string& message);
    // True once the transport gave up on `node`; remembered (and warned about) once.
    bool peer_lost(int node);
    // While waiting on `node`, keep a heartbeat outstanding to it (one per second): the transport
    // notices a dead peer only through messages it cannot deliver.
    void poke(int node);
    void reduce(std::vector<double>& params, std::vector<double>& state, int& workers);

    std::unique_ptr<Transport> transport_;
    train::ClusterShape cluster_;
    std::size_t n_;
    events::EventWriter* events_;
    GradientSharing* sharing_ = nullptr;

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::uint64_t> updates_received_;  // per node
    std::vector<std::int64_t> updates_announced_;  // per node: -1 until its "done"
    std::uint64_t updates_sent_ = 0;
    std::map<std::uint64_t, std::vector<Message>> averages_;      // round -> node sums (node 0)
    std::map<std::uint64_t, Message> average_results_;            // round -> cluster sums
    std::map<int, std::vector<nlohmann::json>> evaluations_;      // epoch -> other nodes' parts
    std::uint64_t round_ = 0;
    std::vector<std::chrono::steady_clock::time_point> last_poke_;
    std::vector<bool> lost_;  // nodes the run goes on without
    std::atomic<std::uint64_t> rejected_{0};
    std::atomic<bool> stop_{false};
    std::unique_ptr<BulkChannel> bulk_;
    std::thread receiver_, bulk_receiver_;
};

}  // namespace thresher::dist
