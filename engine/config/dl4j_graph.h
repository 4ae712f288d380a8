// What a DL4J ComputationGraphConfiguration's structure needs beyond its layers: the order DL4J
// puts its vertices in (its parameters are flattened in that order, so a graph zip's coefficients
// map onto Thresher's layers only if they come in the same order), and the vertices' key order in
// the file, which a parsed nlohmann::json (sorted keys) no longer has.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace thresher::config {

// The keys of the top-level "vertices" object in the order the text lists them (DL4J writes its
// LinkedHashMap in insertion order); empty when there is none. The text has passed
// parse_json_text already.
std::vector<std::string> dl4j_vertex_key_order(std::string_view text);

// DL4J's topological order (ComputationGraph.calculateIndices, Kahn's algorithm): network inputs
// first, then vertices by `vertices` order (name, inputs); a FIFO of vertices whose inputs are
// done, each vertex's readers visited in Java HashSet<Integer> order. Names that are neither an
// input nor a vertex are left out of the edges (the caller refuses them). Returns input and
// vertex names; a cycle leaves the rest out (the caller refuses it).
std::vector<std::string> dl4j_topological_order(const std::vector<std::string>& inputs,
                                                const std::vector<std::pair<std::string, std::vector<std::string>>>& vertices);

}  // namespace thresher::config
