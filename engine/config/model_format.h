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

// What the user adds to a file that leaves something open. `steps`: the number of time steps of
// a sequence input the file does not fix -- DL4J's InputType.recurrent(size) without a
// timeSeriesLength (and every MultiLayerConfiguration that starts with a recurrent layer: DL4J
// keeps no input type there), Keras's Input(shape=(None, C)) or Embedding without input_length.
// Thresher's sequences have a fixed number of steps, shorter ones padded and masked by their
// length, so this is the longest sequence the model will read. A file that fixes its steps keeps
// them; a different `steps` for it is refused. 0: none given.
struct ImportOptions {
    int steps = 0;
};
constexpr int kMaxImportSteps = 1 << 20;  // what the importers accept from a file, too

// `source` names the file in messages. Throws ConfigError naming the file, the layer and what
// cannot be imported. A zip or HDF5 file (by its first bytes) goes to weight_import.h.
ImportResult import_model_text(std::string_view text, const std::string& source, const ImportOptions& options = {});
// JSON only (what a zip's configuration.json or an HDF5 model_config holds).
ImportResult import_model_json(std::string_view text, const std::string& source, const ImportOptions& options = {});
ImportResult import_model_file(const std::string& path, const ImportOptions& options = {});
// The importers fill in options.steps only where a file leaves the steps open; a file that fixes
// them (every Thresher file does) keeps its own, and a different number is refused here rather
// than silently ignored. Also for a trained model file (nn/model_file.h).
void check_steps_given(const ModelConfig& m, const ImportOptions& options, const std::string& source);

}  // namespace thresher::config
