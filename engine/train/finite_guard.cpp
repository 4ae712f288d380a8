#include "train/finite_guard.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "core/error.h"

namespace thresher::train {

std::optional<std::size_t> first_non_finite(const float* values, std::size_t count) {
    // Blocks of 1024: the OR-reduction vectorises; only a block with a hit is scanned again.
    constexpr std::size_t kBlock = 1024;
    for (std::size_t start = 0; start < count; start += kBlock) {
        const std::size_t end = std::min(count, start + kBlock);
        std::uint32_t bad = 0;
        for (std::size_t i = start; i < end; ++i) {
            std::uint32_t bits;
            std::memcpy(&bits, values + i, sizeof bits);
            bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
        }
        if (bad)
            for (std::size_t i = start; i < end; ++i)
                if (!std::isfinite(values[i])) return i;
    }
    return std::nullopt;
}

std::string describe_parameter(const config::ModelConfig& config, std::size_t index) {
    for (std::size_t l = 0; l < config.layers.size(); ++l) {
        const auto& layer = config.layers[l];
        if (index >= layer.param_offset && index < layer.param_offset + layer.param_count) {
            std::string where = layer.label(l);
            if (!layer.name.empty()) where += " \"" + layer.name + "\"";
            return where + ", its parameter " + std::to_string(index - layer.param_offset);
        }
    }
    return "parameter " + std::to_string(index);
}

void check_finite(const float* values, const config::ModelConfig& config, const char* what, int worker, long iteration) {
    const auto bad = first_non_finite(values, config.param_count());
    if (!bad) return;
    std::ostringstream m;
    m << "worker " << worker << ", iteration " << iteration << ": the " << what << " is " << values[*bad] << " at "
      << describe_parameter(config, *bad)
      << "; training stopped instead of going on with it (lower the learning rate, or check the data)";
    throw Error(m.str());
}

}  // namespace thresher::train
