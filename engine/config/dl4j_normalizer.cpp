#include "config/dl4j_normalizer.h"

#include <cmath>
#include <cstring>

#include "config/nd4j_array.h"
#include "core/error.h"

namespace thresher::config {

namespace {

// DL4J rounds a zero standard deviation or range up to Nd4j.EPS_THRESHOLD.
constexpr double kEps = 1e-5;

// A bounded big-endian reader over the file's bytes: every read checks what is left first.
class JavaIn {
public:
    JavaIn(std::span<const std::uint8_t> b, const std::string& source) : b_(b), source_(source) {}
    std::uint64_t be(std::size_t n, const char* what) {
        need(n, what);
        std::uint64_t v = 0;
        for (std::size_t i = 0; i < n; ++i) v = (v << 8) | b_[at_ + i];
        at_ += n;
        return v;
    }
    std::string utf(const char* what) {
        const auto n = static_cast<std::size_t>(be(2, what));
        need(n, what);
        std::string s(reinterpret_cast<const char*>(b_.data() + at_), n);
        at_ += n;
        return s;
    }
    bool boolean(const char* what) {
        const auto v = be(1, what);
        if (v > 1) fail(std::string(what) + ": expected a boolean byte (0 or 1), got " + std::to_string(v));
        return v == 1;
    }
    double f64(const char* what) {
        const std::uint64_t bits = be(8, what);
        double d;
        std::memcpy(&d, &bits, sizeof d);
        if (!std::isfinite(d)) fail(std::string(what) + " is not a finite number");
        return d;
    }
    Nd4jArray array(const char* what) {
        std::size_t used = 0;
        auto a = read_nd4j_array(b_.subspan(at_), source_ + " (" + what + ")", &used);
        at_ += used;
        for (float v : a.data)
            if (!std::isfinite(v)) fail(std::string(what) + " holds NaN or infinite values");
        return a;
    }
    std::size_t left() const { return b_.size() - at_; }
    [[noreturn]] void fail(const std::string& what) const { throw ConfigError(source_ + ": " + what); }

private:
    void need(std::size_t n, const char* what) const {
        if (n > b_.size() - at_)
            fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes at offset " + std::to_string(at_) +
                 ", " + std::to_string(b_.size() - at_) + " left");
    }
    std::span<const std::uint8_t> b_;
    const std::string& source_;
    std::size_t at_ = 0;
};

// Per-feature values from statistics per feature (the input's size) or, for an image, per channel.
std::vector<double> per_feature(const JavaIn& in, const Nd4jArray& a, const char* what, const ModelConfig& m) {
    const std::size_t n = m.input.size();
    std::vector<double> out(n);
    if (a.size() == n) {
        for (std::size_t i = 0; i < n; ++i) out[i] = a.data[i];
        return out;
    }
    if (!m.input.flat() && a.size() == static_cast<std::size_t>(m.input.c)) {
        const std::size_t plane = static_cast<std::size_t>(m.input.h) * m.input.w;
        for (std::size_t i = 0; i < n; ++i) out[i] = a.data[i / plane];
        return out;
    }
    in.fail(std::string(what) + " has shape " + a.shape_str() + " but the model's input is " + m.input.str() + " (" +
            std::to_string(n) + " features" + (m.input.flat() ? std::string() : ", " + std::to_string(m.input.c) + " channels") + ")");
}

void no_labels(const JavaIn& in, bool fit_label) {
    if (fit_label)
        in.fail("fitLabel is true: DL4J also normalised the labels, which Thresher does not support "
                "(refit the normaliser without fitLabel)");
}

}  // namespace

