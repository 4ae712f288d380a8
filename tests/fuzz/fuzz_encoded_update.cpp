// libFuzzer target for the gradient-sharing wire format (engine/codec/encoded_update.h): bytes from
// another machine must be refused with thresher::Error or decode to a well-formed message that
// serializes back to exactly the same bytes and applies without touching memory outside the
// receiver's parameter vector.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/error.h"
#include "codec/encoded_update.h"

namespace {

// The receiver's parameter count. Taken from the message's own length field when that is small
// enough to allocate a vector for, so most inputs get past the length check and the fuzzer
// explores the body; larger claims meet 1000 and exercise the mismatch path.
std::uint32_t receiver_length(const std::uint8_t* data, std::size_t size) {
    if (size < 8) return 1000;
    const std::uint32_t claimed = std::uint32_t(data[4]) | std::uint32_t(data[5]) << 8 |
                                  std::uint32_t(data[6]) << 16 | std::uint32_t(data[7]) << 24;
    return claimed <= (1u << 16) ? claimed : 1000;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using thresher::dist::EncodedUpdate;
    const std::uint32_t n = receiver_length(data, size);
    try {
        const EncodedUpdate u = thresher::dist::deserialize(std::span(data, size), n);
        if (u.length != n || u.count > n || !(u.threshold > 0.f)) __builtin_trap();
        if (u.format == EncodedUpdate::Format::Sparse ? u.sparse.size() != u.count
                                                       : u.bitmap.size() != thresher::dist::bitmap_words(n))
            __builtin_trap();
        // Canonical: what was accepted is byte for byte what serialize() makes of it.
        const std::vector<std::uint8_t> again = thresher::dist::serialize(u);
        if (again.size() != size || !std::equal(again.begin(), again.end(), data)) __builtin_trap();
        // Applying touches exactly `count` distinct entries, each by one τ.
        std::vector<float> params(n, 0.f);
        thresher::dist::apply(u, params.data(), 1.f);
        std::uint32_t touched = 0;
        for (const float p : params) {
            if (p == 0.f) continue;
            if (p != u.threshold && p != -u.threshold) __builtin_trap();
            ++touched;
        }
        if (touched != u.count) __builtin_trap();
    } catch (const thresher::Error&) {
    }
    return 0;
}
