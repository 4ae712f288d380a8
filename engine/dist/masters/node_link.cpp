// NodeLink, part 1: the receive loop, peers and their processes, gradient-sharing messages (routing,
// relaying, draining) and traffic. Joining is in node_link_join.cpp, rounds in node_link_rounds.cpp.
#include "dist/masters/node_link.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "dist/masters/node_link_control.h"
#include "dist/masters/payload_io.h"

namespace thresher::dist {

namespace {

using namespace node_link_control;

// How long a stopped node waits for the others' "done" before it leaves without them.
constexpr auto kLeaveGrace = std::chrono::milliseconds(500);
// How long a drained member's missing messages are waited for once nothing more comes from it:
// past this they were lost with a relay that died (a live path delivers within seconds).
constexpr auto kDrainStall = std::chrono::seconds(10);

using payload_io::get;
using payload_io::put;

}  // namespace

NodeLink::NodeLink(std::unique_ptr<Transport> transport, const train::ClusterShape& cluster, std::size_t param_count,
                   events::EventWriter* events, std::unique_ptr<BulkChannel> bulk)
    : transport_(std::move(transport)), cluster_(cluster), n_(param_count), events_(events),
      peers_(static_cast<std::size_t>(cluster.nodes)), bulk_(std::move(bulk)) {
    if (bulk_) bulk_->set_param_count(param_count);  // bounds every payload before it is read
}

void NodeLink::set_join_policy(bool mid_run, std::chrono::milliseconds wait) {
    std::lock_guard lock(mutex_);
    join_mid_run_ = mid_run;
    join_wait_ = wait;
}

void NodeLink::set_deadlines(const LinkDeadlines& d) {
    std::lock_guard lock(mutex_);
    deadlines_ = d;
}

void NodeLink::send_control(int node, std::uint8_t kind, std::uint64_t value) {
    std::vector<std::uint8_t> payload;
    put(payload, kind);
    put(payload, value);
    transport_->send(node, MessageType::Control, payload);
}

void NodeLink::serve_resends() {
    std::vector<std::pair<int, std::vector<std::uint8_t>>> out;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [node, round] : resends_)
            if (auto it = finished_rounds_.find(round); it != finished_rounds_.end()) out.emplace_back(node, it->second);
        resends_.clear();
    }
    for (const auto& [node, result] : out) {
        try {
            send_large(node, MessageType::AverageResult, result);
        } catch (const Error& e) {
            warn(std::string("sending an averaging result again: ") + e.what());
        }
    }
}

void NodeLink::start() {
    if (!receiver_.joinable()) receiver_ = std::thread([this] { receive_loop(); });
    if (bulk_ && !bulk_receiver_.joinable()) bulk_receiver_ = std::thread([this] { bulk_loop(); });
}

void NodeLink::bulk_loop() {
    while (!stop_) {
        auto m = bulk_->receive(std::chrono::milliseconds(50));
        if (m) handle(std::move(*m), false);
        serve_resends();
    }
}

void NodeLink::send_large(int dest, MessageType type, const std::vector<std::uint8_t>& payload) {
    if (bulk_)
        bulk_->send(dest, type, payload);
    else
        transport_->send(dest, type, payload);
}

NodeLink::~NodeLink() {
    stop_ = true;
    changed_.notify_all();
    if (receiver_.joinable()) receiver_.join();
    if (bulk_receiver_.joinable()) bulk_receiver_.join();
    // Give the last acknowledgements a moment, so peers do not retransmit into a closed port.
    transport_->flush(std::chrono::milliseconds(2000));
}

void NodeLink::warn(const std::string& message) {
    if (events_) events_->warning(message);
}

std::uint64_t NodeLink::own_incarnation() const {
    const std::uint64_t i = transport_->incarnation();
    return i != 0 ? i : 1;  // a transport without incarnations (in memory) never restarts
}

void NodeLink::set_state(int node, PeerState state) {
    peers_[static_cast<std::size_t>(node)].state = state;
    // Gradient sharing's staleness bound waits only for members' messages. Not once the master's
    // drain is over: it may be gone by then.
    if (delivering_ && sharing_) sharing_->set_node_waited(node, state == PeerState::Member);
}

