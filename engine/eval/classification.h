// Classification metrics from a confusion matrix, with DL4J's Evaluation semantics so numbers
// match what users of the Java stack expect (precision, recall, F1, their macro averages and the
// way classes with no data are treated).
//
// Only integer counts are kept: evaluations computed on different nodes (or on parts of the test
// set) merge by adding their matrices, and the merged result is exactly the single-pass one.
//
// Worked example, 3 classes, rows = actual, columns = predicted:
//
//     actual \ predicted   0  1  2        precision(1) = TP / (TP + FP) = 1 / (1 + 1) = 0.5
//                  0       3  1  0        recall(1)    = TP / (TP + FN) = 1 / (1 + 2) = 0.333
//                  1       0  1  2        f1(1)        = 2PR / (P + R)             = 0.4
//                  2       1  0  3        accuracy     = (3 + 1 + 3) / 11          = 0.636
//
// Top-k accuracy (DL4J's Evaluation(labels, topN)): a sample counts as a top-k hit when fewer
// than k classes score strictly higher than its true class, so with scores (0.5, 0.3, 0.2) and
// true class 2 it is a top-3 hit, not a top-2 one. It needs the scores, so it is counted by
// add() only; the count merges by addition like the matrix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace thresher::eval {

class ClassificationEvaluator {
public:
    // Throws thresher::Error unless num_classes >= 1 and 0 <= top_k (0: no top-k accuracy).
    explicit ClassificationEvaluator(int num_classes, int top_k = 0);

    // scores: row-major [count x num_classes] probabilities or logits (argmax is the same either
    // way). The prediction is the first maximum on ties; NaN scores never win against a number.
    // Throws thresher::Error on a label outside [0, num_classes); nothing is added then.
    void add(const float* scores, const std::int32_t* labels, std::size_t count);
    // Throws thresher::Error on a label or prediction outside [0, num_classes).
    void add_predictions(const std::int32_t* predicted, const std::int32_t* labels, std::size_t count);
    // Adds the other confusion matrix (and top-k hits) to this one. Throws if the class counts or
    // the k differ or the total count would overflow (nothing is added then).
    void merge(const ClassificationEvaluator& other);

    std::int64_t count() const { return total_; }
    // Fraction predicted correctly; 0 before any sample was added.
    double accuracy() const;
    // k of the top-k accuracy (0: not counted), the hits, and their fraction (0 before any sample).
    int top_k() const { return top_k_; }
    std::int64_t top_k_correct() const { return top_k_correct_; }
    double top_k_accuracy() const;

    // Per class. As in DL4J, a value whose denominator is zero (precision of a class never
    // predicted, recall of a class never present) is reported as 0 here, and left out of the
    // macro averages below. F1 is undefined when precision or recall is; it is 0 when both are 0.
    // Throws thresher::Error if c is outside [0, num_classes).
    double precision(int c) const;
    double recall(int c) const;
    double f1(int c) const;

    // Means over the classes where the metric is defined; 0 when it is defined for none.
    double macro_precision() const;
    double macro_recall() const;
    double macro_f1() const;

    std::int64_t confusion(int actual, int predicted) const;
    int num_classes() const { return num_classes_; }

    // Human-readable report (for stderr): the matrix with "actual \ predicted" headers, then
    // per-class precision/recall/F1/support ("-" where undefined) and the totals. class_names is
    // either empty (indices are used) or has exactly num_classes entries.
    std::string confusion_table(const std::vector<std::string>& class_names = {}) const;

    // {"accuracy","precision","recall","f1","count","confusion":[[...],...]}; the scalar metrics
    // are the macro averages, confusion rows are actual classes and columns predicted ones. With
    // top-k: also "top_k", "top_k_accuracy" and "top_k_correct" (the count, for merging).
    nlohmann::json to_json() const;
    // Rebuilds from the "confusion" matrix (and "top_k" with "top_k_correct" when present); the
    // other fields are derived and recomputed.
    // Throws thresher::Error naming the offending element if the matrix is not a non-empty
    // square array of non-negative integers.
    static ClassificationEvaluator from_json(const nlohmann::json& j);

private:
    std::optional<double> precision_if_defined(int c) const;
    std::optional<double> recall_if_defined(int c) const;
    std::optional<double> f1_if_defined(int c) const;
    void check_class(int c, const char* what) const;
    std::int64_t row_sum(int actual) const;
    // Unchecked element access; callers have validated the indices.
    std::int64_t& cell(int actual, int predicted) {
        return matrix_[static_cast<std::size_t>(actual) * num_classes_ + predicted];
    }
    std::int64_t cell(int actual, int predicted) const {
        return matrix_[static_cast<std::size_t>(actual) * num_classes_ + predicted];
    }
    std::int64_t column_sum(int predicted) const;

    int num_classes_;
    int top_k_ = 0;
    std::int64_t top_k_correct_ = 0;
    std::int64_t total_ = 0;
    std::vector<std::int64_t> matrix_;  // [actual * num_classes_ + predicted]
};

}  // namespace thresher::eval
