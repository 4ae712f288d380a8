// Sequences in CSV files, one file per sequence (DL4J's CSVSequenceRecordReader): one row per
// time step, one column per feature. Labels come from a second file per sequence (DL4J's
// `features/0.csv` + `labels/0.csv`) or from a column of the features file.
//
// A folder DIR is a sequence folder when it holds `features/` (labels beside it in `labels/`,
// optional) or `train/features/` (and optionally `test/features/`, each with its `labels/`).
// Files are matched by name: features/7.csv goes with labels/7.csv. Sample order: names that are
// numbers ("0.csv" ... "10.csv", DL4J's NumberedFileInputSplit) in numeric order, then the others
// in byte order. Only regular files not starting with "." count.
//
// Labels, per sequence or per step (`labels`; auto: per step when some labels file has more than
// one row, or when labels come from a column):
//   per sequence  a labels file of one row; from a column, the value at the first step (align
//                 start) or at the last step (align end)
//   per step      a labels file of M <= L rows for a sequence of L steps: with align start the
//                 labels sit at steps 0..M-1, with align end at steps L-M..L-1 (DL4J's ALIGN_END,
//                 where a shorter label sequence ends with its features); steps without a label
//                 get a zero target row (no loss under cross-entropy) and label -1.
// Classification: one integer column, classes from the largest label over train and test (at
// least 2) or `num_classes`; regression: every column of a label row is a target.
//
// Rows follow seq_spec.md: the length L first, then T x C values (time-major), zeros after L.
// Features always start at step 0; alignment only places labels and picks the steps truncation
// keeps. T is `max_steps` (the model's input steps) or the longest sequence; a longer sequence is
// an error naming its file and the line of its first step past T, unless `truncate` (keep the
// first T steps, or the last T with align end).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace thresher::data {

enum class SequenceAlign { start, end };
enum class SequenceLabels { automatic, per_sequence, per_step };

struct SequenceCsvOptions {
    int max_steps = 0;        // T; 0: the longest sequence
    bool truncate = false;    // a sequence longer than max_steps is cut instead of refused
    SequenceAlign align = SequenceAlign::start;
    SequenceLabels labels = SequenceLabels::automatic;
    int label_column = -1;    // without a labels file: 0-based, negative from the end
    bool classification = true;
    int num_classes = 0;      // 0: the largest label + 1 (at least 2)
    int header = -1;          // -1: a first row with a non-numeric cell is a header; 0 no; 1 yes
    char delimiter = ',';
};

// One sequence in memory: its features text and, unless the label is a column, its labels text.
struct SequenceText {
    std::string features_name;
    std::string_view features;
    std::string labels_name;  // empty: labels from `label_column`
    std::string_view labels;
};

// Throws DataError "<file>: line L[, column C]: <problem>": ragged rows, a non-numeric cell, an
// empty file, a label that is negative, fractional or out of range, a labels file of the wrong
// length, a sequence longer than max_steps, files with different feature counts, the memory
// budget (data/memory_budget.h, against the texts' total size).
Dataset parse_sequences(const std::vector<SequenceText>& sequences, const SequenceCsvOptions& options);

bool is_sequence_folder(const std::string& dir);
// Train (and test, from DIR/test/) with the same T and class count.
DataSplit load_sequence_folder(const std::string& dir, const SequenceCsvOptions& options);

}  // namespace thresher::data