bool NodeLink::peer_lost(int node) {
    Peer& p = peers_[static_cast<std::size_t>(node)];
    if (p.state == PeerState::Gone) return true;
    for (int q : transport_->unreachable_peers())
        if (q == node) {
            const bool joining = p.state == PeerState::Joining;
            set_state(node, PeerState::Gone);
            warn("node " + std::to_string(node) + " stopped answering" + (joining ? " before it joined" : "") +
                 "; the run goes on without it" +
                 (node != 0 ? " (started again with the same command line, it rejoins)" : ""));
            changed_.notify_all();
            return true;
        }
    return false;
}

void NodeLink::poke(int node) {
    auto& last = peers_[static_cast<std::size_t>(node)].last_poke;
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::seconds(1)) return;
    last = now;
    transport_->send(node, MessageType::Heartbeat, {});
}

std::vector<std::uint8_t> NodeLink::done_payload(int node) const {
    std::vector<std::uint8_t> done;
    put(done, kDone);
    put(done, updates_sent_);
    put(done, peers_[static_cast<std::size_t>(node)].first_seq);
    // The controller must not wait for evaluation parts a node that has stopped will not send.
    put(done, static_cast<std::int32_t>(evaluated_));
    return done;
}

void NodeLink::set_topology(const Topology& topology) {
    std::lock_guard lock(mutex_);
    topology_ = topology;
}

Routes NodeLink::routes(bool rounds) const {
    std::vector<bool> live(static_cast<std::size_t>(cluster_.nodes), false);
    for (int node = 0; node < cluster_.nodes; ++node) {
        const PeerState state = peers_[static_cast<std::size_t>(node)].state;
        live[static_cast<std::size_t>(node)] = node == cluster_.node_rank ||
                                               (rounds ? state == PeerState::Member : state != PeerState::Gone);
    }
    if (rounds)
        return Routes(Topology{topology_.tree_rounds ? TopologyKind::Tree : TopologyKind::Relay, topology_.fanout, true},
                      live);
    return Routes(topology_, live);
}

bool NodeLink::observe(int node, std::uint64_t incarnation) {
    Peer& p = peers_[static_cast<std::size_t>(node)];
    if (node == 0 && controller_replaced_) return false;
    if (incarnation == 0 || incarnation == p.incarnation) return true;
    if (incarnation < p.incarnation) return false;  // its predecessor's, still queued behind
    const bool restarted = p.incarnation != 0;
    p.incarnation = incarnation;
    p.updates = IdWindow{};
    p.done = false;
    p.done_count = 0;
    p.given_up = false;
    p.first_seq = updates_sent_ + 1;  // a new process gets only what we send from now on
    changed_.notify_all();
    if (restarted && node == 0) {
        // The run's parameters and position lived in the process that died, and a new node 0
        // would start the run over and feed that into ours: ignore it, and tell it to stop.
        controller_replaced_ = true;
        set_state(node, PeerState::Gone);
        warn("the controller (node 0) was restarted; a controller cannot rejoin a running run (the run's "
             "state was in the process that died): the run goes on without it, and the new node 0 is told to stop");
        const std::string reason = "node " + std::to_string(cluster_.node_rank) +
                                   " reports the run was already going on when this node 0 started: the controller "
                                   "cannot rejoin a running run; start the whole run again";
        std::vector<std::uint8_t> stop;
        put(stop, kStop);
        stop.insert(stop.end(), reason.begin(), reason.end());
        transport_->send(0, MessageType::Control, stop);
        return false;
    }
    if (restarted) {
        warn("node " + std::to_string(node) + " was restarted (its earlier process is gone); it rejoins once the "
             "controller (node 0) has sent it the current parameters");
        set_state(node, PeerState::Joining);
    } else if (p.state == PeerState::Gone) {
        set_state(node, PeerState::Joining);  // absent at the start, here now
    }
    // A process that came after our "done" needs one of its own, or it would wait for it.
    if (done_sent_ && p.state != PeerState::Gone) transport_->send(node, MessageType::Control, done_payload(node));
    return true;
}

void NodeLink::receive_loop() {
    auto last_look = std::chrono::steady_clock::now();
    while (!stop_) {
        auto m = transport_->receive(std::chrono::milliseconds(50));
        if (m) handle(std::move(*m), true);
        if (!bulk_) serve_resends();
        // The transport hears of a restarted peer (its hellos) before any message from it: look
        // now and then, so that a restarted controller is told to stop even if it never sends.
        const auto now = std::chrono::steady_clock::now();
        if (now - last_look < std::chrono::milliseconds(50)) continue;
        last_look = now;
        std::lock_guard lock(mutex_);
        for (int node = 0; node < cluster_.nodes; ++node)
            if (node != cluster_.node_rank) observe(node, transport_->peer_incarnation(node));
    }
}

