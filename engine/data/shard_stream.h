// One rank's epoch of a shard set's train part, read block by block from disk: resident memory
// is a few batches whatever the set's size (PrefetchIterator keeps at most `depth` read ahead).
//
// The epoch's block order is the same on every rank (it depends on the seed and epoch alone):
//   epoch 0   the blocks as exported, which is the first epoch of an in-memory run with the
//             export's seed (shard_writer.h);
//   epoch e   the shards in a seeded order, each shard's blocks in a seeded order, a short last
//             block (when the set does not divide into batches) last; within each block the
//             records shuffled (the shuffle window is the block: a record never changes batch,
//             as with DL4J's exported minibatches).
// Rank r of W takes blocks r, r+W, r+2W, ...: step s over all ranks is blocks [sW, sW+W), which is
// what one machine with batch W*B takes at step s -- the same samples, split by rank:
//
//   8 blocks b0..b7 in the epoch's order, W = 3
//   rank 0: b0 b3 b6   rank 1: b1 b4 b7   rank 2: b2 b5 (empty batch at step 2)
//   one machine, batch 3B: {b0 b1 b2} {b3 b4 b5} {b6 b7}
//
// A rank reads only its own blocks (each checked by its CRC); no rank reads another's bytes.
//
// Evaluation streams the test part the same way (the part's own constructor below): epoch 0 with
// shuffle off is the part's blocks in file order, rank r of W takes blocks r, r+W, ..., so the
// ranks' records together are the part, each once, and no rank holds more than a block of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "data/batch.h"
#include "data/batch_source.h"
#include "data/feature_transform.h"
#include "data/shard_format.h"
#include "data/shard_reader.h"

namespace thresher::data {

struct ShardBlock {
    std::uint32_t shard = 0;  // index in the part's shard list
    std::uint32_t block = 0;  // in that shard
    std::uint64_t records = 0;
};

// The epoch's block order of `part` (see above).
std::vector<ShardBlock> shard_epoch_order(const ShardIndex&, const ShardPart&, std::uint64_t seed, int epoch);

class ShardStream final : public BatchSource {
public:
    // Throws ConfigError for a plan the set cannot serve: a batch size other than the export's
    // (the blocks are the batches), a --limit, or a bad rank/world. `index` must outlive it, and
    // so must `transform` when given: each record goes through it as it is read, before it is
    // augmented, as in-memory sets are normalised when loaded (on the prefetch thread, like them).
    ShardStream(const ShardIndex& index, BatchPlan plan, const FeatureTransform* transform = nullptr);
    // Any part of the set (evaluation: the test part, `plan.epoch` 0 and shuffle off). `part` must
    // be `index.train` or `index.test`. `plan.limit` > 0 keeps the first `limit` records of the
    // epoch's order (evaluation's --test-limit; training refuses --limit before it gets here).
    ShardStream(const ShardIndex& index, const ShardPart& part, BatchPlan plan, const FeatureTransform* transform = nullptr);

    bool next(Batch& out) override;
    std::size_t batches() const override { return batches_; }

private:
    const ShardIndex* index_;
    const ShardPart* part_;
    BatchPlan plan_;
    const FeatureTransform* transform_;  // null or inactive: none
    std::vector<ShardBlock> mine_;  // this rank's blocks, in step order
    std::size_t batches_ = 0;
    std::size_t done_ = 0;
    std::optional<ShardFile> file_;  // the shard being read (blocks of one shard come together)
    std::uint32_t file_shard_ = 0;
    Batch block_;                    // one block as read, before its records are shuffled
    std::vector<std::size_t> rows_;  // the order its records are taken in (kept: no allocation per batch)
    std::vector<float> scratch_;     // augmentation's copy of one sample
};

}  // namespace thresher::data
