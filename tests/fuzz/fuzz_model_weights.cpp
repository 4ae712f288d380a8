// libFuzzer target for model files with weights (engine/config/weight_import.h): DL4J model zips,
// Keras 3 .keras archives (both zips, read with libzip) and Keras .h5 files (libhdf5). Any bytes
// either import into a config with exactly its parameter count of finite weights, or throw
// thresher::Error naming the file -- never a crash or a huge allocation.
// Seed the corpus with the files tests/engine/config/test_model_weights writes (a DL4J zip, a
// .h5, a .keras): THRESHER_WEIGHTS_CORPUS=DIR test_model_weights leaves them in DIR.
#include <cmath>
#include <cstdint>

#include "config/weight_import.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto r = thresher::config::import_model_with_weights({data, size}, "fuzz.bin");
        if (r.params.size() != r.model.param_count()) __builtin_trap();
        for (float v : r.params)
            if (!std::isfinite(v)) __builtin_trap();
        // A DL4J zip's normalizer.bin: one finite shift and scale per input feature.
        const auto& n = r.normalization;
        if (n.active() && (n.shift.size() != r.model.input.size() || n.scale.size() != r.model.input.size())) __builtin_trap();
        for (std::size_t i = 0; i < n.shift.size(); ++i)
            if (!std::isfinite(n.shift[i]) || !std::isfinite(n.scale[i])) __builtin_trap();
    } catch (const thresher::Error&) {
    }
    return 0;
}
