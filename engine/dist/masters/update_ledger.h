// UpdateLedger: what each origin's gradient-sharing messages and its "done" told this node -- one
// of NodeLink's parts (node_link.h "Routing", "Draining"), with its own lock. Per origin process:
//   the message numbers delivered here (a window: the floor, and those above it),
//   the first hole in them and since when (a hole later messages stand beside for
//     LinkDeadlines::hole went with a relay that died, and is given up),
//   its "done": how many messages it originated, the last epoch it evaluated, and whether the
//     drain gave up on the rest (lost with a relay).
// Every record belongs to one process of its origin: a call naming a newer incarnation starts the
// record afresh, one naming an older is refused (0: a transport without incarnations, always the
// current one). So a new process's messages can never be counted for its predecessor, whichever
// thread hears of it first. It never calls out.
#pragma once

#include "core/guarded.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "dist/net/datagram.h"

namespace thresher::dist {

class UpdateLedger {
public:
    using time_point = std::chrono::steady_clock::time_point;

    explicit UpdateLedger(int nodes);

    // Starts `origin`'s record afresh for process `incarnation` (nothing when it is that one already).
    void reset(int origin, std::uint64_t incarnation);

    enum class Claim { New, Duplicate, Stale };
    // Message `seq` of `origin`'s process `incarnation`: New the first time (it counts as delivered
    // from now on: the caller delivers it under the lock that ends deliveries), Duplicate when it came
    // already (by two routes), Stale for an earlier process's.
    Claim claim(int origin, std::uint64_t incarnation, std::uint64_t seq, time_point now);

    // Numbers up to `first` - 1 will never come (sent before this process was a destination).
    void advance_floor(int origin, std::uint64_t incarnation, std::uint64_t first);
    // Its "done": `originated` messages, the first meant for us, the last epoch it evaluated.
    void note_done(int origin, std::uint64_t incarnation, std::uint64_t originated, std::uint64_t first,
                   int evaluated, time_point now);

    // A hole in `origin`'s numbers that later ones have stood beside for `hole` is given up; returns
    // the numbers given up [first, last] when that happened now (the caller warns).
    struct Range {
        std::uint64_t first, last;
    };
    std::optional<Range> give_up_old_hole(int origin, time_point now, std::chrono::milliseconds hole);

    // For the drain: Drained (its "done" came and every message up to its count), Waiting, or
    // GaveUp (done, but nothing of it came for `stall`: the missing ones went with a relay; said once,
    // with how many are missing).
    enum class Drain { Drained, Waiting, GaveUp };
    Drain drain(int origin, time_point now, std::chrono::milliseconds stall, std::uint64_t* missing = nullptr);

    // Its "done" came after its evaluation part for an epoch before `epoch`: that part never comes.
    bool stopped_before(int origin, int epoch) const;

    std::uint64_t duplicates() const;

private:
    struct Record {
        std::uint64_t incarnation = 0;
        IdWindow window;
        std::uint64_t hole_floor = 0;
        time_point hole_since{};
        time_point last_news{};  // its last message or "done"
        bool done = false;
        std::uint64_t done_count = 0;
        int done_epoch = -1;
        bool given_up = false;
    };
    // The record of `origin` for process `incarnation`, started afresh for a newer one; nullptr for
    // an older one.
    Record* record(int origin, std::uint64_t incarnation) THRESHER_REQUIRES(mutex_);

    mutable Mutex mutex_;
    std::vector<Record> records_ THRESHER_GUARDED_BY(mutex_);
    std::uint64_t duplicates_ THRESHER_GUARDED_BY(mutex_) = 0;
};

}  // namespace thresher::dist
