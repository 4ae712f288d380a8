// Threshold encoding of a worker's residual (Strom 2015), the sending half of gradient sharing.
// Each iteration the worker adds its update to the residual r and calls encode(r, τ): every
// entry with |r_i| ≥ τ goes into the message as +τ or −τ and r_i keeps the remainder; entries
// below τ stay in r untouched. Nothing is dropped, only delayed:
//     old r == decoded message + new r          (per entry, per call)
//     Σ messages + r == Σ updates               (per worker, over a whole run)
// Worked example, τ = 0.5:  r = {0.25, 0.5, -0.75, 1.375, 2.0}
//     message {_, +τ, −τ, +τ, +τ}, new r = {0.25, 0, -0.25, 0.875, 1.5}
// An entry carries at most one τ per message: the 2.0 drains as 0.5 per call over four calls.
// The subtraction r_i ∓ τ is exact whenever |r_i| ≤ 2τ (Sterbenz) or τ is a power of two and
// |r_i| < 2^24·τ; otherwise it rounds by at most half an ulp of r_i, so the identities above hold
// to that rounding.
//
// Format, with Deeplearning4j's hysteresis so a message size hovering near the crossover does not
// flip the format every iteration (sizes: sparse 4 bytes per entry, bitmap N/4 bytes):
//     encoder in Sparse mode: fewer than sparse_limit(N) = N/16 set → Sparse message;
//                             otherwise → Bitmap message, and the encoder enters Bitmap mode.
//     encoder in Bitmap mode: the message is Bitmap; if fewer than bitmap_exit(N) = N/32 were
//                             set, the next message starts in Sparse mode again.
//     Example, N = 1024 (limit 64, exit 32), counts 63, 64, 40, 31, 40 → S, B, B, B, S.
// (Both limits are at least 1, so tiny vectors behave too: with N = 8 any non-empty message is a
// bitmap, which at 4 bytes is never larger than a sparse one.)
//
// Cost: one pass over the N floats, O(N) reads. Sparse mode tests 32 floats at a time with a
// branch-free packed compare and touches only chunks with something to send: O(count) writes.
// Bitmap mode runs a branch-free kernel over every 16-float block: N/16 word writes plus the
// residual rewritten in place. If a Sparse-mode scan reaches the limit part-way, the entries
// found so far are moved into a bitmap (O(N/16)) and the same pass carries on in Bitmap mode, so
// the residual is still read once. No allocation per element; with the overload that takes an
// EncodedUpdate to refill, no allocation at all once its buffers have grown.
#pragma once

#include "codec/encoded_update.h"

#include <cstddef>

namespace thresher::dist {

class ThresholdEncoder {
public:
    using Format = EncodedUpdate::Format;
    // Auto: the hysteresis above. Sparse/Bitmap: always that format (tests, benchmarks).
    enum class FormatPolicy { Auto, Sparse, Bitmap };

    // `length` is N; at most kMaxEncodedLength (throws thresher::Error beyond).
    explicit ThresholdEncoder(std::size_t length, FormatPolicy policy = FormatPolicy::Auto);

    // Moves every |residual[i]| ≥ threshold into the message (residual[i] ∓= threshold) and
    // returns it. `residual` holds length() floats; threshold must be finite and positive
    // (thresher::Error otherwise). NaN entries never cross the threshold and stay in the residual.
    EncodedUpdate encode(float* residual, float threshold);
    // Same, refilling `out` so its buffers are reused from call to call.
    void encode(float* residual, float threshold, EncodedUpdate& out);

    std::size_t length() const { return length_; }
    FormatPolicy policy() const { return policy_; }
    // The mode the next encode() starts in.
    Format mode() const { return mode_; }

    // A Sparse-mode message with this many entries or more goes out as a Bitmap: max(N/16, 1).
    static std::size_t sparse_limit(std::size_t n);
    // A Bitmap-mode message with fewer entries than this sends the encoder back to Sparse mode
    // for the next message: max(N/32, 1).
    static std::size_t bitmap_exit(std::size_t n);

private:
    std::size_t length_;
    FormatPolicy policy_;
    Format mode_;
};

}  // namespace thresher::dist
