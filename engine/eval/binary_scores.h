// The area under the ROC curve of a binary classifier, from a histogram of its scores (sigmoid
// outputs in [0, 1]) per actual class, so that evaluations from several nodes merge by adding
// counts, like the confusion matrix.
//
// AUC = P(score of a random positive > score of a random negative) + ½·P(equal). With kBins
// bins, pairs that fall in the same bin count as ties (½), which bounds the error by the
// fraction of positive-negative pairs sharing a bin. Worked example: positives at 0.9 and 0.4,
// negatives at 0.3 and 0.4 (same bin as the positive 0.4): pairs (0.9,0.3) 1, (0.9,0.4) 1,
// (0.4,0.3) 1, (0.4,0.4) ½ → AUC = 3.5/4 = 0.875.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace thresher::eval {

class BinaryScores {
public:
    static constexpr int kBins = 1000;
    BinaryScores();

    // scores: [count] in [0, 1] (clamped; NaN counts as 0); labels 0 or 1 (others ignored).
    void add(const float* scores, const std::int32_t* labels, std::size_t count);
    // Throws thresher::Error, with nothing added, when a count would overflow.
    void merge(const BinaryScores& other);
    // NaN when either class is absent (the AUC is undefined then).
    double auc() const;

    // {"pos": [...], "neg": [...]} counts per bin, for merging; from_json checks sizes and values.
    nlohmann::json to_json() const;
    static BinaryScores from_json(const nlohmann::json& j);

private:
    std::vector<std::int64_t> pos_, neg_;
};

}  // namespace thresher::eval
