// Steps of the sequence layers (seq_spec.md): recurrent layers, embedding, convolution1d,
// repeat_vector. Each reads and writes [N, T, C] rows (time-major, features contiguous).
#pragma once

#include <memory>

#include "nn/layer_step.h"

namespace thresher::nn {

std::unique_ptr<LayerStep> plan_sequence_layer(backend::Backend&, const config::LayerConfig&, int batch);

}  // namespace thresher::nn
