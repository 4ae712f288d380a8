#include "data/shard_reader.h"

#include <cstring>
#include <filesystem>


#include "core/durable_file.h"
#include "core/error.h"
#include "data/memory_budget.h"

namespace thresher::data {

namespace {

std::uint64_t file_size_of(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw DataError(path + ": cannot be read: " + ec.message());
    return size;
}

void read_exactly(std::ifstream& in, std::uint64_t offset, void* to, std::uint64_t n, const std::string& path,
                  const std::string& what) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(static_cast<char*>(to), static_cast<std::streamsize>(n));
    if (!in || static_cast<std::uint64_t>(in.gcount()) != n)
        throw DataError(path + ": " + what + ": short read at byte " + std::to_string(offset) + " (the file changed?)");
}

// The CRC-32 of a whole file, read in 1 MiB pieces.
std::uint32_t file_crc32(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(path + ": cannot be opened");
    std::vector<char> buf(1u << 20);
    std::uint32_t crc = 0;
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto got = in.gcount();
        if (got > 0) crc = crc32_of(buf.data(), static_cast<std::size_t>(got), crc);
    }
    return crc;
}

}  // namespace

ShardFile::ShardFile(std::string path, const ShardLayout& layout, std::uint32_t batch, const ShardEntry* entry)
    : path_(std::move(path)), in_(path_, std::ios::binary) {
    if (!in_) throw DataError(path_ + ": cannot be opened (listed in the index; was the shard folder copied whole?)");
    const std::uint64_t size = file_size_of(path_);
    unsigned char head[kShardHeaderBytes] = {};
    const auto want = std::min<std::uint64_t>(size, kShardHeaderBytes);
    read_exactly(in_, 0, head, want, path_, "header");
    header_ = parse_shard_header(path_, head, want, size);  // checks the sizes against `size`
    auto fail = [&](const std::string& what) { throw DataError(path_ + ": " + what); };
    if (header_.batch != batch)
        fail("batches of " + std::to_string(header_.batch) + " records, the index says " + std::to_string(batch));
    if (header_.feature_floats != layout.shape.size() || header_.target_floats != layout.target_size ||
        header_.label_ints != layout.label_ints())
        fail("records of " + std::to_string(header_.feature_floats) + " features, " + std::to_string(header_.target_floats) +
             " targets, " + std::to_string(header_.label_ints) + " labels; the index says " + std::to_string(layout.shape.size()) +
             ", " + std::to_string(layout.target_size) + ", " + std::to_string(layout.label_ints()));
    if (entry && (entry->records != header_.records || entry->bytes != size))
        fail(std::to_string(header_.records) + " records in " + std::to_string(size) + " bytes; the index says " +
             std::to_string(entry->records) + " in " + std::to_string(entry->bytes));
    crcs_.resize(header_.blocks);  // blocks * 4 bytes lie inside the file (parse_shard_header)
    read_exactly(in_, kShardHeaderBytes, crcs_.data(), std::uint64_t{header_.blocks} * 4, path_, "block table");
    std::vector<unsigned char> covered(head, head + kShardHeaderCrcCovered);
    covered.insert(covered.end(), reinterpret_cast<const unsigned char*>(crcs_.data()),
                   reinterpret_cast<const unsigned char*>(crcs_.data()) + crcs_.size() * 4);
    if (crc32_of(covered.data(), covered.size()) != header_.header_crc)
        fail("header checksum mismatch (the header or block table is damaged)");
}

void ShardFile::read_block(std::uint32_t k, Batch& out) {
    if (k >= header_.blocks)
        throw DataError(path_ + ": block " + std::to_string(k) + " asked for; the shard has " + std::to_string(header_.blocks));
    const std::uint64_t n = header_.block_records(k);
    scratch_.resize(n * header_.record_bytes());
    read_exactly(in_, header_.block_offset(k), scratch_.data(), scratch_.size(), path_, "block " + std::to_string(k));
    if (crc32_of(scratch_.data(), scratch_.size()) != crcs_[k])
        throw DataError(path_ + ": block " + std::to_string(k) + ": checksum mismatch (the shard is damaged; export it again)");
    const std::size_t f = header_.feature_floats, t = header_.target_floats, l = header_.label_ints;
    out.count = n;
    out.features.resize(n * f);
    out.targets.resize(n * t);
    out.labels.resize(n * l);
    out.indices.resize(n);
    const unsigned char* p = scratch_.data();
    auto take = [&p](void* to, std::size_t bytes) {
        if (bytes) std::memcpy(to, p, bytes);
        p += bytes;
    };
    take(out.features.data(), n * f * 4);
    take(out.targets.data(), n * t * 4);
    take(out.labels.data(), n * l * 4);
    for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t id = 0;
        take(&id, 8);
        out.indices[i] = static_cast<std::size_t>(id);
    }
}

