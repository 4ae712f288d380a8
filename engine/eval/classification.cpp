// Confusion-matrix bookkeeping and the DL4J-compatible metrics derived from it.
#include "eval/classification.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace thresher::eval {

namespace {

std::string range_text(int num_classes) {
    return "[0, " + std::to_string(num_classes) + ")";
}

// Mean of the defined values; 0 when none is defined (DL4J's macro averaging).
template <typename Fn>
double macro_mean(int num_classes, Fn&& metric) {
    double sum = 0.0;
    int defined = 0;
    for (int c = 0; c < num_classes; ++c) {
        if (const auto v = metric(c)) {
            sum += *v;
            ++defined;
        }
    }
    return defined == 0 ? 0.0 : sum / defined;
}

std::string format_metric(std::optional<double> v) {
    if (!v) {
        return "-";
    }
    std::ostringstream out;
    out << std::fixed << std::setprecision(4) << *v;
    return out.str();
}

}  // namespace

ClassificationEvaluator::ClassificationEvaluator(int num_classes, int top_k)
    : num_classes_(num_classes), top_k_(top_k) {
    if (num_classes < 1) {
        throw Error("ClassificationEvaluator: num_classes must be at least 1, got " +
                    std::to_string(num_classes));
    }
    if (top_k < 0) {
        throw Error("ClassificationEvaluator: top_k must be 0 (off) or positive, got " + std::to_string(top_k));
    }
    matrix_.assign(static_cast<std::size_t>(num_classes) * num_classes, 0);
}

void ClassificationEvaluator::check_class(int c, const char* what) const {
    if (c < 0 || c >= num_classes_) {
        throw Error(std::string("ClassificationEvaluator: ") + what + " " + std::to_string(c) +
                    " is outside the class range " + range_text(num_classes_));
    }
}

void ClassificationEvaluator::add(const float* scores, const std::int32_t* labels, std::size_t count) {
    // Validate first so a bad batch leaves the matrix untouched rather than half counted.
    for (std::size_t i = 0; i < count; ++i) {
        if (labels[i] < 0 || labels[i] >= num_classes_) {
            throw Error("ClassificationEvaluator: label " + std::to_string(labels[i]) + " of sample " +
                        std::to_string(i) + " is outside the class range " + range_text(num_classes_));
        }
    }
    for (std::size_t i = 0; i < count; ++i) {
        const float* row = scores + i * static_cast<std::size_t>(num_classes_);
        // Start below every number so a leading NaN (a diverged run) cannot win by default;
        // strict '>' keeps the first maximum on ties.
        int best = 0;
        float best_score = -INFINITY;
        for (int c = 0; c < num_classes_; ++c) {
            if (row[c] > best_score) {
                best_score = row[c];
                best = c;
            }
        }
        ++cell(labels[i], best);
        if (top_k_ > 0) {
            // A NaN true score ranks last: no class is "higher", but it is no hit either.
            const float mine = row[labels[i]];
            int higher = 0;
            for (int c = 0; c < num_classes_; ++c) higher += row[c] > mine ? 1 : 0;
            if (!std::isnan(mine) && higher < top_k_) ++top_k_correct_;
        }
    }
    total_ += static_cast<std::int64_t>(count);
}

void ClassificationEvaluator::add_predictions(const std::int32_t* predicted, const std::int32_t* labels,
                                              std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
        if (labels[i] < 0 || labels[i] >= num_classes_) {
            throw Error("ClassificationEvaluator: label " + std::to_string(labels[i]) + " of sample " +
                        std::to_string(i) + " is outside the class range " + range_text(num_classes_));
        }
        if (predicted[i] < 0 || predicted[i] >= num_classes_) {
            throw Error("ClassificationEvaluator: prediction " + std::to_string(predicted[i]) +
                        " of sample " + std::to_string(i) + " is outside the class range " +
                        range_text(num_classes_));
        }
    }
    for (std::size_t i = 0; i < count; ++i) {
        ++cell(labels[i], predicted[i]);
    }
    total_ += static_cast<std::int64_t>(count);
}

void ClassificationEvaluator::merge(const ClassificationEvaluator& other) {
    if (other.num_classes_ != num_classes_) {
        throw Error("ClassificationEvaluator: cannot merge an evaluation of " +
                    std::to_string(other.num_classes_) + " classes into one of " +
                    std::to_string(num_classes_));
    }
    // Every count is at most its matrix's total, so totals that add up without overflow mean
    // cells that do (a node's part, from_json, may hold counts up to 2^63 - 1 each).
    if (other.top_k_ != top_k_) {
        throw Error("ClassificationEvaluator: cannot merge top-" + std::to_string(other.top_k_) +
                    " counts into top-" + std::to_string(top_k_) + " ones");
    }
    if (total_ > std::numeric_limits<std::int64_t>::max() - other.total_) {
        throw Error("ClassificationEvaluator: merging " + std::to_string(other.total_) + " samples into " +
                    std::to_string(total_) + " overflows the count");
    }
    for (std::size_t i = 0; i < matrix_.size(); ++i) {
        matrix_[i] += other.matrix_[i];
    }
    total_ += other.total_;
    top_k_correct_ += other.top_k_correct_;  // each at most its total: no overflow
}

