// One shard file at a time is assembled in memory and written durably: the export holds the
// source (it was loaded as training loads it) plus one shard, never a second copy of the set.
#include "data/shard_writer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/durable_file.h"
#include "core/error.h"
#include "data/batch_iterator.h"

namespace thresher::data {

namespace {

constexpr std::uint64_t kDefaultShardBytes = 64u << 20;

template <typename T>
void append(std::string& out, const T* p, std::size_t n) {
    out.append(reinterpret_cast<const char*>(p), n * sizeof(T));
}

// One block's bytes: features, targets, labels, ids of records order[first, first+n).
void append_block(std::string& out, const Dataset& ds, const ShardLayout& l, const std::vector<std::size_t>& order,
                  std::size_t first, std::size_t n) {
    const std::size_t f = ds.shape.size(), t = ds.target_size, li = l.label_ints();
    for (std::size_t i = 0; i < n; ++i) append(out, ds.sample(order[first + i]), f);
    for (std::size_t i = 0; i < n; ++i) append(out, ds.targets.data() + order[first + i] * t, t);
    for (std::size_t i = 0; i < n; ++i) append(out, ds.labels.data() + order[first + i] * li, li);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t id = order[first + i];
        append(out, &id, 1);
    }
}

bool same_layout(const ShardLayout& a, const ShardLayout& b) {
    return a.shape.channels == b.shape.channels && a.shape.height == b.shape.height && a.shape.width == b.shape.width &&
           a.num_classes == b.num_classes && a.target_size == b.target_size && a.steps == b.steps &&
           a.step_features == b.step_features && a.target_steps == b.target_steps && a.labels == b.labels;
}

}  // namespace

ShardLayout layout_of(const Dataset& ds) {
    ShardLayout l;
    l.shape = ds.shape;
    l.num_classes = ds.num_classes;
    l.target_size = ds.target_size;
    l.steps = ds.steps;
    l.step_features = ds.step_features;
    l.target_steps = ds.target_steps;
    l.labels = !ds.labels.empty();
    return l;
}

void write_shard_index(const std::string& folder, const ShardIndex& index) {
    write_file_durably(folder + "/" + kShardIndexName, shard_index_json(index));
}

ShardWriter::ShardWriter(std::string folder, ShardWriteOptions options) : folder_(std::move(folder)), options_(std::move(options)) {
    if (options_.batch == 0 || options_.batch > (1u << 24))
        throw ConfigError("--batch " + std::to_string(options_.batch) + ": must be in [1, 16777216]");
}

ShardPart ShardWriter::write_part(const Dataset& ds, const std::string& part, const ShardLayout& layout) {
    if (!same_layout(layout_of(ds), layout))
        throw DataError(ds.name + ": its samples are shaped unlike the set's first part; train and test must match");
    if (ds.count == 0) throw DataError(ds.name + ": no samples to export");
    const std::uint64_t batch = options_.batch;
    const std::uint64_t blocks = (ds.count + batch - 1) / batch;
    ShardHeader h;
    h.batch = options_.batch;
    h.feature_floats = static_cast<std::uint32_t>(ds.shape.size());
    h.target_floats = static_cast<std::uint32_t>(ds.target_size);
    h.label_ints = layout.label_ints();
    const std::uint64_t set_bytes = ds.count * h.record_bytes();
    std::uint64_t shards = options_.shards ? options_.shards : std::max<std::uint64_t>(1, (set_bytes + kDefaultShardBytes - 1) / kDefaultShardBytes);
    shards = std::min(shards, blocks);
    if (shards > kMaxShardsPerPart)
        throw ConfigError("--shards " + std::to_string(shards) + ": at most " + std::to_string(kMaxShardsPerPart) + " per part");

    const std::vector<std::size_t> order = epoch_order(ds.count, options_.seed, 0, true);
    std::error_code ec;
    if (std::filesystem::create_directories(folder_ + "/" + part, ec); ec)
        throw Error(folder_ + "/" + part + ": cannot create the folder: " + ec.message());
    ShardPart out;
    out.name = ds.name;
    out.records = ds.count;
    std::uint64_t block = 0;
    for (std::uint64_t s = 0; s < shards; ++s) {
        // Blocks dealt in runs: the first blocks % shards files take one more.
        const std::uint64_t n_blocks = blocks / shards + (s < blocks % shards ? 1 : 0);
        const std::size_t first = block * batch;
        const std::size_t records = std::min<std::uint64_t>(n_blocks * batch, ds.count - first);
        h.records = records;
        h.blocks = static_cast<std::uint32_t>(n_blocks);
        std::string bytes = encode_shard_header(h);
        bytes.resize(h.block_offset(0));  // the block table, filled below
        std::vector<std::uint32_t> crcs;
        for (std::uint32_t k = 0; k < h.blocks; ++k) {
            const std::size_t at = bytes.size();
            append_block(bytes, ds, layout, order, first + k * batch, h.block_records(k));
            crcs.push_back(crc32_of(bytes.data() + at, bytes.size() - at));
        }
        std::memcpy(bytes.data() + kShardHeaderBytes, crcs.data(), crcs.size() * 4);
        // The header's CRC covers its fields and the table (shard_format.h); then the encoding again.
        std::string covered = bytes.substr(0, kShardHeaderCrcCovered) + bytes.substr(kShardHeaderBytes, crcs.size() * 4);
        h.header_crc = crc32_of(covered.data(), covered.size());
        const std::string header = encode_shard_header(h);
        std::memcpy(bytes.data(), header.data(), header.size());
        h.header_crc = 0;

        char name[32];
        std::snprintf(name, sizeof name, "shard-%05llu.thrs", static_cast<unsigned long long>(s));
        ShardEntry e{part + "/" + name, records, bytes.size(), crc32_of(bytes.data(), bytes.size())};
        write_file_durably(folder_ + "/" + e.file, bytes);
        out.shards.push_back(std::move(e));
        block += n_blocks;
        if (options_.progress) options_.progress(part, first + records, ds.count);
    }
    return out;
}

ShardIndex write_shard_set(const DataSplit& split, const std::string& folder, const std::string& source,
                           ShardWriteOptions options) {
    ShardIndex index;
    index.folder = folder;
    index.source = source;
    index.batch = options.batch;
    index.seed = options.seed;
    index.layout = layout_of(split.train);
    index.class_names = split.class_names;
    index.vocabulary = split.vocabulary;
    ShardWriter writer(folder, std::move(options));
    index.train = writer.write_part(split.train, "train", index.layout);
    index.has_test = split.has_test;
    if (split.has_test) index.test = writer.write_part(split.test, "test", index.layout);
    write_shard_index(folder, index);
    return index;
}

}  // namespace thresher::data
