// Membership: which nodes take part in the run and which process of each counts -- one of
// NodeLink's parts (node_link.h), with its own lock. Per node:
//   state        Member (waited for), Joining (a new process that has not joined yet: sent
//                updates, not waited for) or Gone (lost, left, or absent at the start);
//   incarnation  the process whose messages count (transport incarnations grow with each start);
//   first_seq    our first message number that process is a destination of;
//   last_poke    when we last sent it a heartbeat while waiting on it;
//   finished     that process said its part of the run is over (its silence then is no loss).
// It decides; the link acts: observe() says what a new process means (reset what was counted for
// the old one, tell it where our numbers start, stop a restarted controller) and the link sends.
// The only call out is the state hook (gradient sharing's staleness bound waits for members),
// made under this lock; the hook must not call back into the link.
#pragma once

#include "core/guarded.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace thresher::dist {

enum class PeerState { Member, Joining, Gone };

class Membership {
public:
    using time_point = std::chrono::steady_clock::time_point;
    // Told every change of a node's state: whether it is now waited for.
    using StateHook = std::function<void(int node, bool waited)>;

    Membership(int nodes, int me);
    void set_hook(StateHook hook);  // before the link's threads start; replays every node's state

    // What observing a process of a node means.
    struct Observed {
        bool accept = true;        // messages of that process count
        bool new_process = false;  // newer than the one known: what was counted for the old one goes
        bool restarted = false;    // a process was known before (not a first hearing)
        bool controller_restarted = false;  // node 0 came back: ignore it for good, tell it to stop
        std::uint64_t first_seq = 1;        // where our numbers start for it
        bool tell_first = false;            // send it first_seq (kFirst)
    };
    // Notes process `incarnation` of `node` (0: a transport without incarnations). `sent`: how many
    // messages we originated so far (a new process gets only what we send from now on).
    Observed observe(int node, std::uint64_t incarnation, std::uint64_t sent);

    PeerState state(int node) const;
    bool waited_for(int node) const { return state(node) == PeerState::Member; }
    std::uint64_t incarnation(int node) const;
    std::uint64_t first_seq(int node) const;
    bool controller_replaced() const;
    // Whether a message of process `incarnation` (0: unknown) is of the process that counts.
    bool current(int node, std::uint64_t incarnation) const;

    void set_state(int node, PeerState state);
    // Makes `node` a member; false when it was one already and `again` is false (nothing to announce).
    bool make_member(int node, bool again);
    // Gone now, if not gone already (true: this call made it so). `was_joining`: it had not joined.
    bool make_gone(int node, bool* was_joining = nullptr);
    // Gone on its own word (kLeft) when the message is of the process that counts; true if it changed.
    bool leave(int node, std::uint64_t incarnation);
    // Its process said it finished (kFinished): when it falls silent it is gone without a word.
    void finished(int node, std::uint64_t incarnation);
    bool has_finished(int node) const;

    // Who is alive for routing: ourselves, and members (rounds) or everyone not gone (updates).
    std::vector<bool> live(bool rounds_only) const;
    std::vector<int> not_gone() const;  // other nodes, not gone
    std::vector<bool> members() const;  // by node; ourselves included
    // True once a second per node: time to send it a heartbeat.
    bool due_poke(int node, time_point now);

private:
    struct Peer {
        PeerState state = PeerState::Member;
        std::uint64_t incarnation = 0;
        std::uint64_t first_seq = 1;
        time_point last_poke{};
        bool finished = false;  // this process said its part of the run is over
    };
    void change(int node, PeerState state) THRESHER_REQUIRES(mutex_);

    int nodes_;
    int me_;
    mutable Mutex mutex_;
    std::vector<Peer> peers_ THRESHER_GUARDED_BY(mutex_);
    bool controller_replaced_ THRESHER_GUARDED_BY(mutex_) = false;
    StateHook hook_ THRESHER_GUARDED_BY(mutex_);
};

}  // namespace thresher::dist
