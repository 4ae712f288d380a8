// Pre-batched shards (issue 24): a data set exported once (`thresher-engine export`) as files of
// whole batches that every worker streams, DL4J's RDDTrainingApproach.Export. The byte layout is
// in engine/data/README.md ("Shards"); this header holds the format's two parts:
//
//   DIR/index.json               what the set is (ShardIndex): sample shape, classes, vocabulary,
//                                batch size, seed, and per part (train, test) its shard files
//                                with their record counts, byte sizes and CRC-32s
//   DIR/train/shard-00000.thrs   48-byte header, a CRC-32 per block, then the blocks: block k holds
//   DIR/test/shard-00000.thrs    records [kB, kB+B) as features, targets, labels, sample ids
//
// Integrity: zlib CRC-32, not SHA-256. Shards guard against accidents (a truncated copy, a bad
// disk, an interrupted export), not against an attacker: data files are trusted input like any
// CSV, and whoever can write them can rewrite a digest too. CRC-32 finds every burst error up to
// 32 bits, runs at over twice SHA-256's speed on the streaming path where every block is checked
// as it is read (zlib 1.86 GB/s, OpenSSL SHA-256 0.80 GB/s with SHA-NI, one core of this 2-core
// EPYC, under load), and zlib is already linked.
// A CRC per block lets a worker check exactly the bytes it reads (it reads only its own blocks);
// the CRC of the whole file in the index is checked when a part is read entire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace thresher::data {

inline constexpr std::size_t kShardHeaderBytes = 48;
inline constexpr std::size_t kShardHeaderCrcCovered = 40;  // header bytes before header_crc
inline constexpr std::uint32_t kShardVersion = 1;
inline constexpr const char* kShardIndexName = "index.json";
// Bounds that keep every product below in 64 bits and every count in the ints of the shapes.
inline constexpr std::uint64_t kMaxShardValuesPerRecord = std::uint64_t{1} << 28;
inline constexpr std::uint64_t kMaxShardsPerPart = 1'000'000;

// One shard file's header, as written: magic "THRSHRD\0", then little-endian fields.
struct ShardHeader {
    std::uint32_t version = kShardVersion;
    std::uint32_t batch = 0;           // records per block (the last block may hold fewer)
    std::uint64_t records = 0;         // in this shard, at least 1
    std::uint32_t blocks = 0;          // ceil(records / batch)
    std::uint32_t feature_floats = 0;  // per record
    std::uint32_t target_floats = 0;   // per record
    std::uint32_t label_ints = 0;      // per record: 0 (regression), 1, or the target steps
    std::uint32_t header_crc = 0;      // CRC-32 of the 40 bytes before it and the block table

    std::uint64_t record_bytes() const;  // 4 * (features + targets + labels) + 8 (the id)
    std::uint64_t block_records(std::uint32_t k) const;
    std::uint64_t block_offset(std::uint32_t k) const;  // from the start of the file
    std::uint64_t file_bytes() const;                    // what the header says the file holds
};

// The header's 48 bytes (header_crc as given) and its parse. parse_shard_header checks the
// magic, the version and every field against each other and against `file_bytes` (the file's
// real size) before anyone allocates: it throws DataError naming `file` and the field.
std::string encode_shard_header(const ShardHeader&);
ShardHeader parse_shard_header(const std::string& file, const unsigned char* bytes, std::size_t size,
                               std::uint64_t file_bytes);

// What every record of the set looks like (the Dataset fields a batch needs).
struct ShardLayout {
    SampleShape shape;
    int num_classes = 0;
    std::size_t target_size = 0;
    int steps = 0, step_features = 0, target_steps = 0;
    bool labels = false;  // classification: label_ints per record
    std::uint32_t label_ints() const { return labels ? static_cast<std::uint32_t>(target_steps > 0 ? target_steps : 1) : 0; }
};

struct ShardEntry {
    std::string file;  // relative to the set's folder: "train/shard-00000.thrs"
    std::uint64_t records = 0, bytes = 0;
    std::uint32_t crc32 = 0;  // of the whole file
};

struct ShardPart {
    std::string name;  // dataset name for messages: the source's, as it was read
    std::uint64_t records = 0;
    std::vector<ShardEntry> shards;
};

struct ShardIndex {
    std::string folder;  // where index.json was read from (not written)
    std::string source;  // the --data the export read
    std::uint32_t batch = 0;
    std::uint64_t seed = 0;
    ShardLayout layout;
    std::vector<std::string> class_names, vocabulary;
    ShardPart train;
    bool has_test = false;
    ShardPart test;

    std::string path_of(const ShardEntry& e) const { return folder + "/" + e.file; }
    // The Dataset of `part` without rows: count, shape, classes (for checks and messages).
    Dataset describe(const ShardPart& part) const;
};

// True when `folder` holds an index.json: a shard set (it is read, and checked, by read_shard_index).
bool is_shard_folder(const std::string& folder);

std::string shard_index_json(const ShardIndex&);
// Parses DIR/index.json: every field typed and bounded, shard files plain names inside DIR, record
// counts adding up and matching the batch. Throws DataError "DIR/index.json: field: problem".
ShardIndex read_shard_index(const std::string& folder);
ShardIndex parse_shard_index(const std::string& folder, const std::string& json_text);

}  // namespace thresher::data
