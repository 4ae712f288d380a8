#include "data/shard_stream.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"
#include "data/augment.h"
#include "data/batch_iterator.h"

namespace thresher::data {

namespace {
constexpr std::uint64_t kShardOrderPurpose = 0x5348415244;  // "SHARD"
constexpr std::uint64_t kWindowPurpose = 0x57494E44;        // "WIND"

template <class T>
void seeded_shuffle(std::vector<T>& v, std::uint64_t seed) {
    Rng rng(seed);
    std::shuffle(v.begin(), v.end(), rng);
}
}  // namespace

std::vector<ShardBlock> shard_epoch_order(const ShardIndex& index, const ShardPart& part, std::uint64_t seed, int epoch) {
    std::vector<std::vector<ShardBlock>> per_shard(part.shards.size());
    for (std::uint32_t s = 0; s < part.shards.size(); ++s) {
        const std::uint64_t records = part.shards[s].records;
        for (std::uint64_t first = 0, k = 0; first < records; first += index.batch, ++k)
            per_shard[s].push_back({s, static_cast<std::uint32_t>(k), std::min<std::uint64_t>(index.batch, records - first)});
    }
    std::vector<std::uint32_t> shard_order(part.shards.size());
    std::iota(shard_order.begin(), shard_order.end(), 0u);
    const std::uint64_t epoch_seed = derive_seed(seed, kShardOrderPurpose, static_cast<std::uint64_t>(epoch));
    if (epoch > 0) {
        seeded_shuffle(shard_order, epoch_seed);
        for (std::uint32_t s = 0; s < per_shard.size(); ++s) seeded_shuffle(per_shard[s], derive_seed(epoch_seed, s));
    }
    std::vector<ShardBlock> order;
    std::optional<ShardBlock> short_block;
    for (auto s : shard_order)
        for (const auto& b : per_shard[s]) {
            if (b.records < index.batch)
                short_block = b;  // only the part's last block can be short (the index says so)
            else
                order.push_back(b);
        }
    if (short_block) order.push_back(*short_block);
    return order;
}

ShardStream::ShardStream(const ShardIndex& index, BatchPlan plan, const FeatureTransform* transform)
    : ShardStream(index, index.train, plan, transform) {}

ShardPart node_files(const ShardPart& part, int node, int nodes) {
    ShardPart own;
    own.name = part.name;
    for (std::size_t f = 0; f < part.shards.size(); ++f)
        if (spec::shard_owner(f, nodes) == node) {
            own.shards.push_back(part.shards[f]);
            own.records += part.shards[f].records;
        }
    return own;
}

ShardSchedule shard_schedule(const ShardIndex& index, const ShardPart& part, const BatchPlan& plan, const ShardShare& share) {
    check_plan(plan);
    auto order = shard_epoch_order(index, part, plan.seed, plan.epoch);
    if (plan.limit > 0) {  // the first `limit` records: whole blocks, the last one cut
        std::uint64_t left = plan.limit;
        std::size_t keep = 0;
        for (; keep < order.size() && left > 0; ++keep) {
            order[keep].records = std::min<std::uint64_t>(order[keep].records, left);
            left -= order[keep].records;
        }
        order.resize(keep);
    }
    ShardSchedule s;
    if (share.placement == spec::ShardPlacement::Shared) {
        const auto world = static_cast<std::size_t>(plan.world);
        s.steps = (order.size() + world - 1) / world;
        for (std::size_t pos = static_cast<std::size_t>(plan.rank); pos < order.size(); pos += world) s.mine.push_back(order[pos]);
        return s;
    }
    if (share.nodes < 1 || plan.world % share.nodes != 0)
        throw ConfigError("shard placement: " + std::to_string(plan.world) + " workers cannot be spread evenly over " +
                          std::to_string(share.nodes) + " nodes");
    const int per_node = plan.world / share.nodes;
    const int node = plan.rank / per_node, local = plan.rank % per_node;
    s.node = node;
    std::vector<std::size_t> node_blocks(static_cast<std::size_t>(share.nodes), 0);
    for (const auto& b : order) {
        const int owner = spec::shard_owner(b.shard, share.nodes);
        if (owner == node && node_blocks[static_cast<std::size_t>(owner)] % static_cast<std::size_t>(per_node) ==
                                     static_cast<std::size_t>(local))
            s.mine.push_back(b);
        ++node_blocks[static_cast<std::size_t>(owner)];
    }
    for (auto n : node_blocks) s.steps = std::max(s.steps, (n + static_cast<std::size_t>(per_node) - 1) / static_cast<std::size_t>(per_node));
    return s;
}

ShardStream::ShardStream(const ShardIndex& index, const ShardPart& part, BatchPlan plan, const FeatureTransform* transform,
                         ShardShare share)
    : index_(&index), part_(&part), plan_(plan), transform_(transform && transform->active() ? transform : nullptr) {
    check_plan(plan_);
    if (plan_.batch_size != index.batch)
        throw ConfigError("--batch " + std::to_string(plan_.batch_size) + ": the shards in " + index.folder +
                          " hold batches of " + std::to_string(index.batch) + " (export again with --batch " +
                          std::to_string(plan_.batch_size) + ", or train with --batch " + std::to_string(index.batch) + ")");
    auto schedule = shard_schedule(index, part, plan_, share);
    // The block list is sized by the index's counts: the files it reads must back them. Per node,
    // only its own files (the others are not on this node).
    for (std::size_t f = 0; f < part.shards.size(); ++f)
        if (schedule.node < 0 || spec::shard_owner(f, share.nodes) == schedule.node) check_shard_file(index, part.shards[f]);
    mine_ = std::move(schedule.mine);
    batches_ = schedule.steps;
}

bool ShardStream::next(Batch& out) {
    if (done_ >= batches_) return false;
    const std::size_t step = done_++;
    if (step >= mine_.size()) {  // this rank's blocks ran out at the final step
        out.count = 0;
        out.features.clear();
        out.targets.clear();
        out.labels.clear();
        out.indices.clear();
        return true;
    }
    const ShardBlock b = mine_[step];
    if (!file_ || file_shard_ != b.shard) {
        const ShardEntry& e = part_->shards[b.shard];
        file_.reset();
        file_.emplace(index_->path_of(e), index_->layout, index_->batch, &e);
        file_shard_ = b.shard;
    }
    file_->read_block(b.block, block_);
    if (block_.count < b.records)
        throw DataError(file_->path() + ": block " + std::to_string(b.block) + " holds " + std::to_string(block_.count) +
                        " records, the index implies " + std::to_string(b.records));
    // The window shuffle: the block's records in a seeded order (as exported in epoch 0).
    auto& rows = rows_;
    rows.resize(block_.count);
    std::iota(rows.begin(), rows.end(), std::size_t{0});
    if (plan_.epoch > 0 && plan_.shuffle)
        seeded_shuffle(rows, derive_seed(derive_seed(plan_.seed, kWindowPurpose, static_cast<std::uint64_t>(plan_.epoch)),
                                         (std::uint64_t{b.shard} << 32) | b.block));
    const std::size_t f = index_->layout.shape.size(), t = index_->layout.target_size, l = index_->layout.label_ints();
    out.count = b.records;  // the whole block, or a --test-limit's first records of the last one
    out.features.resize(out.count * f);
    out.targets.resize(out.count * t);
    out.labels.resize(out.count * l);
    out.indices.resize(out.count);
    for (std::size_t i = 0; i < out.count; ++i) {
        const std::size_t r = rows[i];
        std::copy_n(block_.features.data() + r * f, f, out.features.data() + i * f);
        std::copy_n(block_.targets.data() + r * t, t, out.targets.data() + i * t);
        std::copy_n(block_.labels.data() + r * l, l, out.labels.data() + i * l);
        out.indices[i] = block_.indices[r];
        if (transform_) transform_->apply_rows(out.features.data() + i * f, 1);
        if (plan_.augment.active())
            augment_sample(out.features.data() + i * f, index_->layout.shape, plan_.augment, plan_.seed, plan_.epoch,
                           out.indices[i], scratch_);
    }
    return true;
}

}  // namespace thresher::data
