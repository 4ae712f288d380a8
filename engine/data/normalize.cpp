// Feature scaling. Statistics accumulate in double: a float sum over 60000 samples loses
// the low digits of the mean.
#include "data/normalize.h"

#include "core/error.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

namespace thresher::data {

namespace {

void check_fit(const Dataset& ds, const char* who) {
    if (ds.count == 0 || ds.shape.size() == 0)
        throw DataError(ds.name + ": " + who + ": cannot fit on an empty data set");
}

void check_apply(const Dataset& ds, std::size_t fitted_size, const char* who) {
    if (fitted_size == 0) throw DataError(ds.name + ": " + who + ": apply() before fit()");
    if (ds.shape.size() != fitted_size) {
        throw DataError(ds.name + ": " + who + ": samples have " + std::to_string(ds.shape.size()) +
                        " features, the scaler was fitted on " + std::to_string(fitted_size));
    }
}

}  // namespace

void Standardizer::fit(const Dataset& ds) {
    check_fit(ds, "Standardizer");
    const std::size_t f = ds.shape.size();
    std::vector<double> sum(f, 0.0), sq(f, 0.0);
    for (std::size_t i = 0; i < ds.count; ++i) {
        const float* x = ds.sample(i);
        for (std::size_t j = 0; j < f; ++j) sum[j] += x[j];
    }
    const double n = static_cast<double>(ds.count);
    mean_.resize(f);
    for (std::size_t j = 0; j < f; ++j) mean_[j] = static_cast<float>(sum[j] / n);
    // Two passes: the one-pass E[x^2] - E[x]^2 cancels badly when the mean dwarfs the spread.
    for (std::size_t i = 0; i < ds.count; ++i) {
        const float* x = ds.sample(i);
        for (std::size_t j = 0; j < f; ++j) {
            const double d = x[j] - sum[j] / n;
            sq[j] += d * d;
        }
    }
    stddev_.resize(f);
    for (std::size_t j = 0; j < f; ++j) stddev_[j] = static_cast<float>(std::sqrt(sq[j] / n));
}

void Standardizer::apply(Dataset& ds) const {
    check_apply(ds, mean_.size(), "Standardizer");
    const std::size_t f = mean_.size();
    std::vector<float> inv(f);
    for (std::size_t j = 0; j < f; ++j) inv[j] = stddev_[j] > 0 ? 1.0f / stddev_[j] : 1.0f;
    for (std::size_t i = 0; i < ds.count; ++i) {
        float* x = ds.features.data() + i * f;
        for (std::size_t j = 0; j < f; ++j) x[j] = (x[j] - mean_[j]) * inv[j];
    }
}

void MinMaxScaler::fit(const Dataset& ds) {
    check_fit(ds, "MinMaxScaler");
    const std::size_t f = ds.shape.size();
    min_.assign(ds.sample(0), ds.sample(0) + f);
    max_ = min_;
    for (std::size_t i = 1; i < ds.count; ++i) {
        const float* x = ds.sample(i);
        for (std::size_t j = 0; j < f; ++j) {
            min_[j] = std::min(min_[j], x[j]);
            max_[j] = std::max(max_[j], x[j]);
        }
    }
}

void MinMaxScaler::apply(Dataset& ds) const {
    check_apply(ds, min_.size(), "MinMaxScaler");
    const std::size_t f = min_.size();
    // In double, and dividing: the fitted maximum must land on exactly 1, and max - min of two
    // large floats of opposite sign would overflow in float.
    std::vector<double> range(f);
    for (std::size_t j = 0; j < f; ++j) range[j] = static_cast<double>(max_[j]) - min_[j];
    for (std::size_t i = 0; i < ds.count; ++i) {
        float* x = ds.features.data() + i * f;
        for (std::size_t j = 0; j < f; ++j) {
            if (range[j] <= 0) {
                x[j] = 0.0f;
                continue;
            }
            // A test value far outside the fitted range must not overflow the float cast.
            const double v = (x[j] - static_cast<double>(min_[j])) / range[j];
            x[j] = static_cast<float>(std::clamp(v, -double{FLT_MAX}, double{FLT_MAX}));
        }
    }
}

}  // namespace thresher::data
