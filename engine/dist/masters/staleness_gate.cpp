#include "dist/masters/staleness_gate.h"

#include <algorithm>

#include "core/error.h"

namespace thresher::dist {

StalenessGate::StalenessGate(int workers, int self, std::optional<int> bound)
    : self_(self), bound_(bound), latest_(static_cast<std::size_t>(workers), -1), skipped_(latest_),
      waited_(static_cast<std::size_t>(workers), true), silent_(static_cast<std::size_t>(workers), 0) {
    if (bound && *bound < 0) throw ConfigError("the staleness bound must be 0 or more, got " + std::to_string(*bound));
    if (self < 0 || self >= workers) throw Error("staleness gate: worker " + std::to_string(self) + " out of range");
    waited_[static_cast<std::size_t>(self)] = false;
}

long StalenessGate::applied(int from, long iteration, long next) {
    if (from < 0 || from >= static_cast<int>(latest_.size())) return 0;
    long& latest = latest_[static_cast<std::size_t>(from)];
    latest = std::max(latest, iteration);
    silent_[static_cast<std::size_t>(from)] = 0;
    return std::max(0L, (next - 1) - iteration);
}

bool StalenessGate::satisfied(long next) const { return missing(next).empty(); }

std::vector<int> StalenessGate::missing(long next) const {
    std::vector<int> out;
    if (!bound_) return out;
    const long needed = next - 1 - *bound_;
    for (std::size_t w = 0; w < latest_.size(); ++w)
        if (waited_[w] && std::max(latest_[w], skipped_[w]) < needed) out.push_back(static_cast<int>(w));
    return out;
}

void StalenessGate::timed_out(const std::vector<int>& workers) {
    for (int w : workers)
        if (w >= 0 && w < static_cast<int>(silent_.size())) ++silent_[static_cast<std::size_t>(w)];
}

std::vector<int> StalenessGate::silent(int timeouts) const {
    std::vector<int> out;
    for (std::size_t w = 0; w < silent_.size(); ++w)
        if (waited_[w] && silent_[w] >= timeouts) out.push_back(static_cast<int>(w));
    return out;
}

void StalenessGate::skip_to(int worker, long iteration) {
    if (worker < 0 || worker >= static_cast<int>(skipped_.size())) return;
    long& skipped = skipped_[static_cast<std::size_t>(worker)];
    skipped = std::max(skipped, iteration);
}

void StalenessGate::set_waited(int worker, bool waited) {
    if (worker < 0 || worker >= static_cast<int>(waited_.size()) || worker == self_) return;
    waited_[static_cast<std::size_t>(worker)] = waited;
}

void StalenessGate::record_step(std::chrono::duration<double, std::milli> step) {
    // An EMA over about 10 steps: quick enough to follow an epoch boundary, steady enough that
    // one slow step (a page fault, a GC in a neighbour) does not halve the next deadline.
    const double ms = std::max(0.0, step.count());
    step_ms_ = step_ms_ == 0.0 ? ms : 0.9 * step_ms_ + 0.1 * ms;
}

std::chrono::milliseconds StalenessGate::deadline() const {
    const auto wait = std::chrono::milliseconds(static_cast<long>(4.0 * step_ms_));
    return std::clamp(wait, kMinWait, kMaxWait);
}

}  // namespace thresher::dist
