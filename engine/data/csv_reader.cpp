// CSV parsing with std::from_chars: locale-independent (a German locale would otherwise read
// "1.5" as 1) and allocation-free per cell. Quoted cells are unwrapped but may not contain the
// delimiter: this reader is for numeric tables, not general CSV.
#include "data/csv_reader.h"

#include "core/error.h"
#include "data/csv_cells.h"
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

using csv::NumberStatus;
using csv::parse_number;
using csv::quoted;
using csv::is_blank;
using csv::split;

struct Place {
    const std::string& name;
    std::size_t line;
    std::string at(std::size_t column) const { return csv::place(name, line, column); }
};

}  // namespace

Dataset parse_csv(std::string_view text, const std::string& name, const CsvOptions& options) {
    text = csv::skip_bom(text);

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
    return parse_csv(csv::read_file(path, "a CSV file"), path, options);
}

}  // namespace thresher::data
