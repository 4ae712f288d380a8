// Writes a loaded data set as a shard set (shard_format.h): DIR/train/, DIR/test/, DIR/index.json.
//
// Records go out in the order of the first epoch, epoch_order(n, seed, 0) (batch_iterator.h), cut
// into blocks of `batch`. With W workers of batch `batch` and this seed, an in-memory run takes at
// step k of epoch 0 the samples of blocks kW..kW+W-1 (positions [kWB, (k+1)WB) of the order), so
// a run streaming the shards takes the same first epoch as one reading the source
// (shard_stream.h permutes later epochs).
// Blocks are dealt to `shards` files in runs of whole blocks (the first files get one more when
// they do not divide evenly); each file is written durably (core/durable_file.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "data/dataset.h"
#include "data/shard_format.h"

namespace thresher::data {

struct ShardWriteOptions {
    std::uint32_t batch = 32;
    std::size_t shards = 0;  // per part; 0: about 64 MiB per shard
    std::uint64_t seed = 0;
    // Called after each shard file: part ("train"/"test"), records written so far, the part's total.
    std::function<void(const std::string&, std::uint64_t, std::uint64_t)> progress;
};

class ShardWriter {
public:
    // Throws ConfigError for batch 0 or a batch over 2^24.
    ShardWriter(std::string folder, ShardWriteOptions options);

    // Writes `ds` as FOLDER/<part>/shard-NNNNN.thrs; returns the part's index entry. The layout
    // of `ds` must match `layout` (the first part written sets it).
    ShardPart write_part(const Dataset& ds, const std::string& part, const ShardLayout& layout);

    const ShardWriteOptions& options() const { return options_; }

private:
    std::string folder_;
    ShardWriteOptions options_;
};

// The layout of a loaded Dataset's records.
ShardLayout layout_of(const Dataset&);

// Writes FOLDER/index.json durably (last, so a folder with an index is a finished export).
void write_shard_index(const std::string& folder, const ShardIndex&);

// The whole export: FOLDER/train/, FOLDER/test/ when `split` has a test set, then the index, with
// the split's class names and vocabulary; `source` is recorded as where the data came from.
ShardIndex write_shard_set(const DataSplit& split, const std::string& folder, const std::string& source,
                           ShardWriteOptions options);

}  // namespace thresher::data