ImportedNormalization read_dl4j_normalizer(std::span<const std::uint8_t> bytes, const std::string& source,
                                           const ModelConfig& m) {
    JavaIn in(bytes, source);
    // The header's length first: Java serialisation (0xACED...) would claim 44269 bytes.
    if (bytes.size() >= 2 && (bytes[0] != 0 || bytes[1] != 10))
        in.fail("not written by DL4J's NormalizerSerializer (no \"NORMALIZER\" header; DL4J before 0.8 used Java "
                "serialisation, which is not read)");
    if (in.utf("the header") != "NORMALIZER")
        in.fail("not written by DL4J's NormalizerSerializer (no \"NORMALIZER\" header; DL4J before 0.8 used Java "
                "serialisation, which is not read)");
    if (const auto version = in.be(4, "the version"); version != 1)
        in.fail("version " + std::to_string(version) + " is not supported (1 is)");
    const auto type = in.utf("the normaliser type");
    ImportedNormalization r;
    const std::size_t n = m.input.size();
    if (type == "STANDARDIZE") {
        const bool fit_label = in.boolean("fitLabel");
        const auto mean = in.array("mean");
        const auto std = in.array("std");
        no_labels(in, fit_label);
        const auto mu = per_feature(in, mean, "mean", m), sd = per_feature(in, std, "std", m);
        r.kind = "standardize";
        for (std::size_t i = 0; i < n; ++i) {
            if (sd[i] < 0) in.fail("std holds a negative value");
            r.shift.push_back(static_cast<float>(mu[i]));
            r.scale.push_back(static_cast<float>(1.0 / std::max(sd[i], kEps)));
        }
        r.description = "NormalizerStandardize (" + std::to_string(mean.size()) + " means and standard deviations)";
    } else if (type == "MIN_MAX") {
        const bool fit_label = in.boolean("fitLabel");
        const double tmin = in.f64("targetMin"), tmax = in.f64("targetMax");
        const auto lo_a = in.array("min");
        const auto hi_a = in.array("max");
        no_labels(in, fit_label);
        if (!(tmax > tmin)) in.fail("target range [" + std::to_string(tmin) + ", " + std::to_string(tmax) + "] is empty");
        const auto lo = per_feature(in, lo_a, "min", m), hi = per_feature(in, hi_a, "max", m);
        r.kind = "minmax";
        for (std::size_t i = 0; i < n; ++i) {
            const double scale = (tmax - tmin) / std::max(hi[i] - lo[i], kEps);
            r.scale.push_back(static_cast<float>(scale));
            r.shift.push_back(static_cast<float>(lo[i] - tmin / scale));
        }
        r.description = "NormalizerMinMaxScaler (to [" + std::to_string(tmin) + ", " + std::to_string(tmax) + "])";
    } else if (type == "IMAGE_MIN_MAX") {
        const double lo = in.f64("minRange"), hi = in.f64("maxRange"), max_pixel = in.f64("maxPixelVal");
        if (!(max_pixel > 0)) in.fail("maxPixelVal must be positive, got " + std::to_string(max_pixel));
        if (!(hi > lo)) in.fail("range [" + std::to_string(lo) + ", " + std::to_string(hi) + "] is empty");
        const double scale = (hi - lo) / max_pixel;
        r.kind = "minmax";
        r.scale.assign(n, static_cast<float>(scale));
        r.shift.assign(n, static_cast<float>(-lo / scale));
        r.description = "ImagePreProcessingScaler (pixels 0.." + std::to_string(max_pixel) + " to [" + std::to_string(lo) +
                        ", " + std::to_string(hi) + "])";
    } else if (type == "MULTI_STANDARDIZE" || type == "MULTI_MIN_MAX" || type == "MULTI_HYBRID") {
        in.fail("a " + type + " normaliser is for multi-input ComputationGraphs, which Thresher does not import");
    } else if (type == "CUSTOM") {
        in.fail("a CUSTOM normaliser (a user's own Java class) cannot be read");
    } else {
        in.fail("unknown normaliser type \"" + type + "\" (STANDARDIZE, MIN_MAX and IMAGE_MIN_MAX are read)");
    }
    if (in.left() != 0) in.fail(std::to_string(in.left()) + " bytes after the " + type + " normaliser");
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(r.shift[i]) || !std::isfinite(r.scale[i]))
            in.fail("its statistics give a non-finite scale for feature " + std::to_string(i));
    return r;
}

}  // namespace thresher::config
