#include "data/sequence_pack.h"

#include "core/error.h"
#include "data/csv_cells.h"
#include "data/memory_budget.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace thresher::data {

namespace {

// a * b, or UINT64_MAX when it overflows (the budget check then refuses it).
std::uint64_t mul(std::uint64_t a, std::uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }
std::uint64_t add(std::uint64_t a, std::uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

}  // namespace

Table parse_table(std::string_view text, const std::string& name, int header, char delimiter) {
    Table t;
    t.name = name;
    t.text_bytes = text.size();
    text = csv::skip_bom(text);
    std::vector<std::string_view> cells;
    bool first = true;
    std::size_t last_line = 0;
    csv::for_each_line(text, [&](std::size_t line_no, std::string_view line) {
        last_line = line_no;
        csv::split(line, delimiter, cells);
        if (first) {
            first = false;
            t.columns = cells.size();
            bool is_header = header == 1;
            if (header < 0) {
                double v = 0;
                is_header = std::any_of(cells.begin(), cells.end(), [&](std::string_view c) {
                    return csv::parse_number(c, v) == csv::NumberStatus::not_a_number;
                });
            }
            if (is_header) return;
        }
        if (cells.size() != t.columns) {
            const std::size_t col = std::min(cells.size(), t.columns) + 1;
            if (cells.size() > t.columns)
                throw DataError(csv::place(name, line_no, col) + "extra cell " + csv::quoted(cells[t.columns]) +
                                ": expected " + std::to_string(t.columns) + " columns (as the first row), found " +
                                std::to_string(cells.size()));
            throw DataError(csv::place(name, line_no, col) + "missing cell: expected " + std::to_string(t.columns) +
                            " columns (as the first row), found " + std::to_string(cells.size()));
        }
        for (std::size_t c = 0; c < cells.size(); ++c) {
            double v = 0;
            switch (csv::parse_number(cells[c], v)) {
                case csv::NumberStatus::ok: break;
                case csv::NumberStatus::not_a_number:
                    throw DataError(csv::place(name, line_no, c + 1) + "non-numeric cell " + csv::quoted(cells[c]));
                case csv::NumberStatus::not_finite:
                    throw DataError(csv::place(name, line_no, c + 1) + "value out of range (not a finite float) " +
                                    csv::quoted(cells[c]));
            }
            t.values.push_back(static_cast<float>(v));
        }
        t.lines.push_back(line_no);
    });
    if (first) throw DataError(name + ": line 1: empty file (no rows)");
    if (t.lines.empty()) throw DataError(name + ": line " + std::to_string(last_line) + ": no data rows after the header");
    return t;
}

int check_class_label(float v, const std::string& name, std::size_t line, std::size_t column, int num_classes) {
    const std::string at = csv::place(name, line, column);
    auto text = [&] {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
        return std::string(buf);
    };
    if (v < 0) throw DataError(at + "negative class label " + text());
    if (v != std::floor(v)) throw DataError(at + "non-integer class label " + text());
    if (v >= kMaxSequenceClasses)
        throw DataError(at + "class label " + text() + " is too large (at most " + std::to_string(kMaxSequenceClasses - 1) + ")");
    if (num_classes > 0 && v >= static_cast<float>(num_classes))
        throw DataError(at + "class label " + text() + " is out of range for " + std::to_string(num_classes) + " classes");
    return static_cast<int>(v);
}

SequenceRows::SequenceRows(std::string name, std::size_t n, std::size_t steps, std::size_t features, bool per_step,
                           bool classification, std::size_t k, std::uint64_t input_bytes)
    : k_(k) {
    const std::uint64_t row = add(1, mul(steps, features));
    if (steps == 0 || features == 0 || k == 0)
        throw DataError(name + ": a sequence needs at least one step, one feature and one target");
    // SampleShape and the model's Shape count in int.
    if (row > static_cast<std::uint64_t>(INT_MAX) || steps > static_cast<std::size_t>(INT_MAX))
        throw DataError(name + ": " + std::to_string(steps) + " steps x " + std::to_string(features) +
                        " features is too large for one sample");
    const std::uint64_t target = per_step ? mul(steps, k) : k;
    const std::uint64_t label_count = classification ? (per_step ? mul(n, steps) : n) : 0;
    const std::uint64_t floats = add(add(mul(n, row), mul(n, target)), label_count);
    check_memory_budget(name,
                        std::to_string(n) + " sequences padded to " + std::to_string(steps) + " steps x " +
                            std::to_string(features) + " features, with " + (per_step ? "per-step " : "") +
                            "targets of " + std::to_string(k),
                        mul(floats, sizeof(float)), input_bytes);
    row_ = static_cast<std::size_t>(row);
    ds_.name = std::move(name);
    ds_.count = n;
    ds_.shape = SampleShape{1, 1, static_cast<int>(row)};
    ds_.steps = static_cast<int>(steps);
    ds_.step_features = static_cast<int>(features);
    ds_.target_steps = per_step ? static_cast<int>(steps) : 0;
    ds_.num_classes = classification ? static_cast<int>(k) : 0;
    ds_.target_size = static_cast<std::size_t>(target);
    ds_.features.assign(n * row_, 0.0f);
    ds_.targets.assign(n * ds_.target_size, 0.0f);
    if (classification) ds_.labels.assign(static_cast<std::size_t>(label_count), per_step ? -1 : 0);
}

float* SequenceRows::begin_sample(std::size_t i, std::size_t length) {
    float* row = ds_.features.data() + i * row_;
    row[0] = static_cast<float>(length);
    return row + 1;
}

void SequenceRows::set_class(std::size_t i, std::size_t step, int label) {
    const std::size_t t = ds_.target_steps > 0 ? step : 0;
    ds_.targets[i * ds_.target_size + t * k_ + static_cast<std::size_t>(label)] = 1.0f;
    const std::size_t per = ds_.target_steps > 0 ? static_cast<std::size_t>(ds_.target_steps) : 1;
    ds_.labels[i * per + t] = label;
}

void SequenceRows::set_targets(std::size_t i, std::size_t step, const float* values) {
    const std::size_t t = ds_.target_steps > 0 ? step : 0;
    std::copy_n(values, k_, ds_.targets.data() + i * ds_.target_size + t * k_);
}

}  // namespace thresher::data
