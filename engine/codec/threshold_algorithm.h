// How each worker picks τ for its next message (Deeplearning4j's ThresholdAlgorithm family).
// τ trades bandwidth for staleness: a large τ sends few entries (and leaves more in the
// residual, to be sent later); a small one sends many. The density of a message is the fraction
// of the N entries it set; the adaptive algorithms steer τ so the density stays near a target.
//
//   FixedThreshold(τ)          always τ.
//   AdaptiveThreshold          keep the density within [min, max]: above max, τ /= decay (grows);
//                              below min, τ *= decay (shrinks); inside, τ stays.
//   TargetDensityThreshold     aim at one density: below it τ *= decay, above it τ /= decay.
// decay = 0.5^(1/20) ≈ 0.965936, so 20 steps the same way halve or double τ. Worked example,
// adaptive from τ = 1e-3 with densities 0.05, 0.05, 0.001, 0.00005:
//   1e-3 → 1e-3/0.965936 = 1.035265e-3 → 1.071773e-3 → (inside) 1.071773e-3
//        → ·0.965936 = 1.035265e-3
// τ never goes below the smallest positive normal float, so a long run of empty messages cannot
// drive it to 0 (which the encoder would refuse).
//
// Defaults follow DESIGN.md: start at 1e-3 for both adaptive algorithms (DL4J's own classes
// start at 1e-4), adaptive band [1e-4, 1e-2], target density 1e-3.
//
// Spec strings (command line; parsed into a ThresholdSpec, threshold_spec.h), numbers in any form
// std::from_chars reads:
//   fixed:<τ>                                e.g. fixed:0.001
//   adaptive[:<initial>[:<min>[:<max>[:<decay>]]]]   e.g. adaptive, adaptive:1e-3:1e-4:1e-2
//   target[:<density>[:<initial>[:<decay>]]]          e.g. target:1e-3
// name() gives the full spec back, so parse_threshold_algorithm(a.name()) rebuilds a.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace thresher::dist {

class ThresholdAlgorithm {
public:
    virtual ~ThresholdAlgorithm() = default;
    // τ for the message of `iteration`. `last_density` is the fraction of entries the previous
    // message set, or negative before the first message (the first call returns the initial τ).
    virtual float next(int iteration, std::size_t length, double last_density) = 0;
    // A copy including the current state (one per worker, DL4J clones per thread).
    virtual std::unique_ptr<ThresholdAlgorithm> clone() const = 0;
    // The spec that rebuilds this algorithm (without its state), e.g. "fixed:0.001".
    virtual std::string name() const = 0;
    // The runaway guard (gradient_sharing.cpp): τ never rises above `ceiling` from now on. An
    // adaptive algorithm whose density stays above its band would otherwise raise τ by 3.5% per
    // message without end, until the ±τ steps themselves wreck the parameters. A fixed τ is the
    // user's choice and is kept.
    virtual void set_ceiling(double ceiling) {}
    // The densities the algorithm steers into, [low, high]; nullopt when it does not steer.
    struct DensityBand {
        double low, high;
    };
    virtual std::optional<DensityBand> density_band() const { return std::nullopt; }
};

class FixedThreshold final : public ThresholdAlgorithm {
public:
    explicit FixedThreshold(double threshold);
    float next(int iteration, std::size_t length, double last_density) override;
    std::unique_ptr<ThresholdAlgorithm> clone() const override;
    std::string name() const override;

private:
    float threshold_;
};

// The per-step factor of both adaptive algorithms: 0.5^(1/20).
double default_threshold_decay();

class AdaptiveThreshold final : public ThresholdAlgorithm {
public:
    static constexpr double kDefaultInitial = 1e-3;
    static constexpr double kDefaultMinDensity = 1e-4;
    static constexpr double kDefaultMaxDensity = 1e-2;

    // initial > 0; 0 < min ≤ max ≤ 1; decay in [0.5, 1) (DL4J's bounds). ConfigError otherwise.
    explicit AdaptiveThreshold(double initial = kDefaultInitial, double min_density = kDefaultMinDensity,
                               double max_density = kDefaultMaxDensity,
                               double decay = default_threshold_decay());
    float next(int iteration, std::size_t length, double last_density) override;
    std::unique_ptr<ThresholdAlgorithm> clone() const override;
    std::string name() const override;
    void set_ceiling(double ceiling) override { ceiling_ = ceiling; }
    std::optional<DensityBand> density_band() const override { return DensityBand{min_, max_}; }

private:
    double initial_, min_, max_, decay_;
    double current_ = -1.0;  // τ of the last message; < 0 before the first
    double ceiling_ = std::numeric_limits<double>::infinity();
};

class TargetDensityThreshold final : public ThresholdAlgorithm {
public:
    static constexpr double kDefaultInitial = 1e-3;
    static constexpr double kDefaultDensity = 1e-3;

    // 0 < density ≤ 1; initial > 0; decay in [0.5, 1). ConfigError otherwise.
    explicit TargetDensityThreshold(double density = kDefaultDensity, double initial = kDefaultInitial,
                                    double decay = default_threshold_decay());
    float next(int iteration, std::size_t length, double last_density) override;
    std::unique_ptr<ThresholdAlgorithm> clone() const override;
    std::string name() const override;
    void set_ceiling(double ceiling) override { ceiling_ = ceiling; }
    // The target oscillates around its density by design; a tenfold miss for long is a runaway.
    std::optional<DensityBand> density_band() const override { return DensityBand{density_ / 10, density_ * 10}; }

private:
    double density_, initial_, decay_;
    double current_ = -1.0;
    double ceiling_ = std::numeric_limits<double>::infinity();
};

// Builds an algorithm from a spec string (grammar above). Throws ConfigError
// "<source>: \"<spec>\": <problem>" for an unknown name, a bad number, a value out of range or
// too many fields.
std::unique_ptr<ThresholdAlgorithm> parse_threshold_algorithm(std::string_view spec,
                                                              std::string_view source = "threshold algorithm");

}  // namespace thresher::dist
