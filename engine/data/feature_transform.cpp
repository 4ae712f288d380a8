#include "data/feature_transform.h"

#include "core/error.h"
#include "data/normalize.h"

namespace thresher::data {

void FeatureTransform::apply(Dataset& ds) const {
    if (!active()) return;
    const std::size_t width = ds.shape.size();
    if (width != shift.size() || width != scale.size())
        throw DataError(ds.name + ": " + std::to_string(width) + " features, but the " + kind + " normalisation was fitted on " +
                        std::to_string(shift.size()));
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

FeatureTransform fit_transform(const std::string& kind, const Dataset& train) {
    FeatureTransform t;
    t.kind = kind;
    if (kind == "none") return t;
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
