// Residual post-processing and statistics (see residual.h).
#include "codec/residual.h"

#include "core/error.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace thresher::dist {
namespace {

template <class T>
std::string number(T v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
    return std::string(buf, ec == std::errc() ? end : buf);
}

template <class T>
T parse_field(std::string_view field) {
    T v{};
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (field.empty() || ec != std::errc() || end != field.data() + field.size())
        throw ConfigError("\"" + std::string(field) + "\" is not a number");
    return v;
}

}  // namespace

// --- ResidualClipping ----------------------------------------------------------------------------

ResidualClipping::ResidualClipping(int every, double multiple) : every_(every), multiple_(multiple) {
    if (every < 1) throw ConfigError("clipping interval must be at least 1, got " + std::to_string(every));
    if (!std::isfinite(multiple) || !(multiple >= 1.0))
        throw ConfigError("clipping multiple must be a finite number >= 1, got " + number(multiple));
}

void ResidualClipping::process(int iteration, float threshold, float* residual, std::size_t n) {
    if (iteration <= 0 || iteration % every_ != 0) return;
    const float c = static_cast<float>(multiple_ * threshold);
    // Selects, not std::clamp on references, so the loop vectorises; NaN passes through unchanged.
    for (std::size_t i = 0; i < n; ++i) {
        const float v = residual[i];
        residual[i] = v > c ? c : (v < -c ? -c : v);
    }
}

std::unique_ptr<ResidualPostProcessor> ResidualClipping::clone() const {
    return std::make_unique<ResidualClipping>(*this);
}

std::string ResidualClipping::name() const {
    return "clip:" + std::to_string(every_) + ":" + number(multiple_);
}

// --- NoResidualProcessing ------------------------------------------------------------------------

std::unique_ptr<ResidualPostProcessor> NoResidualProcessing::clone() const {
    return std::make_unique<NoResidualProcessing>();
}

// --- parsing -------------------------------------------------------------------------------------

std::unique_ptr<ResidualPostProcessor> parse_residual_processor(std::string_view spec,
                                                                std::string_view source) {
    const std::string where = std::string(source) + ": \"" + std::string(spec) + "\": ";
    if (spec == "none") return std::make_unique<NoResidualProcessing>();
    if (spec == "clip") return std::make_unique<ResidualClipping>();
    if (spec.starts_with("clip:")) {
        std::string_view rest = spec.substr(5);
        const std::size_t colon = rest.find(':');
        try {
            if (colon == std::string_view::npos || rest.find(':', colon + 1) != std::string_view::npos)
                throw ConfigError("expected clip:<every>:<multiple>, e.g. clip:5:5");
            return std::make_unique<ResidualClipping>(parse_field<int>(rest.substr(0, colon)),
                                                      parse_field<double>(rest.substr(colon + 1)));
        } catch (const ConfigError& e) {
            throw ConfigError(where + e.what());
        }
    }
    throw ConfigError(where + "unknown residual processing (expected clip, clip:<every>:<multiple> or none)");
}

// --- statistics ----------------------------------------------------------------------------------

ResidualStats residual_stats(const float* r, std::size_t n, float tau, std::size_t sample) {
    if (!std::isfinite(tau) || !(tau > 0.f))
        throw Error("residual statistics: the threshold must be finite and positive, got " + number(tau));
    ResidualStats s;
    if (n == 0) return s;
    constexpr double kInf = std::numeric_limits<double>::infinity();
    const auto magnitude = [&](std::size_t i) {
        const double v = r[i];
        return std::isnan(v) ? kInf : std::fabs(v) / tau;
    };
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double a = magnitude(i);
        sum += a;
        s.max_abs = std::max(s.max_abs, a);
    }
    s.mean_abs = sum / double(n);

    sample = std::max<std::size_t>(sample, 1);
    const std::size_t stride = (n + sample - 1) / sample;
    std::vector<double> picked;
    picked.reserve((n + stride - 1) / stride);
    for (std::size_t i = 0; i < n; i += stride) picked.push_back(magnitude(i));
    const std::size_t m = picked.size();
    // Nearest rank: the ceil(p·m)-th smallest, p = percent/100, in integers so 50% of 4 is 2 exactly.
    const auto percentile = [&](std::size_t percent) {
        const std::size_t rank = (percent * m + 99) / 100;  // 1-based, ≥ 1 since m ≥ 1
        auto nth = picked.begin() + static_cast<std::ptrdiff_t>(rank - 1);
        std::nth_element(picked.begin(), nth, picked.end());
        return *nth;
    };
    s.p50 = percentile(50);
    s.p90 = percentile(90);
    s.p99 = percentile(99);
    return s;
}

}  // namespace thresher::dist
