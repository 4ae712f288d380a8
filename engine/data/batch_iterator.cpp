// Deterministic shuffling and strided sharding (the arithmetic is laid out in the header).
#include "data/batch_iterator.h"

#include "data/augment.h"

#include "core/error.h"
#include "core/rng.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

namespace thresher::data {

namespace {
constexpr std::uint64_t kShufflePurpose = 0x5348554646;  // "SHUFF"
}  // namespace

void check_plan(const BatchPlan& plan) {
    if (plan.batch_size == 0) throw ConfigError("batch plan: batch_size: must be at least 1");
    if (plan.world < 1)
        throw ConfigError("batch plan: world: must be at least 1, got " +
                          std::to_string(plan.world));
    if (plan.rank < 0 || plan.rank >= plan.world) {
        throw ConfigError("batch plan: rank: " + std::to_string(plan.rank) + " is outside [0, " +
                          std::to_string(plan.world) + ")");
    }
}

std::size_t epoch_sample_count(const Dataset& ds, const BatchPlan& plan) {
    return plan.limit > 0 ? std::min(plan.limit, ds.count) : ds.count;
}

std::size_t batches_per_epoch(const Dataset& ds, const BatchPlan& plan) {
    check_plan(plan);
    const std::size_t step = plan.batch_size * static_cast<std::size_t>(plan.world);
    const std::size_t n = epoch_sample_count(ds, plan);
    return (n + step - 1) / step;
}

std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, int epoch, bool shuffle) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (shuffle) {
        Rng rng(derive_seed(seed, kShufflePurpose, static_cast<std::uint64_t>(epoch)));
        std::shuffle(order.begin(), order.end(), rng);
    }
    return order;
}

BatchIterator::BatchIterator(const Dataset& ds, BatchPlan plan) : ds_(&ds), plan_(plan) {
    batches_ = batches_per_epoch(ds, plan_);  // validates the plan
    const std::size_t n = epoch_sample_count(ds, plan_);
    const std::vector<std::size_t> order = epoch_order(n, plan_.seed, plan_.epoch, plan_.shuffle);
    const auto world = static_cast<std::size_t>(plan_.world);
    for (std::size_t pos = static_cast<std::size_t>(plan_.rank); pos < n; pos += world)
        shard_.push_back(order[pos]);
}

bool BatchIterator::next(Batch& out) {
    if (done_ >= batches_) return false;
    const std::size_t begin = std::min(done_ * plan_.batch_size, shard_.size());
    const std::size_t end = std::min(begin + plan_.batch_size, shard_.size());
    ++done_;

    const Dataset& ds = *ds_;
    const std::size_t fsize = ds.shape.size();
    const std::size_t tsize = ds.target_size;
    const bool with_labels = !ds.labels.empty();
    // Per-step targets carry one label per step (dataset.h).
    const std::size_t lsize = ds.target_steps > 0 ? static_cast<std::size_t>(ds.target_steps) : 1;
    out.count = end - begin;
    out.indices.assign(shard_.begin() + static_cast<std::ptrdiff_t>(begin),
                       shard_.begin() + static_cast<std::ptrdiff_t>(end));
    out.features.resize(out.count * fsize);
    out.targets.resize(out.count * tsize);
    out.labels.resize(with_labels ? out.count * lsize : 0);
    for (std::size_t i = 0; i < out.count; ++i) {
        const std::size_t s = out.indices[i];
        if (fsize)
            std::memcpy(out.features.data() + i * fsize, ds.sample(s), fsize * sizeof(float));
        if (tsize)
            std::memcpy(out.targets.data() + i * tsize, ds.targets.data() + s * tsize,
                        tsize * sizeof(float));
        if (with_labels) std::copy_n(ds.labels.data() + s * lsize, lsize, out.labels.data() + i * lsize);
        if (plan_.augment.active() && fsize)
            augment_sample(out.features.data() + i * fsize, ds.shape, plan_.augment, plan_.seed, plan_.epoch, s, scratch_);
    }
    return true;
}

}  // namespace thresher::data
