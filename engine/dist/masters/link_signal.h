// LinkSignal: "something changed" for NodeLink's waits. The link's parts (membership.h,
// update_ledger.h, join_desk.h, evaluation_gather.h, round_book.h) each guard their own state with
// their own lock, so no one condition variable belongs to the state a wait looks at. A waiter
// instead reads the signal's generation, looks at the parts it needs (each taking its own lock),
// and sleeps until the generation moves on or its poll interval ends:
//
//     for (;;) {
//         const auto seen = signal.generation();
//         if (everything_in()) break;      // looks at the parts
//         signal.wait(seen, 100ms);        // returns at once if anything changed since `seen`
//     }
//
// A change made between the look and the wait bumps the generation first, so no wake is lost.
// Waits go through the run's Clock: on a VirtualClock a waiter counts as idle, a notify as a wake.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "core/clock.h"

namespace thresher::dist {

class LinkSignal {
public:
    explicit LinkSignal(Clock& clock) : clock_(&clock) {}
    std::uint64_t generation() const;
    void notify();
    // Until the generation differs from `seen`, or `at_most` has passed on the clock.
    void wait(std::uint64_t seen, std::chrono::milliseconds at_most);

private:
    Clock* clock_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::uint64_t generation_ = 0;
};

}  // namespace thresher::dist
