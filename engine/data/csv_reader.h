// Reader for numeric CSV tables: one sample per row, one column holding the label (a class
// index) or the regression target, every other column a feature.
#pragma once

#include "data/dataset.h"

#include <string>
#include <string_view>

namespace thresher::data {

struct CsvOptions {
    int label_column = -1;       // 0-based; negative counts from the end (-1: last column)
    bool classification = true;  // false: the label column is a regression target
    int num_classes = 0;         // classification: 0 infers max label + 1 (at least 2)
    int header = -1;             // -1: a first row with a non-numeric cell is a header; 0 no; 1 yes
    char delimiter = ',';
    // An image output's targets (engine/config/README.md, image outputs): the last
    // `target_columns` columns of a row (label_column must be -1). Regression: their values, C x H
    // x W in NCHW order. Classification: one class index per pixel (H x W of them), one-hot over
    // num_classes (required) into num_classes x H x W targets, NCHW. 1: the single label column.
    std::size_t target_columns = 1;
};

// Features are the raw values (normalise with data/normalize.h), shape {1, 1, columns - 1}.
// Classification: one-hot targets and labels; regression: target_size 1 and no labels.
// Throws thresher::DataError "<file>: line L, column C: <problem> "<cell>"" (1-based).
Dataset read_csv(const std::string& path, const CsvOptions& options = {});

// The same over text already in memory; `name` stands in for the file name in messages.
Dataset parse_csv(std::string_view text, const std::string& name, const CsvOptions& options = {});

}  // namespace thresher::data
