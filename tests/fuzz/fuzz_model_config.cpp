// libFuzzer target for the model-config readers: any bytes go through format detection (Thresher
// JSON, DL4J MultiLayerConfiguration, Keras Sequential) and either import into a config whose
// inferred shapes are consistent, or throw thresher::Error (a ConfigError with a location).
// Seed the corpus with resources/models/*.json and tests/engine/config/data/*.json so the
// importers are reached from the first run.
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "config/model_format.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto r = thresher::nn::import_model_text(text, "fuzz.json");
        const auto& m = r.model;
        std::size_t offset = 0;
        for (const auto& l : m.layers) {
            if (l.param_offset != offset || l.out_shape.size() == 0) __builtin_trap();
            offset += l.param_count;
        }
        if (offset != m.param_count()) __builtin_trap();
        if (r.format == thresher::nn::ModelFormat::Thresher && !r.notes.empty()) __builtin_trap();
        // What was accepted, in any format, must serialise to Thresher JSON and parse back the same.
        const auto again = thresher::nn::ModelConfig::from_json(m.to_json(), "again");
        if (again.param_count() != m.param_count()) __builtin_trap();
    } catch (const thresher::Error&) {
    }
    return 0;
}
