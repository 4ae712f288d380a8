#include "dist/masters/link_signal.h"

namespace thresher::dist {

std::uint64_t LinkSignal::generation() const {
    std::lock_guard lock(mutex_);
    return generation_;
}

void LinkSignal::notify() {
    std::lock_guard lock(mutex_);
    ++generation_;
    clock_->notify_all(cv_);
}

void LinkSignal::wait(std::uint64_t seen, std::chrono::milliseconds at_most) {
    std::unique_lock lock(mutex_);
    clock_->wait_for(cv_, lock, at_most, [&] { return generation_ != seen; });
}

}  // namespace thresher::dist
