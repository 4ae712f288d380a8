#include "data/text_corpus.h"

#include "core/error.h"
#include "data/csv_cells.h"
#include "data/sequence_pack.h"

#include <algorithm>
#include <cmath>

namespace thresher::data {

namespace {

// The windows of chars[begin, end): starts every `stride`, the last one possibly shorter.
struct Windows {
    std::size_t begin = 0, end = 0;
    std::size_t count(std::size_t T, std::size_t stride) const {
        std::size_t n = 0;
        for (std::size_t p = begin; p + 1 < end; p += stride) {
            ++n;
            if (p + T + 1 >= end) break;  // this window reaches the end: no shorter ones after it
        }
        return n;
    }
};

// V characters one-hot (or ids) in, K >= V classes per step out.
Dataset make_windows(const std::vector<int>& ids, Windows w, std::size_t T, std::size_t stride, std::size_t V,
                     std::size_t K, bool one_hot, const std::string& name, std::uint64_t input_bytes) {
    const std::size_t n = w.count(T, stride);
    SequenceRows rows(name, n, T, one_hot ? V : 1, true, true, K, input_bytes);
    std::size_t i = 0;
    for (std::size_t p = w.begin; i < n; p += stride, ++i) {
        const std::size_t len = std::min(T, w.end - 1 - p);
        float* row = rows.begin_sample(i, len);
        for (std::size_t s = 0; s < len; ++s) {
            const int id = ids[p + s];
            if (one_hot)
                row[s * V + static_cast<std::size_t>(id)] = 1.0f;
            else
                row[s] = static_cast<float>(id);
            rows.set_class(i, s, ids[p + s + 1]);
        }
    }
    return rows.finish();
}

}  // namespace

std::string encode_utf8(char32_t c) {
    std::string s;
    if (c < 0x80) {
        s += static_cast<char>(c);
    } else if (c < 0x800) {
        s += static_cast<char>(0xC0 | (c >> 6));
        s += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        s += static_cast<char>(0xE0 | (c >> 12));
        s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        s += static_cast<char>(0xF0 | (c >> 18));
        s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (c & 0x3F));
    }
    return s;
}

std::string code_point_name(char32_t c) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(c));
    return hex;
}

std::u32string decode_utf8(std::string_view text, const std::string& name) {
    std::u32string out;
    out.reserve(text.size());  // at most one code point per byte
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < text.size();) {
        const auto b0 = static_cast<unsigned char>(text[i]);
        std::size_t len = 0;
        char32_t c = 0, min = 0;
        if (b0 < 0x80) len = 1, c = b0;
        else if ((b0 & 0xE0) == 0xC0) len = 2, c = b0 & 0x1F, min = 0x80;
        else if ((b0 & 0xF0) == 0xE0) len = 3, c = b0 & 0x0F, min = 0x800;
        else if ((b0 & 0xF8) == 0xF0) len = 4, c = b0 & 0x07, min = 0x10000;
        auto bad = [&](const char* what) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", b0);
            return DataError(csv::place(name, line, column) + "invalid UTF-8 (" + what + ") at byte " + std::to_string(i) +
                             ", starting " + hex + "; a text corpus is UTF-8");
        };
        if (len == 0) throw bad("not a first byte");
        if (i + len > text.size()) throw bad("truncated sequence");
        for (std::size_t k = 1; k < len; ++k) {
            const auto b = static_cast<unsigned char>(text[i + k]);
            if ((b & 0xC0) != 0x80) throw bad("missing continuation byte");
            c = (c << 6) | (b & 0x3F);
        }
        if (c < min) throw bad("overlong form");
        if (c >= 0xD800 && c <= 0xDFFF) throw bad("surrogate");
        if (c > 0x10FFFF) throw bad("past U+10FFFF");
        i += len;
        if (c == U'\r' && i < text.size() && text[i] == '\n') continue;  // "\r\n" is one "\n"
        out.push_back(c);
        if (c == U'\n') ++line, column = 1;
        else ++column;
    }
    return out;
}

