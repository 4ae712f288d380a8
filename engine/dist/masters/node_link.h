// NodeLink: this node's side of a multi-node run, on a Transport (UDP between processes, or
// in memory for ranks-as-threads tests). A receive thread routes what arrives:
//   Update         another node's gradient-sharing message -> every local replica
//   Average        (node 0, the controller) a node's parameter sums for an averaging round
//   AverageResult  the cluster's sums for a round, sent by node 0
//   Control        "done" (a node's workers stopped), "joined" (a node joined mid-run), "stop"
//                  (to a restarted controller)
//   ParamsRequest / Params   joining, over the controller's TCP channel (join_protocol.h)
//
// Starting and joining. Every node asks the controller to join (join(), before its workers
// start). The controller waits up to `join_wait` for every node's request, then answers them
// all "start": the nodes that came begin together from the run's initial parameters; the others
// are not waited for. A node that asks later -- one that started late, or one restarted with the
// same command line after it died -- is answered between two steps of the controller's local
// worker 0 (after_step) with a snapshot: that replica's parameters and updater state and the
// position (epoch, iteration, batches of the epoch done). It continues from there and tells the
// other nodes "joined"; from then on they wait for it again. The controller itself cannot come
// back: a restarted node 0 is told to stop (its state and the run's position are gone), and the
// others go on without it. Joins are refused once the controller has begun to drain, and with
// parameter averaging once training has begun (its rounds would need the joiner in step).
//
// Nodes and their processes. A peer's process is known by its transport incarnation: when a
// node is restarted, its messages come with a newer one, and everything counted for the old
// process is forgotten. A node is a member (waited for), joining (a new process that has not
// joined yet: sent updates, not waited for) or gone (lost, or absent at the start).
//
// Routing (topology.h): a gradient-sharing message goes to the node's neighbours -- every other
// node in a mesh; parent and children in a relay star or a tree, where each node passes what it
// receives on to its other neighbours. A message carries its origin, the origin's process
// (incarnation) and the origin's sequence number 1, 2, 3, ...; a copy that arrives twice (two
// nodes' views of who is gone differed for a moment) is dropped by that number.
//
// Draining a gradient-sharing run: every node sends each other node "done" straight, with the
// number of messages it originated and the first of them that was meant for the receiver; a node
// has drained when every member's "done" has arrived and so has every numbered message from that
// member from the first one up to the count, however they were reordered or relayed. A member the
// transport gives up on is reported in a warning and no longer waited for; one that (re)joins after
// our "done" gets a "done" of its own. A node whose run was stopped (SIGTERM, stdin closed) waits
// kLeaveGrace for the others' "done" -- they are stopping too when a launcher stops the run, and
// then all drain and reconcile as usual -- and otherwise leaves: it tells them not to wait for it
// and skips the final reconcile. Messages that a relay took with it when it died are given
// up on (warned; the final reconcile evens the replicas out): while training, once later messages
// of their origin have stood beside the hole for LinkDeadlines::hole (10 s), so the ids past it are
// not kept for the rest of the run; in the drain, after kDrainStall without news from the origin.
//
// Liveness from progress: a peer is declared gone when the transport has given up on it (our
// datagrams to it unacknowledged for its give-up time) AND nothing of it has moved for
// LinkDeadlines::silence on any channel: no datagram of it arrived, no TCP byte came from it and
// none of our TCP writes to it went out. A bulk transfer that fills a slow link holds heartbeats
// and acknowledgements back, but is itself progress. The controller tells a node it declared gone
// (kGone); that node's run then fails with the reason, instead of training on alone.
//
// Parts. The link coordinates; the state lives in parts with their own locks (README.md in this
// folder, "The node link's parts"): Membership (who is in, which process counts), UpdateLedger
// (what each origin's messages and "done" told us), JoinDesk (joining), EvaluationGather,
// RoundBook (averaging rounds), and LinkSignal, which every wait polls with. None calls another.
//
// Rejoining, for a user: restart the node's engine with the same command line while the run
// goes on (and node 0 is alive). The final reconcile (an averaging round among the members)
// includes it, so every replica ends equal.
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

