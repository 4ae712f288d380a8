// Planning of the sequence layers; until each has its step, the network refuses it at plan time
// naming the layer type.
#include "nn/sequence_step.h"

#include <string>

#include "core/error.h"

namespace thresher::nn {

std::unique_ptr<LayerStep> plan_sequence_layer(backend::Backend&, const config::LayerConfig& l, int) {
    throw ConfigError("layer type " + std::string(config::to_string(l.type)) + " cannot run yet (sequence layers: issue 23)");
}

}  // namespace thresher::nn
