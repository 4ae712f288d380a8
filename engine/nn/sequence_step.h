// Steps of the sequence layers (seq_spec.md): recurrent layers, embedding, convolution1d,
// repeat_vector. Each reads and writes [N, T, C] rows (time-major, features contiguous).
#pragma once

#include <memory>

#include "nn/layer_step.h"

namespace thresher::nn {

// `index`: the layer's position, for messages. Refuses (ConfigError naming the layer) what the
// backend cannot run.
std::unique_ptr<LayerStep> plan_sequence_layer(backend::Backend&, const config::LayerConfig&, std::size_t index, int batch);

}  // namespace thresher::nn
