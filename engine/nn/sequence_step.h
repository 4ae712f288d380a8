// Steps of the sequence layers (seq_spec.md): recurrent layers, embedding, convolution1d,
// repeat_vector. Each reads and writes [N, T, C] rows (time-major, features contiguous).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "nn/layer_step.h"

namespace thresher::nn {

// `index`: the layer's position, for messages. Refuses (ConfigError naming the layer) what the
// backend cannot run.
// The steps plan_sequence_layer hands out (after its checks).
// plan_recurrent refuses, naming `label`, a layer the backend's rnn_refusal() turns down.
std::unique_ptr<LayerStep> plan_recurrent(backend::Backend&, const config::LayerConfig&, const std::string& label, int batch);
std::unique_ptr<LayerStep> plan_convolution1d(backend::Backend&, const config::LayerConfig&, int batch);

std::unique_ptr<LayerStep> plan_sequence_layer(backend::Backend&, const config::LayerConfig&, std::size_t index, int batch);

}  // namespace thresher::nn
