// The encoding pass: the hot loop of gradient sharing, run once per worker and iteration over all
// N parameters (1.8M floats for a small CNN, tens of millions for larger models). Almost every
// entry is below τ (density 1e-4 … 1e-2), so the loop is built around skipping: 16 floats at a
// time, a branch-free "any |r| ≥ τ here?" that compiles to packed compares, and real work only in
// the rare block that answers yes. Blocks are 16 wide because a bitmap word covers 16 parameters,
// which lets a Sparse-mode scan that overflows hand over to Bitmap mode on a word boundary.
#include "dist/codec/threshold_encoder.h"

#include "core/error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace thresher::dist {
namespace {

constexpr std::size_t kBlock = 16;  // parameters per bitmap word

// True if any of the 16 floats at p has |p[j]| ≥ t (NaN never does). Written as an OR of
// comparisons, not an early-exit loop, so it vectorises.
inline bool block_has_entry(const float* p, float t) {
    unsigned hit = 0;
    for (std::size_t j = 0; j < kBlock; ++j) hit |= unsigned(std::fabs(p[j]) >= t);
    return hit != 0;
}

// Sparse-mode work on entries [begin, end): moves every |r| ≥ t into `out` as ±(i+1).
inline void sparse_entries(float* r, std::size_t begin, std::size_t end, float t,
                           std::vector<std::int32_t>& out) {
    for (std::size_t i = begin; i < end; ++i) {
        const float v = r[i];
        if (v >= t) {
            r[i] = v - t;
            out.push_back(static_cast<std::int32_t>(i + 1));
        } else if (v <= -t) {
            r[i] = v + t;
            out.push_back(-static_cast<std::int32_t>(i + 1));
        }
    }
}

// Scans r[0, n) in Sparse mode until `limit` entries are found. Returns where it stopped: n, or
// the end of the 16-block in which the limit was reached (always a multiple of 16, or n).
std::size_t scan_sparse(float* r, std::size_t n, float t, std::size_t limit,
                        std::vector<std::int32_t>& out) {
    const std::size_t full = n - n % kBlock;
    for (std::size_t b = 0; b < full; b += kBlock) {
        if (!block_has_entry(r + b, t)) continue;
        sparse_entries(r, b, b + kBlock, t, out);
        if (out.size() >= limit) return b + kBlock;
    }
    sparse_entries(r, full, n, t, out);
    return n;
}

// Bitmap-mode work on one block of m ≤ 16 entries: returns its word and updates the residual.
// Branch-free (selects, not ifs) so the full-block case vectorises.
inline std::uint32_t bitmap_block(float* p, std::size_t m, float t) {
    std::uint32_t w = 0;
    for (std::size_t j = 0; j < m; ++j) {
        const float v = p[j];
        const bool pos = v >= t;
        const bool neg = v <= -t;
        p[j] = pos ? v - t : (neg ? v + t : v);
        w |= std::uint32_t(pos) << (2 * j) | std::uint32_t(neg) << (2 * j + 1);
    }
    return w;
}

// Scans r[start, n) in Bitmap mode into `words` (zeroed beforehand); start is a multiple of 16.
// Returns the number of entries set.
std::size_t scan_bitmap(float* r, std::size_t n, float t, std::size_t start,
                        std::uint32_t* words) {
    std::size_t count = 0;
    const std::size_t full = n - n % kBlock;
    for (std::size_t b = start; b < full; b += kBlock) {
        if (!block_has_entry(r + b, t)) continue;
        const std::uint32_t w = bitmap_block(r + b, kBlock, t);
        words[b / kBlock] = w;
        count += std::popcount(w);
    }
    if (full < n && start <= full) {
        const std::uint32_t w = bitmap_block(r + full, n - full, t);
        words[full / kBlock] = w;
        count += std::popcount(w);
    }
    return count;
}

}  // namespace

ThresholdEncoder::ThresholdEncoder(std::size_t length, FormatPolicy policy)
    : length_(length),
      policy_(policy),
      mode_(policy == FormatPolicy::Bitmap ? Format::Bitmap : Format::Sparse) {
    if (length > kMaxEncodedLength)
        throw Error("threshold encoder: " + std::to_string(length) +
                    " parameters is more than a message can index (" +
                    std::to_string(kMaxEncodedLength) + ")");
}

std::size_t ThresholdEncoder::sparse_limit(std::size_t n) { return std::max<std::size_t>(n / 16, 1); }

std::size_t ThresholdEncoder::bitmap_exit(std::size_t n) { return std::max<std::size_t>(n / 32, 1); }

EncodedUpdate ThresholdEncoder::encode(float* residual, float threshold) {
    EncodedUpdate out;
    encode(residual, threshold, out);
    return out;
}

void ThresholdEncoder::encode(float* residual, float threshold, EncodedUpdate& out) {
    if (!std::isfinite(threshold) || !(threshold > 0.f))
        throw Error("threshold encoder: the threshold must be finite and positive, got " +
                    std::to_string(threshold));
    const std::size_t n = length_;
    out.length = static_cast<std::uint32_t>(n);
    out.threshold = threshold;
    out.sparse.clear();
    out.bitmap.clear();

    std::size_t start = 0;  // where the Bitmap-mode scan begins
    std::size_t count = 0;  // entries already set before it
    if (mode_ == Format::Sparse) {
        const std::size_t limit = policy_ == FormatPolicy::Sparse
                                      ? std::numeric_limits<std::size_t>::max()
                                      : sparse_limit(n);
        // Enough room for a message just under the limit plus the block that reaches it, so the
        // push_backs never reallocate; capacity is kept when `out` is reused.
        if (policy_ == FormatPolicy::Auto) out.sparse.reserve(std::min(n, limit + kBlock - 1));
        start = scan_sparse(residual, n, threshold, limit, out.sparse);
        if (out.sparse.size() < limit) {
            out.format = Format::Sparse;
            out.count = static_cast<std::uint32_t>(out.sparse.size());
            return;
        }
        // The message reached N/16: move what was found into a bitmap and carry on from `start`.
        out.bitmap.assign(bitmap_words(n), 0u);
        for (const std::int32_t v : out.sparse) {
            const std::size_t i = static_cast<std::size_t>(v > 0 ? v : -std::int64_t(v)) - 1;
            out.bitmap[i / kBlock] |= (v > 0 ? 1u : 2u) << (2 * (i % kBlock));
        }
        count = out.sparse.size();
        out.sparse.clear();
        mode_ = Format::Bitmap;
    } else {
        out.bitmap.assign(bitmap_words(n), 0u);
    }
    out.format = Format::Bitmap;
    count += scan_bitmap(residual, n, threshold, start, out.bitmap.data());
    out.count = static_cast<std::uint32_t>(count);
    if (policy_ == FormatPolicy::Auto && count < bitmap_exit(n)) mode_ = Format::Sparse;
}

}  // namespace thresher::dist
