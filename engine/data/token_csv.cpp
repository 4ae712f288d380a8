// Token CSVs are parsed in two passes over the text: the first checks every cell and finds T and
// the classes, the second writes the padded rows, so nothing is allocated from the file's numbers
// before the memory budget has seen them.
#include "data/token_csv.h"

#include "core/error.h"
#include "data/csv_cells.h"
#include "data/sequence_pack.h"

#include <algorithm>
#include <cmath>

namespace thresher::data {

namespace {

// Ids travel as floats: above 2^24 two ids would read as one.
constexpr double kMaxTokenId = 1 << 24;

double cell_value(std::string_view cell, const std::string& name, std::size_t line, std::size_t col) {
    double v = 0;
    switch (csv::parse_number(cell, v)) {
        case csv::NumberStatus::ok: return v;
        case csv::NumberStatus::not_a_number:
            throw DataError(csv::place(name, line, col) + "non-numeric cell " + csv::quoted(cell));
        case csv::NumberStatus::not_finite:
            throw DataError(csv::place(name, line, col) + "value out of range (not a finite float) " + csv::quoted(cell));
    }
    return v;
}

void check_id(double v, std::string_view cell, const std::string& name, std::size_t line, std::size_t col, int vocabulary) {
    const std::string at = csv::place(name, line, col);
    if (v < 0) throw DataError(at + "negative token id " + csv::quoted(cell));
    if (v != std::floor(v)) throw DataError(at + "non-integer token id " + csv::quoted(cell));
    if (vocabulary > 0 && v >= vocabulary)
        throw DataError(at + "token id " + csv::quoted(cell) + " is out of range for the embedding's vocabulary of " +
                        std::to_string(vocabulary));
    if (v >= kMaxTokenId) throw DataError(at + "token id " + csv::quoted(cell) + " is too large (at most 2^24 - 1)");
}

}  // namespace

Dataset parse_token_csv(std::string_view text, const std::string& name, const TokenCsvOptions& o) {
    const std::size_t input_bytes = text.size();
    text = csv::skip_bom(text);
    std::vector<std::string_view> cells;
    // Pass 1: check every cell; T, the row count, the largest label.
    bool first = true, skip_first = false;
    std::size_t rows = 0, longest = 0, last_line = 0;
    int max_label = -1;
    csv::for_each_line(text, [&](std::size_t line_no, std::string_view line) {
        last_line = line_no;
        csv::split(line, o.delimiter, cells);
        if (first) {
            first = false;
            skip_first = o.header == 1;
            if (o.header < 0) {
                double v = 0;
                skip_first = std::any_of(cells.begin(), cells.end(), [&](std::string_view c) {
                    return csv::parse_number(c, v) == csv::NumberStatus::not_a_number;
                });
            }
            if (skip_first) return;
        }
        if (cells.size() < 2)
            throw DataError(csv::place(name, line_no, 2) + "an empty sequence: a row is a label and at least one token id");
        const double label = cell_value(cells[0], name, line_no, 1);
        if (o.classification) max_label = std::max(max_label, check_class_label(static_cast<float>(label), name, line_no, 1, o.num_classes));
        for (std::size_t c = 1; c < cells.size(); ++c)
            check_id(cell_value(cells[c], name, line_no, c + 1), cells[c], name, line_no, c + 1, o.vocabulary);
        const std::size_t len = cells.size() - 1;
        if (o.max_steps > 0 && len > static_cast<std::size_t>(o.max_steps) && !o.truncate)
            throw DataError(csv::place(name, line_no, static_cast<std::size_t>(o.max_steps) + 2) + "the sequence has " +
                            std::to_string(len) + " ids, more than the " + std::to_string(o.max_steps) +
                            " steps the model takes (max_steps); shorten it, or ask for truncation");
        longest = std::max(longest, len);
        ++rows;
    });
    if (first) throw DataError(name + ": line 1: empty file (no rows)");
    if (rows == 0) throw DataError(name + ": line " + std::to_string(last_line) + ": no data rows after the header");
    const std::size_t T = o.max_steps > 0 ? static_cast<std::size_t>(o.max_steps) : longest;
    const std::size_t K = o.classification ? static_cast<std::size_t>(o.num_classes > 0 ? o.num_classes : std::max(max_label + 1, 2)) : 1;

    // Pass 2: the cells are known to be good.
    SequenceRows out(name, rows, T, 1, false, o.classification, K, input_bytes);
    std::size_t i = 0;
    bool skipped = !skip_first;
    csv::for_each_line(text, [&](std::size_t, std::string_view line) {
        if (!skipped) {
            skipped = true;
            return;
        }
        csv::split(line, o.delimiter, cells);
        double v = 0;
        const std::size_t len = std::min(cells.size() - 1, T);
        float* row = out.begin_sample(i, len);
        for (std::size_t s = 0; s < len; ++s) {
            csv::parse_number(cells[s + 1], v);
            row[s] = static_cast<float>(v);
        }
        csv::parse_number(cells[0], v);
        const float label = static_cast<float>(v);
        if (o.classification)
            out.set_class(i, 0, static_cast<int>(label));
        else
            out.set_targets(i, 0, &label);
        ++i;
    });
    return out.finish();
}

Dataset read_token_csv(const std::string& path, const TokenCsvOptions& options) {
    return parse_token_csv(csv::read_file(path, "a CSV file"), path, options);
}

}  // namespace thresher::data
