// DL4J MultiLayerConfiguration JSON (MultiLayerConfiguration.toJson(), a model zip's
// configuration.json) to a ModelConfig. Both forms DL4J has written are read:
//   current (1.0.0-alpha on):  "layer": {"@class": "org.deeplearning4j.nn.conf.layers.DenseLayer",
//                               "activationFn": {"@class": "...ActivationReLU"}, "iupdater": {...}}
//   older (0.x), name-keyed:   "layer": {"dense": {"activationFunction": "relu",
//                               "updater": "NESTEROVS", "learningRate": 0.1, "weightInit": "XAVIER"}}
// A layer's dropout (DL4J drops the layer's *input*) becomes a dropout layer in front of it; an
// ActivationLayer is folded into the layer before it. The mapping and what is refused are listed
// in engine/config/README.md.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/model_format.h"

namespace thresher::config {

// A ComputationGraphConfiguration ("vertices", "vertexInputs", "networkInputs", ...) becomes a
// Thresher graph with its layers in DL4J's order (its "topologicalOrderStr", or the order DL4J
// computes from the vertices as the file lists them: `vertex_order`, see dl4j_graph.h), so a
// graph zip's coefficients land where they belong.
// options.steps gives the time steps where the file leaves them open (model_format.h).
ImportResult import_dl4j(const nlohmann::json& root, const std::string& source,
                         const std::vector<std::string>& vertex_order = {}, const ImportOptions& options = {});

}  // namespace thresher::config
