#include "data/feature_transform.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include "data/normalize.h"

namespace thresher::data {

void FeatureTransform::check_width(const Dataset& ds) const {
    if (!active()) return;
    const std::size_t width = ds.shape.size();
    if (width != shift.size() || width != scale.size())
        throw DataError(ds.name + ": " + std::to_string(width) + " features, but the " + kind + " normalisation was fitted on " +
                        std::to_string(shift.size()));
}

void FeatureTransform::apply(Dataset& ds) const {
    check_width(ds);
    apply_rows(ds.features.data(), ds.count);
}

void FeatureTransform::apply_rows(float* rows, std::size_t count) const {
    if (!active()) return;
    const std::size_t width = shift.size();
    for (std::size_t i = 0; i < count; ++i) {
        float* row = rows + i * width;
        for (std::size_t j = 0; j < width; ++j) row[j] = (row[j] - shift[j]) * scale[j];
    }
}

namespace {

// Sequences (seq_spec.md): statistics per feature over every valid step of every sample (DL4J's
// NormalizerStandardize / MinMax on time series, which skip masked steps), written out over the
// whole row so apply() needs no sequence logic: the length (position 0) keeps shift 0 and scale
// 1, exactly; padded steps get shifted too, which is harmless (the network zeroes a model
// input's padded steps when it splits the row).
FeatureTransform fit_sequence_transform(const std::string& kind, const Dataset& train) {
    const auto T = static_cast<std::size_t>(train.steps), C = static_cast<std::size_t>(train.step_features);
    const std::size_t width = train.shape.size();
    if (width != 1 + T * C)
        throw DataError(train.name + ": --normalize " + kind + ": rows of " + std::to_string(width) + " values, not 1 + " +
                        std::to_string(T) + " steps x " + std::to_string(C) + " features");
    std::vector<double> sum(C, 0.0), sq(C, 0.0), lo(C, HUGE_VAL), hi(C, -HUGE_VAL);
    double steps = 0;
    for (std::size_t i = 0; i < train.count; ++i) {
        const float* x = train.sample(i);
        const auto L = std::min(static_cast<std::size_t>(x[0]), T);  // lengths were checked by the reader
        for (std::size_t s = 0; s < L; ++s)
            for (std::size_t f = 0; f < C; ++f) {
                const double v = x[1 + s * C + f];
                sum[f] += v;
                lo[f] = std::min(lo[f], v);
                hi[f] = std::max(hi[f], v);
            }
        steps += static_cast<double>(L);
    }
    if (steps == 0) throw DataError(train.name + ": --normalize " + kind + ": no valid steps to fit on");
    // Two passes, as Standardizer: E[x^2] - E[x]^2 cancels badly when the mean dwarfs the spread.
    for (std::size_t i = 0; i < train.count; ++i) {
        const float* x = train.sample(i);
        const auto L = std::min(static_cast<std::size_t>(x[0]), T);
        for (std::size_t s = 0; s < L; ++s)
            for (std::size_t f = 0; f < C; ++f) {
                const double d = x[1 + s * C + f] - sum[f] / steps;
                sq[f] += d * d;
            }
    }
    std::vector<float> shift(C), scale(C);
    for (std::size_t f = 0; f < C; ++f) {
        if (kind == "standardize") {
            const double sd = std::sqrt(sq[f] / steps);
            shift[f] = static_cast<float>(sum[f] / steps);
            scale[f] = sd > 0 ? static_cast<float>(1.0 / sd) : 1.0f;
        } else {
            shift[f] = static_cast<float>(lo[f]);
            scale[f] = hi[f] > lo[f] ? static_cast<float>(1.0 / (hi[f] - lo[f])) : 1.0f;
        }
    }
    FeatureTransform t;
    t.kind = kind;
    t.shift.assign(width, 0.0f);
    t.scale.assign(width, 1.0f);
    for (std::size_t s = 0; s < T; ++s)
        for (std::size_t f = 0; f < C; ++f) {
            t.shift[1 + s * C + f] = shift[f];
            t.scale[1 + s * C + f] = scale[f];
        }
    return t;
}

}  // namespace

FeatureTransform fit_transform(const std::string& kind, const Dataset& train) {
    FeatureTransform t;
    t.kind = kind;
    if (kind == "none") return t;
    if (kind != "standardize" && kind != "minmax")
        throw ConfigError("--normalize " + kind + ": expected none, standardize or minmax");
    if (train.steps > 0) return fit_sequence_transform(kind, train);
    if (kind == "standardize") {
        Standardizer s;
        s.fit(train);
        t.shift = s.mean();
        for (float sd : s.stddev()) t.scale.push_back(sd > 0.f ? 1.f / sd : 1.f);
        return t;
    }
    if (kind == "minmax") {
        MinMaxScaler m;
        m.fit(train);
        t.shift = m.min();
        for (std::size_t j = 0; j < m.min().size(); ++j) {
            const float range = m.max()[j] - m.min()[j];
            t.scale.push_back(range > 0.f ? 1.f / range : 1.f);
        }
        return t;
    }
    throw ConfigError("--normalize " + kind + ": expected none, standardize or minmax");
}

}  // namespace thresher::data
