// NodeLink, part 2: starting and joining (node_link.h) -- the controller's start, join requests
// and their answers, snapshots for late and restarted nodes.
#include "dist/masters/node_link.h"

#include <algorithm>

#include "core/error.h"
#include "dist/masters/node_link_control.h"
#include "dist/masters/payload_io.h"

namespace thresher::dist {

using payload_io::get;
using payload_io::put;
using namespace node_link_control;

void NodeLink::joined(int node, int epoch, long iteration, bool rejoin, bool served_here) {
    Peer& p = peers_[static_cast<std::size_t>(node)];
    if (p.state == PeerState::Member && !served_here) return;  // known already
    set_state(node, PeerState::Member);
    const std::string message = "node " + std::to_string(node) + (rejoin ? " rejoined" : " joined") + " at epoch " +
                                std::to_string(epoch) + " iteration " + std::to_string(iteration) +
                                ", parameters from the controller";
    if (events_)
        events_->emit(events::NodeJoined{node, epoch, iteration, rejoin, message});
    // A node that died and came back is worth the user's attention; a late starter is not.
    if (rejoin) warn(message);
    clock_->notify_all(changed_);
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
    std::vector<std::uint8_t> again;
    {
        std::lock_guard lock(mutex_);
        Peer& p = peers_[static_cast<std::size_t>(m.sender)];
        if (*incarnation < p.served) {  // an earlier process's: nobody is waiting
            ++rejected_;
            return;
        }
        if (*incarnation == p.served) {
            // Asked again: our answer was lost (a connection reset under it). Send the same
            // answer, or for a snapshot a fresh one after the next step.
            if (p.answer.empty()) {
                bool queued = false;
                for (const auto& q : join_requests_) queued = queued || (q.node == m.sender && q.incarnation == p.served);
                if (!queued) join_requests_.push_back({m.sender, p.served, true});
                clock_->notify_all(changed_);
                return;
            }
            again = p.answer;
        }
    }
    if (!again.empty()) {
        try {
            send_large(m.sender, MessageType::Params, again);
        } catch (const Error& e) {
            warn("could not answer node " + std::to_string(m.sender) + "'s request to join again: " + e.what());
        }
        return;
    }
    {
        std::lock_guard lock(mutex_);
        Peer& p = peers_[static_cast<std::size_t>(m.sender)];
        if (finishing_) {
            refusal.reason = "the run is finishing (the controller has stopped training); there is nothing left to join";
        } else if (started_ && !join_mid_run_) {
            refusal.reason = "joining a running parameter-averaging run is not supported (its averaging rounds would "
                             "need the new node in step); use gradient sharing, or start the whole run again";
        } else {
            join_requests_.push_back({m.sender, *incarnation});
            clock_->notify_all(changed_);
            return;
        }
        p.served = *incarnation;
        p.answer = pack_join_reply(refusal);
    }
    reply(m.sender, refusal);
}

std::optional<train::JoinState> NodeLink::join(const std::atomic<bool>* stop) {
    {
        std::lock_guard lock(mutex_);
        stop_requested_ = stop;
    }
    auto stopping = [stop] { return stop != nullptr && stop->load(); };
    if (cluster_.node_rank == 0) {
        // The start: wait for every node's request (or join_wait), then let those here begin.
        std::map<int, std::uint64_t> asked;  // node -> its newest incarnation that asked
        std::vector<int> absent;
        JoinReply start;
        {
            std::unique_lock lock(mutex_);
            const auto deadline = clock_->now() + join_wait_;
            for (;;) {
                if (!fatal_.empty()) throw Error(fatal_);
                for (const auto& r : join_requests_) asked[r.node] = std::max(asked[r.node], r.incarnation);
                join_requests_.clear();
                if (static_cast<int>(asked.size()) >= cluster_.nodes - 1 || clock_->now() >= deadline ||
                    stopping())
                    break;
                clock_->wait_for(changed_, lock, std::chrono::milliseconds(50));
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
                    set_state(node, PeerState::Gone);
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
            const auto bytes = pack_join_reply(start);
            {
                std::lock_guard lock(mutex_);
                peers_[static_cast<std::size_t>(node)].answer = bytes;
            }
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
        auto asked_at = clock_->now();
        for (;;) {
            if (join_reply_ && join_reply_->incarnation == me) break;
            if (stopping()) return std::nullopt;
            if (controller_replaced_ || peer_lost(0))
                throw Error("the controller (node 0) stopped answering before this node could join the run");
            if (clock_->now() - asked_at > deadlines_.join_resend) {
                // The request or its answer may have died with a connection: ask again (the
                // controller answers a repeated request of the same process once more).
                lock.unlock();
                try {
                    if (bulk_)
                        bulk_->send(0, MessageType::ParamsRequest, request);
                    else
                        transport_->send(0, MessageType::ParamsRequest, request);
                } catch (const Error& e) {
                    warn(std::string("asking the controller (node 0) to join again: ") + e.what());
                }
                lock.lock();
                asked_at = clock_->now();
                continue;
            }
            poke(0);
            clock_->wait_for(changed_, lock, std::chrono::milliseconds(50));
        }
        reply = std::move(*join_reply_);
        join_reply_.reset();
        if (reply.kind == JoinReply::Kind::Refused)
            throw Error("the controller (node 0) refused to let node " + std::to_string(cluster_.node_rank) +
                        " join: " + reply.reason);
        for (int node = 1; node < cluster_.nodes; ++node) {
            if (node == cluster_.node_rank) continue;
            Peer& p = peers_[static_cast<std::size_t>(node)];
            if (!reply.members[static_cast<std::size_t>(node)] && p.state == PeerState::Member) set_state(node, PeerState::Gone);
            if (p.state != PeerState::Gone) tell.push_back(node);
        }
    }
    if (reply.kind == JoinReply::Kind::Start) return std::nullopt;

    const auto& pos = reply.state.position;
    Control joined_note;
    joined_note.kind = kJoined;
    joined_note.epoch = static_cast<std::int32_t>(pos.epoch);
    joined_note.iteration = static_cast<std::int64_t>(pos.iteration);
    joined_note.rejoin = reply.rejoin;
    const std::vector<std::uint8_t> note = pack_control(joined_note);
    for (int node : tell) transport_->send(node, MessageType::Control, note);
    if (events_)
        events_->emit(events::NodeJoined{cluster_.node_rank, pos.epoch, pos.iteration, reply.rejoin,
                                         "this node (node " + std::to_string(cluster_.node_rank) + ")" +
                                                 (reply.rejoin ? " rejoined" : " joined") + " the running cluster at epoch " +
                                                 std::to_string(pos.epoch) + " iteration " + std::to_string(pos.iteration) +
                                                 ", parameters from the controller"});
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
            if (q.incarnation < p.served || (q.incarnation == p.served && !q.again)) continue;  // answered meanwhile
            // The request (TCP) may overtake the new process's first datagram (UDP).
            if (!observe(q.node, q.incarnation) || p.incarnation != q.incarnation) continue;
            snapshot.rejoin = q.again ? p.served_rejoin : p.served != 0;
            p.served = q.incarnation;
            p.served_rejoin = snapshot.rejoin;
            p.answer.clear();  // a snapshot is taken afresh when asked again
            if (!q.again) joined(q.node, position.epoch, position.iteration, snapshot.rejoin, true);
            snapshot.incarnation = q.incarnation;
            snapshot.members.assign(static_cast<std::size_t>(cluster_.nodes), false);
            snapshot.members[0] = true;
            for (int node = 1; node < cluster_.nodes; ++node)
                snapshot.members[static_cast<std::size_t>(node)] = waited_for(node);
        }
        reply(q.node, snapshot);
    }
}

}  // namespace thresher::dist
