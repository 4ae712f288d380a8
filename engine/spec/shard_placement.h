// Where a shard set's files live (issue 24), as a user writes it: `--shard-placement shared|per-node`
// on the engine's command line, which the launcher passes when it uploads each node its own files.
//
//   shared    every node sees the whole set (a shared folder); each epoch reshuffles blocks across
//             all files, so every node reads from every file (the default).
//   per-node  shard file f of each part (train, test) belongs to node shard_owner(f, nodes); a node
//             holds and reads only its own files, and never looks at the others.
//
// The ownership rule is this one function, for the engine's streams and evaluation and for the
// launcher, which uploads node n exactly the files it owns. Worked example, 8 files, 3 nodes:
//   node 0: files 0 3 6   node 1: files 1 4 7   node 2: files 2 5   (unequal work: 8 is not 3k)
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace thresher::spec {

enum class ShardPlacement { Shared, PerNode };

// The node that owns shard file `file` (its position in a part's shard list, from 0) among `nodes`
// nodes (>= 1): file mod nodes.
inline int shard_owner(std::size_t file, int nodes) {
    return static_cast<int>(file % static_cast<std::size_t>(nodes));
}

inline std::string_view to_string(ShardPlacement p) { return p == ShardPlacement::PerNode ? "per-node" : "shared"; }

// "shared" or "per-node"; nullopt for anything else (the caller names the option and the choices).
inline std::optional<ShardPlacement> parse_shard_placement(std::string_view text) {
    if (text == "shared") return ShardPlacement::Shared;
    if (text == "per-node") return ShardPlacement::PerNode;
    return std::nullopt;
}

}  // namespace thresher::spec
