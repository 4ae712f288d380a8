// Keras Sequential model JSON (`model.to_json()`, Keras 2 and 3) to a ModelConfig:
//   {"class_name": "Sequential", "config": {"name": ..., "layers": [
//       {"class_name": "InputLayer", "config": {"batch_shape": [null, 28, 28, 1]}},
//       {"class_name": "Conv2D", "config": {"filters": 20, "kernel_size": [5, 5], ...}}, ...]}}
// Images are channels_last in Keras and become channels x height x width here. Activation,
// ReLU, LeakyReLU and Softmax layers fold into the layer they follow; the last Dense becomes the
// output layer. Keras 1's spellings (Convolution2D, output_dim, nb_filter, nb_row/nb_col,
// border_mode, subsample, init, W_regularizer, dim_ordering) are read too. The loss and optimizer
// come from the compile/training config when the file carries one (keras_training.h); otherwise
// the loss is mcxent for a softmax output and mse otherwise, and the updater Adam(1e-3), both
// reported as notes. The mapping and what is refused are listed in engine/config/README.md.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "config/model_format.h"

namespace thresher::config {

// Where the model and its training settings sit in the file, so messages use the file's paths
// ("modelTopology.model_config.config.layers[2]"); model_format.cpp unwraps HDF5/TF.js wrappers.
struct KerasLocation {
    std::string model_path;                     // "" or "modelTopology.model_config." (with the dot)
    const nlohmann::json* training = nullptr;   // compile_config / training_config / trainingConfig
    std::string training_path;                  // "compile_config", "modelTopology.training_config", ...
};

// `model` is the {"class_name", "config"} object. options.steps fills a sequence input's open time
// dimension (Input(shape=(None, C)), Embedding without input_length; model_format.h).
ImportResult import_keras(const nlohmann::json& model, const std::string& source, const KerasLocation& at,
                          const ImportOptions& options = {});

}  // namespace thresher::config
