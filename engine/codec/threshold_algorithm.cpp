// Threshold algorithms (see threshold_algorithm.h) and their spec-string parser. The state is
// kept in double so that a long run of ×decay and ÷decay steps does not drift; next() rounds to
// float only on the way out.
#include "codec/threshold_algorithm.h"

#include "codec/threshold_spec.h"
#include "core/error.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace thresher::dist {
namespace {

// τ never leaves [smallest normal float, largest float], so the float it turns into is always
// finite and positive.
double clamp_threshold(double t) {
    return std::clamp(t, double(std::numeric_limits<float>::min()),
                      double(std::numeric_limits<float>::max()));
}

// Shortest decimal that reads back as the same value, %g style ("0.0001", "1e-05", "0.9659363289248456").
template <class T>
std::string number(T v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
    return std::string(buf, ec == std::errc() ? end : buf);
}

void check_threshold(const char* what, double t) {
    if (!std::isfinite(t) || !(t > 0) || t > std::numeric_limits<float>::max())
        throw ConfigError(std::string(what) + " must be a positive finite number, got " + number(t));
}

void check_density(const char* what, double d) {
    if (!(d > 0 && d <= 1))
        throw ConfigError(std::string(what) + " must be in (0, 1], got " + number(d));
}

void check_decay(double d) {
    if (!(d >= 0.5 && d < 1))
        throw ConfigError("decay must be in [0.5, 1), got " + number(d));
}

}  // namespace

double default_threshold_decay() { return std::pow(0.5, 1.0 / 20.0); }

// --- FixedThreshold ------------------------------------------------------------------------------

FixedThreshold::FixedThreshold(double threshold) {
    check_threshold("the threshold", threshold);
    threshold_ = static_cast<float>(threshold);
    if (!(threshold_ > 0.f))  // below the smallest float: it would round to 0
        throw ConfigError("the threshold " + number(threshold) + " is too small for a float");
}

float FixedThreshold::next(int, std::size_t, double) { return threshold_; }

std::unique_ptr<ThresholdAlgorithm> FixedThreshold::clone() const {
    return std::make_unique<FixedThreshold>(*this);
}

std::string FixedThreshold::name() const { return "fixed:" + number(threshold_); }

// --- AdaptiveThreshold ---------------------------------------------------------------------------

AdaptiveThreshold::AdaptiveThreshold(double initial, double min_density, double max_density,
                                     double decay)
    : initial_(initial), min_(min_density), max_(max_density), decay_(decay) {
    check_threshold("the initial threshold", initial);
    check_density("the minimum density", min_density);
    check_density("the maximum density", max_density);
    if (min_density > max_density)
        throw ConfigError("the minimum density " + number(min_density) +
                          " is above the maximum density " + number(max_density));
    check_decay(decay);
}

float AdaptiveThreshold::next(int, std::size_t, double last_density) {
    if (current_ < 0)
        current_ = clamp_threshold(initial_);
    else if (last_density > max_)  // too dense: raise τ so fewer entries cross it
        current_ = clamp_threshold(current_ / decay_);
    else if (last_density >= 0 && last_density < min_)  // too sparse: lower τ
        current_ = clamp_threshold(current_ * decay_);
    // inside [min, max], negative or NaN (no information): τ stays
    current_ = clamp_threshold(std::min(current_, ceiling_));
    return static_cast<float>(current_);
}

std::unique_ptr<ThresholdAlgorithm> AdaptiveThreshold::clone() const {
    return std::make_unique<AdaptiveThreshold>(*this);
}

std::string AdaptiveThreshold::name() const {
    return "adaptive:" + number(initial_) + ":" + number(min_) + ":" + number(max_) + ":" +
           number(decay_);
}

// --- TargetDensityThreshold ----------------------------------------------------------------------

TargetDensityThreshold::TargetDensityThreshold(double density, double initial, double decay)
    : density_(density), initial_(initial), decay_(decay) {
    check_density("the target density", density);
    check_threshold("the initial threshold", initial);
    check_decay(decay);
}

float TargetDensityThreshold::next(int, std::size_t, double last_density) {
    if (current_ < 0)
        current_ = clamp_threshold(initial_);
    else if (last_density > density_)
        current_ = clamp_threshold(current_ / decay_);
    else if (last_density >= 0 && last_density < density_)
        current_ = clamp_threshold(current_ * decay_);
    current_ = clamp_threshold(std::min(current_, ceiling_));
    return static_cast<float>(current_);
}

std::unique_ptr<ThresholdAlgorithm> TargetDensityThreshold::clone() const {
    return std::make_unique<TargetDensityThreshold>(*this);
}

std::string TargetDensityThreshold::name() const {
    return "target:" + number(density_) + ":" + number(initial_) + ":" + number(decay_);
}

// --- parsing -------------------------------------------------------------------------------------

std::unique_ptr<ThresholdAlgorithm> parse_threshold_algorithm(std::string_view spec,
                                                              std::string_view source) {
    const ThresholdSpec parsed = parse_threshold_spec(spec, source);
    try {
        return make_threshold_algorithm(parsed);
    } catch (const ConfigError& e) {  // only fixed without τ is left to fail here
        throw ConfigError(std::string(source) + ": \"" + std::string(spec) + "\": " + e.what());
    }
}

}  // namespace thresher::dist
