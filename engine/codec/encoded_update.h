// One gradient-sharing message: the entries of a worker's residual that crossed the threshold τ,
// each carrying exactly +τ or −τ (Strom 2015; Deeplearning4j's SharedTrainingMaster). The
// ThresholdEncoder makes these, serialize() turns one into bytes for the wire, deserialize() turns
// bytes that arrive from another machine back into one, and apply() adds one to a parameter vector.
//
// Two body formats carry the same information; the encoder picks the smaller:
//   Sparse: one int32 per set entry, entry i with sign s stored as s·(i+1). The +1 keeps index 0
//           signable (there is no −0 in two's complement). 4 bytes per set entry.
//   Bitmap: 2 bits per parameter, 16 parameters per uint32 word, parameter i in word i/16 at bits
//           2·(i%16) and 2·(i%16)+1: 00 none, 01 +τ, 10 −τ, 11 invalid. N/4 bytes whatever is set.
// The two cost the same at N/16 set entries (4·N/16 = N/4 bytes), which is where the encoder
// switches. Worked example, N = 8, τ = 0.5, message +τ at 1, −τ at 2, +τ at 7:
//   sparse {2, -3, 8}
//   bitmap word = 01<<2 | 10<<4 | 01<<14 = 0x0004 | 0x0020 | 0x4000 = 0x4024
//
// Wire layout (little-endian, 16-byte header, then the body):
//   offset 0  u8  format (1 sparse, 2 bitmap)
//   offset 1  u8×3 reserved, must be zero (room for a version without breaking old readers)
//   offset 4  u32 length N (number of parameters)
//   offset 8  f32 threshold τ (finite, > 0)
//   offset 12 u32 count (entries set)
//   offset 16 sparse: count × i32, indices strictly ascending | bitmap: ceil(N/16) × u32
// The encoding is canonical: a message that deserialize() accepts serializes back to the very
// bytes it came from (deserialize rejects anything else, e.g. unsorted indices or padding bits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace thresher::dist {

struct EncodedUpdate {
    enum class Format : std::uint8_t { Sparse = 1, Bitmap = 2 };

    Format format = Format::Sparse;
    std::uint32_t length = 0;  // N, the number of parameters the message is for
    float threshold = 0.f;     // τ: every set entry is worth exactly +τ or −τ
    std::uint32_t count = 0;   // entries set
    // Sparse: entry i with sign s stored as s·(i+1), strictly ascending in i.
    std::vector<std::int32_t> sparse;
    // Bitmap: ceil(N/16) words, 2 bits per parameter: 00 none, 01 +τ, 10 −τ, 11 invalid.
    std::vector<std::uint32_t> bitmap;
};

// Bytes of the fixed header that precedes every body.
inline constexpr std::size_t kEncodedHeaderBytes = 16;

// Largest N a message can describe: sparse entries store i+1 in an int32.
inline constexpr std::uint32_t kMaxEncodedLength = 0x7fffffffu;

// Number of 32-bit words a bitmap for n parameters needs (16 parameters per word).
constexpr std::size_t bitmap_words(std::size_t n) { return (n + 15) / 16; }

// The size serialize() will produce: 16 + 4·count (sparse) or 16 + 4·ceil(N/16) (bitmap).
std::size_t encoded_bytes(const EncodedUpdate& u);

// The message as little-endian bytes (layout above). Precondition: u is well formed (made by
// ThresholdEncoder or deserialize); the function only trusts its sizes, it does not re-check them.
std::vector<std::uint8_t> serialize(const EncodedUpdate& u);

// Reads bytes from another machine, trusting none of them. Throws thresher::Error naming the
// reason (truncated, unknown format, reserved header bytes, length mismatch, bad threshold,
// count exceeds length, trailing bytes, zero index, index out of range, duplicate index, indices
// not ascending, invalid bitmap code, padding bits set, count mismatch). Never reads outside
// `bytes` and allocates at most bytes.size() for the body, whatever the header claims.
// `expected_length` is the receiver's own parameter count: a message for another model is refused.
EncodedUpdate deserialize(std::span<const std::uint8_t> bytes, std::uint32_t expected_length);

// target[i] += scale·(±τ) for every set entry; scale −1 applies the message as a parameter update
// (θ −= message), scale +1 decodes it into a zeroed vector. `target` holds u.length floats.
// O(count) for sparse, O(N/16 + count) for bitmap. Precondition: u is well formed.
void apply(const EncodedUpdate& u, float* target, float scale);

}  // namespace thresher::dist