std::int64_t ClassificationEvaluator::row_sum(int actual) const {
    std::int64_t sum = 0;
    for (int p = 0; p < num_classes_; ++p) {
        sum += cell(actual, p);
    }
    return sum;
}

std::int64_t ClassificationEvaluator::column_sum(int predicted) const {
    std::int64_t sum = 0;
    for (int a = 0; a < num_classes_; ++a) {
        sum += cell(a, predicted);
    }
    return sum;
}

double ClassificationEvaluator::accuracy() const {
    if (total_ == 0) {
        return 0.0;
    }
    std::int64_t correct = 0;
    for (int c = 0; c < num_classes_; ++c) {
        correct += cell(c, c);
    }
    return static_cast<double>(correct) / static_cast<double>(total_);
}

double ClassificationEvaluator::top_k_accuracy() const {
    return total_ == 0 ? 0.0 : static_cast<double>(top_k_correct_) / static_cast<double>(total_);
}

std::optional<double> ClassificationEvaluator::precision_if_defined(int c) const {
    const std::int64_t predicted_as_c = column_sum(c);  // TP + FP
    if (predicted_as_c == 0) {
        return std::nullopt;
    }
    return static_cast<double>(confusion(c, c)) / static_cast<double>(predicted_as_c);
}

std::optional<double> ClassificationEvaluator::recall_if_defined(int c) const {
    const std::int64_t actually_c = row_sum(c);  // TP + FN
    if (actually_c == 0) {
        return std::nullopt;
    }
    return static_cast<double>(confusion(c, c)) / static_cast<double>(actually_c);
}

std::optional<double> ClassificationEvaluator::f1_if_defined(int c) const {
    const auto p = precision_if_defined(c);
    const auto r = recall_if_defined(c);
    if (!p || !r) {
        return std::nullopt;
    }
    // DL4J's EvaluationUtils.fBeta: a class never hit has F1 0 rather than 0/0.
    if (*p == 0.0 || *r == 0.0) {
        return 0.0;
    }
    return 2.0 * *p * *r / (*p + *r);
}

double ClassificationEvaluator::precision(int c) const {
    check_class(c, "class");
    return precision_if_defined(c).value_or(0.0);
}

double ClassificationEvaluator::recall(int c) const {
    check_class(c, "class");
    return recall_if_defined(c).value_or(0.0);
}

double ClassificationEvaluator::f1(int c) const {
    check_class(c, "class");
    return f1_if_defined(c).value_or(0.0);
}

double ClassificationEvaluator::macro_precision() const {
    return macro_mean(num_classes_, [this](int c) { return precision_if_defined(c); });
}

double ClassificationEvaluator::macro_recall() const {
    return macro_mean(num_classes_, [this](int c) { return recall_if_defined(c); });
}

double ClassificationEvaluator::macro_f1() const {
    return macro_mean(num_classes_, [this](int c) { return f1_if_defined(c); });
}

std::int64_t ClassificationEvaluator::confusion(int actual, int predicted) const {
    check_class(actual, "actual class");
    check_class(predicted, "predicted class");
    return cell(actual, predicted);
}

std::string ClassificationEvaluator::confusion_table(const std::vector<std::string>& class_names) const {
    if (!class_names.empty() && class_names.size() != static_cast<std::size_t>(num_classes_)) {
        throw Error("ClassificationEvaluator: " + std::to_string(class_names.size()) +
                    " class names given for " + std::to_string(num_classes_) + " classes");
    }
    std::vector<std::string> names;
    for (int c = 0; c < num_classes_; ++c) {
        names.push_back(class_names.empty() ? std::to_string(c) : class_names[c]);
    }

    const std::string corner = "actual \\ predicted";
    std::size_t label_width = corner.size();
    std::size_t cell_width = std::to_string(total_).size();
    for (const auto& n : names) {
        label_width = std::max(label_width, n.size());
        cell_width = std::max(cell_width, n.size());
    }
    cell_width += 2;

    std::ostringstream out;
    out << "Evaluation: " << num_classes_ << " classes, " << total_ << " samples\n";
    out << std::fixed << std::setprecision(4);
    out << "  Accuracy:  " << accuracy() << "\n";
    if (top_k_ > 0) out << "  Top-" << top_k_ << ":     " << top_k_accuracy() << "\n";
    out << "  Precision: " << macro_precision() << "  (macro average over classes where defined)\n";
    out << "  Recall:    " << macro_recall() << "\n";
    out << "  F1:        " << macro_f1() << "\n\n";

    out << std::left << std::setw(static_cast<int>(label_width)) << corner << std::right;
    for (const auto& n : names) {
        out << std::setw(static_cast<int>(cell_width)) << n;
    }
    out << "\n";
    for (int a = 0; a < num_classes_; ++a) {
        out << std::left << std::setw(static_cast<int>(label_width)) << names[a] << std::right;
        for (int p = 0; p < num_classes_; ++p) {
            out << std::setw(static_cast<int>(cell_width)) << cell(a, p);
        }
        out << "\n";
    }
    out << "\n";

    std::size_t name_width = std::string("class").size();
    for (const auto& n : names) {
        name_width = std::max(name_width, n.size());
    }
    const int w = 11;
    out << std::left << std::setw(static_cast<int>(name_width)) << "class" << std::right << std::setw(w)
        << "precision" << std::setw(w) << "recall" << std::setw(w) << "f1" << std::setw(w) << "support" << "\n";
    for (int c = 0; c < num_classes_; ++c) {
        out << std::left << std::setw(static_cast<int>(name_width)) << names[c] << std::right << std::setw(w)
            << format_metric(precision_if_defined(c)) << std::setw(w) << format_metric(recall_if_defined(c))
            << std::setw(w) << format_metric(f1_if_defined(c)) << std::setw(w) << row_sum(c) << "\n";
    }
    out << std::left << std::setw(static_cast<int>(name_width)) << "macro" << std::right << std::setw(w)
        << macro_precision() << std::setw(w) << macro_recall() << std::setw(w) << macro_f1() << std::setw(w)
        << total_ << "\n";
    return out.str();
}

