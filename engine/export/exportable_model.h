// What an exporter needs of a trained model, and nothing that runs it: the config (with shapes
// inferred), the flat parameter vector laid out as LayerConfig::param_offset says, the input
// normalisation it was trained with, and the class names when the user gives them. Plain data,
// so engine/export sits on engine/config alone (no backend, no nn): the app could export too.
#pragma once

#include <string>
#include <vector>

#include "config/model_config.h"

namespace thresher::model_export {

// x' = (x - shift[i]) * scale[i] per input feature (data/feature_transform.h's form); an
// exported model applies it itself, so it takes the inputs `thresher-engine predict` reads.
struct InputNormalization {
    std::string kind = "none";  // none | standardize | minmax (for the file's metadata)
    std::vector<float> shift, scale;
    bool active() const { return kind != "none"; }
};

struct ExportableModel {
    config::ModelConfig config;  // infer_shapes() has run
    std::vector<float> params;   // config.param_count() values
    InputNormalization normalization;
    std::vector<std::string> class_names;  // empty, or one per output of a classifier
    // Where training stopped: the updater's state in nn::Network's layout (empty: none, or not
    // known) and the completed iterations and epochs. Only formats that can go on training keep
    // them (DL4J's updaterState.bin and iterationCount); the others export for inference.
    std::vector<float> updater_state;
    long iterations = 0;
    int epochs = 0;
    std::string source;                    // the model's file name, for messages
};

}  // namespace thresher::model_export
