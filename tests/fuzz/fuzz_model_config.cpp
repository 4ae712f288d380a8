// libFuzzer target for the model-config parser: any bytes either parse into a config whose
// inferred shapes are consistent, or throw thresher::Error (a ConfigError with a location).
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "config/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto m = thresher::nn::ModelConfig::parse(text, "fuzz.json");
        std::size_t offset = 0;
        for (const auto& l : m.layers) {
            if (l.param_offset != offset || l.out_shape.size() == 0) __builtin_trap();
            offset += l.param_count;
        }
        if (offset != m.param_count()) __builtin_trap();
        // What the parser accepted must serialise and parse back to the same thing.
        const auto again = thresher::nn::ModelConfig::from_json(m.to_json(), "again");
        if (again.param_count() != m.param_count()) __builtin_trap();
    } catch (const thresher::Error&) {
    }
    return 0;
}
