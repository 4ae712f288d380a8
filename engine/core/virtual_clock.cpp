#include "core/virtual_clock.h"

#include <algorithm>

namespace thresher {

namespace {

// The clock whose participant the current thread is (spawn() binds it), and how deep it is in
// idle_while: a barrier's completion step runs inside the last arriver's idle_while and may wait
// on the clock itself, which must not count the thread idle twice.
thread_local const VirtualClock* tl_clock = nullptr;
thread_local int tl_idle_depth = 0;

// A wait also looks again this often in real time: the mover wakes a waiter without holding its
// mutex, so a wakeup can slip in before the waiter blocks; it is then seen within this long.
constexpr auto kRecheck = std::chrono::milliseconds(5);

}  // namespace

VirtualClock::VirtualClock() : VirtualClock(Options{}) {}

VirtualClock::VirtualClock(Options options)
    : options_(options), start_(std::chrono::steady_clock::now()), now_(start_) {
    if (options_.automatic) mover_ = std::thread([this] { run(); });
}

VirtualClock::~VirtualClock() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
    }
    changed_.notify_all();
    if (mover_.joinable()) mover_.join();
}

Clock::time_point VirtualClock::now() const {
    std::lock_guard lock(mutex_);
    return now_;
}

Clock::duration VirtualClock::elapsed() const {
    std::lock_guard lock(mutex_);
    return now_ - start_;
}

std::uint64_t VirtualClock::moves() const {
    std::lock_guard lock(mutex_);
    return moves_;
}

std::uint64_t VirtualClock::stalls() const {
    std::lock_guard lock(mutex_);
    return stalls_;
}

Clock::duration VirtualClock::stalled() const {
    std::lock_guard lock(mutex_);
    return stalled_;
}

std::size_t VirtualClock::waiting() const {
    std::lock_guard lock(mutex_);
    return waiters_.size();
}

bool VirtualClock::participant() const { return tl_clock == this && tl_idle_depth == 0; }

void VirtualClock::busy_changed(int delta) {
    busy_ += delta;
    ++generation_;
    if (busy_ == 0) changed_.notify_all();
}

long VirtualClock::admit() {
    std::lock_guard lock(mutex_);
    busy_changed(+1);
    tickets_[++next_ticket_] = false;
    return next_ticket_;
}

void VirtualClock::adopt(long ticket, std::thread::id id) {
    std::lock_guard lock(mutex_);
    if (tickets_.count(ticket)) by_thread_[id] = ticket;  // else it has ended already
}

void VirtualClock::bind(long) { tl_clock = this; }

void VirtualClock::retire(long ticket) {
    tl_clock = nullptr;
    std::lock_guard lock(mutex_);
    const bool joined = tickets_[ticket];
    tickets_.erase(ticket);
    by_thread_.erase(std::this_thread::get_id());
    if (joined)
        ++generation_;  // its joiner is busy again from this instant: its count carries on
    else
        busy_changed(-1);
}

void VirtualClock::join_thread(std::thread& t) {
    if (participant()) {
        std::lock_guard lock(mutex_);
        const auto it = by_thread_.find(t.get_id());
        if (it != by_thread_.end() && !tickets_[it->second]) {
            tickets_[it->second] = true;
            busy_changed(-1);  // waiting for it; it gives its count back to us as it ends
        }
    }
    t.join();
}

void VirtualClock::mark_woken(Waiter& w) {
    if (w.woken) return;
    w.woken = true;
    if (w.counted) busy_changed(+1);
}

void VirtualClock::wake(Waiter& w) {
    if (w.woken) return;
    mark_woken(w);
    w.cv->notify_all();
}

std::cv_status VirtualClock::wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                                        time_point deadline) {
    Waiter w{&cv, deadline, participant()};
    {
        std::lock_guard guard(mutex_);
        if (now_ >= deadline) return std::cv_status::timeout;
        waiters_.push_back(&w);
        if (w.counted) busy_changed(-1);
        changed_.notify_all();  // a new deadline for the mover
    }
    for (;;) {
        const bool notified = cv.wait_for(lock, kRecheck) == std::cv_status::no_timeout;
        std::lock_guard guard(mutex_);
        // A plain notify, a spurious wakeup, or time passed while we looked away. Not wake(): its
        // notify would rouse the other waiters on `cv`, and they us, for ever.
        if (notified || now_ >= deadline) mark_woken(w);
        if (!w.woken) continue;
        waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &w));
        return now_ >= deadline ? std::cv_status::timeout : std::cv_status::no_timeout;
    }
}

void VirtualClock::notify_all(std::condition_variable& cv) {
    {
        std::lock_guard guard(mutex_);
        for (Waiter* w : waiters_)
            if (w->cv == &cv) wake(*w);
    }
    cv.notify_all();
}

void VirtualClock::idle_while(const std::function<void()>& blocking) {
    if (!participant()) return blocking();
    {
        std::lock_guard guard(mutex_);
        busy_changed(-1);
        ++tl_idle_depth;
    }
    struct Busy {
        VirtualClock* clock;
        ~Busy() {
            std::lock_guard guard(clock->mutex_);
            --tl_idle_depth;
            clock->busy_changed(+1);
        }
    } busy{this};
    blocking();
}

void VirtualClock::busy_while(const std::function<void()>& work) {
    if (tl_clock != this || tl_idle_depth == 0) return work();
    const int depth = tl_idle_depth;
    {
        std::lock_guard guard(mutex_);
        busy_changed(+1);
        tl_idle_depth = 0;
    }
    struct Idle {
        VirtualClock* clock;
        int depth;
        ~Idle() {
            std::lock_guard guard(clock->mutex_);
            tl_idle_depth = depth;
            clock->busy_changed(-1);
        }
    } idle{this, depth};
    work();
}

void VirtualClock::move_to(time_point t) {
    if (t <= now_) return;
    now_ = t;
    ++moves_;
    ++generation_;
    for (Waiter* w : waiters_)
        if (w->deadline <= now_) wake(*w);
}

void VirtualClock::advance(duration d) {
    std::lock_guard guard(mutex_);
    move_to(now_ + d);
}

void VirtualClock::run() {
    std::unique_lock lock(mutex_);
    const auto earliest = [&] {
        time_point t = time_point::max();
        for (const Waiter* w : waiters_)
            if (!w->woken) t = std::min(t, w->deadline);
        return t;
    };
    while (!quit_) {
        if (earliest() == time_point::max()) {
            changed_.wait(lock);
            continue;
        }
        const std::uint64_t seen = generation_;
        if (busy_ == 0) {
            changed_.wait_for(lock, options_.settle);
            if (busy_ == 0 && generation_ == seen && earliest() != time_point::max()) move_to(earliest());
            continue;
        }
        changed_.wait_for(lock, options_.stall);
        if (!quit_ && busy_ > 0 && generation_ == seen && earliest() != time_point::max()) {
            // As real time would pass for a thread blocked out of sight: no further than the
            // valve waited, so a far deadline (a test's minute) is not reached in one jump.
            ++stalls_;
            const time_point to = std::min(earliest(), now_ + options_.stall);
            stalled_ += to - now_;
            move_to(to);
        }
    }
}

}  // namespace thresher
