// CSV parsing with std::from_chars: locale-independent (a German locale would otherwise read
// "1.5" as 1) and allocation-free per cell. Quoted cells are unwrapped but may not contain the
// delimiter: this reader is for numeric tables, not general CSV.
#include "data/csv_reader.h"

#include "core/error.h"
#include "data/memory_budget.h"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

namespace thresher::data {

namespace {

// A label this large is a mistake (a feature column picked as label), not a class index; the
// cap also bounds the one-hot target allocation.
constexpr int kMaxClasses = 1 << 16;

std::string_view trim(std::string_view s, char delimiter) {
    auto blank = [&](char c) { return (c == ' ' || c == '\t' || c == '\r') && c != delimiter; };
    while (!s.empty() && blank(s.front())) s.remove_prefix(1);
    while (!s.empty() && blank(s.back())) s.remove_suffix(1);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return s;
}

bool is_blank(std::string_view line) {
    return std::all_of(line.begin(), line.end(),
                       [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

void split(std::string_view line, char delimiter, std::vector<std::string_view>& cells) {
    cells.clear();
    std::size_t start = 0;
    while (true) {
        const std::size_t end = line.find(delimiter, start);
        if (end == std::string_view::npos) {
            cells.push_back(trim(line.substr(start), delimiter));
            return;
        }
        cells.push_back(trim(line.substr(start, end - start), delimiter));
        start = end + 1;
    }
}

enum class NumberStatus { ok, not_a_number, not_finite };

NumberStatus parse_number(std::string_view cell, double& value) {
    if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);  // from_chars rejects '+'
    if (cell.empty()) return NumberStatus::not_a_number;
    const auto [ptr, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (ptr != cell.data() + cell.size()) return NumberStatus::not_a_number;
    if (ec == std::errc::result_out_of_range) return NumberStatus::not_finite;
    if (ec != std::errc()) return NumberStatus::not_a_number;
    // Converting a double beyond FLT_MAX to float is undefined; such values are errors anyway.
    if (!std::isfinite(value) || std::fabs(value) > FLT_MAX) return NumberStatus::not_finite;
    return NumberStatus::ok;
}

std::string quoted(std::string_view cell) {
    constexpr std::size_t kShown = 40;
    std::string s = "\"";
    s.append(cell.substr(0, kShown));
    if (cell.size() > kShown) s += "...";
    return s + "\"";
}

struct Place {
    const std::string& name;
    std::size_t line;
    std::string at(std::size_t column) const {
        return name + ": line " + std::to_string(line) + ", column " + std::to_string(column) +
               ": ";
    }
};

}  // namespace

Dataset parse_csv(std::string_view text, const std::string& name, const CsvOptions& options) {
    if (text.size() >= 3 && std::memcmp(text.data(), "\xEF\xBB\xBF", 3) == 0) text.remove_prefix(3);

    Dataset ds;
    ds.name = name;
    std::vector<std::string_view> cells;
    std::size_t columns = 0;
    std::size_t label_col = 0;
    bool seen_first = false;
    int max_label = -1;
    std::size_t max_label_line = 0, max_label_column = 0;  // where the largest label is
    std::vector<float> regression_targets;
    std::vector<std::int32_t> pixel_labels;  // several target columns: each pixel's class
    // Several target columns (an image output): the first of them; the rest follow it.
    const std::size_t targets_per_row = std::max<std::size_t>(options.target_columns, 1);
    if (targets_per_row > 1 && (options.label_column != -1 || (options.classification && options.num_classes < 2)))
        throw DataError(name + ": " + std::to_string(targets_per_row) + " target columns need the last columns as targets"
                        " (label column -1) and, for classes per pixel, the class count");

    std::size_t line_no = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (is_blank(line)) continue;
        split(line, options.delimiter, cells);
        const Place place{name, line_no};

        if (!seen_first) {
            seen_first = true;
            columns = cells.size();
            if (columns < targets_per_row + 1) {
                throw DataError(name + ": line " + std::to_string(line_no) + ": found " +
                                std::to_string(columns) + (columns == 1 ? " column" : " columns") + "; need at least " +
                                std::to_string(targets_per_row + 1) +
                                (targets_per_row > 1 ? " (features and " + std::to_string(targets_per_row) + " target columns)"
                                                     : std::string(" (features and a label)")));
            }
            const long long col = options.label_column < 0
                                      ? static_cast<long long>(columns) + options.label_column
                                      : options.label_column;
            if (col < 0 || col >= static_cast<long long>(columns)) {
                throw DataError(name + ": line " + std::to_string(line_no) + ": label column " +
                                std::to_string(options.label_column) +
                                " is out of range for a table of " + std::to_string(columns) +
                                " columns");
            }
            label_col = static_cast<std::size_t>(col) + 1 - targets_per_row;  // the first target column
            ds.shape = SampleShape{1, 1, static_cast<int>(columns - targets_per_row)};
            bool header = options.header == 1;
            if (options.header < 0) {
                double v = 0;
                header = std::any_of(cells.begin(), cells.end(), [&](std::string_view c) {
                    return parse_number(c, v) == NumberStatus::not_a_number;
                });
            }
            if (header) continue;
        }

        if (cells.size() != columns) {
            const std::size_t col = std::min(cells.size(), columns) + 1;
            if (cells.size() > columns) {
                throw DataError(place.at(col) + "extra cell " + quoted(cells[columns]) +
                                ": expected " + std::to_string(columns) + " columns, found " +
                                std::to_string(cells.size()));
            }
            throw DataError(place.at(col) + "missing cell: expected " + std::to_string(columns) +
                            " columns, found " + std::to_string(cells.size()));
        }

        for (std::size_t c = 0; c < columns; ++c) {
            double v = 0;
            switch (parse_number(cells[c], v)) {
                case NumberStatus::ok:
                    break;
                case NumberStatus::not_a_number:
                    throw DataError(place.at(c + 1) + "non-numeric cell " + quoted(cells[c]));
                case NumberStatus::not_finite:
                    throw DataError(place.at(c + 1) + "value out of range (not a finite float) " +
                                    quoted(cells[c]));
            }
            if (c < label_col || c >= label_col + targets_per_row) {
                ds.features.push_back(static_cast<float>(v));
                continue;
            }
            if (!options.classification) {
                regression_targets.push_back(static_cast<float>(v));
                continue;
            }
            if (v < 0)
                throw DataError(place.at(c + 1) + "negative class label " + quoted(cells[c]));
            if (v != std::floor(v))
                throw DataError(place.at(c + 1) + "non-integer class label " + quoted(cells[c]));
            if (v >= kMaxClasses) {
                throw DataError(place.at(c + 1) + "class label " + quoted(cells[c]) +
                                " is too large (at most " + std::to_string(kMaxClasses - 1) + ")");
            }
            const int label = static_cast<int>(v);
            if (options.num_classes > 0 && label >= options.num_classes) {
                throw DataError(place.at(c + 1) + "class label " + quoted(cells[c]) +
                                " is out of range for " + std::to_string(options.num_classes) +
                                " classes");
            }
            if (label > max_label) {
                max_label = label;
                max_label_line = line_no;
                max_label_column = c + 1;
            }
            if (targets_per_row > 1) pixel_labels.push_back(label);
            else ds.labels.push_back(label);
        }
        ++ds.count;
    }

    if (!seen_first) throw DataError(name + ": line 1: empty file (no rows)");
    if (ds.count == 0)
        throw DataError(name + ": line " + std::to_string(line_no) +
                        ": no data rows after the header");

    if (targets_per_row > 1) {
        // An image output's targets: the values as they are, or each pixel's class one-hot over
        // the channels (target[c * pixels + p]); labels stay empty (evaluation counts pixels).
        ds.labels.clear();
        if (!options.classification) {
            ds.target_size = targets_per_row;
            ds.targets = std::move(regression_targets);
            return ds;
        }
        const auto classes = static_cast<std::size_t>(options.num_classes);
        ds.num_classes = options.num_classes;
        ds.target_size = classes * targets_per_row;
        check_memory_budget(name, "one-hot targets for " + std::to_string(ds.count) + " rows x " + std::to_string(targets_per_row) +
                                      " pixels x " + std::to_string(classes) + " classes",
                            std::uint64_t{ds.count} * ds.target_size * sizeof(float), text.size());
        ds.targets.assign(ds.count * ds.target_size, 0.f);
        for (std::size_t i = 0; i < ds.count; ++i)
            for (std::size_t p = 0; p < targets_per_row; ++p)
                ds.targets[i * ds.target_size + static_cast<std::size_t>(pixel_labels[i * targets_per_row + p]) * targets_per_row + p] = 1.f;
        return ds;
    }
    if (options.classification) {
        ds.num_classes = options.num_classes > 0 ? options.num_classes : std::max(max_label + 1, 2);
        ds.target_size = static_cast<std::size_t>(ds.num_classes);
        // The largest label sets every row's one-hot width: one stray 65535 in a long table
        // would ask for rows x 65,536 floats. Refuse that against the text's size.
        const std::uint64_t bytes = std::uint64_t{ds.count} * ds.target_size * sizeof(float);
        const std::string rows = std::to_string(ds.count) + " rows";
        if (options.num_classes > 0)
            check_memory_budget(name, "one-hot targets for " + rows + " x " + std::to_string(ds.num_classes) +
                                " classes (num_classes)", bytes, text.size());
        else
            check_memory_budget(name + ": line " + std::to_string(max_label_line) + ", column " +
                                    std::to_string(max_label_column),
                                "class label " + std::to_string(max_label) + " sets " +
                                    std::to_string(ds.num_classes) + " classes: one-hot targets for " + rows,
                                bytes, text.size());
        ds.targets.assign(ds.count * ds.target_size, 0.0f);
        for (std::size_t i = 0; i < ds.count; ++i)
            ds.targets[i * ds.target_size + static_cast<std::size_t>(ds.labels[i])] = 1.0f;
    } else {
        ds.num_classes = 0;
        ds.target_size = 1;
        ds.targets = std::move(regression_targets);
    }
    return ds;
}

Dataset read_csv(const std::string& path, const CsvOptions& options) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw DataError(path + ": cannot open: is a directory, expected a CSV file");
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int err = errno;
        throw DataError(path + ": cannot open: " + (err ? std::strerror(err) : "unknown error"));
    }
    std::ostringstream buf;
    buf << in.rdbuf();
    if (in.bad()) throw DataError(path + ": read error");
    return parse_csv(buf.str(), path, options);
}

}  // namespace thresher::data
