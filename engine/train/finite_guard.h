// The NaN/Inf guard: a run stops at the first non-finite loss, gradient or parameter, with an
// error that says where (worker, iteration, layer, parameter), instead of training on NaN and
// spreading it to every replica. Checked on the worker's thread before its update leaves it
// (gradients) and after the master's step (parameters: received messages included).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "config/model_config.h"

namespace thresher::train {

// The first index whose value is NaN or ±Inf. A branch-free pass over the bits (exponent all
// ones), so the compiler vectorises it: ~0.1 ms for a million floats.
std::optional<std::size_t> first_non_finite(const float* values, std::size_t count);

// Where parameter `index` of the model's buffer lives, in the model file's terms:
// `layers[2] "conv1" (convolution), its parameter 17`.
std::string describe_parameter(const config::ModelConfig&, std::size_t index);

// Throws thresher::Error "worker W, iteration I: the <what> is <value> at <where>; ..." when a
// value of `values` (a model-sized buffer on the host) is not finite.
void check_finite(const float* values, const config::ModelConfig&, const char* what, int worker, long iteration);

}  // namespace thresher::train
