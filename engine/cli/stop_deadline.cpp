// StopDeadline: see stop_deadline.h.
#include "cli/stop_deadline.h"

namespace thresher::cli {

StopDeadline::StopDeadline(std::chrono::milliseconds deadline, LastWords last_words, std::chrono::milliseconds grace,
                           End end)
    : deadline_(deadline), last_words_(std::move(last_words)), grace_(grace), end_(std::move(end)) {}

StopDeadline::~StopDeadline() {
    {
        std::lock_guard lock(mutex_);
        cancelled_ = true;
    }
    cv_.notify_all();
    if (countdown_.joinable()) countdown_.join();
    // Assigned by the countdown thread, joined above: no other thread touches it now.
    if (grace_timer_.joinable()) grace_timer_.join();
}

void StopDeadline::start(const std::string& reason) {
    std::lock_guard lock(mutex_);
    if (started_ || cancelled_) return;
    started_ = true;
    countdown_ = std::thread([this, reason] { count_down(reason); });
}

void StopDeadline::count_down(std::string reason) {
    {
        std::unique_lock lock(mutex_);
        if (cv_.wait_for(lock, deadline_, [&] { return cancelled_; })) return;  // the run ended in time
        // Expired: past here nothing cancels. The last words get `grace_`, then the timer ends the
        // process whatever they are stuck on. With the production End (std::_Exit) this thread or
        // the timer ends the process while the other may still run: nothing joins them then, the
        // process is gone.
        grace_timer_ = std::thread([this] {
            std::unique_lock timer_lock(mutex_);
            if (cv_.wait_for(timer_lock, grace_, [&] { return last_words_said_; })) return;
            timer_lock.unlock();
            end_once();
        });
    }
    if (last_words_) last_words_(reason);
    {
        std::lock_guard lock(mutex_);
        last_words_said_ = true;
    }
    cv_.notify_all();
    end_once();
}

void StopDeadline::end_once() {
    {
        std::lock_guard lock(mutex_);
        if (ended_) return;
        ended_ = true;
    }
    end_(kExitStopped);
}

}  // namespace thresher::cli
