// The optimizer and loss a Keras model was compiled with, where a file keeps them: Keras 3's
// "compile_config" beside the model config (to_json() and a .keras archive's config.json), the
// "training_config" of Keras 2 (an HDF5 attribute, and TensorFlow.js model.json converted from
// Keras, under modelTopology) and TensorFlow.js's own "trainingConfig" (camelCase fields).
//   {"optimizer": {"class_name": "Adam", "config": {"learning_rate": 0.001, "beta_1": 0.9, ...}},
//    "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"], ...}
// Keras 2 calls the optimizer "optimizer_config" and Keras 2.0-2.2 the learning rate "lr".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/model_config.h"

namespace thresher::config::import {

struct KerasTraining {
    std::optional<UpdaterSpec> updater;  // absent: the file names no optimizer
    std::optional<LrSchedule> schedule;  // a LearningRateSchedule, or Keras 2's "decay"
    std::optional<LossKind> loss;        // absent: the file names no loss
    // from_logits: the loss applies softmax/sigmoid itself; Thresher moves it into the output layer.
    std::optional<Activation> logits_activation;
    // A model with several outputs may give each its loss: {"output name": loss} or a list in
    // output order (Keras's compile(loss=...)). One loss (above) applies to every output.
    struct OutputLoss {
        LossKind loss;
        std::optional<Activation> logits_activation;
    };
    std::map<std::string, OutputLoss> loss_by_output;
    std::vector<OutputLoss> loss_by_position;
};

// `where` names the object in the file ("compile_config", "modelTopology.training_config").
// Refuses, naming the field, an optimizer or loss Thresher cannot train with, and NaN, infinite
// or out-of-range hyperparameters; approximations are added to `notes`.
KerasTraining read_keras_training(const nlohmann::json& training, const std::string& source, const std::string& where,
                                  std::vector<std::string>& notes);

}  // namespace thresher::config::import