#include "core/clock.h"
#include "core/guarded.h"
#include "dist/masters/evaluation_gather.h"
#include "dist/masters/gradient_sharing.h"
#include "dist/masters/join_desk.h"
#include "dist/masters/join_protocol.h"
#include "dist/masters/link_signal.h"
#include "dist/masters/membership.h"
#include "dist/masters/parameter_averaging.h"
#include "dist/masters/round_book.h"
#include "dist/masters/update_ledger.h"
#include "dist/masters/topology.h"
#include "dist/net/stream.h"
#include "dist/net/datagram.h"
#include "dist/net/transport.h"
#include "events/event_writer.h"

namespace thresher::dist {

// How long the link waits in each exchange before it resends or fails (see node_link_rounds.cpp).
struct LinkDeadlines {
    std::chrono::milliseconds ack_wait{10000};     // sums sent, no acknowledgement: send them again
    std::chrono::milliseconds result_ask{10000};   // acknowledged, no result: ask for it again
    std::chrono::milliseconds round{600000};       // a round that does not finish: fail, naming the node
    std::chrono::milliseconds gather{600000};      // an evaluation part that does not come: merge without it
    std::chrono::milliseconds join_resend{10000};  // a join request unanswered: send it again
    // A hole in an origin's message numbers that later messages of it have stood beside this long:
    // its messages went with a relay that died (a live path delivers a reordered or resent one
    // within seconds). Given up, so the ids past it are not kept for the rest of the run and the
    // drain does not wait for them (node_link_relay.cpp).
    std::chrono::milliseconds hole{10000};
    // Liveness from progress: a peer the transport gave up on (its datagrams unacknowledged for
    // its give-up time) is still alive while bytes of it arrived on any channel, or our bulk
    // writes to it moved, within this long. A busy link delays heartbeats and acknowledgements,
    // not the transfer that keeps it busy; a dead process moves nothing.
    std::chrono::milliseconds silence{10000};
};

class NodeLink {
public:
    // `bulk` (optional) carries the averaging rounds over TCP; without it they go over `transport`.
    // `clock`: every deadline and wait of the link (a test passes a VirtualClock, with the
    // in-memory twins of both channels on the same clock).
    NodeLink(std::unique_ptr<Transport>, const train::ClusterShape&, std::size_t param_count,
             events::EventWriter* events = nullptr, std::unique_ptr<Stream> bulk = nullptr,
             Clock& clock = real_clock());

    // Joining (see above). `mid_run`: whether nodes may join once training has begun (gradient
    // sharing); `wait`: how long the controller waits for every node at the start.
    void set_join_policy(bool mid_run, std::chrono::milliseconds wait);
    void set_deadlines(const LinkDeadlines&);  // before start()
    // Before the workers start: nullopt to start with everyone, or the cluster's current state.
    // Throws thresher::Error when the controller refuses or cannot be reached. Returns nullopt
    // at once when `stop` becomes true (the run is being stopped).
    std::optional<train::JoinState> join(const std::atomic<bool>* stop = nullptr);
    // On local worker 0 after each step: the controller answers waiting joiners from `net`.
    // Throws when this node must stop (a restarted controller).
    void after_step(const nn::Network& net, const train::RunPosition& position);
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
    // After reconcile(): {"reconcile_gap": the largest |θ − average| over this node's replicas
    // before the reconcile, "reconcile_gap_at": where (when not 0)}; empty before, or when the
    // reconcile did not happen. For the run_finished event.
    std::optional<events::ReconcileReport> reconcile_report() const;

    // Parameter averaging: this node's sums in, the cluster's sums out (via node 0).
    ParameterAveraging::Reducer reducer();

    // Distributed evaluation: the other nodes send their shard's result for `epoch` to node 0,
    // which gets every node's part back (its own first); nullopt on the other nodes.
    std::optional<std::vector<nlohmann::json>> gather_evaluation(int epoch, const nlohmann::json& local);

    // How messages travel (before start(); mesh unless set).
    void set_topology(const Topology&);

    // This node's training ended well: when the link goes, it tells the others its process ends
    // (kFinished), so they drop it without a "stopped answering" warning once it falls silent.
    void finished() { finished_ = true; }

