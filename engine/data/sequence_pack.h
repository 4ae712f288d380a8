// Pieces the sequence readers share (sequence CSVs, token CSVs, text corpora): a CSV parsed into
// rows with their line numbers, class-label checks, and the padded rows of seq_spec.md built
// after one memory-budget check. Internal to engine/data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace thresher::data {

// A label this large is a mistake (a feature column picked as label), not a class index; the cap
// also bounds the one-hot width.
inline constexpr int kMaxSequenceClasses = 1 << 16;

// A rectangular numeric CSV: every row has `columns` values; lines[r] is row r's line in the file.
struct Table {
    std::string name;
    std::size_t columns = 0;
    std::vector<std::size_t> lines;
    std::vector<float> values;  // rows x columns
    std::size_t text_bytes = 0;
    std::size_t rows() const { return lines.size(); }
};

// Throws DataError naming file, line and column: a row with another column count than the first
// (ragged), a non-numeric or non-finite cell, an empty file, a file with only a header.
Table parse_table(std::string_view text, const std::string& name, int header, char delimiter);

// A class label read as a float: an integer in [0, num_classes) (num_classes 0: below
// kMaxSequenceClasses); DataError at name, line, column otherwise.
int check_class_label(float v, const std::string& name, std::size_t line, std::size_t column, int num_classes);

// Builds a sequence Dataset: n samples of T steps x C features, targets per sample or per step
// (K per step). The constructor checks the whole allocation against the memory budget for
// `input_bytes` and that a row's size fits the Dataset's int width before allocating anything.
class SequenceRows {
public:
    SequenceRows(std::string name, std::size_t n, std::size_t steps, std::size_t features, bool per_step,
                 bool classification, std::size_t k, std::uint64_t input_bytes);
    // Writes sample i's length (1 <= length <= T) and returns its T x C values (zeros).
    float* begin_sample(std::size_t i, std::size_t length);
    // Sets the class of sample i (per sample: step is 0) or of its step.
    void set_class(std::size_t i, std::size_t step, int label);
    // Copies K regression targets of sample i's (step).
    void set_targets(std::size_t i, std::size_t step, const float* values);
    Dataset finish() { return std::move(ds_); }

private:
    Dataset ds_;
    std::size_t row_ = 0;  // floats per feature row
    std::size_t k_ = 0;
};

}  // namespace thresher::data
