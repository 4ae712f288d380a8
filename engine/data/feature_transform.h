// The normalisation a model was trained with, in one form: x' = (x - shift[i]) * scale[i] per
// feature. It is fitted on the training set only, stored in the model file, and applied
// unchanged to test data, resumed runs and predictions, so a model never sees differently
// scaled inputs than it learned on.
#pragma once

#include <string>
#include <vector>

#include "data/dataset.h"

namespace thresher::data {

struct FeatureTransform {
    std::string kind = "none";  // none | standardize | minmax
    std::vector<float> shift, scale;

    bool active() const { return kind != "none"; }
    // Throws DataError when the data set's feature count differs from the fitted one.
    void apply(Dataset&) const;
    // That check alone (a streamed set: its rows come later, through apply_rows).
    void check_width(const Dataset&) const;
    // `count` rows of shift.size() features in place (a streamed batch); nothing when inactive.
    void apply_rows(float* rows, std::size_t count) const;
};

// Fits `kind` ("none", "standardize": mean/stddev, "minmax": to [0, 1]) on `train`; throws
// ConfigError for an unknown kind. A constant feature keeps scale 1 (it is only shifted).
// Sequence data (train.steps > 0): per feature over the valid steps, the length left as it is.
FeatureTransform fit_transform(const std::string& kind, const Dataset& train);

}  // namespace thresher::data
