// Streaming sums behind RegressionEvaluator and the metrics derived from them.
#include "eval/regression.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace thresher::eval {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename Fn>
double mean_of_defined(std::size_t columns, Fn&& metric) {
    double sum = 0.0;
    std::size_t defined = 0;
    for (std::size_t c = 0; c < columns; ++c) {
        const double v = metric(c);
        if (!std::isnan(v)) {
            sum += v;
            ++defined;
        }
    }
    return defined == 0 ? kNaN : sum / static_cast<double>(defined);
}

nlohmann::json number_or_null(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

RegressionEvaluator::RegressionEvaluator(std::size_t columns) : columns_(columns) {
    if (columns == 0) {
        throw Error("RegressionEvaluator: needs at least one column");
    }
}

void RegressionEvaluator::add(const float* predictions, const float* targets, std::size_t count) {
    const std::size_t n = columns_.size();
    for (std::size_t i = 0; i < count; ++i) {
        for (std::size_t c = 0; c < n; ++c) {
            const double t = targets[i * n + c];
            const double e = static_cast<double>(predictions[i * n + c]) - t;
            Column& col = columns_[c];
            col.sum_target += t;
            col.sum_target_sq += t * t;
            col.sum_sq_error += e * e;
            col.sum_abs_error += std::abs(e);
            if (count_ == 0 && i == 0) {
                col.min_target = col.max_target = targets[c];
            } else {
                col.min_target = std::min(col.min_target, targets[i * n + c]);
                col.max_target = std::max(col.max_target, targets[i * n + c]);
            }
        }
    }
    count_ += static_cast<std::int64_t>(count);
}

void RegressionEvaluator::merge(const RegressionEvaluator& other) {
    if (other.columns_.size() != columns_.size()) {
        throw Error("RegressionEvaluator: cannot merge an evaluation of " + std::to_string(other.columns_.size()) +
                    " columns into one of " + std::to_string(columns_.size()));
    }
    if (other.count_ == 0) {
        return;  // its min/max are placeholders, not targets
    }
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        Column& mine = columns_[c];
        const Column& theirs = other.columns_[c];
        mine.sum_target += theirs.sum_target;
        mine.sum_target_sq += theirs.sum_target_sq;
        mine.sum_sq_error += theirs.sum_sq_error;
        mine.sum_abs_error += theirs.sum_abs_error;
        if (count_ == 0) {
            mine.min_target = theirs.min_target;
            mine.max_target = theirs.max_target;
        } else {
            mine.min_target = std::min(mine.min_target, theirs.min_target);
            mine.max_target = std::max(mine.max_target, theirs.max_target);
        }
    }
    count_ += other.count_;
}

const RegressionEvaluator::Column& RegressionEvaluator::column(std::size_t col) const {
    if (col >= columns_.size()) {
        throw Error("RegressionEvaluator: column " + std::to_string(col) + " is outside [0, " +
                    std::to_string(columns_.size()) + ")");
    }
    return columns_[col];
}

double RegressionEvaluator::mse(std::size_t col) const {
    const Column& c = column(col);
    return count_ == 0 ? kNaN : c.sum_sq_error / static_cast<double>(count_);
}

double RegressionEvaluator::mae(std::size_t col) const {
    const Column& c = column(col);
    return count_ == 0 ? kNaN : c.sum_abs_error / static_cast<double>(count_);
}

double RegressionEvaluator::r2(std::size_t col) const {
    const Column& c = column(col);
    if (count_ == 0 || !(c.min_target < c.max_target)) {
        return kNaN;  // no data, constant targets (SST = 0), or NaN targets
    }
    const double n = static_cast<double>(count_);
    // Non-constant targets have SST > 0; cancellation may still push the computed value to or
    // below zero, so keep the smallest positive value rather than divide by garbage.
    const double sst = std::max(c.sum_target_sq - c.sum_target * c.sum_target / n,
                                std::numeric_limits<double>::min());
    return 1.0 - c.sum_sq_error / sst;
}

