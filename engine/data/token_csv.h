// Token-id sequences in one CSV, for models that start with an embedding: one sample per row,
// the label first, then the sequence's token ids ("label, id, id, ..."). The label comes first
// so it sits in a fixed column while rows have different lengths (ragged rows are the point
// here, not an error). Rows follow seq_spec.md: the length first, then T ids (features = 1),
// zeros after the length. T is `max_steps` (the model's input steps) or the longest row; a
// longer row is an error naming its line, unless `truncate` (its first T ids are kept).
#pragma once

#include <string>
#include <string_view>

#include "data/dataset.h"

namespace thresher::data {

struct TokenCsvOptions {
    int max_steps = 0;        // T; 0: the longest row
    bool truncate = false;
    int vocabulary = 0;       // ids must be below it (the embedding's V); 0: only below 2^24
    bool classification = true;
    int num_classes = 0;      // 0: the largest label + 1 (at least 2)
    int header = -1;          // -1: a first row with a non-numeric cell is a header; 0 no; 1 yes
    char delimiter = ',';
};

// Throws DataError "<file>: line L, column C: <problem>": an id that is negative, fractional or
// not below the vocabulary, a row without ids (an empty sequence), a bad label, an empty file,
// a row longer than max_steps, the memory budget.
Dataset parse_token_csv(std::string_view text, const std::string& name, const TokenCsvOptions& options);
Dataset read_token_csv(const std::string& path, const TokenCsvOptions& options);

}  // namespace thresher::data
