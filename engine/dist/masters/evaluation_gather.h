// EvaluationGather: the parts of a distributed evaluation -- one of NodeLink's parts (node_link.h),
// with its own lock. On the controller, each node's result for each epoch as it arrives; on every
// node, the last epoch it sent its own part for (told with "done", so the controller does not wait
// for parts a stopped node will never send). It never calls out.
#pragma once

#include "core/guarded.h"

#include <map>

#include <nlohmann/json.hpp>

namespace thresher::dist {

class EvaluationGather {
public:
    void add(int epoch, int node, nlohmann::json part);
    bool has(int epoch, int node) const;
    // Takes the parts of `epoch` of the nodes for which `keep` says true; forgets the epoch.
    template <typename Keep>
    std::map<int, nlohmann::json> take(int epoch, Keep keep) {
        MutexLock lock(mutex_);
        std::map<int, nlohmann::json> out;
        if (auto it = parts_.find(epoch); it != parts_.end()) {
            for (auto& [node, part] : it->second)
                if (keep(node)) out.emplace(node, std::move(part));
            parts_.erase(it);
        }
        return out;
    }
    void sent(int epoch);
    int last_sent() const;  // -1 before the first

private:
    mutable Mutex mutex_;
    std::map<int, std::map<int, nlohmann::json>> parts_ THRESHER_GUARDED_BY(mutex_);  // epoch -> node -> its part
    int sent_ THRESHER_GUARDED_BY(mutex_) = -1;
};

}  // namespace thresher::dist