void NodeLink::handle(Message&& m, bool counted) {
    if (m.sender < 0 || m.sender >= cluster_.nodes || m.sender == cluster_.node_rank) return;
    const int sender = m.sender;
    if (counted) {
        std::lock_guard lock(mutex_);
        if (!observe(sender, m.incarnation)) return;
    }
    switch (m.type) {
        case MessageType::Update: handle_update(m); break;
        case MessageType::Control: handle_control(m); break;
        case MessageType::Average: {
            std::uint64_t round = 0;
            std::span<const std::uint8_t> in(m.payload);
            if (!get(in, round)) break;
            std::vector<std::uint8_t> late;
            {
                std::lock_guard lock(mutex_);
                if (auto it = finished_rounds_.find(round); it != finished_rounds_.end())
                    late = it->second;  // tree: its parent went away mid-round and it came to us
                else
                    averages_[round].insert_or_assign(sender, std::move(m));  // a restarted node's replaces its predecessor's
            }
            // Acknowledged over the datagram transport: a sender that hears nothing sends again
            // (its frame may have died with a reset connection).
            send_control(sender, kRoundAck, round);
            if (!late.empty()) {
                try {
                    send_large(sender, MessageType::AverageResult, late);
                } catch (const Error& e) {
                    warn("averaging round " + std::to_string(round) + ": node " + std::to_string(sender) + ": " + e.what());
                }
            }
            break;
        }
        case MessageType::AverageResult: {
            std::uint64_t round = 0;
            std::span<const std::uint8_t> in(m.payload);
            if (!get(in, round)) break;
            std::lock_guard lock(mutex_);
            average_results_.emplace(round, std::move(m));
            break;
        }
        case MessageType::Evaluation: {
            std::span<const std::uint8_t> in(m.payload);
            std::int32_t epoch = 0;
            if (!get(in, epoch)) break;
            try {
                auto part = nlohmann::json::parse(in.begin(), in.end());
                if (!part.is_object()) throw Error("not an object");
                std::lock_guard lock(mutex_);
                evaluations_[epoch].insert_or_assign(sender, std::move(part));
            } catch (const std::exception& e) {
                warn("evaluation from node " + std::to_string(sender) + " rejected: " + e.what());
            }
            break;
        }
        case MessageType::ParamsRequest: handle_join_request(m); break;
        case MessageType::Params: {
            if (cluster_.node_rank == 0 || sender != 0) break;
            auto reply = parse_join_reply(m.payload, cluster_.nodes, n_);
            if (!reply) {
                ++rejected_;
                warn("a malformed answer from the controller to this node's join request was ignored");
                break;
            }
            std::lock_guard lock(mutex_);
            join_reply_ = std::move(*reply);
            break;
        }
        default: break;
    }
    std::lock_guard lock(mutex_);
    changed_.notify_all();
}

