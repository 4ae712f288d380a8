// `thresher-engine export --data SRC --out DIR --batch B [--shards N] [--seed S] [--model M]`:
// reads SRC as training reads it and writes it as a shard set (engine/data/shard_format.h) that
// every worker can stream: DIR/train/, DIR/test/ (when SRC has a test set) and DIR/index.json.
//
// With --model the source is read for that model (train/task.h: image size, sequence steps and
// features, per-step labels, a binary classifier's 0/1 target), exactly the rows `train --model M`
// would see; without it, as `load_data` reads it alone (fine for IDX and CSV tables; sequence
// sources and image folders need the model's shape). The seed (default: the model's seed, else 0)
// orders the records as the first epoch of `train --seed S` would take them.
// stdout: data_progress events ("what": "export train" / "export test") after each shard, then
// one summary record {"exported": DIR, "batch": B, "seed": S, "train": {"records", "shards",
// "bytes"}, "test": {...}}. An existing non-empty DIR is refused before anything is read.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "config/model_format.h"
#include "data/data_source.h"
#include "events/event_writer.h"

namespace thresher::cli {

struct ExportDataOptions {
    std::string data;   // as for train --data
    std::string out;    // the shard folder to create
    std::string model;  // optional: read the data for this model
    config::ImportOptions import;  // what the user adds to an imported --model (--steps)
    std::uint32_t batch = 32;
    std::size_t shards = 0;  // per part; 0: about 64 MiB each
    std::optional<std::uint64_t> seed;
    data::ImageFolderOptions images;
    data::SequenceReadOptions sequences;
};

void export_data_command(const ExportDataOptions&, events::EventWriter& events, std::ostream& out, std::ostream& log);

}  // namespace thresher::cli