DataSplit parse_text_corpus(std::string_view text, const std::string& name, const TextCorpusOptions& o) {
    if (o.steps < 1)
        throw ConfigError(name + ": a text corpus needs a model whose input is a sequence ({\"steps\": T, \"features\": "
                                 "V or 1}); its steps set the window length");
    if (!(o.test_fraction >= 0 && o.test_fraction < 1))
        throw ConfigError(name + ": test fraction " + std::to_string(o.test_fraction) + " is not in [0, 1)");
    const std::uint64_t input_bytes = text.size();
    const std::u32string chars = decode_utf8(csv::skip_bom(text), name);
    if (chars.size() < 2) throw DataError(name + ": line 1: the text has " + std::to_string(chars.size()) +
                                          " character(s); next-character prediction needs at least 2");

    // The vocabulary: given (one code point per entry), or the sorted characters present.
    std::vector<char32_t> vocab;
    if (!o.vocabulary.empty()) {
        for (const auto& v : o.vocabulary) {
            const std::u32string c = decode_utf8(v, name + " (the model's vocabulary)");
            if (c.size() != 1) throw DataError(name + ": the model's vocabulary entry \"" + v + "\" is not one character");
            vocab.push_back(c[0]);
        }
    } else {
        vocab.assign(chars.begin(), chars.end());
    }
    std::vector<char32_t> sorted = vocab;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    if (o.vocabulary.empty()) vocab = sorted;
    else if (sorted.size() != vocab.size()) throw DataError(name + ": the model's vocabulary repeats a character");
    if (vocab.size() < 2)
        throw DataError(name + ": the text has " + std::to_string(vocab.size()) + " distinct character; a classifier needs 2");

    // Ids; with a given vocabulary, a character outside it is named by line and column.
    std::vector<int> index_of_sorted(sorted.size());
    for (std::size_t k = 0; k < vocab.size(); ++k)
        index_of_sorted[std::lower_bound(sorted.begin(), sorted.end(), vocab[k]) - sorted.begin()] = static_cast<int>(k);
    std::vector<int> ids(chars.size());
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < chars.size(); ++i) {
        const auto it = std::lower_bound(sorted.begin(), sorted.end(), chars[i]);
        if (it == sorted.end() || *it != chars[i]) {
            throw DataError(csv::place(name, line, column) + "character \"" + encode_utf8(chars[i]) + "\" (" + code_point_name(chars[i]) +
                            ") is not in the model's vocabulary of " + std::to_string(vocab.size()));
        }
        ids[i] = index_of_sorted[static_cast<std::size_t>(it - sorted.begin())];
        if (chars[i] == U'\n') ++line, column = 1;
        else ++column;
    }

    const std::size_t T = static_cast<std::size_t>(o.steps);
    const std::size_t stride = o.stride > 0 ? static_cast<std::size_t>(o.stride) : T;
    const std::size_t N = chars.size();
    const auto n_test = static_cast<std::size_t>(std::floor(static_cast<double>(N) * o.test_fraction));
    DataSplit split;
    for (char32_t c : vocab) split.vocabulary.push_back(encode_utf8(c));
    const std::size_t V = vocab.size();
    const std::size_t K = o.classes > 0 ? static_cast<std::size_t>(o.classes) : V;
    if (K < V)
        throw DataError(name + ": the text has " + std::to_string(V) + " distinct characters, but the model predicts " +
                        std::to_string(K) + " per step (give its output at least " + std::to_string(V) + " units)");
    if (N - n_test < 2) throw DataError(name + ": the text before its test tail is shorter than 2 characters");
    split.train = make_windows(ids, {0, N - n_test}, T, stride, V, K, o.one_hot, name, input_bytes);
    if (n_test >= 2) {
        split.has_test = true;
        split.test = make_windows(ids, {N - n_test, N}, T, stride, V, K, o.one_hot, name + " (test tail)", input_bytes);
    }
    return split;
}

DataSplit read_text_corpus(const std::string& path, const TextCorpusOptions& options) {
    return parse_text_corpus(csv::read_file(path, "a text file"), path, options);
}

}  // namespace thresher::data
