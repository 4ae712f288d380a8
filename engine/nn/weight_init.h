// DL4J's weight initialisations (WeightInit), drawn from a seeded stream per layer:
//   xavier           N(0, 2 / (fan_in + fan_out))
//   xavier_uniform   U(-s, s), s = sqrt(6 / (fan_in + fan_out))
//   relu (He)        N(0, 2 / fan_in)
//   normal           N(0, 1 / fan_in)       (DL4J: std 1/sqrt(fan_in))
//   uniform          U(-a, a), a = 1 / sqrt(fan_in)
//   zero             0
// Biases and beta start at 0, gamma at 1, running mean 0 and running variance 1.
#pragma once

#include <cstdint>

#include "config/model_config.h"

namespace thresher::nn {

// Fills one layer's slice of the host parameter vector.
void init_layer(const config::LayerConfig&, config::WeightInit, std::uint64_t model_seed, std::size_t layer_index,
                float* slice);

}  // namespace thresher::nn
