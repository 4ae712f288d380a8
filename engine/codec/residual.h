// What happens to a worker's residual after each encode(), and a look inside it for debugging.
//
// The residual holds everything a worker has computed but not yet sent. In a healthy run it stays
// within a few τ; when τ grows (adaptive threshold) or the updates are large, entries can pile up
// to many τ and then leak out, one τ per message, long after they mattered (stale updates).
// Deeplearning4j therefore clips it every few iterations (ResidualClippingPostProcessor):
//     every 5 iterations (5, 10, 15, …; never at 0): r_i = clamp(r_i, −5τ, +5τ)
// Worked example, τ = 0.5: clip value 2.5, r = {3.0, −7.5, 1.0} → {2.5, −2.5, 1.0}.
// Clipping is the one place gradient sharing drops something on purpose: the clipped part is
// never sent, so "Σ messages + r == Σ updates" holds only with NoResidualProcessing.
//
// Spec strings (command line): "clip" (every 5, ×5), "clip:<every>:<multiple>", "none".
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace thresher::dist {

class ResidualPostProcessor {
public:
    virtual ~ResidualPostProcessor() = default;
    // Called after the encode() of `iteration` (counting from 0) with the τ that encode used.
    virtual void process(int iteration, float threshold, float* residual, std::size_t n) = 0;
    virtual std::unique_ptr<ResidualPostProcessor> clone() const = 0;
    // The spec that rebuilds this processor, e.g. "clip:5:5".
    virtual std::string name() const = 0;
};

class ResidualClipping final : public ResidualPostProcessor {
public:
    // every ≥ 1, multiple ≥ 1 and finite (DL4J: clipping below 1·τ would undo the encoding).
    // ConfigError otherwise.
    explicit ResidualClipping(int every = 5, double multiple = 5.0);
    // Clips to ±multiple·τ when iteration > 0 and iteration % every == 0; otherwise nothing.
    void process(int iteration, float threshold, float* residual, std::size_t n) override;
    std::unique_ptr<ResidualPostProcessor> clone() const override;
    std::string name() const override;

    int every() const { return every_; }
    double multiple() const { return multiple_; }

private:
    int every_;
    double multiple_;
};

class NoResidualProcessing final : public ResidualPostProcessor {
public:
    void process(int, float, float*, std::size_t) override {}
    std::unique_ptr<ResidualPostProcessor> clone() const override;
    std::string name() const override { return "none"; }
};

// Builds a processor from "clip", "clip:<every>:<multiple>" or "none". Throws ConfigError
// "<source>: \"<spec>\": <problem>".
std::unique_ptr<ResidualPostProcessor> parse_residual_processor(std::string_view spec,
                                                                std::string_view source = "residual processing");

// The size of the residual in units of τ, for the optional debug output (DL4J's
// encodingDebugMode). mean_abs and max_abs cover all n entries; the percentiles come from a
// deterministic sample of at most `sample` entries: every ceil(n/sample)-th entry from index 0
// (all entries when n ≤ sample). Percentiles are nearest-rank: p50 is the smallest sampled |r|/τ
// with at least half the sample at or below it. NaN entries count as +infinity. All zero for n = 0.
// Example, τ = 0.5, r = {0.25, −0.5, 1.0, −2.0}: |r|/τ = {0.5, 1, 2, 4}: mean 1.875, max 4,
// p50 1 (2nd of 4), p90 = p99 = 4.
struct ResidualStats {
    double mean_abs = 0, max_abs = 0, p50 = 0, p90 = 0, p99 = 0;  // as multiples of τ
};

// Throws thresher::Error for a τ that is not finite and positive.
ResidualStats residual_stats(const float* r, std::size_t n, float tau, std::size_t sample = 100000);

}  // namespace thresher::dist
