#include "config/model_format.h"

#include "config/dl4j_graph.h"

#include <fstream>
#include <sstream>

#include "config/dl4j_import.h"
#include "config/json_fields.h"
#include "config/keras_import.h"
#include "config/weight_import.h"
#include "core/error.h"

namespace thresher::config {

namespace {

// Keras configs also come wrapped: h5py's model_config attribute holds {"class_name", "config"}
// directly, but a TensorFlow.js model.json nests it as modelTopology.model_config (converted from
// Keras, with modelTopology.training_config beside it) or as modelTopology itself (saved by
// TensorFlow.js, with a top-level trainingConfig). Keras 3 keeps compile_config beside config.
const nlohmann::json* keras_model(const nlohmann::json& j, KerasLocation* at = nullptr, const std::string& path = "") {
    if (!j.is_object()) return nullptr;
    auto training = [&](const char* key) {
        auto it = j.find(key);
        if (at && it != j.end() && it->is_object()) {
            at->training = &*it;
            at->training_path = path + key;
        }
    };
    if (j.contains("class_name") && j.contains("config")) {
        if (at) at->model_path = path;
        training("compile_config");
        return &j;
    }
    for (const char* wrapper : {"model_config", "modelTopology"}) {
        auto it = j.find(wrapper);
        if (it != j.end() && it->is_object()) {
            training("training_config");
            training("trainingConfig");
            const auto* inner = keras_model(*it, at, path + wrapper + ".");
            return inner;
        }
    }
    return nullptr;
}

}  // namespace

std::string_view to_string(ModelFormat f) {
    switch (f) {
        case ModelFormat::Thresher: return "thresher";
        case ModelFormat::Dl4j: return "dl4j";
        case ModelFormat::Keras: return "keras";
    }
    return "unknown";
}

ModelFormat detect_model_format(const nlohmann::json& j) {
    if (!j.is_object()) return ModelFormat::Thresher;
    if (j.contains("confs") || j.contains("vertices") || j.contains("networkInputs")) return ModelFormat::Dl4j;
    if (!j.contains("layers") && keras_model(j)) return ModelFormat::Keras;
    return ModelFormat::Thresher;
}

ImportResult import_model_text(std::string_view text, const std::string& source, const ImportOptions& options) {
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
    if (holds_weights_format(bytes)) return import_model_with_weights(bytes, source, options);
    return import_model_json(text, source, options);
}

namespace {

ImportResult import_json_as(const nlohmann::json& j, std::string_view text, const std::string& source, const ImportOptions& options) {
    const auto format = detect_model_format(j);
    try {
        switch (format) {
            case ModelFormat::Dl4j: return import_dl4j(j, source, dl4j_vertex_key_order(text), options);
            case ModelFormat::Keras: {
                KerasLocation at;
                const auto* model = keras_model(j, &at);
                auto r = import_keras(*model, source, at, options);
                if (j.contains("weightsManifest"))
                    r.notes.push_back("weightsManifest: the TensorFlow.js weights are not imported; training starts "
                                      "from freshly initialised weights");
                return r;
            }
            case ModelFormat::Thresher: break;
        }
    } catch (const nlohmann::json::exception& e) {
        // The importers check the type of every value they use; this is the backstop that keeps a
        // value of a kind nobody expected a ConfigError instead of a crash.
        throw ConfigError(source + ": " + std::string(to_string(format)) + " import: unexpected JSON: " + e.what());
    }
    ImportResult r;
    r.model = ModelConfig::from_json(j, source);
    return r;
}

}  // namespace

void check_steps_given(const ModelConfig& m, const ImportOptions& options, const std::string& source) {
    if (options.steps <= 0) return;
    if (!m.input.sequence())
        throw ConfigError(source + ": " + std::to_string(options.steps) + " time steps were given (--steps), but the model's input (" +
                          m.input.str() + ") is not a sequence");
    if (m.input.t != options.steps)
        throw ConfigError(source + ": the file fixes its input at " + std::to_string(m.input.t) + " time steps; the " +
                          std::to_string(options.steps) + " given (--steps) differ (leave --steps out)");
}

ImportResult import_model_json(std::string_view text, const std::string& source, const ImportOptions& options) {
    if (options.steps < 0 || options.steps > kMaxImportSteps)
        throw ConfigError(source + ": --steps " + std::to_string(options.steps) + " is outside 1.." + std::to_string(kMaxImportSteps));
    auto r = import_json_as(parse_json_text(text, source), text, source, options);
    check_steps_given(r.model, options, source);
    return r;
}

ImportResult import_model_file(const std::string& path, const ImportOptions& options) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path + ": cannot open model file");
    std::stringstream ss;
    ss << in.rdbuf();
    return import_model_text(ss.str(), path, options);
}

}  // namespace thresher::config
