#include "dist/masters/membership.h"

namespace thresher::dist {

Membership::Membership(int nodes, int me) : nodes_(nodes), me_(me), peers_(static_cast<std::size_t>(nodes)) {}

void Membership::set_hook(StateHook hook) {
    MutexLock lock(mutex_);
    hook_ = std::move(hook);
    if (hook_)
        for (int node = 0; node < nodes_; ++node)
            if (node != me_) hook_(node, peers_[static_cast<std::size_t>(node)].state == PeerState::Member);
}

void Membership::change(int node, PeerState state) {
    peers_[static_cast<std::size_t>(node)].state = state;
    if (hook_) hook_(node, state == PeerState::Member);
}

Membership::Observed Membership::observe(int node, std::uint64_t incarnation, std::uint64_t sent) {
    MutexLock lock(mutex_);
    Observed o;
    Peer& p = peers_[static_cast<std::size_t>(node)];
    if (node == 0 && controller_replaced_) {
        o.accept = false;
        return o;
    }
    o.first_seq = p.first_seq;
    if (incarnation == 0 || incarnation == p.incarnation) return o;
    if (incarnation < p.incarnation) {  // its predecessor's, still queued behind
        o.accept = false;
        return o;
    }
    o.new_process = true;
    o.restarted = p.incarnation != 0;
    // A process that did not exist when we sent our earlier messages: a restart, or a node absent
    // at the start that comes late. An original member heard of only now (its first datagram, or
    // in a relay chain its first relayed update) got everything from our number 1 on: the
    // transport holds data for a peer until it knows its process, and relays pass everything on.
    const bool fresh = o.restarted || p.state == PeerState::Gone;
    p.incarnation = incarnation;
    p.finished = false;
    p.first_seq = fresh ? sent + 1 : 1;
    o.first_seq = p.first_seq;
    o.tell_first = fresh && p.first_seq > 1 && !(o.restarted && node == 0);
    if (o.restarted && node == 0) {
        // The run's parameters and position lived in the process that died, and a new node 0
        // would start the run over and feed that into ours: ignore it for good.
        controller_replaced_ = true;
        change(node, PeerState::Gone);
        o.controller_restarted = true;
        o.accept = false;
        return o;
    }
    if (o.restarted || p.state == PeerState::Gone) change(node, PeerState::Joining);  // restarted, or absent at the start
    return o;
}

PeerState Membership::state(int node) const {
    MutexLock lock(mutex_);
    return peers_[static_cast<std::size_t>(node)].state;
}

std::uint64_t Membership::incarnation(int node) const {
    MutexLock lock(mutex_);
    return peers_[static_cast<std::size_t>(node)].incarnation;
}

std::uint64_t Membership::first_seq(int node) const {
    MutexLock lock(mutex_);
    return peers_[static_cast<std::size_t>(node)].first_seq;
}

bool Membership::controller_replaced() const {
    MutexLock lock(mutex_);
    return controller_replaced_;
}

bool Membership::current(int node, std::uint64_t incarnation) const {
    MutexLock lock(mutex_);
    return incarnation == 0 || peers_[static_cast<std::size_t>(node)].incarnation == incarnation;
}

void Membership::set_state(int node, PeerState state) {
    MutexLock lock(mutex_);
    change(node, state);
}

bool Membership::make_member(int node, bool again) {
    MutexLock lock(mutex_);
    if (peers_[static_cast<std::size_t>(node)].state == PeerState::Member && !again) return false;
    change(node, PeerState::Member);
    return true;
}

bool Membership::make_gone(int node, bool* was_joining) {
    MutexLock lock(mutex_);
    const PeerState before = peers_[static_cast<std::size_t>(node)].state;
    if (was_joining) *was_joining = before == PeerState::Joining;
    if (before == PeerState::Gone) return false;
    change(node, PeerState::Gone);
    return true;
}

bool Membership::leave(int node, std::uint64_t incarnation) {
    MutexLock lock(mutex_);
    Peer& p = peers_[static_cast<std::size_t>(node)];
    if (p.state == PeerState::Gone || (incarnation != 0 && p.incarnation != incarnation)) return false;
    change(node, PeerState::Gone);
    return true;
}

void Membership::finished(int node, std::uint64_t incarnation) {
    MutexLock lock(mutex_);
    Peer& p = peers_[static_cast<std::size_t>(node)];
    if (incarnation == 0 || p.incarnation == incarnation) p.finished = true;
}

bool Membership::has_finished(int node) const {
    MutexLock lock(mutex_);
    return peers_[static_cast<std::size_t>(node)].finished;
}

std::vector<bool> Membership::live(bool rounds_only) const {
    MutexLock lock(mutex_);
    std::vector<bool> out(static_cast<std::size_t>(nodes_), false);
    for (int node = 0; node < nodes_; ++node) {
        const PeerState s = peers_[static_cast<std::size_t>(node)].state;
        out[static_cast<std::size_t>(node)] = node == me_ || (rounds_only ? s == PeerState::Member : s != PeerState::Gone);
    }
    return out;
}

std::vector<int> Membership::not_gone() const {
    MutexLock lock(mutex_);
    std::vector<int> out;
    for (int node = 0; node < nodes_; ++node)
        if (node != me_ && peers_[static_cast<std::size_t>(node)].state != PeerState::Gone) out.push_back(node);
    return out;
}

std::vector<bool> Membership::members() const {
    MutexLock lock(mutex_);
    std::vector<bool> out(static_cast<std::size_t>(nodes_), false);
    for (int node = 0; node < nodes_; ++node)
        out[static_cast<std::size_t>(node)] = node == me_ || peers_[static_cast<std::size_t>(node)].state == PeerState::Member;
    return out;
}

bool Membership::due_poke(int node, time_point now) {
    MutexLock lock(mutex_);
    auto& last = peers_[static_cast<std::size_t>(node)].last_poke;
    if (now - last < std::chrono::seconds(1)) return false;
    last = now;
    return true;
}

}  // namespace thresher::dist