void NodeLink::handle_update(const Message& m) {
    // [u32 origin][u64 origin's incarnation][u64 sequence][u32 worker][i64 iteration][encoded
    // update]; authenticated, but still checked field by field.
    std::span<const std::uint8_t> in(m.payload);
    std::uint32_t origin = 0, worker = 0;
    std::uint64_t incarnation = 0, seq = 0;
    std::int64_t iteration = 0;
    std::shared_ptr<EncodedUpdate> update;
    try {
        if (!get(in, origin) || !get(in, incarnation) || !get(in, seq) || !get(in, worker) || !get(in, iteration))
            throw Error("shorter than its header");
        if (origin >= static_cast<std::uint32_t>(cluster_.nodes) || static_cast<int>(origin) == cluster_.node_rank ||
            seq == 0)
            throw Error("origin node " + std::to_string(origin) + " or sequence number " + std::to_string(seq) +
                        " out of range");
        const auto W = static_cast<std::uint32_t>(cluster_.workers_per_node);
        if (worker / W != origin || iteration < 0)
            throw Error("worker " + std::to_string(worker) + " is not on origin node " + std::to_string(origin) +
                        " or iteration " + std::to_string(iteration) + " out of range");
        update = std::make_shared<EncodedUpdate>(deserialize(in, static_cast<std::uint32_t>(n_)));
    } catch (const Error& e) {
        ++rejected_;
        warn("update from node " + std::to_string(m.sender) + " rejected: " + e.what());
        return;
    }
    const int from = static_cast<int>(origin);
    std::vector<int> onward;
    {
        std::lock_guard lock(mutex_);
        if (!observe(from, incarnation)) return;  // an earlier process of the origin
        Peer& o = peers_[static_cast<std::size_t>(from)];
        if (o.updates.state(seq) != IdWindow::State::New) {
            ++duplicates_;
            return;
        }
        if (topology_.kind != TopologyKind::Mesh)  // in a mesh the origin reached everyone itself
            for (int node : routes(false).neighbours(cluster_.node_rank))
                if (node != m.sender && node != from) onward.push_back(node);
        // Under the lock: once drain_remote() has returned, the master may be destroyed at any
        // moment, so nothing may still be on its way into it.
        if (delivering_ && sharing_)
            sharing_->deliver_remote(static_cast<int>(worker), static_cast<long>(iteration), std::move(update));
        // Counted once delivered: a node has drained an origin when every number up to its
        // "done"'s count is here, and by then those updates must already sit in the inboxes.
        o.updates.mark_done(seq);
        o.last_news = std::chrono::steady_clock::now();
        changed_.notify_all();
    }
    for (int node : onward) transport_->send(node, MessageType::Update, m.payload);
    relayed_ += onward.size();
}

void NodeLink::handle_control(const Message& m) {
    std::span<const std::uint8_t> in(m.payload);
    std::uint8_t kind = 0;
    if (!get(in, kind)) return;
    std::lock_guard lock(mutex_);
    Peer& p = peers_[static_cast<std::size_t>(m.sender)];
    if (kind == kDone) {
        std::uint64_t count = 0, first = 0;
        if (get(in, count) && get(in, first) && first >= 1 && (m.incarnation == 0 || p.incarnation == m.incarnation)) {
            p.done = true;
            p.done_count = count;
            p.updates.advance_floor(first - 1);  // sent before we were its destination: never coming
            p.last_news = std::chrono::steady_clock::now();
            std::int32_t epoch = 0;  // absent from an older engine's "done": assume every part comes
            p.done_epoch = get(in, epoch) ? epoch : std::numeric_limits<int>::max();
        }
    } else if (kind == kJoined) {
        std::int32_t epoch = 0;
        std::int64_t iteration = 0;
        std::uint8_t rejoin = 0;
        if (get(in, epoch) && get(in, iteration) && get(in, rejoin) && cluster_.node_rank != 0)
            joined(m.sender, epoch, static_cast<long>(iteration), rejoin == 1, false);
    } else if (kind == kLeft && p.state != PeerState::Gone && (m.incarnation == 0 || p.incarnation == m.incarnation)) {
        set_state(m.sender, PeerState::Gone);
        warn("node " + std::to_string(m.sender) + "'s run was stopped; the run goes on without it" +
             (m.sender == 0 ? " (and without a controller: no more joins, evaluation merged per node)" : ""));
        changed_.notify_all();
    } else if (kind == kRoundAck) {
        std::uint64_t round = 0;
        if (get(in, round)) round_acks_[round] = m.sender;
    } else if (kind == kResultAsk) {
        std::uint64_t round = 0;
        if (get(in, round) && finished_rounds_.count(round) && resends_.size() < 64) resends_.emplace_back(m.sender, round);
    } else if (kind == kStop && cluster_.node_rank == 0 && fatal_.empty()) {
        fatal_ = std::string(reinterpret_cast<const char*>(in.data()), std::min(in.size(), kMaxReason));
        if (fatal_.empty()) fatal_ = "node " + std::to_string(m.sender) + " told this controller to stop";
    }
}

