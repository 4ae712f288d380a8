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
// Modes 1 and 2 read the set whole (load_shard_folder) and stream it (ShardStream, 2 ranks,
// epochs 0 and 1).
#include "core/durable_file.h"
#include "core/error.h"
#include "data/shard_reader.h"
#include "data/shard_stream.h"

#include <cstdint>
#include <cstdio>
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
    std::string covered = bytes.substr(0, 40) + bytes.substr(kShardHeaderBytes, 4 * std::size_t{h.blocks});
    const std::uint32_t crc = thresher::crc32_of(covered.data(), covered.size());
    std::memcpy(bytes.data() + 40, &crc, 4);
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
        for (int epoch = 0; epoch < 2; ++epoch)
            for (int rank = 0; rank < 2; ++rank) {
                BatchPlan plan;
                plan.batch_size = index.batch;
                plan.epoch = epoch;
                plan.rank = rank;
                plan.world = 2;
                ShardStream s(index, plan);
                Batch b;
                while (s.next(b))
                    if (b.features.size() != b.count * index.layout.shape.size() || b.indices.size() != b.count) __builtin_trap();
            }
    } catch (const thresher::Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    static const ScratchDir scratch;
    const int mode = data[0] % 3;
    std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
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