void check_shard_file(const ShardIndex& index, const ShardEntry& e) {
    const std::string path = index.path_of(e);
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw DataError(path + ": cannot be opened (listed in the index; was the shard folder copied whole?)");
    if (size != e.bytes)
        throw DataError(path + ": " + std::to_string(size) + " bytes, the index says " + std::to_string(e.bytes) +
                        (size < e.bytes ? " (truncated?)" : ""));
}

void check_shard_files(const ShardIndex& index, const ShardPart& part) {
    for (const auto& e : part.shards) check_shard_file(index, e);
}

Dataset read_shard_part(const ShardIndex& index, const ShardPart& part) {
    check_shard_files(index, part);
    Dataset ds = index.describe(part);
    std::uint64_t input_bytes = 0;
    for (const auto& e : part.shards) input_bytes += e.bytes;
    const std::uint64_t f = ds.shape.size(), t = ds.target_size, l = index.layout.label_ints();
    // Each record takes at least 12 bytes on disk, so records <= input bytes keeps this product in range.
    if (part.records > input_bytes) throw DataError(index.folder + ": " + part.name + ": more records than bytes in its shards");
    check_memory_budget(index.folder, std::to_string(part.records) + " records of " + std::to_string(f + t + l) + " values",
                        part.records * (f + t + l) * 4, input_bytes);
    ds.features.resize(part.records * f);
    ds.targets.resize(part.records * t);
    ds.labels.resize(part.records * l);
    std::vector<bool> seen(part.records, false);
    Batch block;
    for (const auto& e : part.shards) {
        const std::string path = index.path_of(e);
        ShardFile file(path, index.layout, index.batch, &e);
        for (std::uint32_t k = 0; k < file.header().blocks; ++k) {
            file.read_block(k, block);
            for (std::size_t i = 0; i < block.count; ++i) {
                const std::size_t id = block.indices[i];
                if (id >= part.records || seen[id])
                    throw DataError(path + ": block " + std::to_string(k) + ": sample id " + std::to_string(id) +
                                    (id >= part.records ? " is out of range" : " appears twice"));
                seen[id] = true;
                std::memcpy(ds.features.data() + id * f, block.features.data() + i * f, f * 4);
                if (t) std::memcpy(ds.targets.data() + id * t, block.targets.data() + i * t, t * 4);
                if (l) std::memcpy(ds.labels.data() + id * l, block.labels.data() + i * l, l * 4);
            }
        }
        // After the blocks (whose own CRCs say which block broke): the index's CRC of the file.
        if (file_crc32(path) != e.crc32) throw DataError(path + ": checksum mismatch with the index (the shard is damaged; export it again)");
    }
    return ds;
}

Dataset read_shard_sample(const ShardIndex& index, const ShardPart& part, std::uint64_t max_records) {
    check_shard_files(index, part);
    Dataset ds = index.describe(part);
    const std::uint64_t want = std::min(max_records, part.records);
    const std::uint64_t f = ds.shape.size(), t = ds.target_size, l = index.layout.label_ints();
    std::uint64_t input_bytes = 0, covered = 0;
    for (const auto& e : part.shards) {
        if (covered >= want) break;
        input_bytes += e.bytes;
        covered += e.records;
    }
    check_memory_budget(index.folder, std::to_string(want) + " records of " + std::to_string(f + t + l) + " values",
                        want * (f + t + l) * 4, input_bytes);
    ds.count = want;
    ds.features.reserve(want * f);
    ds.targets.reserve(want * t);
    ds.labels.reserve(want * l);
    Batch block;
    std::uint64_t taken = 0;
    for (const auto& e : part.shards) {
        if (taken >= want) break;
        ShardFile file(index.path_of(e), index.layout, index.batch, &e);
        for (std::uint32_t k = 0; k < file.header().blocks && taken < want; ++k) {
            file.read_block(k, block);
            const std::uint64_t n = std::min<std::uint64_t>(block.count, want - taken);
            ds.features.insert(ds.features.end(), block.features.begin(), block.features.begin() + static_cast<std::ptrdiff_t>(n * f));
            ds.targets.insert(ds.targets.end(), block.targets.begin(), block.targets.begin() + static_cast<std::ptrdiff_t>(n * t));
            ds.labels.insert(ds.labels.end(), block.labels.begin(), block.labels.begin() + static_cast<std::ptrdiff_t>(n * l));
            taken += n;
        }
    }
    return ds;
}

DataSplit load_shard_folder(const std::string& folder) {
    const ShardIndex index = read_shard_index(folder);
    DataSplit split;
    split.train = read_shard_part(index, index.train);
    split.has_test = index.has_test;
    if (index.has_test) split.test = read_shard_part(index, index.test);
    split.class_names = index.class_names;
    split.vocabulary = index.vocabulary;
    return split;
}

}  // namespace thresher::data
