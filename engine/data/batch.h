// A mini-batch as the trainer consumes it, and the plan that decides which samples go in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "spec/augmentation.h"

namespace thresher::data {

// Rows copied out of a Dataset, in the same layouts (see dataset.h). The vectors are refilled
// in place batch after batch, so their capacity is allocated once per run, not per step.
struct Batch {
    std::size_t count = 0;
    std::vector<float> features;       // count * shape.size()
    std::vector<float> targets;        // count * target_size
    std::vector<std::int32_t> labels;  // count (classification only); count * steps for per-step targets
    std::vector<std::size_t> indices;  // the samples' indices in the Dataset
};

// Which samples a worker sees in one epoch. The order depends on (seed, epoch) alone, so a
// resumed run and every rank of a distributed run agree on it without talking.
struct BatchPlan {
    std::size_t batch_size = 32;  // per worker
    std::uint64_t seed = 0;
    int epoch = 0;
    bool shuffle = true;
    int rank = 0;
    int world = 1;
    std::size_t limit = 0;  // 0: all samples; else only the first `limit` samples (tests)
    // Training batches of images: each sample augmented as it is copied (data/augment.h), with
    // draws from (seed, epoch, sample index).
    spec::Augmentation augment;
};

}  // namespace thresher::data
