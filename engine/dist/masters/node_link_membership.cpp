// NodeLink: peers and their processes -- acting on what membership.h decides: a new process of a
// peer, noticing a lost peer (liveness from progress), heartbeats while waiting, and the routes
// among those alive (node_link.h).
#include "dist/masters/node_link.h"

#include "core/error.h"
#include "dist/masters/node_link_control.h"

namespace thresher::dist {

using namespace node_link_control;

bool NodeLink::heard_lately(int node) const {
    std::optional<std::chrono::steady_clock::time_point> last = transport_->last_heard(node);
    if (bulk_)
        if (const auto moved = bulk_->last_progress(node); moved && (!last || *moved > *last)) last = moved;
    return last && clock_->now() - *last < deadlines_.silence;
}

bool NodeLink::peer_lost(int node) {
    if (membership_.state(node) == PeerState::Gone) return true;
    bool unreachable = false;
    for (int q : transport_->unreachable_peers()) unreachable = unreachable || q == node;
    if (!unreachable || heard_lately(node)) return false;  // alive, or its datagrams wait behind a busy link
    bool joining = false;
    const bool finished = membership_.has_finished(node);
    if (!membership_.make_gone(node, &joining)) return true;  // another thread declared it just now
    if (finished) {
        // It said its part of the run was over, and its process has ended since: no loss to report.
        signal_.notify();
        return true;
    }
    const std::string silent = std::to_string(deadlines_.silence.count() / 1000.0).substr(0, 4) + " s";
    warn("node " + std::to_string(node) + " stopped answering (nothing of it arrived for " + silent + ")" +
         (joining ? " before it joined" : "") + "; the run goes on without it" +
         (node != 0 ? " (started again with the same command line, it rejoins)" : ""));
    // If it is alive after all (a cut in one direction), it must not train on alone or wait for us
    // for ever: tell it, so that it ends with this as its error. Best effort.
    Control gone;
    gone.kind = kGone;
    gone.reason = "node " + std::to_string(cluster_.node_rank) + " heard nothing of this node (node " +
                  std::to_string(node) + ") for " + silent +
                  ", declared it gone and went on without it; this node's run ends here";
    transport_->send(node, MessageType::Control, pack_control(gone));
    signal_.notify();
    return true;
}

void NodeLink::poke(int node) {
    if (membership_.due_poke(node, clock_->now())) transport_->send(node, MessageType::Heartbeat, {});
}

void NodeLink::set_topology(const Topology& topology) { topology_ = topology; }

Routes NodeLink::routes(bool rounds) const {
    const std::vector<bool> live = membership_.live(rounds);
    if (rounds)
        return Routes(Topology{topology_.tree_rounds ? TopologyKind::Tree : TopologyKind::Relay, topology_.fanout, true},
                      live);
    return Routes(topology_, live);
}

bool NodeLink::observe(int node, std::uint64_t incarnation) {
    const auto o = membership_.observe(node, incarnation, updates_sent_.load());
    if (!o.new_process) return o.accept;
    ledger_.reset(node, incarnation);
    // Tell a new process where our numbers start for it: the ones below were never meant for it,
    // and without this it would wait for them as for messages a dead relay took (a hole given up
    // after LinkDeadlines::hole, with a warning, on a rejoined node that trained that long).
    if (o.tell_first) {
        Control first;
        first.kind = kFirst;
        first.first = o.first_seq;
        transport_->send(node, MessageType::Control, pack_control(first));
    }
    signal_.notify();
    if (o.controller_restarted) {
        // The run's parameters and position lived in the process that died, and a new node 0
        // would start the run over and feed that into ours: it is ignored, and told to stop.
        warn("the controller (node 0) was restarted; a controller cannot rejoin a running run (the run's "
             "state was in the process that died): the run goes on without it, and the new node 0 is told to stop");
        Control stop;
        stop.kind = kStop;
        stop.reason = "node " + std::to_string(cluster_.node_rank) +
                      " reports the run was already going on when this node 0 started: the controller cannot rejoin a "
                      "running run; start the whole run again";
        transport_->send(0, MessageType::Control, pack_control(stop));
        return false;
    }
    if (o.restarted)
        warn("node " + std::to_string(node) + " was restarted (its earlier process is gone); it rejoins once the "
             "controller (node 0) has sent it the current parameters");
    // A process that came after our "done" needs one of its own, or it would wait for it. (The
    // drain sets done_sent_ before it lists the peers to send "done" to: one of the two sends it.)
    if (done_sent_.load() && membership_.state(node) != PeerState::Gone)
        transport_->send(node, MessageType::Control, done_payload(node));
    return true;
}

}  // namespace thresher::dist
