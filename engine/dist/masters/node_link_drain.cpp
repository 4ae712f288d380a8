// NodeLink: the node-level drain of gradient sharing (node_link.h "Draining") -- "done" with our
// message count to every peer, then waiting until every member's messages are in, it is gone,
// or its missing messages were lost with a relay; a stopped node leaves after kLeaveGrace.
#include "dist/masters/node_link.h"

#include "core/error.h"
#include "dist/masters/node_link_control.h"
#include "dist/masters/payload_io.h"

namespace thresher::dist {

namespace {
// How long a stopped node waits for the others' "done" before it leaves without them.
constexpr auto kLeaveGrace = std::chrono::milliseconds(500);
// How long a drained member's missing messages are waited for once nothing more comes from it:
// past this they were lost with a relay that died (a live path delivers within seconds).
constexpr auto kDrainStall = std::chrono::seconds(10);

}  // namespace

using payload_io::get;
using payload_io::put;
using namespace node_link_control;

std::vector<std::uint8_t> NodeLink::done_payload(int node) const {
    Control done;
    done.kind = kDone;
    done.originated = updates_sent_;
    done.first = peers_[static_cast<std::size_t>(node)].first_seq;
    // The controller must not wait for evaluation parts a node that has stopped will not send.
    done.evaluated = static_cast<std::int32_t>(evaluated_);
    return pack_control(done);
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
    const auto leave_at = clock_->now() + kLeaveGrace;
    for (;;) {
        if (!fatal_.empty()) throw Error(fatal_);
        if (stopping && clock_->now() >= leave_at) {
            // The others train on: do not hold this stopped node until they finish.
            left_ = true;
            Control c;
            c.kind = kLeft;
            const std::vector<std::uint8_t> left = pack_control(c);
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
            if (p.done && clock_->now() - p.last_news > kDrainStall) {
                p.given_up = true;
                // Not done_count - floor: the messages past the first hole that did arrive count too.
                const std::uint64_t here = p.updates.floor() + p.updates.above_floor();
                warn(std::to_string(p.done_count > here ? p.done_count - here : 0) + " of node " + std::to_string(node) +
                     "'s messages never arrived (a node that relayed them is gone); the final reconciliation evens "
                     "the replicas out");
                continue;
            }
            poke(node);
            // Not `complete && peer_lost(node)`: every peer is looked at, or a dead member behind one
            // still draining was noticed only once that one had finished.
            const bool lost = peer_lost(node);
            complete = complete && lost;
        }
        if (complete) {
            delivering_ = false;  // everything is in; later arrivals would reach some replicas only
            return;
        }
        clock_->wait_for(changed_, lock, std::chrono::milliseconds(100));
    }
}

}  // namespace thresher::dist
