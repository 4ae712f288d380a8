// A clock whose time moves only when the run cannot go on without it: when every thread that
// takes part (started with spawn()) waits on the clock, time jumps to the earliest deadline that
// anyone waits for, and those waits return. A test of a 10 s deadline thus takes the time its
// threads compute, not 10 s, and a deadline never fires because a loaded machine was slow: while
// any participant works, time stands still (clock.h says what components do to make this hold).
//
// Worked example: nodes 0 and 2 wait for node 1 (dead) with 100 ms polls and a 10 s silence
// deadline; node 0's worker computes. Time stands still until the worker waits too; then it
// moves 100 ms (the earliest poll), the polls find nothing and wait again, and so on: 100 moves
// later the silence deadline passes, in a few milliseconds of real time.
//
// Two safety valves, both counted so a test can report them:
//   settle  every participant must have waited, with nothing changing, for this long (real
//           time) before time moves: a thread woken by a plain notify (not through the clock)
//           has that long to say it is busy again;
//   stall   a participant stays busy but nothing changes for this long (real time): it is
//           blocked where the clock cannot see (a join outside idle_while). Time moves anyway,
//           as real time would (by at most `stall` a time), so such a mistake makes a test
//           slower, not stuck.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/clock.h"

namespace thresher {

class VirtualClock final : public Clock {
public:
    struct Options {
        std::chrono::microseconds settle{200};
        std::chrono::milliseconds stall{20};
        bool automatic = true;  // false: time moves only by advance()
    };
    VirtualClock();
    explicit VirtualClock(Options);
    ~VirtualClock() override;
    VirtualClock(const VirtualClock&) = delete;
    VirtualClock& operator=(const VirtualClock&) = delete;

    time_point now() const override;
    std::cv_status wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                              time_point deadline) override;
    void notify_all(std::condition_variable& cv) override;
    void idle_while(const std::function<void()>& blocking) override;
    void busy_while(const std::function<void()>& work) override;
    using Clock::wait_until;

    // Moves time forward by `d`, ending the waits it passes (with automatic = false, the only way).
    void advance(duration d);

    duration elapsed() const;     // how far time moved since construction
    std::uint64_t moves() const;  // how many times it moved
    std::uint64_t stalls() const; // of those, how many by the stall valve
    duration stalled() const;     // how far the stall valve moved time in all (at most real time)
    std::size_t waiting() const;  // threads waiting on the clock now (tests: "it has begun to wait")

private:
    struct Waiter {
        std::condition_variable* cv;
        time_point deadline;
        bool counted;        // a participant's wait: it is busy again once woken
        bool woken = false;  // by notify_all or by time; already counted busy
    };
    long admit() override;
    void adopt(long ticket, std::thread::id id) override;
    void bind(long ticket) override;
    void retire(long ticket) override;
    void join_thread(std::thread& t) override;
    bool participant() const;
    void mark_woken(Waiter& w);   // counts it busy again; caller holds mutex_
    void wake(Waiter& w);         // and notifies its condition variable; caller holds mutex_
    void move_to(time_point t);   // caller holds mutex_
    void busy_changed(int delta); // caller holds mutex_
    void run();                   // the thread that moves time

    Options options_;
    const time_point start_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;  // for the mover: busy_ reached 0, or a wait began
    time_point now_;
    int busy_ = 0;  // participants not waiting on the clock
    std::vector<Waiter*> waiters_;
    // Participants alive, by ticket: whether a participant joins it (and takes its place when it
    // ends); and their tickets by thread.
    long next_ticket_ = 0;
    std::map<long, bool> tickets_;
    std::map<std::thread::id, long> by_thread_;
    std::uint64_t generation_ = 0;  // changes whenever a participant starts or stops waiting
    std::uint64_t moves_ = 0, stalls_ = 0;
    duration stalled_{};
    bool quit_ = false;
    std::thread mover_;
};

}  // namespace thresher
