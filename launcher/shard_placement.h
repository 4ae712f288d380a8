// Shard placement (issue 24): where the files of a shard set (engine/data/README.md, "Shards";
// `thresher-engine export`) live during a run.
//   shared    every engine reads the one folder (local runs, a shared file system, Slurm)
//   per-node  engine node r of W owns the files at positions r, r+W, r+2W, … of each part's list
//             in index.json (train and test counted separately) and opens only those; the SSH
//             launcher then uploads to each host the index and that node's files alone.
// Example: 4 train shards, 2 nodes → node 0 owns train/shard-00000 and -00002, node 1 -00001 and
// -00003; 1 test shard → node 0 owns it, node 1 none.
//
// The launcher links no engine data library (DESIGN.md), so it reads the index's file lists itself
// here, with the engine's bounds and name rule; the ownership rule is spec/shard_placement.h's.
#pragma once

#include <QString>
#include <QStringList>
#include <optional>

#include "spec/shard_placement.h"

namespace thresher::launcher {

// The engine's spec library holds the choice and the ownership rule (spec/shard_placement.h), so the
// files a node is sent are the files its engine opens.
using spec::ShardPlacement;
using spec::shard_owner;

// "shared" | "per-node" (spec's spellings): the run spec's text and the engine's --shard-placement.
QString placement_text(ShardPlacement placement);
std::optional<ShardPlacement> parse_shard_placement(const QString& text);

// The engine's index file name (engine/data/shard_format.h kShardIndexName).
inline constexpr const char* kShardIndexName = "index.json";

// True when `folder` is a folder holding index.json: how the engine recognises a shard set
// (engine/data/shard_format.h is_shard_folder).
bool is_shard_folder(const QString& folder);

// The shard files index.json lists, in its order, as paths relative to the set's folder
// ("train/shard-00000.thrs").
struct ShardSetFiles {
    QStringList train, test;
};

// Reads FOLDER/index.json (at most 256 MiB, as the engine): format "thresher-shards", and for
// each part a list of files that are plain names inside train/ or test/. The engine checks the
// rest (counts, sizes, CRCs) when it reads the set. Throws LaunchError naming the index and the
// field.
ShardSetFiles read_shard_set_files(const QString& folder);

// The files `rank` owns of `files` (train, then test), by shard_owner. Throws LaunchError when
// the rank would own no training shard (fewer train shards than nodes).
QStringList shard_files_of_node(const ShardSetFiles& files, int rank, int world, const QString& folder);

}  // namespace thresher::launcher
