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
    if (!membership_.make_member(node, served_here)) return;  // known already
    const std::string message = "node " + std::to_string(node) + (rejoin ? " rejoined" : " joined") + " at epoch " +
                                std::to_string(epoch) + " iteration " + std::to_string(iteration) +
                                ", parameters from the controller";
    if (events_)
        events_->emit(events::NodeJoined{node, epoch, iteration, rejoin, message});
    // A node that died and came back is worth the user's attention; a late starter is not.
    if (rejoin) warn(message);
    signal_.notify();
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
    const auto d = desk_.request(m.sender, *incarnation);
    if (d.kind == JoinDesk::Decision::Kind::Stale) {
        ++rejected_;
        return;
    }
    if (d.kind == JoinDesk::Decision::Kind::Queued) {
        signal_.notify();
        return;
    }
    try {
        send_large(m.sender, MessageType::Params, d.answer);
    } catch (const Error& e) {
        warn("could not answer node " + std::to_string(m.sender) + "'s request to join: " + e.what());
    }
}

std::optional<train::JoinState> NodeLink::join(const std::atomic<bool>* stop) {
    {
        MutexLock lock(mutex_);
        stop_requested_ = stop;
    }
    const auto join_wait = desk_.start_wait();
    auto stopping = [stop] { return stop != nullptr && stop->load(); };
    if (cluster_.node_rank == 0) {
        // The start: wait for every node's request (or join_wait), then let those here begin.
        std::map<int, std::uint64_t> asked;  // node -> its newest incarnation that asked
        std::vector<int> absent;
        JoinReply start;
        const auto deadline = clock_->now() + join_wait;
        for (;;) {
            const auto seen = signal_.generation();
            throw_if_fatal();
            for (const auto& r : desk_.take_requests()) asked[r.node] = std::max(asked[r.node], r.incarnation);
            if (static_cast<int>(asked.size()) >= cluster_.nodes - 1 || clock_->now() >= deadline || stopping()) break;
            signal_.wait(seen, std::chrono::milliseconds(50));
        }
        // Requests that come from here on are answered with snapshots (after_step). One that came
        // between the last look and this is answered there too.
        desk_.begin(asked);
        start.members.assign(static_cast<std::size_t>(cluster_.nodes), false);
        start.members[0] = true;
        for (int node = 1; node < cluster_.nodes; ++node) {
            if (asked.count(node))
                start.members[static_cast<std::size_t>(node)] = true;
            else if (membership_.state(node) == PeerState::Member) {
                membership_.set_state(node, PeerState::Gone);
                absent.push_back(node);
            }
        }
        for (int node : absent)
            warn("node " + std::to_string(node) + " did not ask to join within " +
                 std::to_string(join_wait.count() / 1000.0).substr(0, 4) +
                 " s of the controller's start: the run begins without it, and it joins with the current parameters "
                 "when it comes");
        for (const auto& [node, incarnation] : asked) {
            start.incarnation = incarnation;
            desk_.answered(node, incarnation, pack_join_reply(start));
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
            bulk_->send(0, MessageType::ParamsRequest, request, join_wait + std::chrono::seconds(60));
        else
            transport_->send(0, MessageType::ParamsRequest, request);
    } catch (const Error& e) {
        throw Error(std::string("cannot reach the controller (node 0) to join the run: ") + e.what() +
                    "; nodes join through the controller, so a run whose node 0 is gone cannot be joined: start "
                    "the whole run again");
    }
    JoinReply reply;
    std::vector<int> tell;  // the nodes to tell we joined
    auto asked_at = clock_->now();
    for (;;) {
        const auto seen = signal_.generation();
        if (auto r = desk_.take_reply(me)) {
            reply = std::move(*r);
            break;
        }
        if (stopping()) return std::nullopt;
        if (membership_.controller_replaced() || peer_lost(0))
            throw Error("the controller (node 0) stopped answering before this node could join the run");
        if (clock_->now() - asked_at > deadlines_.join_resend) {
            // The request or its answer may have died with a connection: ask again (the
            // controller answers a repeated request of the same process once more).
            try {
                if (bulk_)
                    bulk_->send(0, MessageType::ParamsRequest, request);
                else
                    transport_->send(0, MessageType::ParamsRequest, request);
            } catch (const Error& e) {
                warn(std::string("asking the controller (node 0) to join again: ") + e.what());
            }
            asked_at = clock_->now();
            continue;
        }
        poke(0);
        signal_.wait(seen, std::chrono::milliseconds(50));
    }
    if (reply.kind == JoinReply::Kind::Refused)
        throw Error("the controller (node 0) refused to let node " + std::to_string(cluster_.node_rank) +
                    " join: " + reply.reason);
    for (int node = 1; node < cluster_.nodes; ++node) {
        if (node == cluster_.node_rank) continue;
        if (!reply.members[static_cast<std::size_t>(node)] && membership_.state(node) == PeerState::Member)
            membership_.set_state(node, PeerState::Gone);
        if (membership_.state(node) != PeerState::Gone) tell.push_back(node);
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
    throw_if_fatal();
    if (cluster_.node_rank != 0) return;
    const std::vector<JoinDesk::Request> requests = desk_.take_requests();
    if (requests.empty()) return;
    JoinReply snapshot;
    snapshot.kind = JoinReply::Kind::Snapshot;
    snapshot.state.params = net.get_params();
    snapshot.state.updater_state = net.get_updater_state();
    snapshot.state.position = position;
    for (const auto& q : requests) {
        // The request (TCP) may overtake the new process's first datagram (UDP).
        if (!observe(q.node, q.incarnation) || membership_.incarnation(q.node) != q.incarnation) continue;
        const auto rejoin = desk_.serve_snapshot(q);
        if (!rejoin) continue;  // answered meanwhile
        snapshot.rejoin = *rejoin;
        if (!q.again) joined(q.node, position.epoch, position.iteration, snapshot.rejoin, true);
        snapshot.incarnation = q.incarnation;
        snapshot.members = membership_.members();
        reply(q.node, snapshot);
    }
}

}  // namespace thresher::dist
