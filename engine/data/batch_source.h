// What a worker takes its batches from, one epoch at a time: an in-memory Dataset
// (BatchIterator) or a shard set streamed from disk (ShardStream). PrefetchIterator runs either
// on its background thread, so the trainer sees one type whatever the source.
#pragma once

#include <cstddef>

#include "data/batch.h"

namespace thresher::data {

class BatchSource {
public:
    virtual ~BatchSource() = default;
    // Fills `out` with the next batch (reusing its vectors); false once the epoch is done.
    virtual bool next(Batch& out) = 0;
    // Steps in the epoch: the same on every rank (a rank with nothing left gets count 0).
    virtual std::size_t batches() const = 0;
};

}  // namespace thresher::data
