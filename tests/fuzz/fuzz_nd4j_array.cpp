// libFuzzer target for ND4J's binary array reader (a DL4J model zip's coefficients.bin and
// updaterState.bin, engine/config/nd4j_array.h): any bytes either give an array whose data
// matches its shape, or a ConfigError naming the byte -- never a crash or an allocation larger
// than the input (every declared length is bounded by the bytes present).
// Seed: a coefficients.bin, e.g. one written by tests/engine/config/test_model_weights.
#include <cstdint>

#include "config/nd4j_array.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        std::size_t used = 0;
        const auto a = thresher::config::read_nd4j_array({data, size}, "fuzz.bin", &used);
        std::uint64_t count = 1;
        for (auto d : a.shape) count *= static_cast<std::uint64_t>(d);
        if (count != a.data.size() || used > size || a.data.size() > size) __builtin_trap();
        if (a.order != 'c' && a.order != 'f') __builtin_trap();
    } catch (const thresher::Error&) {
    }
    return 0;
}
