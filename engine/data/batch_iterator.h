// Splits one epoch of a Dataset into mini-batches for one worker of a (possibly distributed) run.
//
// The epoch order is a permutation of [0, n) drawn from (seed, epoch). Worker `rank` of `world`
// takes every world-th position of it (strided sharding), then consecutive runs of batch_size:
//
//   n = 10, world = 2, batch_size = 2, permutation p0..p9
//   rank 0: shard p0 p2 p4 p6 p8 -> batches {p0 p2} {p4 p6} {p8}
//   rank 1: shard p1 p3 p5 p7 p9 -> batches {p1 p3} {p5 p7} {p9}
//
// Step b over all ranks is therefore positions [b*world*B, (b+1)*world*B) of the permutation:
// exactly the batch of world*B a single worker would take at step b, which is what lets a
// distributed run be checked against a single-process one.
//
// Every rank yields the same number of batches, batches_per_epoch(), so collective steps stay
// in lockstep. When n is not a multiple of world*B the final step is short, and a rank whose
// shard has run out then gets a batch with count 0 (only ever at the final step).
#pragma once

#include "data/batch.h"
#include "data/batch_source.h"
#include "data/dataset.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace thresher::data {

// Throws thresher::ConfigError for batch_size 0, world < 1 or rank outside [0, world).
void check_plan(const BatchPlan& plan);

// Samples in play: plan.limit when it is set and smaller than ds.count, else ds.count.
std::size_t epoch_sample_count(const Dataset& ds, const BatchPlan& plan);

// Steps in one epoch, the same for every rank: ceil(n / (world * batch_size)).
std::size_t batches_per_epoch(const Dataset& ds, const BatchPlan& plan);

// The epoch's permutation of [0, n): identity when !shuffle, else std::shuffle driven by
// Rng(derive_seed(seed, "SHUFF", epoch)).
std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, int epoch, bool shuffle);

class BatchIterator final : public BatchSource {
public:
    // Throws thresher::ConfigError for batch_size 0, world < 1 or rank outside [0, world).
    // `ds` must outlive the iterator.
    BatchIterator(const Dataset& ds, BatchPlan plan);

    // Fills `out` with the next batch (reusing its vectors); false once the epoch is done.
    bool next(Batch& out) override;

    std::size_t batches() const override { return batches_; }
    std::size_t batches_done() const { return done_; }
    const BatchPlan& plan() const { return plan_; }

private:
    const Dataset* ds_;
    BatchPlan plan_;
    std::vector<std::size_t> shard_;  // this rank's positions, already mapped to sample indices
    std::size_t batches_ = 0;
    std::size_t done_ = 0;
    std::vector<float> scratch_;  // augmentation's copy of one sample
};

}  // namespace thresher::data
