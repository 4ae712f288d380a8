// Fixed-size fields in and out of message payloads (host byte order: every node of a run is the
// same engine build on the same architecture, which the launcher checks). `get` consumes from a
// span and says false instead of reading past its end, so a short or hostile payload is refused
// where it is parsed, never read out of bounds.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace thresher::dist::payload_io {

template <typename T>
void put(std::vector<std::uint8_t>& out, T v) {
    const std::size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));  // (insert() trips GCC 12's -Wstringop-overflow)
}

template <typename T>
bool get(std::span<const std::uint8_t>& in, T& v) {
    if (in.size() < sizeof(T)) return false;
    std::memcpy(&v, in.data(), sizeof(T));
    in = in.subspan(sizeof(T));
    return true;
}

}  // namespace thresher::dist::payload_io
