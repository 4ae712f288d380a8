#include "dist/masters/node_link.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/error.h"
#include "dist/masters/payload_io.h"

namespace thresher::dist {

namespace {

// Control payloads: kind byte, then fields.
constexpr std::uint8_t kDone = 1;    // u64 updates sent (for logs; the message's own id is what counts)
constexpr std::uint8_t kJoined = 2;  // i32 epoch, i64 iteration, u8 rejoin
constexpr std::uint8_t kStop = 3;    // to a restarted controller: the reason, in words
constexpr std::size_t kMaxReason = 1000;

using payload_io::get;
using payload_io::put;

// Average / AverageResult: round u64, workers u32, params u64, state u64, then float sums.
std::vector<std::uint8_t> pack_sums(std::uint64_t round, int workers, const std::vector<double>& params,
                                    const std::vector<double>& state) {
    std::vector<std::uint8_t> out;
    out.reserve(28 + 4 * (params.size() + state.size()));
    put(out, round);
    put(out, static_cast<std::uint32_t>(workers));
    put(out, static_cast<std::uint64_t>(params.size()));
    put(out, static_cast<std::uint64_t>(state.size()));
    for (double v : params) put(out, static_cast<float>(v));
    for (double v : state) put(out, static_cast<float>(v));
    return out;
}

// Adds a peer's sums into ours; false (and nothing added) when the payload does not fit them.
bool add_sums(std::span<const std::uint8_t> in, std::uint64_t round, std::vector<double>& params,
              std::vector<double>& state, int& workers, bool replace) {
    std::uint64_t r = 0, np = 0, ns = 0;
    std::uint32_t w = 0;
    if (!get(in, r) || !get(in, w) || !get(in, np) || !get(in, ns)) return false;
    if (r != round || np != params.size() || ns != state.size() || in.size() != 4 * (np + ns) || w == 0 ||
        w > (1u << 20))
        return false;
    auto read = [&](std::vector<double>& dst) {
        for (auto& d : dst) {
            float f = 0.f;
            get(in, f);
            d = replace ? f : d + f;
        }
    };
    read(params);
    read(state);
    workers = replace ? static_cast<int>(w) : workers + static_cast<int>(w);
    return true;
}

}  // namespace

NodeLink::NodeLink(std::unique_ptr<Transport> transport, const train::ClusterShape& cluster, std::size_t param_count,
                   events::EventWriter* events, std::unique_ptr<BulkChannel> bulk)
    : transport_(std::move(transport)), cluster_(cluster), n_(param_count), events_(events),
      peers_(static_cast<std::size_t>(cluster.nodes)), bulk_(std::move(bulk)) {}

void NodeLink::set_join_policy(bool mid_run, std::chrono::milliseconds wait) {
    std::lock_guard lock(mutex_);
    join_mid_run_ = mid_run;
    join_wait_ = wait;
}

void NodeLink::start() {
    if (!receiver_.joinable()) receiver_ = std::thread([this] { receive_loop(); });
    if (bulk_ && !bulk_receiver_.joinable()) bulk_receiver_ = std::thread([this] { bulk_loop(); });
}

void NodeLink::bulk_loop() {
    while (!stop_) {
        auto m = bulk_->receive(std::chrono::milliseconds(50));
        if (m) handle(std::move(*m), false);
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

bool NodeLink::peer_lost(int node) {
    Peer& p = peers_[static_cast<std::size_t>(node)];
    if (p.state == PeerState::Gone) return true;
    for (int q : transport_->unreachable_peers())
        if (q == node) {
            const bool joining = p.state == PeerState::Joining;
            p.state = PeerState::Gone;
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

std::vector<std::uint8_t> NodeLink::done_payload() const {
    std::vector<std::uint8_t> done;
    put(done, kDone);
    put(done, updates_sent_);
    return done;
}

bool NodeLink::observe(int node, std::uint64_t incarnation) {
    Peer& p = peers_[static_cast<std::size_t>(node)];
    if (node == 0 && controller_replaced_) return false;
    if (incarnation == 0 || incarnation == p.incarnation) return true;
    if (incarnation < p.incarnation) return false;  // its predecessor's, still queued behind
    const bool restarted = p.incarnation != 0;
    p.incarnation = incarnation;
    p.received = IdWindow{};
    p.done_id = 0;
    changed_.notify_all();
    if (restarted && node == 0) {
        // The run's parameters and position lived in the process that died, and a new node 0
        // would start the run over and feed that into ours: ignore it, and tell it to stop.
        controller_replaced_ = true;
        p.state = PeerState::Gone;
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
        p.state = PeerState::Joining;
    } else if (p.state == PeerState::Gone) {
        p.state = PeerState::Joining;  // absent at the start, here now
    }
    // A process that came after our "done" needs one of its own, or it would wait for it.
    if (done_sent_ && p.state != PeerState::Gone) transport_->send(node, MessageType::Control, done_payload());
    return true;
}

void NodeLink::joined(int node, int epoch, long iteration, bool rejoin, bool served_here) {
    Peer& p = peers_[static_cast<std::size_t>(node)];
    if (p.state == PeerState::Member && !served_here) return;  // known already
    p.state = PeerState::Member;
    const std::string message = "node " + std::to_string(node) + (rejoin ? " rejoined" : " joined") + " at epoch " +
                                std::to_string(epoch) + " iteration " + std::to_string(iteration) +
                                ", parameters from the controller";
    if (events_)
        events_->write("node_joined", {{"joined_node", node},
                                       {"epoch", epoch},
                                       {"iter", iteration},
                                       {"rejoin", rejoin},
                                       {"message", message}});
    // A node that died and came back is worth the user's attention; a late starter is not.
    if (rejoin) warn(message);
    changed_.notify_all();
}

void NodeLink::receive_loop() {
    auto last_look = std::chrono::steady_clock::now();
    while (!stop_) {
        auto m = transport_->receive(std::chrono::milliseconds(50));
        if (m) handle(std::move(*m), true);
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
    const std::uint64_t id = m.id, incarnation = m.incarnation;
    if (counted) {
        std::lock_guard lock(mutex_);
        if (!observe(sender, incarnation)) return;
    }
    switch (m.type) {
        case MessageType::Update: {
            // [u32 worker][encoded update]; authenticated, but still checked field by field.
            std::span<const std::uint8_t> in(m.payload);
            std::uint32_t worker = 0;
            try {
                if (!get(in, worker)) throw Error("no worker id");
                auto update = std::make_shared<EncodedUpdate>(deserialize(in, static_cast<std::uint32_t>(n_)));
                if (sharing_) sharing_->deliver_remote(std::move(update));
            } catch (const Error& e) {
                ++rejected_;
                warn("update from node " + std::to_string(sender) + " rejected: " + e.what());
            }
            break;
        }
        case MessageType::Control: handle_control(m); break;
        case MessageType::Average: {
            std::uint64_t round = 0;
            std::span<const std::uint8_t> in(m.payload);
            if (!get(in, round)) break;
            std::lock_guard lock(mutex_);
            averages_[round].insert_or_assign(sender, std::move(m));  // a restarted node's replaces its predecessor's
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
    // Counted once handled: a node has drained a peer when all ids up to its "done" are here,
    // and by then their updates must already sit in the local inboxes.
    std::lock_guard lock(mutex_);
    if (counted && peers_[static_cast<std::size_t>(sender)].incarnation == incarnation)
        peers_[static_cast<std::size_t>(sender)].received.mark_done(id);
    changed_.notify_all();
}

void NodeLink::handle_control(const Message& m) {
    std::span<const std::uint8_t> in(m.payload);
    std::uint8_t kind = 0;
    if (!get(in, kind)) return;
    std::lock_guard lock(mutex_);
    Peer& p = peers_[static_cast<std::size_t>(m.sender)];
    if (kind == kDone) {
        std::uint64_t count = 0;
        if (get(in, count) && p.incarnation == m.incarnation) p.done_id = m.id;
    } else if (kind == kJoined) {
        std::int32_t epoch = 0;
        std::int64_t iteration = 0;
        std::uint8_t rejoin = 0;
        if (get(in, epoch) && get(in, iteration) && get(in, rejoin) && cluster_.node_rank != 0)
            joined(m.sender, epoch, static_cast<long>(iteration), rejoin == 1, false);
    } else if (kind == kStop && cluster_.node_rank == 0 && fatal_.empty()) {
        fatal_ = std::string(reinterpret_cast<const char*>(in.data()), std::min(in.size(), kMaxReason));
        if (fatal_.empty()) fatal_ = "node " + std::to_string(m.sender) + " told this controller to stop";
    }
}

void NodeLink::reply(int node, const JoinReply& r) {
    try {
        send_large(node, MessageType::Params, pack_join_reply(r));
    } catch (const Error& e) {
        warn("could not answer node " + std::to_string(node) + "'s request to join: " + e.what());
    }
}

void NodeLink::handle_join_request(const Message& m) {
    if (cluster_.node_rank != 0) return;
    const auto incarnation = parse_join_request(m.payload);
    if (!incarnation) {
        ++rejected_;
        return;
    }
    JoinReply refusal;
    refusal.kind = JoinReply::Kind::Refused;
    refusal.incarnation = *incarnation;
    {
        std::lock_guard lock(mutex_);
        Peer& p = peers_[static_cast<std::size_t>(m.sender)];
        if (*incarnation <= p.served) {  // a copy of a request answered before: nobody is waiting
            ++rejected_;
            return;
        }
        if (finishing_) {
            refusal.reason = "the run is finishing (the controller has stopped training); there is nothing left to join";
        } else if (started_ && !join_mid_run_) {
            refusal.reason = "joining a running parameter-averaging run is not supported (its averaging rounds would "
                             "need the new node in step); use gradient sharing, or start the whole run again";
        } else {
            join_requests_.push_back({m.sender, *incarnation});
            changed_.notify_all();
            return;
        }
        p.served = *incarnation;
    }
    reply(m.sender, refusal);
}

std::optional<train::JoinState> NodeLink::join(const std::atomic<bool>* stop) {
    auto stopping = [stop] { return stop != nullptr && stop->load(); };
    if (cluster_.node_rank == 0) {
        // The start: wait for every node's request (or join_wait), then let those here begin.
        std::map<int, std::uint64_t> asked;  // node -> its newest incarnation that asked
        std::vector<int> absent;
        JoinReply start;
        {
            std::unique_lock lock(mutex_);
            const auto deadline = std::chrono::steady_clock::now() + join_wait_;
            for (;;) {
                if (!fatal_.empty()) throw Error(fatal_);
                for (const auto& r : join_requests_) asked[r.node] = std::max(asked[r.node], r.incarnation);
                join_requests_.clear();
                if (static_cast<int>(asked.size()) >= cluster_.nodes - 1 || std::chrono::steady_clock::now() >= deadline ||
                    stopping())
                    break;
                changed_.wait_for(lock, std::chrono::milliseconds(50));
            }
            started_ = true;
            start.members.assign(static_cast<std::size_t>(cluster_.nodes), false);
            start.members[0] = true;
            for (int node = 1; node < cluster_.nodes; ++node) {
                Peer& p = peers_[static_cast<std::size_t>(node)];
                if (auto it = asked.find(node); it != asked.end()) {
                    p.served = it->second;
                    start.members[static_cast<std::size_t>(node)] = true;
                } else if (p.state == PeerState::Member) {
                    p.state = PeerState::Gone;
                    absent.push_back(node);
                }
            }
        }
        for (int node : absent)
            warn("node " + std::to_string(node) + " did not ask to join within " +
                 std::to_string(join_wait_.count() / 1000.0).substr(0, 4) +
                 " s of the controller's start: the run begins without it, and it joins with the current parameters "
                 "when it comes");
        for (const auto& [node, incarnation] : asked) {
            start.incarnation = incarnation;
            reply(node, start);
        }
        return std::nullopt;
    }

    // Any other node asks the controller, and waits for the answer while the controller answers
    // heartbeats: it may be waiting for the others to start, or evaluating, first.
    const std::uint64_t me = own_incarnation();
    const auto request = pack_join_request(me);
    try {
        if (bulk_)
            bulk_->send(0, MessageType::ParamsRequest, request, join_wait_ + std::chrono::seconds(60));
        else
            transport_->send(0, MessageType::ParamsRequest, request);
    } catch (const Error& e) {
        throw Error(std::string("cannot reach the controller (node 0) to join the run: ") + e.what() +
                    "; nodes join through the controller, so a run whose node 0 is gone cannot be joined: start "
                    "the whole run again");
    }
    JoinReply reply;
    std::vector<int> tell;  // the nodes to tell we joined
    {
        std::unique_lock lock(mutex_);
        for (;;) {
            if (join_reply_ && join_reply_->incarnation == me) break;
            if (stopping()) return std::nullopt;
            if (controller_replaced_ || peer_lost(0))
                throw Error("the controller (node 0) stopped answering before this node could join the run");
            poke(0);
            changed_.wait_for(lock, std::chrono::milliseconds(50));
        }
        reply = std::move(*join_reply_);
        join_reply_.reset();
        if (reply.kind == JoinReply::Kind::Refused)
            throw Error("the controller (node 0) refused to let node " + std::to_string(cluster_.node_rank) +
                        " join: " + reply.reason);
        for (int node = 1; node < cluster_.nodes; ++node) {
            if (node == cluster_.node_rank) continue;
            Peer& p = peers_[static_cast<std::size_t>(node)];
            if (!reply.members[static_cast<std::size_t>(node)] && p.state == PeerState::Member) p.state = PeerState::Gone;
            if (p.state != PeerState::Gone) tell.push_back(node);
        }
    }
    if (reply.kind == JoinReply::Kind::Start) return std::nullopt;

    const auto& pos = reply.state.position;
    std::vector<std::uint8_t> note;
    put(note, kJoined);
    put(note, static_cast<std::int32_t>(pos.epoch));
    put(note, static_cast<std::int64_t>(pos.iteration));
    put(note, static_cast<std::uint8_t>(reply.rejoin ? 1 : 0));
    for (int node : tell) transport_->send(node, MessageType::Control, note);
    if (events_)
        events_->write("node_joined",
                       {{"joined_node", cluster_.node_rank},
                        {"epoch", pos.epoch},
                        {"iter", pos.iteration},
                        {"rejoin", reply.rejoin},
                        {"message", "this node (node " + std::to_string(cluster_.node_rank) + ")" +
                                        (reply.rejoin ? " rejoined" : " joined") + " the running cluster at epoch " +
                                        std::to_string(pos.epoch) + " iteration " + std::to_string(pos.iteration) +
                                        ", parameters from the controller"}});
    return std::move(reply.state);
}

void NodeLink::after_step(const nn::Network& net, const train::RunPosition& position) {
    std::vector<JoinRequest> requests;
    {
        std::lock_guard lock(mutex_);
        if (!fatal_.empty()) throw Error(fatal_);
        if (join_requests_.empty() || cluster_.node_rank != 0) return;
        requests.swap(join_requests_);
    }
    JoinReply snapshot;
    snapshot.kind = JoinReply::Kind::Snapshot;
    snapshot.state.params = net.get_params();
    snapshot.state.updater_state = net.get_updater_state();
    snapshot.state.position = position;
    for (const auto& q : requests) {
        {
            std::lock_guard lock(mutex_);
            Peer& p = peers_[static_cast<std::size_t>(q.node)];
            if (q.incarnation <= p.served) continue;  // answered meanwhile
            // The request (TCP) may overtake the new process's first datagram (UDP).
            if (!observe(q.node, q.incarnation) || p.incarnation != q.incarnation) continue;
            snapshot.rejoin = p.served != 0;
            p.served = q.incarnation;
            joined(q.node, position.epoch, position.iteration, snapshot.rejoin, true);
            snapshot.incarnation = q.incarnation;
            snapshot.members.assign(static_cast<std::size_t>(cluster_.nodes), false);
            snapshot.members[0] = true;
            for (int node = 1; node < cluster_.nodes; ++node)
                snapshot.members[static_cast<std::size_t>(node)] = waited_for(node);
        }
        reply(q.node, snapshot);
    }
}

GradientSharing::Outbox NodeLink::outbox() {
    return [this](int worker, const std::vector<std::uint8_t>& bytes) {
        std::vector<std::uint8_t> payload;
        payload.reserve(4 + bytes.size());
        put(payload, static_cast<std::uint32_t>(worker));
        payload.insert(payload.end(), bytes.begin(), bytes.end());
        std::vector<int> dests;
        {
            std::lock_guard lock(mutex_);
            ++updates_sent_;
            // Members, and new processes that will join: what they get before their snapshot
            // arrives is applied on top of it (a few updates of slack, evened out at the end).
            for (int node = 0; node < cluster_.nodes; ++node)
                if (node != cluster_.node_rank && peers_[static_cast<std::size_t>(node)].state != PeerState::Gone)
                    dests.push_back(node);
        }
        for (int node : dests) transport_->send(node, MessageType::Update, payload);
    };
}

void NodeLink::attach(GradientSharing& sharing) { sharing_ = &sharing; }

void NodeLink::drain_remote() {
    std::vector<JoinRequest> refused;
    {
        std::lock_guard lock(mutex_);
        finishing_ = true;
        refused.swap(join_requests_);
        done_sent_ = true;
        const auto done = done_payload();
        for (int node = 0; node < cluster_.nodes; ++node)
            if (node != cluster_.node_rank && peers_[static_cast<std::size_t>(node)].state != PeerState::Gone)
                transport_->send(node, MessageType::Control, done);
    }
    for (const auto& q : refused) {
        JoinReply refusal;
        refusal.kind = JoinReply::Kind::Refused;
        refusal.incarnation = q.incarnation;
        refusal.reason = "the run is finishing (the controller has stopped training); there is nothing left to join";
        {
            std::lock_guard lock(mutex_);
            peers_[static_cast<std::size_t>(q.node)].served = q.incarnation;
        }
        reply(q.node, refusal);
    }
    std::unique_lock lock(mutex_);
    for (;;) {
        if (!fatal_.empty()) throw Error(fatal_);
        bool complete = true;
        for (int node = 0; node < cluster_.nodes; ++node) {
            if (node == cluster_.node_rank) continue;
            Peer& p = peers_[static_cast<std::size_t>(node)];
            if (p.state == PeerState::Joining) peer_lost(node);  // not waited for, but noticed when gone
            if (!waited_for(node)) continue;
            if (p.done_id == 0 || p.received.floor() < p.done_id) {
                poke(node);
                complete = complete && peer_lost(node);
            }
        }
        if (complete) return;
        changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
}
void NodeLink::reconcile(const std::vector<nn::Network*>& replicas) {
    const std::size_t p = replicas.front()->param_count();
    std::vector<double> sums(p, 0.0), no_state;
    for (auto* net : replicas) {
        const auto params = net->get_params();
        for (std::size_t i = 0; i < p; ++i) sums[i] += params[i];
    }
    int workers = static_cast<int>(replicas.size());
    try {
        reduce(sums, no_state, workers);
    } catch (const Error& e) {
        warn(std::string("final reconciliation failed, replicas may differ: ") + e.what());
        return;
    }
    std::vector<float> mean(p);
    for (std::size_t i = 0; i < p; ++i) mean[i] = static_cast<float>(sums[i] / workers);
    for (auto* net : replicas) net->set_params(mean);
}

ParameterAveraging::Reducer NodeLink::reducer() {
    return [this](std::vector<double>& params, std::vector<double>& state, int& workers) { reduce(params, state, workers); };
}

void NodeLink::reduce(std::vector<double>& params, std::vector<double>& state, int& workers) {
    const std::uint64_t round = round_++;
    std::unique_lock lock(mutex_);
    if (cluster_.node_rank != 0) {
        if (peer_lost(0)) throw Error("the controller (node 0) is gone, so averaging round " + std::to_string(round) + " cannot happen");
        lock.unlock();
        send_large(0, MessageType::Average, pack_sums(round, workers, params, state));
        lock.lock();
        while (!average_results_.count(round)) {
            poke(0);
            if (peer_lost(0)) throw Error("the controller (node 0) stopped answering during averaging round " + std::to_string(round));
            changed_.wait_for(lock, std::chrono::milliseconds(100));
        }
        const Message result = std::move(average_results_.at(round));
        average_results_.erase(round);
        lock.unlock();
        if (!add_sums(result.payload, round, params, state, workers, true))
            throw Error("averaging round " + std::to_string(round) + ": malformed result from node 0");
        return;
    }
    // The controller: wait for every other node's sums, add them, send the totals back.
    // Only members' sums count: a node that is gone (or has not joined) takes no part.
    std::vector<Message> parts;
    for (;;) {
        bool all_in = true;
        for (int node = 1; node < cluster_.nodes; ++node)
            if (waited_for(node) && !averages_[round].count(node)) {
                poke(node);
                all_in = !peer_lost(node) ? false : all_in;
            }
        if (all_in) break;
        changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    for (auto& [node, part] : averages_[round])
        if (waited_for(node)) parts.push_back(std::move(part));
    averages_.erase(round);
    lock.unlock();
    for (const auto& part : parts)
        if (!add_sums(part.payload, round, params, state, workers, false))
            warn("averaging round " + std::to_string(round) + ": malformed sums from node " + std::to_string(part.sender) + " ignored");
    const auto result = pack_sums(round, workers, params, state);
    std::vector<int> members;
    {
        std::lock_guard relock(mutex_);
        for (int node = 1; node < cluster_.nodes; ++node)
            if (waited_for(node)) members.push_back(node);
    }
    for (int node : members) {
        try {
            send_large(node, MessageType::AverageResult, result);
        } catch (const Error& e) {
            warn("averaging round " + std::to_string(round) + ": node " + std::to_string(node) + ": " + e.what());
        }
    }
}

std::optional<std::vector<nlohmann::json>> NodeLink::gather_evaluation(int epoch, const nlohmann::json& local) {
    if (cluster_.node_rank != 0) {
        {
            std::lock_guard lock(mutex_);
            if (!waited_for(0)) return std::nullopt;  // the controller is gone: nobody merges
        }
        std::vector<std::uint8_t> payload;
        put(payload, static_cast<std::int32_t>(epoch));
        const std::string text = local.dump();
        payload.insert(payload.end(), text.begin(), text.end());
        transport_->send(0, MessageType::Evaluation, payload);
        return std::nullopt;
    }
    std::unique_lock lock(mutex_);
    for (;;) {
        bool all_in = true;
        for (int node = 1; node < cluster_.nodes; ++node)
            if (waited_for(node) && !evaluations_[epoch].count(node)) {
                poke(node);
                all_in = !peer_lost(node) ? false : all_in;
            }
        if (all_in) break;
        changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    std::vector<nlohmann::json> parts{local};
    for (auto& [node, part] : evaluations_[epoch])
        if (waited_for(node)) parts.push_back(std::move(part));
    evaluations_.erase(epoch);
    return parts;
}

nlohmann::json NodeLink::traffic() const {
    const auto s = transport_->stats();
    const std::uint64_t bulk_tx = bulk_ ? bulk_->bytes_tx() : 0, bulk_rx = bulk_ ? bulk_->bytes_rx() : 0;
    return {{"bytes_tx", s.bytes_tx + bulk_tx},
            {"bytes_rx", s.bytes_rx + bulk_rx},
            {"dropped", s.dropped_total()},
            {"retransmitted", s.retransmitted}};
}

}  // namespace thresher::dist
