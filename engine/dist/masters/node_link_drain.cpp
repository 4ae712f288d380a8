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
    done.originated = updates_sent_.load();
    done.first = membership_.first_seq(node);
    // The controller must not wait for evaluation parts a node that has stopped will not send.
    done.evaluated = static_cast<std::int32_t>(evaluations_.last_sent());
    return pack_control(done);
}

void NodeLink::drain_remote() {
    const std::vector<JoinDesk::Request> refused = desk_.finish();
    done_sent_ = true;  // before the peers are listed: a process noted after this gets "done" from observe()
    for (int node : membership_.not_gone()) transport_->send(node, MessageType::Control, done_payload(node));
    for (const auto& q : refused) {
        JoinReply refusal;
        refusal.kind = JoinReply::Kind::Refused;
        refusal.incarnation = q.incarnation;
        refusal.reason = "the run is finishing (the controller has stopped training); there is nothing left to join";
        desk_.answered(q.node, q.incarnation, pack_join_reply(refusal));
        reply(q.node, refusal);
    }
    const std::atomic<bool>* stop = nullptr;
    {
        MutexLock lock(mutex_);
        stop = stop_requested_;
    }
    const bool stopping = stop != nullptr && stop->load();
    const auto leave_at = clock_->now() + kLeaveGrace;
    auto end_deliveries = [this] {
        MutexLock lock(delivery_mutex_);
        delivering_ = false;  // everything is in; later arrivals would reach some replicas only
    };
    for (;;) {
        const auto seen = signal_.generation();
        throw_if_fatal();
        if (stopping && clock_->now() >= leave_at) {
            // The others train on: do not hold this stopped node until they finish.
            {
                MutexLock lock(mutex_);
                left_ = true;
            }
            Control c;
            c.kind = kLeft;
            const std::vector<std::uint8_t> left = pack_control(c);
            for (int node : membership_.not_gone()) transport_->send(node, MessageType::Control, left);
            warn("this node's run was stopped while other nodes train on: it leaves the run without their last "
                 "messages and without the final reconciliation");
            end_deliveries();
            return;
        }
        bool complete = true;
        const auto now = clock_->now();
        for (int node = 0; node < cluster_.nodes; ++node) {
            if (node == cluster_.node_rank) continue;
            const PeerState state = membership_.state(node);
            if (state == PeerState::Joining) peer_lost(node);  // not waited for, but noticed when gone
            if (state != PeerState::Member) continue;
            std::uint64_t missing = 0;
            const auto drained = ledger_.drain(node, now, kDrainStall, &missing);
            if (drained == UpdateLedger::Drain::Drained) continue;
            if (drained == UpdateLedger::Drain::GaveUp) {
                warn(std::to_string(missing) + " of node " + std::to_string(node) +
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
            end_deliveries();
            return;
        }
        signal_.wait(seen, std::chrono::milliseconds(100));
    }
}

}  // namespace thresher::dist
