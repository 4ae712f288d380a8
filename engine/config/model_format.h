// The one place that decides what a model file is: Thresher JSON, a DL4J MultiLayerConfiguration
// or a Keras Sequential model, told apart by content (never by extension), and imported into the
// same validated ModelConfig. `thresher-engine train --model` (through ModelConfig::load) and the
// desktop app both come here, so they accept the same files and refuse them with the same words.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/dl4j_normalizer.h"
#include "config/model_config.h"

namespace thresher::config {

enum class ModelFormat { Thresher, Dl4j, Keras };
std::string_view to_string(ModelFormat);

// By content (a zip or HDF5 file, with weights, goes to weight_import.h first): "confs" is DL4J's
// MultiLayerConfiguration (and "vertices" its ComputationGraph, which is refused by the
// importer), a "class_name" with a "config" is Keras (also wrapped in the
// "model_config" of an HDF5 attribute or a TensorFlow.js "modelTopology"), anything else is read
// as Thresher JSON, whose parser names what is missing.
ModelFormat detect_model_format(const nlohmann::json& j);

struct ImportResult {
    ModelConfig model;
    ModelFormat format = ModelFormat::Thresher;
    // What was approximated or dropped on the way ("confs[3]: ignored field(s) ..."), for people;
    // a Thresher file has none.
    std::vector<std::string> notes;
    // The parameters a file with weights holds (DL4J model zip, Keras .h5 / .keras), already in
    // Thresher's layout (model.param_count() values); empty for an architecture alone.
    std::vector<float> params;
    // The updater state that came with them (a DL4J zip's updaterState.bin, where it maps onto
    // Thresher's layout); empty: the updater starts fresh.
    std::vector<float> updater_state;
    // The updater's step count that state belongs to (DL4J's iterationCount): fine-tuning goes on
    // from there, so Adam's bias correction and schedules by iteration continue as in DL4J.
    long iterations = 0;
    // The data normaliser that came with them (a DL4J zip's normalizer.bin): train, evaluate and
    // predict apply it to the features as they apply their own --normalize.
    ImportedNormalization normalization;
};

// `source` names the file in messages. Throws ConfigError naming the file, the layer and what
// cannot be imported. A zip or HDF5 file (by its first bytes) goes to weight_import.h.
ImportResult import_model_text(std::string_view text, const std::string& source);
// JSON only (what a zip's configuration.json or an HDF5 model_config holds).
ImportResult import_model_json(std::string_view text, const std::string& source);
ImportResult import_model_file(const std::string& path);

}  // namespace thresher::config