    events::Traffic traffic() const;
    Transport& transport() { return *transport_; }
    std::uint64_t rejected_updates() const { return rejected_; }

private:
    void receive_loop();
    void bulk_loop();
    void send_large(int dest, MessageType type, const std::vector<std::uint8_t>& payload);
    // `counted`: it came through the transport, so it has an id in the sender's sequence.
    void handle(Message&& m, bool counted);
    void handle_control(const Message& m);
    void handle_join_request(const Message& m);
    void warn(const std::string& message);
    std::uint64_t own_incarnation() const;
    void reply(int node, const JoinReply& r);
    // Notes the process `incarnation` of `node` (membership.h) and acts on what it means: a new
    // process's record starts afresh, it is told where our numbers start and given our "done"
    // when that went out already; a restarted controller is told to stop. False when messages of
    // that process are to be ignored.
    bool observe(int node, std::uint64_t incarnation);
    void joined(int node, int epoch, long iteration, bool rejoin, bool served_here);
    std::vector<std::uint8_t> done_payload(int node) const;
    void handle_update(const Message& m);
    // After a message of `origin` was delivered: a hole in its numbers that later messages have
    // stood beside for deadlines_.hole is given up, with a warning.
    void give_up_old_hole(int origin);
    // Gradient-sharing messages go between members and joining processes along topology_;
    // `rounds`: the tree of averaging rounds (a star on node 0 unless topology_.tree_rounds),
    // among members only.
    Routes routes(bool rounds) const;
    // True once the transport gave up on `node` and nothing of it has moved on any channel for
    // deadlines_.silence; remembered (and warned about) once.
    bool peer_lost(int node);
    // Whether bytes of `node` arrived (datagrams, bulk) or our bulk writes to it moved within
    // deadlines_.silence.
    bool heard_lately(int node) const;
    // While waiting on `node`, keep a heartbeat outstanding to it (one per second): the transport
    // notices a dead peer only through messages it cannot deliver.
    void poke(int node);
    void reduce(std::vector<double>& params, std::vector<double>& state, int& workers);
    // Sends results of finished rounds asked for again (kResultAsk); on the bulk thread when there
    // is one, so a large write never holds up the datagram receive loop.
    void serve_resends();
    void send_control(int node, std::uint8_t kind, std::uint64_t round);  // a kind whose one field is a round
    // Why this node cannot go on (the controller declared it gone, or told it to stop); set once.
    void set_fatal(const std::string& why, bool only_if_unset = true);
    void throw_if_fatal() const;
    bool left() const;

    // Fixed at construction, or set before start() and read-only once the threads run.
    Clock* clock_;
    std::unique_ptr<Transport> transport_;
    train::ClusterShape cluster_;
    std::size_t n_;
    events::EventWriter* events_;
    std::unique_ptr<Stream> bulk_;
    LinkDeadlines deadlines_;
    Topology topology_;

    // The parts, each with its own lock (engine/dist/README.md, "NodeLink's parts"). None calls
    // another; the link calls them one at a time, so no lock is ever taken inside another but the
    // delivery lock around the ledger's claim and the membership hook into the master.
    LinkSignal signal_;  // every wait below: something changed
    Membership membership_;
    UpdateLedger ledger_;
    JoinDesk desk_;
    EvaluationGather evaluations_;
    RoundBook rounds_;

    // Delivery into gradient sharing: a claim in the ledger and the delivery happen under this
    // lock, and the drain ends deliveries under it, so nothing is on its way into a master that
    // may be destroyed once drain_remote() has returned.
    Mutex delivery_mutex_;
    std::atomic<GradientSharing*> sharing_{nullptr};  // set by attach(), before start()
    std::atomic<bool> delivering_{true};               // written under delivery_mutex_

    // The link's own few facts, under its own lock.
    mutable Mutex mutex_;
    std::string fatal_ THRESHER_GUARDED_BY(mutex_);  // why this node cannot go on
    bool left_ THRESHER_GUARDED_BY(mutex_) = false;  // stopped while others trained on: left without the final reconcile
    const std::atomic<bool>* stop_requested_ THRESHER_GUARDED_BY(mutex_) = nullptr;  // the run's stop flag (from join())
    std::optional<events::ReconcileReport> reconcile_report_ THRESHER_GUARDED_BY(mutex_);

    std::atomic<std::uint64_t> updates_sent_{0};  // our own message numbers
    std::atomic<bool> done_sent_{false};          // our "done" went out (a later process gets its own)
    std::atomic<std::uint64_t> round_{0};         // the next averaging round
    std::atomic<std::uint64_t> rejected_{0};
    std::atomic<std::uint64_t> relayed_{0};  // messages passed on to a neighbour
    std::atomic<bool> stop_{false};
    std::atomic<bool> finished_{false};
    std::thread receiver_, bulk_receiver_;
};

}  // namespace thresher::dist
