// Wire format of a gradient-sharing message (layout in encoded_update.h). deserialize() is the
// trust boundary of gradient sharing: bytes from the network are checked completely here, so
// apply() and everything after it may assume a well-formed message.
#include "codec/encoded_update.h"

#include "core/error.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

namespace thresher::dist {
namespace {

// Every bit pair's low bit: (w & (w >> 1) & kLowBits) is non-zero iff some pair is 11.
constexpr std::uint32_t kLowBits = 0x55555555u;

[[noreturn]] void fail(const std::string& problem) {
    throw Error("encoded update: " + problem);
}

std::string show(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", double(v));
    return buf;
}

void put_u32(std::uint8_t* p, std::uint32_t v) {
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
    p[2] = static_cast<std::uint8_t>(v >> 16);
    p[3] = static_cast<std::uint8_t>(v >> 24);
}

std::uint32_t get_u32(const std::uint8_t* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
           std::uint32_t(p[3]) << 24;
}

// Copies n 32-bit values between host order and little-endian bytes: one memcpy on
// little-endian hosts (all we build for today), a byte loop elsewhere.
template <class T>
void words_to_bytes(const T* src, std::size_t n, std::uint8_t* dst) {
    static_assert(sizeof(T) == 4);
    if constexpr (std::endian::native == std::endian::little) {
        if (n) std::memcpy(dst, src, n * 4);
    } else {
        for (std::size_t i = 0; i < n; ++i) put_u32(dst + 4 * i, static_cast<std::uint32_t>(src[i]));
    }
}

template <class T>
void bytes_to_words(const std::uint8_t* src, std::size_t n, T* dst) {
    static_assert(sizeof(T) == 4);
    if constexpr (std::endian::native == std::endian::little) {
        if (n) std::memcpy(dst, src, n * 4);
    } else {
        for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(get_u32(src + 4 * i));
    }
}

// Bits of the last bitmap word that belong to no parameter (they must stay zero).
std::uint32_t padding_mask(std::uint32_t length) {
    const unsigned used = length % 16;
    return used == 0 ? 0u : ~0u << (2 * used);
}

}  // namespace

std::size_t encoded_bytes(const EncodedUpdate& u) {
    const std::size_t words =
        u.format == EncodedUpdate::Format::Sparse ? u.count : bitmap_words(u.length);
    return kEncodedHeaderBytes + 4 * words;
}

std::vector<std::uint8_t> serialize(const EncodedUpdate& u) {
    std::vector<std::uint8_t> out(encoded_bytes(u));
    std::uint8_t* p = out.data();
    p[0] = static_cast<std::uint8_t>(u.format);  // p[1..3] stay zero: reserved
    put_u32(p + 4, u.length);
    put_u32(p + 8, std::bit_cast<std::uint32_t>(u.threshold));
    put_u32(p + 12, u.count);
    if (u.format == EncodedUpdate::Format::Sparse)
        words_to_bytes(u.sparse.data(), u.count, p + kEncodedHeaderBytes);
    else
        words_to_bytes(u.bitmap.data(), bitmap_words(u.length), p + kEncodedHeaderBytes);
    return out;
}

EncodedUpdate deserialize(std::span<const std::uint8_t> bytes, std::uint32_t expected_length) {
    // Header: every field is checked before the body is sized, and the body is allocated only
    // once its size is known to equal what is actually left in `bytes`.
    if (bytes.size() < kEncodedHeaderBytes)
        fail("truncated: " + std::to_string(bytes.size()) + " bytes, the header alone needs " +
             std::to_string(kEncodedHeaderBytes));
    const std::uint8_t* p = bytes.data();
    EncodedUpdate u;
    if (p[0] != std::uint8_t(EncodedUpdate::Format::Sparse) &&
        p[0] != std::uint8_t(EncodedUpdate::Format::Bitmap))
        fail("unknown format " + std::to_string(p[0]) + " (1 sparse, 2 bitmap)");
    u.format = static_cast<EncodedUpdate::Format>(p[0]);
    if (p[1] | p[2] | p[3]) fail("reserved header bytes are not zero");
    u.length = get_u32(p + 4);
    if (u.length != expected_length)
        fail("length mismatch: the message is for " + std::to_string(u.length) +
             " parameters, this model has " + std::to_string(expected_length));
    u.threshold = std::bit_cast<float>(get_u32(p + 8));
    if (!std::isfinite(u.threshold) || !(u.threshold > 0.f))
        fail("bad threshold " + show(u.threshold) + " (must be finite and positive)");
    u.count = get_u32(p + 12);
    if (u.count > u.length)
        fail("count exceeds length: " + std::to_string(u.count) + " entries set of " +
             std::to_string(u.length));

    const std::size_t body = bytes.size() - kEncodedHeaderBytes;
    const std::size_t words =
        u.format == EncodedUpdate::Format::Sparse ? u.count : bitmap_words(u.length);
    // words ≤ 2^31, so 4·words fits in size_t on every 64-bit host (and the comparison is exact).
    const std::uint64_t want = std::uint64_t(words) * 4;
    if (body < want)
        fail("truncated: the body has " + std::to_string(body) + " bytes, " +
             std::to_string(want) + " expected");
    if (body > want)
        fail("trailing bytes: the body has " + std::to_string(body) + " bytes, " +
             std::to_string(want) + " expected");
    const std::uint8_t* src = p + kEncodedHeaderBytes;

    if (u.format == EncodedUpdate::Format::Sparse) {
        u.sparse.resize(words);
        bytes_to_words(src, words, u.sparse.data());
        // Strictly ascending indices: rules out duplicates without a per-parameter "seen" table
        // (which would cost N/8 bytes for a message of a few bytes). The encoder emits in order.
        std::int64_t previous = 0;
        for (std::size_t k = 0; k < words; ++k) {
            const std::int64_t v = u.sparse[k];  // widened: |INT32_MIN| does not fit an int32
            const std::int64_t index = v < 0 ? -v : v;  // i + 1
            if (index == 0)
                fail("zero index at entry " + std::to_string(k) + " (indices are stored as +-(i+1))");
            if (index > std::int64_t(u.length))
                fail("index out of range at entry " + std::to_string(k) + ": parameter " +
                     std::to_string(index - 1) + " of " + std::to_string(u.length));
            if (index == previous)
                fail("duplicate index at entry " + std::to_string(k) + ": parameter " +
                     std::to_string(index - 1));
            if (index < previous)
                fail("indices not ascending at entry " + std::to_string(k) + ": parameter " +
                     std::to_string(index - 1) + " after " + std::to_string(previous - 1));
            previous = index;
        }
    } else {
        u.bitmap.resize(words);
        bytes_to_words(src, words, u.bitmap.data());
        std::uint64_t set = 0;
        for (std::size_t k = 0; k < words; ++k) {
            const std::uint32_t w = u.bitmap[k];
            if (w & (w >> 1) & kLowBits)
                fail("invalid bitmap code 11 in word " + std::to_string(k));
            set += std::popcount(w);  // each valid non-empty pair has exactly one bit
        }
        if (words && (u.bitmap.back() & padding_mask(u.length)))
            fail("padding bits set after parameter " + std::to_string(u.length - 1));
        if (set != u.count)
            fail("count mismatch: the header says " + std::to_string(u.count) + ", the bitmap has " +
                 std::to_string(set));
    }
    return u;
}

void apply(const EncodedUpdate& u, float* target, float scale) {
    const float plus = scale * u.threshold;
    const float minus = -plus;  // = scale·(−τ) exactly: negation does not round
    if (u.format == EncodedUpdate::Format::Sparse) {
        for (const std::int32_t v : u.sparse) {
            if (v > 0)
                target[v - 1] += plus;
            else
                target[-std::int64_t(v) - 1] += minus;
        }
        return;
    }
    const std::size_t words = bitmap_words(u.length);
    for (std::size_t k = 0; k < words; ++k) {
        std::uint32_t w = u.bitmap[k];
        float* base = target + 16 * k;
        while (w) {
            const int bit = std::countr_zero(w);
            base[bit >> 1] += (bit & 1) ? minus : plus;  // low bit of the pair: +τ, high bit: −τ
            w &= w - 1;
        }
    }
}

}  // namespace thresher::dist
