#include "dist/masters/evaluation_gather.h"

namespace thresher::dist {

void EvaluationGather::add(int epoch, int node, nlohmann::json part) {
    MutexLock lock(mutex_);
    parts_[epoch].insert_or_assign(node, std::move(part));
}

bool EvaluationGather::has(int epoch, int node) const {
    MutexLock lock(mutex_);
    const auto it = parts_.find(epoch);
    return it != parts_.end() && it->second.count(node);
}

void EvaluationGather::sent(int epoch) {
    MutexLock lock(mutex_);
    sent_ = epoch;
}

int EvaluationGather::last_sent() const {
    MutexLock lock(mutex_);
    return sent_;
}

}  // namespace thresher::dist