nlohmann::json ClassificationEvaluator::to_json() const {
    nlohmann::json confusion_rows = nlohmann::json::array();
    for (int a = 0; a < num_classes_; ++a) {
        nlohmann::json row = nlohmann::json::array();
        for (int p = 0; p < num_classes_; ++p) {
            row.push_back(cell(a, p));
        }
        confusion_rows.push_back(std::move(row));
    }
    nlohmann::json j{
        {"accuracy", accuracy()},
        {"precision", macro_precision()},
        {"recall", macro_recall()},
        {"f1", macro_f1()},
        {"count", total_},
        {"confusion", std::move(confusion_rows)},
    };
    if (top_k_ > 0) {
        j["top_k"] = top_k_;
        j["top_k_accuracy"] = top_k_accuracy();
        j["top_k_correct"] = top_k_correct_;
    }
    return j;
}

ClassificationEvaluator ClassificationEvaluator::from_json(const nlohmann::json& j) {
    const std::string where = "ClassificationEvaluator::from_json: ";
    if (!j.is_object() || !j.contains("confusion")) {
        throw Error(where + "expected an object with a \"confusion\" matrix");
    }
    const auto& rows = j.at("confusion");
    if (!rows.is_array() || rows.empty()) {
        throw Error(where + "confusion: expected a non-empty array of rows");
    }
    const std::size_t n = rows.size();
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        throw Error(where + "confusion: too many classes");
    }
    // Every row's length first: the n x n matrix is allocated only once the JSON holds its n x n
    // counts (n empty rows, 3 bytes each, asked for n^2 counts: 10^5 of them, 80 GB).
    for (std::size_t a = 0; a < n; ++a) {
        const auto& row = rows[a];
        if (!row.is_array() || row.size() != n) {
            throw Error(where + "confusion[" + std::to_string(a) + "]: expected an array of " + std::to_string(n) +
                        " counts (the matrix must be square)");
        }
    }
    ClassificationEvaluator result(static_cast<int>(n));
    for (std::size_t a = 0; a < n; ++a) {
        const auto& row = rows[a];
        const std::string row_path = "confusion[" + std::to_string(a) + "]";
        for (std::size_t p = 0; p < n; ++p) {
            const auto& cell = row[p];
            const std::string cell_path = where + row_path + "[" + std::to_string(p) + "]";
            constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
            if (!cell.is_number_integer()) {
                throw Error(cell_path + ": expected an integer count");
            }
            // nlohmann stores large non-negative numbers as unsigned; those past int64 would wrap.
            if (cell.is_number_unsigned() && cell.get<std::uint64_t>() > static_cast<std::uint64_t>(kMax)) {
                throw Error(cell_path + ": count too large");
            }
            const auto v = cell.get<std::int64_t>();
            if (v < 0) {
                throw Error(cell_path + ": negative count " + std::to_string(v));
            }
            if (v > kMax - result.total_) {
                throw Error(cell_path + ": total count overflows");
            }
            result.cell(static_cast<int>(a), static_cast<int>(p)) = v;
            result.total_ += v;
        }
    }
    // Top-k: both fields or neither (a part from an engine without top-k has neither).
    if (j.contains("top_k") || j.contains("top_k_correct")) {
        const auto& k = j.value("top_k", nlohmann::json());
        const auto& hits = j.value("top_k_correct", nlohmann::json());
        if (!k.is_number_integer() || k.get<std::int64_t>() < 1 || k.get<std::int64_t>() > static_cast<std::int64_t>(n))
            throw Error(where + "top_k: expected an integer in [1, " + std::to_string(n) + "], got " + k.dump());
        if (!hits.is_number_integer() || hits.get<std::int64_t>() < 0 || hits.get<std::int64_t>() > result.total_)
            throw Error(where + "top_k_correct: expected an integer in [0, " + std::to_string(result.total_) +
                        "] (the count), got " + hits.dump());
        result.top_k_ = static_cast<int>(k.get<std::int64_t>());
        result.top_k_correct_ = hits.get<std::int64_t>();
    }
    return result;
}

}  // namespace thresher::eval
