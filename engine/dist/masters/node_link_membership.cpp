// NodeLink: peers and their processes -- who is a member, joining or gone, a peer's newest
// process (incarnation), noticing a lost peer, and the routes among those alive (node_link.h).
// Guarded by the link's lock: a new process of a peer resets its dedup window, its drain state
// and what the controller served it in one step, so these share the per-peer record.
#include "dist/masters/node_link.h"

#include "core/error.h"
#include "dist/masters/node_link_control.h"
#include "dist/masters/payload_io.h"

namespace thresher::dist {

using payload_io::get;
using payload_io::put;
using namespace node_link_control;

void NodeLink::set_state(int node, PeerState state) {
    peers_[static_cast<std::size_t>(node)].state = state;
    // Gradient sharing's staleness bound waits only for members' messages. Not once the master's
    // drain is over: it may be gone by then.
    if (delivering_ && sharing_) sharing_->set_node_waited(node, state == PeerState::Member);
}

bool NodeLink::heard_lately(int node) const {
    std::optional<std::chrono::steady_clock::time_point> last = transport_->last_heard(node);
    if (bulk_)
        if (const auto moved = bulk_->last_progress(node); moved && (!last || *moved > *last)) last = moved;
    return last && clock_->now() - *last < deadlines_.silence;
}

bool NodeLink::peer_lost(int node) {
    Peer& p = peers_[static_cast<std::size_t>(node)];
    if (p.state == PeerState::Gone) return true;
    for (int q : transport_->unreachable_peers())
        if (q == node) {
            if (heard_lately(node)) return false;  // its datagrams wait behind a busy link
            const bool joining = p.state == PeerState::Joining;
            set_state(node, PeerState::Gone);
            const std::string silent = std::to_string(deadlines_.silence.count() / 1000.0).substr(0, 4) + " s";
            warn("node " + std::to_string(node) + " stopped answering (nothing of it arrived for " + silent + ")" +
                 (joining ? " before it joined" : "") + "; the run goes on without it" +
                 (node != 0 ? " (started again with the same command line, it rejoins)" : ""));
            // If it is alive after all (a cut in one direction), it must not train on alone or wait
            // for us for ever: tell it, so that it ends with this as its error. Best effort.
            const std::string reason = "node " + std::to_string(cluster_.node_rank) + " heard nothing of this node (node " +
                                       std::to_string(node) + ") for " + silent +
                                       ", declared it gone and went on without it; this node's run ends here";
            Control gone;
            gone.kind = kGone;
            gone.reason = reason;
            transport_->send(node, MessageType::Control, pack_control(gone));
            clock_->notify_all(changed_);
            return true;
        }
    return false;
}

void NodeLink::poke(int node) {
    auto& last = peers_[static_cast<std::size_t>(node)].last_poke;
    const auto now = clock_->now();
    if (now - last < std::chrono::seconds(1)) return;
    last = now;
    transport_->send(node, MessageType::Heartbeat, {});
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
    // A process that did not exist when we sent our earlier messages: a restart, or a node absent
    // at the start that comes late. An original member heard of only now (its first datagram, or
    // in a relay chain its first relayed update) got everything from our number 1 on: the
    // transport holds data for a peer until it knows its process, and relays pass everything on.
    const bool fresh = restarted || p.state == PeerState::Gone;
    p.incarnation = incarnation;
    p.updates = IdWindow{};
    p.done = false;
    p.done_count = 0;
    p.given_up = false;
    p.hole_floor = 0;
    p.hole_since = {};
    p.first_seq = fresh ? updates_sent_ + 1 : 1;  // a new process gets only what we send from now on
    // Tell a new process where our numbers start for it: the ones below were never meant for it,
    // and without this it would wait for them as for messages a dead relay took (a hole given up
    // after LinkDeadlines::hole, with a warning, on a rejoined node that trained that long).
    if (fresh && p.first_seq > 1 && !(restarted && node == 0)) {
        Control first;
        first.kind = kFirst;
        first.first = p.first_seq;
        transport_->send(node, MessageType::Control, pack_control(first));
    }
    clock_->notify_all(changed_);
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
        Control stop;
        stop.kind = kStop;
        stop.reason = reason;
        transport_->send(0, MessageType::Control, pack_control(stop));
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

}  // namespace thresher::dist
