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
// Per-node placement (spec/shard_placement.h, ShardShare below): file f belongs to node
// shard_owner(f, N) and only that node reads it. A node's order is the epoch's order above kept to
// its own files' blocks (epoch 0: its files as exported; later epochs: its files and their blocks
// in the same seeded orders); its workers take them in turn. Steps per epoch are the most any
// node's blocks need, so every rank computes them from the index alone; a rank that runs out gets
// empty batches. Each epoch still takes every record once over all ranks, but step s is no longer
// one machine's step s of batch W*B on the shared order (engine/data/README.md, "Placement"):
//
//   8 blocks, files {b0 b1 b2} {b3 b4 b5} {b6 b7}, 2 nodes: node 0 owns files 0 and 2, node 1 file 1
//   node 0: b0 b1 b2 b6 b7    node 1: b3 b4 b5 (empty batches at steps 3, 4)
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
#include "spec/shard_placement.h"

namespace thresher::data {

struct ShardBlock {
    std::uint32_t shard = 0;  // index in the part's shard list
    std::uint32_t block = 0;  // in that shard
    std::uint64_t records = 0;
};

// The epoch's block order of `part` (see above).
std::vector<ShardBlock> shard_epoch_order(const ShardIndex&, const ShardPart&, std::uint64_t seed, int epoch);

// Which files a rank may read: all (shared), or its node's (per-node, with the node count; the
// plan's world is then nodes x workers per node, rank r on node r / workers per node).
struct ShardShare {
    spec::ShardPlacement placement = spec::ShardPlacement::Shared;
    int nodes = 1;
};

// The files of `part` node `node` of `nodes` owns (spec::shard_owner), as a part of their own (a
// node's sample of its train files for evaluation, when the set has no test part).
ShardPart node_files(const ShardPart&, int node, int nodes);

struct ShardSchedule {
    std::vector<ShardBlock> mine;  // this rank's blocks, in step order
    std::size_t steps = 0;         // the epoch's steps, the same on every rank
    int node = -1;                 // per-node: this rank's node, the owner of every file it reads (-1: shared)
};
// Rank `plan.rank`'s blocks of `part` and the steps every rank takes (plan.limit applied): the
// block arithmetic of ShardStream without reading a byte. Throws ConfigError for a world that the
// nodes do not divide (per-node).
ShardSchedule shard_schedule(const ShardIndex&, const ShardPart&, const BatchPlan&, const ShardShare& = {});

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
    // With per-node placement (`share`) it checks and opens only its node's files.
    ShardStream(const ShardIndex& index, const ShardPart& part, BatchPlan plan, const FeatureTransform* transform = nullptr,
                ShardShare share = {});

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
