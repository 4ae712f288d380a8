// Regression metrics per output column (MSE, MAE, R²), kept as running sums in double so that
// evaluations from several nodes merge by plain addition into the single-pass result.
//
// R² = 1 − SSE/SST with SST = Σt² − (Σt)²/n taken from the streaming sums. Worked example,
// targets 1 2 3 4, predictions 1.5 2 2 5: SSE = 0.25+0+1+1 = 2.25, mean t = 2.5,
// SST = 2.25+0.25+0.25+2.25 = 5, R² = 1 − 2.25/5 = 0.55.
//
// Edge cases, chosen so that "no information" never looks like a real number:
//   - before any sample is added every metric is NaN;
//   - a column whose targets are all equal has SST = 0 and R² NaN (R² is undefined there);
//   - the average_* functions average the columns where the metric is defined, NaN if none is.
// SST from Σt² − (Σt)²/n loses digits when the targets' spread is tiny against their mean
// (say 1000.001 vs 1000.002); that is the price of exact merging, and fine for model outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace thresher::eval {

class RegressionEvaluator {
public:
    // Throws thresher::Error unless columns >= 1.
    explicit RegressionEvaluator(std::size_t columns);

    // predictions and targets: row-major [count x columns].
    void add(const float* predictions, const float* targets, std::size_t count);
    // Adds the other evaluator's sums. Throws thresher::Error if the column counts differ.
    void merge(const RegressionEvaluator& other);

    std::size_t columns() const { return columns_.size(); }
    std::int64_t count() const { return count_; }

    // Throw thresher::Error if col >= columns().
    double mse(std::size_t col) const;
    double mae(std::size_t col) const;
    double r2(std::size_t col) const;

    double average_mse() const;
    double average_mae() const;
    double average_r2() const;

    // {"count","columns","mse":[..],"mae":[..],"r2":[..],"average_mse","average_mae","average_r2"};
    // NaN values are written as null.
    nlohmann::json to_json() const;
    // One line per column and the averages, for a human on stderr.
    std::string summary() const;
    // The sums themselves, for a sharded evaluation's merge (a model's regression output beside a
    // classifier's: the data set is sharded, so its parts must add up):
    // {"count", "sums": [[sum_t, sum_t², sse, sae, min_t, max_t], ...]}. from_state checks every
    // field (the parts come from other nodes) and throws thresher::Error naming the first bad one.
    nlohmann::json state() const;
    static RegressionEvaluator from_state(const nlohmann::json& j);

private:
    struct Column {
        double sum_target = 0.0;
        double sum_target_sq = 0.0;
        double sum_sq_error = 0.0;
        double sum_abs_error = 0.0;
        // Exact, mergeable detection of constant targets: SST computed from the sums can come
        // out as rounding noise instead of 0, which would give a meaningless huge R².
        float min_target = 0.0f;
        float max_target = 0.0f;
    };
    const Column& column(std::size_t col) const;

    std::int64_t count_ = 0;  // rows; every column sees each row
    std::vector<Column> columns_;
};

}  // namespace thresher::eval
