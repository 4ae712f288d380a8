// Threshold algorithms (see threshold_algorithm.h) and their spec-string parser. The state is
// kept in double so that a long run of ×decay and ÷decay steps does not drift; next() rounds to
// float only on the way out.
#include "dist/codec/threshold_algorithm.h"

#include "core/error.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> parts;
    for (;;) {
        const std::size_t at = s.find(sep);
        parts.push_back(s.substr(0, at));
        if (at == std::string_view::npos) return parts;
        s.remove_prefix(at + 1);
    }
}

double parse_number(std::string_view field) {
    double v = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (field.empty() || ec != std::errc() || end != field.data() + field.size())
        throw ConfigError("\"" + std::string(field) + "\" is not a number");
    return v;
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
    const std::string where = std::string(source) + ": \"" + std::string(spec) + "\": ";
    const std::vector<std::string_view> parts = split(spec, ':');
    const std::string_view kind = parts.front();
    const std::size_t fields = parts.size() - 1;
    if (kind != "fixed" && kind != "adaptive" && kind != "target")
        throw ConfigError(where + "unknown threshold algorithm \"" + std::string(kind) +
                          "\" (expected fixed:<threshold>, adaptive[:initial[:min[:max[:decay]]]] "
                          "or target[:density[:initial[:decay]]])");
    try {
        std::vector<double> v;
        for (std::size_t i = 1; i < parts.size(); ++i) v.push_back(parse_number(parts[i]));
        if (kind == "fixed") {
            if (fields != 1) throw ConfigError("expected fixed:<threshold>");
            return std::make_unique<FixedThreshold>(v[0]);
        }
        if (kind == "adaptive") {
            if (fields > 4) throw ConfigError("expected adaptive[:initial[:min[:max[:decay]]]]");
            return std::make_unique<AdaptiveThreshold>(
                fields > 0 ? v[0] : AdaptiveThreshold::kDefaultInitial,
                fields > 1 ? v[1] : AdaptiveThreshold::kDefaultMinDensity,
                fields > 2 ? v[2] : AdaptiveThreshold::kDefaultMaxDensity,
                fields > 3 ? v[3] : default_threshold_decay());
        }
        // target
        if (fields > 3) throw ConfigError("expected target[:density[:initial[:decay]]]");
        return std::make_unique<TargetDensityThreshold>(
            fields > 0 ? v[0] : TargetDensityThreshold::kDefaultDensity,
            fields > 1 ? v[1] : TargetDensityThreshold::kDefaultInitial,
            fields > 2 ? v[2] : default_threshold_decay());
    } catch (const ConfigError& e) {
        throw ConfigError(where + e.what());
    }
}

}  // namespace thresher::dist
