// libFuzzer target for shard sets (engine/data/shard_format.h, shard_reader.h, shard_stream.h):
// any index and any shard file must give rows that agree with their counts, or a
// thresher::Error, never a crash, a sanitizer report or an allocation the file cannot back.
//
// The first byte steers:
//   0  the rest is DIR/index.json alone (parse_shard_index)
//   1  the rest is one shard file; the index is made to match its header where it parses
//      (records, bytes, the file's CRC), so the reader gets past the index to the blocks
//   2  as 1, but the block and header CRCs are rewritten first, so mutated records (ids out of
//      range or repeated, sizes) reach the decoding instead of stopping at a checksum
//   3  the rest is an index.json for a fixed, valid set of 20 records (16 features, 3 classes,
//      batches of 8, shards train/shard-0000{0,1}.thrs and test/shard-00000.thrs, written once
//      at start): hostile indexes against real files. THRESHER_FUZZ_SHARD_SEED=FILE writes that
//      set's own index there, mode byte first (the corpus seed).
// Modes 1 to 3 read the set whole (load_shard_folder), take a sample (read_shard_sample) and
// stream it (ShardStream, 2 ranks, epochs 0 and 1, shared and per-node; the test part as
// evaluation streams it).
#include "core/durable_file.h"
#include "core/error.h"
#include "data/shard_reader.h"
#include "data/shard_stream.h"
#include "data/shard_writer.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

using namespace thresher::data;

struct ScratchDir {
    std::string path = "/tmp/thresher-fuzz-shard-" + std::to_string(::getpid());
    ScratchDir() { std::filesystem::create_directories(path + "/train"); }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Rewrites the CRCs of a shard whose header parses, so the blocks are read.
void repair_crcs(std::string& bytes, const ShardHeader& h) {
    for (std::uint32_t k = 0; k < h.blocks; ++k) {
        const std::uint32_t crc =
            thresher::crc32_of(bytes.data() + h.block_offset(k), static_cast<std::size_t>(h.block_records(k) * h.record_bytes()));
        std::memcpy(bytes.data() + kShardHeaderBytes + 4 * k, &crc, 4);
    }
    std::string covered = bytes.substr(0, kShardHeaderCrcCovered) + bytes.substr(kShardHeaderBytes, 4 * std::size_t{h.blocks});
    const std::uint32_t crc = thresher::crc32_of(covered.data(), covered.size());
    std::memcpy(bytes.data() + kShardHeaderCrcCovered, &crc, 4);
}

void check(const Dataset& ds) {
    if (ds.features.size() != ds.count * ds.shape.size() || ds.targets.size() != ds.count * ds.target_size) __builtin_trap();
}

void read_set(const std::string& folder) {
    try {
        const DataSplit split = load_shard_folder(folder);
        check(split.train);
    } catch (const thresher::Error&) {
    }
    try {
        const ShardIndex index = read_shard_index(folder);
        check(read_shard_sample(index, index.train, 7));
        // Both placements; the test part as evaluation streams it (epoch 0, unshuffled, the first 3 records).
        for (auto placement : {thresher::spec::ShardPlacement::Shared, thresher::spec::ShardPlacement::PerNode})
            for (int epoch = 0; epoch < 3; ++epoch)
                for (int rank = 0; rank < 2; ++rank) {
                    const bool test = epoch == 2;
                    if (test && !index.has_test) continue;
                    BatchPlan plan;
                    plan.batch_size = index.batch;
                    plan.epoch = test ? 0 : epoch;
                    plan.shuffle = !test;
                    plan.limit = test ? 3 : 0;
                    plan.rank = rank;
                    plan.world = 2;
                    ShardStream s(index, test ? index.test : index.train, plan, nullptr, ShardShare{placement, 2});
                    Batch b;
                    std::size_t steps = 0;
                    while (s.next(b)) {
                        if (b.features.size() != b.count * index.layout.shape.size() || b.indices.size() != b.count) __builtin_trap();
                        ++steps;
                    }
                    if (steps != s.batches()) __builtin_trap();
                }
    } catch (const thresher::Error&) {
    }
}

// The fixed set of mode 3, in its own folder.
struct FixedSet {
    std::string path = "/tmp/thresher-fuzz-shard-fixed-" + std::to_string(::getpid());
    FixedSet() {
        DataSplit split;
        for (Dataset* ds : {&split.train, &split.test}) {
            ds->name = "fixed";
            ds->shape = {1, 1, 16};
            ds->count = ds == &split.train ? 20 : 5;
            ds->num_classes = 3;
            ds->target_size = 3;
            for (std::size_t i = 0; i < ds->count; ++i) {
                for (int f = 0; f < 16; ++f) ds->features.push_back(static_cast<float>(i) * 0.5f + static_cast<float>(f));
                for (int c = 0; c < 3; ++c) ds->targets.push_back(static_cast<int>(i % 3) == c ? 1.f : 0.f);
                ds->labels.push_back(static_cast<std::int32_t>(i % 3));
            }
        }
        split.has_test = true;
        std::filesystem::remove_all(path);
        const ShardIndex index = write_shard_set(split, path, "fixed", {.batch = 8, .shards = 2, .seed = 1, .progress = {}});
        if (const char* seed = std::getenv("THRESHER_FUZZ_SHARD_SEED")) write(seed, "\x03" + shard_index_json(index));
    }
    ~FixedSet() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    static const ScratchDir scratch;
    static const FixedSet fixed;  // first, so THRESHER_FUZZ_SHARD_SEED works on any input
    const int mode = data[0] % 4;
    std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    if (mode == 3) {
        write(fixed.path + "/index.json", bytes);
        read_set(fixed.path);
        return 0;
    }
    if (mode == 0) {
        try {
            (void)parse_shard_index(scratch.path, bytes);
        } catch (const thresher::Error&) {
        }
        return 0;
    }
    ShardHeader h;
    try {
        h = parse_shard_header("fuzz", reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), bytes.size());
    } catch (const thresher::Error&) {
        return 0;
    }
    if (mode == 2) repair_crcs(bytes, h);
    ShardIndex index;
    index.folder = scratch.path;
    index.batch = h.batch;
    index.layout.shape = {1, 1, static_cast<int>(h.feature_floats)};
    index.layout.target_size = h.target_floats;
    index.layout.labels = h.label_ints > 0;
    index.layout.num_classes = h.label_ints > 0 ? static_cast<int>(h.target_floats) : 0;
    index.layout.target_steps = h.label_ints > 1 ? static_cast<int>(h.label_ints) : 0;
    index.train.name = "fuzz";
    index.train.records = h.records;
    index.train.shards.push_back({"train/shard-00000.thrs", h.records, bytes.size(), thresher::crc32_of(bytes.data(), bytes.size())});
    write(scratch.path + "/train/shard-00000.thrs", bytes);
    write(scratch.path + "/index.json", shard_index_json(index));
    read_set(scratch.path);
    return 0;
}
