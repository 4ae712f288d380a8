// A text file as a character-level corpus (`--data book.txt`): next-character prediction.
//
// The text is UTF-8 (a byte-order mark is skipped, "\r\n" read as "\n"); a character is a code
// point. The vocabulary is the characters present, sorted by code point, id = index, unless one
// is given (the vocabulary a model was trained with, saved in its file): then a character outside
// it is an error naming line and column.
//
// Samples are windows of T characters (T: the model's input steps) starting every `stride`
// characters (default T); each step's target is the next character, one-hot over the vocabulary
// (per-step targets, T x V). The last window of a part may be shorter (its length says so, the
// rest is padding, seq_spec.md). Features per step: the character one-hot (features = V) or its
// id (features = 1, for an embedding). The last `test_fraction` of the characters is the test
// set; windows never cross from train into test.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace thresher::data {

struct TextCorpusOptions {
    int steps = 0;                        // T, from the model's input; required
    int stride = 0;                       // characters between window starts; 0: T
    bool one_hot = true;                  // false: ids (features = 1)
    double test_fraction = 0.1;           // the text's tail held out, [0, 1)
    std::vector<std::string> vocabulary;  // given: use it (one code point each); empty: from the text
    // Classes per step of the targets (the model's output units): at least the vocabulary's
    // size, so a template sized for 128 characters reads any text of fewer; 0: the vocabulary's.
    int classes = 0;
};

// Code points of UTF-8 text; DataError "<name>: line L, column C: invalid UTF-8 ..." (column in
// characters, 1-based) for a bad or truncated sequence, an overlong form, a surrogate or a value
// past U+10FFFF.
std::u32string decode_utf8(std::string_view text, const std::string& name);
std::string encode_utf8(char32_t c);
// "U+0078": how messages name a character besides showing it.
std::string code_point_name(char32_t c);

// Throws DataError for invalid UTF-8, a text shorter than two characters, fewer than 2 distinct
// characters, a character outside a given vocabulary, steps < 1, and the memory budget (one-hot
// windows are T x V floats each: a large book wants ids and an embedding, or a larger stride).
DataSplit parse_text_corpus(std::string_view text, const std::string& name, const TextCorpusOptions& options);
DataSplit read_text_corpus(const std::string& path, const TextCorpusOptions& options);

}  // namespace thresher::data
