// Reads shard files (shard_format.h): one block at a time for streaming (ShardFile), or a whole
// part into a Dataset in the source's sample order (read_shard_part, load_shard_folder).
//
// Nothing is allocated before it is known to fit: the header is checked against the file's real
// size, the header's CRC against its fields and block table, the layout against the index; a
// block is read into a buffer of its header-given size (<= the file) and its CRC checked before a
// value of it is used. Every failure is a DataError naming the shard file.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/dataset.h"
#include "data/shard_format.h"

namespace thresher::data {

class ShardFile {
public:
    // Opens and checks `path`: header, block table, header CRC, and agreement with `layout` and,
    // where given, with the index entry (records, bytes) and the set's batch size.
    ShardFile(std::string path, const ShardLayout& layout, std::uint32_t batch, const ShardEntry* entry = nullptr);

    const ShardHeader& header() const { return header_; }
    const std::string& path() const { return path_; }

    // Block k's records into `out` (count, features, targets, labels, indices = sample ids),
    // reusing its vectors. Throws DataError naming the file and block on a short read or a CRC
    // mismatch.
    void read_block(std::uint32_t k, Batch& out);

private:
    std::string path_;
    std::ifstream in_;
    ShardHeader header_;
    std::vector<std::uint32_t> crcs_;
    std::vector<unsigned char> scratch_;
};

// Checks that every shard file of `part` exists with the size the index gives it, so the index's
// record counts (which it checks against those sizes) are backed by bytes on disk before anything
// is sized by them. Throws DataError naming the first shard that is missing or of another size.
void check_shard_files(const ShardIndex&, const ShardPart&);
// The same check of one file (a node holding only its own files checks only those).
void check_shard_file(const ShardIndex&, const ShardEntry&);

// Every record of `part`, each placed at its sample id (the source's order), with the whole-file
// CRC-32 of the index checked for every shard and the ids checked to be a permutation of
// [0, records). The rows are checked against memory_budget.h for the part's file sizes first.
Dataset read_shard_part(const ShardIndex&, const ShardPart&);

// The first `max_records` records of `part` in file order (the export's shuffled order, so a fair
// sample), whole shards read until there are enough: what training evaluates on when a streamed
// set has no test part, so evaluation does not hold the whole set either.
Dataset read_shard_sample(const ShardIndex&, const ShardPart&, std::uint64_t max_records);

// A shard folder as a DataSplit, every part read (evaluate, predict, and the round trip).
DataSplit load_shard_folder(const std::string& folder);

}  // namespace thresher::data
