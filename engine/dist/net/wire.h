// One byte order for the network formats of engine/dist (README.md there lists every format):
// integers are big-endian ("network byte order"), floats travel as the big-endian bits of their
// IEEE-754 value. `store`/`load` work on a fixed buffer the caller has sized; `put` appends to a
// vector; `get` consumes from a span and says false instead of reading past its end, so a short
// or hostile input is refused where it is parsed, never read out of bounds.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace thresher::dist::wire {

namespace detail {
template <typename T>
using Bits = std::conditional_t<sizeof(T) == 1, std::uint8_t,
             std::conditional_t<sizeof(T) == 2, std::uint16_t,
             std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
}  // namespace detail

template <typename T>
void store(std::uint8_t* p, T v) {
    static_assert(std::is_arithmetic_v<T> && (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8));
    const auto bits = std::bit_cast<detail::Bits<T>>(v);
    for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::uint8_t>(bits >> (8 * (sizeof(T) - 1 - i)));
}

template <typename T>
T load(const std::uint8_t* p) {
    static_assert(std::is_arithmetic_v<T> && (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8));
    detail::Bits<T> bits = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) bits = static_cast<detail::Bits<T>>((bits << 8) | p[i]);
    return std::bit_cast<T>(bits);
}

template <typename T>
void put(std::vector<std::uint8_t>& out, T v) {
    const std::size_t at = out.size();
    out.resize(at + sizeof(T));
    store(out.data() + at, v);
}

template <typename T>
bool get(std::span<const std::uint8_t>& in, T& v) {
    if (in.size() < sizeof(T)) return false;
    v = load<T>(in.data());
    in = in.subspan(sizeof(T));
    return true;
}

}  // namespace thresher::dist::wire
