// libFuzzer target for the predictions a node sends node 0 (`thresher-engine predict` on a
// cluster; dist/masters/predictions_wire.h). Any bytes either give rows of exactly k outputs, each
// for a row below n, at most n of them, that pack back to the very same bytes -- or are refused,
// never a read out of bounds, an overflowing size or an allocation the payload does not hold.
// The first byte picks k (0..7), the second n (0..254, or 255 for the largest n there is, where
// a count times the row size would overflow); the rest is the payload.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>

#include "dist/masters/predictions_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace thresher::dist;
    if (size < 2) return 0;
    const std::uint32_t k = data[0] % 8;
    const std::size_t n = data[1] == 255 ? std::numeric_limits<std::size_t>::max() : data[1];
    const std::span<const std::uint8_t> payload(data + 2, size - 2);
    const auto p = parse_predictions(payload, k, n);
    if (!p) return 0;
    if (p->index.size() > n || p->values.size() != p->index.size() * k) __builtin_trap();
    for (const auto i : p->index)
        if (i >= n) __builtin_trap();
    const std::vector<std::size_t> index(p->index.begin(), p->index.end());
    const auto again = pack_predictions(index, p->values, k);
    if (!std::equal(again.begin(), again.end(), payload.begin(), payload.end())) __builtin_trap();
    return 0;
}
