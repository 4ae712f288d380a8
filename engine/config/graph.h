// Helpers for models that are graphs (ModelConfig::resolve_graph is in graph.cpp too).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config/model_config.h"

namespace thresher::config {

// Vertices that read several inputs (all vertices but subset).
bool joins_inputs(LayerType);

// An execution order of n nodes where inputs[i] lists the nodes node i reads: every node after
// its inputs, otherwise in listed order. A cycle is a ConfigError naming the nodes on it
// (`names`, in the file's own terms).
std::vector<std::size_t> topological_order(const std::vector<std::vector<std::size_t>>& inputs,
                                           const std::vector<std::string>& names, const std::string& source);

}  // namespace thresher::config
