#include "dist/masters/update_ledger.h"

namespace thresher::dist {

UpdateLedger::UpdateLedger(int nodes) : records_(static_cast<std::size_t>(nodes)) {}

UpdateLedger::Record* UpdateLedger::record(int origin, std::uint64_t incarnation) {
    Record& r = records_[static_cast<std::size_t>(origin)];
    if (incarnation == 0 || incarnation == r.incarnation) return &r;
    if (incarnation < r.incarnation) return nullptr;
    r = Record{};
    r.incarnation = incarnation;
    return &r;
}

void UpdateLedger::reset(int origin, std::uint64_t incarnation) {
    MutexLock lock(mutex_);
    record(origin, incarnation);
}

UpdateLedger::Claim UpdateLedger::claim(int origin, std::uint64_t incarnation, std::uint64_t seq, time_point now) {
    MutexLock lock(mutex_);
    Record* r = record(origin, incarnation);
    if (!r) return Claim::Stale;
    if (r->window.state(seq) != IdWindow::State::New) {
        ++duplicates_;
        return Claim::Duplicate;
    }
    r->window.mark_done(seq);
    r->last_news = now;
    return Claim::New;
}

void UpdateLedger::advance_floor(int origin, std::uint64_t incarnation, std::uint64_t first) {
    MutexLock lock(mutex_);
    if (Record* r = record(origin, incarnation)) r->window.advance_floor(first - 1);
}

void UpdateLedger::note_done(int origin, std::uint64_t incarnation, std::uint64_t originated, std::uint64_t first,
                             int evaluated, time_point now) {
    MutexLock lock(mutex_);
    Record* r = record(origin, incarnation);
    if (!r) return;
    r->done = true;
    r->done_count = originated;
    r->window.advance_floor(first - 1);  // sent before we were its destination: never coming
    r->last_news = now;
    r->done_epoch = evaluated;  // kEveryEpoch from an older engine: assume every part comes
}

std::optional<UpdateLedger::Range> UpdateLedger::give_up_old_hole(int origin, time_point now,
                                                                  std::chrono::milliseconds hole) {
    MutexLock lock(mutex_);
    Record& o = records_[static_cast<std::size_t>(origin)];
    const auto end = o.window.lowest_above();
    if (!end) {
        o.hole_since = {};
        return std::nullopt;
    }
    if (o.hole_since == time_point{} || o.hole_floor != o.window.floor()) {
        o.hole_floor = o.window.floor();  // a new first hole
        o.hole_since = now;
        return std::nullopt;
    }
    if (now - o.hole_since < hole) return std::nullopt;
    const Range gone{o.window.floor() + 1, *end - 1};
    o.window.advance_floor(gone.last);
    o.hole_floor = o.window.floor();
    o.hole_since = o.window.lowest_above() ? now : time_point{};
    return gone;
}

UpdateLedger::Drain UpdateLedger::drain(int origin, time_point now, std::chrono::milliseconds stall,
                                        std::uint64_t* missing) {
    MutexLock lock(mutex_);
    Record& p = records_[static_cast<std::size_t>(origin)];
    if (p.given_up || (p.done && p.window.floor() >= p.done_count)) return Drain::Drained;
    if (!p.done || now - p.last_news <= stall) return Drain::Waiting;
    p.given_up = true;
    // Not done_count - floor: the messages past the first hole that did arrive count too.
    const std::uint64_t here = p.window.floor() + p.window.above_floor();
    if (missing) *missing = p.done_count > here ? p.done_count - here : 0;
    return Drain::GaveUp;
}

bool UpdateLedger::stopped_before(int origin, int epoch) const {
    MutexLock lock(mutex_);
    const Record& p = records_[static_cast<std::size_t>(origin)];
    return p.done && p.done_epoch < epoch;
}

std::uint64_t UpdateLedger::duplicates() const {
    MutexLock lock(mutex_);
    return duplicates_;
}

}  // namespace thresher::dist
