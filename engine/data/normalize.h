// Per-feature scaling fitted on the training set and applied unchanged to the test set, so
// both see the same transform (fitting on the test set would leak its statistics).
#pragma once

#include "data/dataset.h"

#include <vector>

namespace thresher::data {

// x -> (x - mean) / std per feature. A constant feature (std 0) is only centred.
class Standardizer {
public:
    void fit(const Dataset& ds);
    void apply(Dataset& ds) const;  // throws thresher::DataError on a feature-size mismatch
    bool fitted() const { return !mean_.empty(); }
    const std::vector<float>& mean() const { return mean_; }
    const std::vector<float>& stddev() const { return stddev_; }

private:
    std::vector<float> mean_;
    std::vector<float> stddev_;
};

// x -> (x - min) / (max - min) per feature, [0, 1] on the fitted set. A constant feature maps to 0.
class MinMaxScaler {
public:
    void fit(const Dataset& ds);
    void apply(Dataset& ds) const;  // throws thresher::DataError on a feature-size mismatch
    bool fitted() const { return !min_.empty(); }
    const std::vector<float>& min() const { return min_; }
    const std::vector<float>& max() const { return max_; }

private:
    std::vector<float> min_;
    std::vector<float> max_;
};

}  // namespace thresher::data