GradientSharing::Outbox NodeLink::outbox() {
    return [this](int worker, long iteration, const std::vector<std::uint8_t>& bytes) {
        std::vector<std::uint8_t> payload;
        payload.reserve(32 + bytes.size());
        std::vector<int> dests;
        {
            std::lock_guard lock(mutex_);
            put(payload, static_cast<std::uint32_t>(cluster_.node_rank));
            put(payload, own_incarnation());
            put(payload, ++updates_sent_);
            // Members, and new processes that will join: what they get before their snapshot
            // arrives is applied on top of it (a few updates of slack, evened out at the end).
            dests = routes(false).neighbours(cluster_.node_rank);
        }
        put(payload, static_cast<std::uint32_t>(worker));
        put(payload, static_cast<std::int64_t>(iteration));
        payload.insert(payload.end(), bytes.begin(), bytes.end());
        for (int node : dests) transport_->send(node, MessageType::Update, payload);
    };
}

void NodeLink::attach(GradientSharing& sharing) {
    std::lock_guard lock(mutex_);
    sharing_ = &sharing;
    for (int node = 0; node < cluster_.nodes; ++node)
        if (node != cluster_.node_rank) set_state(node, peers_[static_cast<std::size_t>(node)].state);
}

void NodeLink::drain_remote() {
    std::vector<JoinRequest> refused;
    {
        std::lock_guard lock(mutex_);
        finishing_ = true;
        refused.swap(join_requests_);
        done_sent_ = true;
        for (int node = 0; node < cluster_.nodes; ++node)
            if (node != cluster_.node_rank && peers_[static_cast<std::size_t>(node)].state != PeerState::Gone)
                transport_->send(node, MessageType::Control, done_payload(node));
    }
    for (const auto& q : refused) {
        JoinReply refusal;
        refusal.kind = JoinReply::Kind::Refused;
        refusal.incarnation = q.incarnation;
        refusal.reason = "the run is finishing (the controller has stopped training); there is nothing left to join";
        {
            std::lock_guard lock(mutex_);
            peers_[static_cast<std::size_t>(q.node)].served = q.incarnation;
            peers_[static_cast<std::size_t>(q.node)].answer = pack_join_reply(refusal);
        }
        reply(q.node, refusal);
    }
    std::unique_lock lock(mutex_);
    const bool stopping = stop_requested_ != nullptr && stop_requested_->load();
    const auto leave_at = std::chrono::steady_clock::now() + kLeaveGrace;
    for (;;) {
        if (!fatal_.empty()) throw Error(fatal_);
        if (stopping && std::chrono::steady_clock::now() >= leave_at) {
            // The others train on: do not hold this stopped node until they finish.
            left_ = true;
            std::vector<std::uint8_t> left;
            put(left, kLeft);
            for (int node = 0; node < cluster_.nodes; ++node)
                if (node != cluster_.node_rank && peers_[static_cast<std::size_t>(node)].state != PeerState::Gone)
                    transport_->send(node, MessageType::Control, left);
            warn("this node's run was stopped while other nodes train on: it leaves the run without their last "
                 "messages and without the final reconciliation");
            delivering_ = false;
            return;
        }
        bool complete = true;
        for (int node = 0; node < cluster_.nodes; ++node) {
            if (node == cluster_.node_rank) continue;
            Peer& p = peers_[static_cast<std::size_t>(node)];
            if (p.state == PeerState::Joining) peer_lost(node);  // not waited for, but noticed when gone
            if (!waited_for(node)) continue;
            if (p.given_up || (p.done && p.updates.floor() >= p.done_count)) continue;
            if (p.done && std::chrono::steady_clock::now() - p.last_news > kDrainStall) {
                p.given_up = true;
                warn(std::to_string(p.done_count - p.updates.floor()) + " of node " + std::to_string(node) +
                     "'s messages never arrived (a node that relayed them is gone); the final reconciliation evens "
                     "the replicas out");
                continue;
            }
            poke(node);
            complete = complete && peer_lost(node);
        }
        if (complete) {
            delivering_ = false;  // everything is in; later arrivals would reach some replicas only
            return;
        }
        changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
}

nlohmann::json NodeLink::traffic() const {
    const auto s = transport_->stats();
    const std::uint64_t bulk_tx = bulk_ ? bulk_->bytes_tx() : 0, bulk_rx = bulk_ ? bulk_->bytes_rx() : 0;
    return {{"bytes_tx", s.bytes_tx + bulk_tx},
            {"bytes_rx", s.bytes_rx + bulk_rx},
            {"dropped", s.dropped_total()},
            {"retransmitted", s.retransmitted},
            {"relayed", relayed_.load()}};
}

}  // namespace thresher::dist
