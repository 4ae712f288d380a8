#include "core/clock.h"

namespace thresher {

namespace {

class RealClock final : public Clock {
public:
    time_point now() const override { return std::chrono::steady_clock::now(); }
    std::cv_status wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                              time_point deadline) override {
        if (deadline == time_point::max()) {  // no deadline: the conversion to the OS's clock would overflow
            cv.wait(lock);
            return std::cv_status::no_timeout;
        }
        return cv.wait_until(lock, deadline);
    }
};

}  // namespace

Clock& real_clock() {
    static RealClock clock;
    return clock;
}

void Clock::sleep_for(duration d) {
    std::mutex mutex;
    std::condition_variable never;  // nobody notifies it: only the deadline ends the wait
    std::unique_lock lock(mutex);
    const auto deadline = now() + d;
    while (now() < deadline) wait_until(never, lock, deadline);
}

}  // namespace thresher
