// Keras Sequential model JSON (`model.to_json()`, Keras 2 and 3) to a ModelConfig:
//   {"class_name": "Sequential", "config": {"name": ..., "layers": [
//       {"class_name": "InputLayer", "config": {"batch_shape": [null, 28, 28, 1]}},
//       {"class_name": "Conv2D", "config": {"filters": 20, "kernel_size": [5, 5], ...}}, ...]}}
// Images are channels_last in Keras and become channels x height x width here. Activation,
// ReLU, LeakyReLU and Softmax layers fold into the layer they follow; the last Dense becomes the
// output layer. to_json() carries no loss and no optimizer (those live in the training config),
// so the loss is mcxent for a softmax output and mse otherwise, and the updater Adam(1e-3); both
// are reported as notes. The mapping and what is refused are listed in engine/config/README.md.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "config/model_format.h"

namespace thresher::nn {

// `model` is the {"class_name", "config"} object (model_format.cpp unwraps HDF5/TF.js wrappers).
ImportResult import_keras(const nlohmann::json& model, const std::string& source);

}  // namespace thresher::nn