double RegressionEvaluator::average_mse() const {
    return mean_of_defined(columns_.size(), [this](std::size_t c) { return mse(c); });
}

double RegressionEvaluator::average_mae() const {
    return mean_of_defined(columns_.size(), [this](std::size_t c) { return mae(c); });
}

double RegressionEvaluator::average_r2() const {
    return mean_of_defined(columns_.size(), [this](std::size_t c) { return r2(c); });
}

nlohmann::json RegressionEvaluator::to_json() const {
    nlohmann::json mse_list = nlohmann::json::array();
    nlohmann::json mae_list = nlohmann::json::array();
    nlohmann::json r2_list = nlohmann::json::array();
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        mse_list.push_back(number_or_null(mse(c)));
        mae_list.push_back(number_or_null(mae(c)));
        r2_list.push_back(number_or_null(r2(c)));
    }
    return {
        {"count", count_},
        {"columns", columns_.size()},
        {"mse", std::move(mse_list)},
        {"mae", std::move(mae_list)},
        {"r2", std::move(r2_list)},
        {"average_mse", number_or_null(average_mse())},
        {"average_mae", number_or_null(average_mae())},
        {"average_r2", number_or_null(average_r2())},
    };
}

nlohmann::json RegressionEvaluator::state() const {
    nlohmann::json sums = nlohmann::json::array();
    for (const Column& c : columns_)
        sums.push_back({c.sum_target, c.sum_target_sq, c.sum_sq_error, c.sum_abs_error, c.min_target, c.max_target});
    return {{"count", count_}, {"sums", std::move(sums)}};
}

RegressionEvaluator RegressionEvaluator::from_state(const nlohmann::json& j) {
    const std::string where = "RegressionEvaluator::from_state: ";
    if (!j.is_object() || !j.contains("count") || !j.contains("sums"))
        throw Error(where + "expected an object with \"count\" and \"sums\"");
    const auto& count = j.at("count");
    if (!count.is_number_integer() || count.get<std::int64_t>() < 0) throw Error(where + "count: expected a non-negative integer");
    const auto& sums = j.at("sums");
    if (!sums.is_array() || sums.empty()) throw Error(where + "sums: expected a non-empty array (one entry per column)");
    RegressionEvaluator r(sums.size());
    r.count_ = count.get<std::int64_t>();
    for (std::size_t c = 0; c < sums.size(); ++c) {
        const auto& row = sums[c];
        if (!row.is_array() || row.size() != 6)
            throw Error(where + "sums[" + std::to_string(c) + "]: expected 6 numbers");
        for (const auto& v : row)
            if (!v.is_number()) throw Error(where + "sums[" + std::to_string(c) + "]: expected 6 numbers");
        Column& col = r.columns_[c];
        col.sum_target = row[0].get<double>();
        col.sum_target_sq = row[1].get<double>();
        col.sum_sq_error = row[2].get<double>();
        col.sum_abs_error = row[3].get<double>();
        col.min_target = row[4].get<float>();
        col.max_target = row[5].get<float>();
    }
    return r;
}

std::string RegressionEvaluator::summary() const {
    std::ostringstream out;
    out << "Regression evaluation: " << columns_.size() << " columns, " << count_ << " samples\n";
    out << std::fixed << std::setprecision(6);
    const int w = 14;
    out << std::left << std::setw(8) << "column" << std::right << std::setw(w) << "MSE" << std::setw(w) << "MAE"
        << std::setw(w) << "R2" << "\n";
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        out << std::left << std::setw(8) << c << std::right << std::setw(w) << mse(c) << std::setw(w) << mae(c)
            << std::setw(w) << r2(c) << "\n";
    }
    out << std::left << std::setw(8) << "average" << std::right << std::setw(w) << average_mse() << std::setw(w)
        << average_mae() << std::setw(w) << average_r2() << "\n";
    return out.str();
}

}  // namespace thresher::eval
