// Time as the node protocol sees it: now(), and waits on a condition variable until a deadline.
// Production passes real_clock() (steady_clock); tests pass a VirtualClock (virtual_clock.h),
// whose time moves only when every thread taking part in the run waits on it, so a 10 s
// deadline fires at once and no test sleeps (STYLE item 17).
//
// What a component does to be testable on a virtual clock:
//   - reads the time with clock.now(), waits with clock.wait_until / wait_for on its own
//     condition variable and wakes waiters with clock.notify_all(cv): the clock then knows that
//     a waiter has work again before it thinks of moving time;
//   - starts the threads that take part in the run with clock.spawn() and joins them (or waits
//     for anything else outside the clock) inside clock.idle_while(): a thread blocked where the
//     clock cannot see would otherwise look busy forever (and time would stand still), or a
//     thread not yet counted would look idle (and time would jump while it works).
// Durations that measure work (a phase's milliseconds in an event) stay on steady_clock: they are
// figures, not deadlines.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace thresher {

class Clock {
public:
    using time_point = std::chrono::steady_clock::time_point;
    using duration = std::chrono::steady_clock::duration;

    virtual ~Clock() = default;
    virtual time_point now() const = 0;
    // Blocks on `cv` (its mutex held by `lock`) until woken or `deadline` on this clock. Spurious
    // wakeups happen, as with std::condition_variable.
    virtual std::cv_status wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                                      time_point deadline) = 0;
    // Wakes every thread waiting on `cv` through this clock.
    virtual void notify_all(std::condition_variable& cv) { cv.notify_all(); }
    // Runs `blocking` (a join, a wait on something this clock does not see) with the calling
    // thread counted as waiting.
    virtual void idle_while(const std::function<void()>& blocking) { blocking(); }
    // Runs `work` with the calling thread counted as working, also inside idle_while: a barrier's
    // completion step runs in the last thread to arrive, which waits there in idle_while.
    virtual void busy_while(const std::function<void()>& work) { work(); }

    // A thread that takes part in the run: counted from before it starts until it ends.
    template <class F>
    std::thread spawn(F&& body) {
        const long ticket = admit();
        std::thread t([this, ticket, body = std::forward<F>(body)]() mutable {
            struct Retire {
                Clock* clock;
                long ticket;
                ~Retire() { clock->retire(ticket); }
            } retire{this, ticket};
            bind(ticket);
            body();
        });
        adopt(ticket, t.get_id());
        return t;
    }
    // Joins `t` (when joinable), counted as waiting until `t` ends; a VirtualClock hands the
    // ending thread's place to the joiner, so no instant passes with both counted idle.
    void join(std::thread& t) {
        if (t.joinable()) join_thread(t);
    }

    template <class Predicate>
    bool wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, time_point deadline,
                    Predicate done) {
        while (!done())
            if (wait_until(cv, lock, deadline) == std::cv_status::timeout) return done();
        return true;
    }
    // Until `done`, with no deadline (a VirtualClock moves no time for it).
    template <class Predicate>
    void wait(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Predicate done) {
        wait_until(cv, lock, time_point::max(), std::move(done));
    }
    template <class Rep, class Period>
    std::cv_status wait_for(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                            std::chrono::duration<Rep, Period> d) {
        return wait_until(cv, lock, now() + std::chrono::duration_cast<duration>(d));
    }
    template <class Rep, class Period, class Predicate>
    bool wait_for(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, std::chrono::duration<Rep, Period> d,
                  Predicate done) {
        return wait_until(cv, lock, now() + std::chrono::duration_cast<duration>(d), std::move(done));
    }
    // Waits `d` on this clock (a test's pause; production code waits for something instead).
    void sleep_for(duration d);

protected:
    // For spawn(): count a thread before it starts, tie it to its ticket, forget it when it ends.
    virtual long admit() { return 0; }
    virtual void adopt(long /*ticket*/, std::thread::id) {}
    virtual void bind(long /*ticket*/) {}
    virtual void retire(long /*ticket*/) {}
    virtual void join_thread(std::thread& t) {
        idle_while([&] { t.join(); });
    }
};

// The real clock (std::chrono::steady_clock and real waits); one for the process.
Clock& real_clock();

}  // namespace thresher
