#include "data/memory_budget.h"

#include <cstdio>

#include "core/error.h"

namespace thresher::data {

namespace {

constexpr std::uint64_t kFloor = std::uint64_t{1} << 30;
constexpr std::uint64_t kPerInputByte = 64;

std::string bytes_text(std::uint64_t b) {
    char buf[32];
    if (b >= (std::uint64_t{1} << 30))
        std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1u << 30));
    else
        std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1u << 20));
    return buf;
}

}  // namespace

std::uint64_t memory_budget(std::uint64_t input_bytes) {
    const std::uint64_t scaled =
        input_bytes > UINT64_MAX / kPerInputByte ? UINT64_MAX : input_bytes * kPerInputByte;
    return scaled > kFloor ? scaled : kFloor;
}

void check_memory_budget(const std::string& name, const std::string& what, std::uint64_t bytes,
                         std::uint64_t input_bytes) {
    const std::uint64_t budget = memory_budget(input_bytes);
    if (bytes <= budget) return;
    throw DataError(name + ": " + what + " would take " + bytes_text(bytes) + ", more than the " +
                    bytes_text(budget) + " allowed for " + std::to_string(input_bytes) +
                    " bytes of input (1 GiB or 64 times the input)");
}

}  // namespace thresher::data
