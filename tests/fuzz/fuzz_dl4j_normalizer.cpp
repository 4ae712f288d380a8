// libFuzzer target for DL4J's normalizer.bin (engine/config/dl4j_normalizer.h), the one part of a
// DL4J model zip fuzz_model_weights rarely reaches (it sits behind a valid zip, configuration and
// coefficients). Any bytes either give a normalisation with one finite shift and scale per input
// feature, or throw thresher::Error -- never a crash or a huge allocation. Two models: 16 flat
// features, and a 2x3x3 image (statistics per feature or per channel).
// Seed: THRESHER_NORMALIZER_CORPUS=DIR test_dl4j_normalizer leaves its normalizer.bin files in DIR.
#include <cmath>
#include <cstdint>

#include "config/dl4j_normalizer.h"
#include "core/error.h"

namespace {
const thresher::config::ModelConfig& model(bool image) {
    static const auto flat = thresher::config::ModelConfig::parse(
        R"({"input":{"size":16},"layers":[{"type":"output","units":3}]})", "flat.json");
    static const auto img = thresher::config::ModelConfig::parse(
        R"({"input":{"channels":2,"height":3,"width":3},"layers":[{"type":"output","units":3}]})", "image.json");
    return image ? img : flat;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    for (bool image : {false, true}) {
        try {
            const auto& m = model(image);
            const auto r = thresher::config::read_dl4j_normalizer({data, size}, "fuzz.bin", m);
            if (!r.active()) __builtin_trap();
            if (r.shift.size() != m.input.size() || r.scale.size() != m.input.size()) __builtin_trap();
            for (std::size_t i = 0; i < r.shift.size(); ++i)
                if (!std::isfinite(r.shift[i]) || !std::isfinite(r.scale[i])) __builtin_trap();
        } catch (const thresher::Error&) {
        }
    }
    return 0;
}
