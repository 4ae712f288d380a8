// Training-time augmentation of image samples (spec::Augmentation): applied to each sample of a
// training batch as BatchIterator copies it, off the trainer's critical path when the prefetch
// thread runs it. The draws depend on (seed, epoch, sample index) alone, so every worker of a
// distributed run augments a sample as a single machine would, and a resumed run as the
// uninterrupted one: the union of the workers' batches stays one machine's batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/dataset.h"
#include "spec/augmentation.h"

namespace thresher::data {

// Augments one CHW sample in place: a random crop of its own size out of the image padded with
// zeros by crop_padding on every side (offsets uniform in [0, 2·padding] on each axis), then a
// left-right mirror with probability 1/2. Padding is zero in the features' own units (after
// normalisation, when --normalize was given). `scratch` is reused between calls.
void augment_sample(float* chw, const SampleShape& shape, const spec::Augmentation& a, std::uint64_t seed, int epoch,
                    std::size_t index, std::vector<float>& scratch);

}  // namespace thresher::data
