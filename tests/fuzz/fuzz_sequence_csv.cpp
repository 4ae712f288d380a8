// libFuzzer target for the sequence CSV reader (data/sequence_csv.h) and the token-id CSV reader
// (data/token_csv.h). Steering bytes: byte 0 picks the options (bit 0 token CSV instead of
// sequence files, bits 1-2 header mode, bit 3 align end, bits 4-5 label mode, bit 6 truncate,
// bit 7 regression), byte 1 max_steps (low nibble, 0 = the longest) and num_classes (high
// nibble, 0 = inferred). The rest is the text; for sequence files it is cut at NUL bytes into
// features/labels pairs (an odd last piece: its label is a column). Every Dataset that comes back
// is checked against seq_spec.md: sizes, lengths in [1, T], zeros after the length, labels in
// range.
#include "core/error.h"
#include "data/sequence_csv.h"
#include "data/token_csv.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

void check(const thresher::data::Dataset& ds) {
    const std::size_t T = static_cast<std::size_t>(ds.steps), C = static_cast<std::size_t>(ds.step_features);
    const std::size_t row = ds.shape.size();
    if (T == 0 || C == 0 || row != 1 + T * C) __builtin_trap();
    if (ds.features.size() != ds.count * row || ds.targets.size() != ds.count * ds.target_size) __builtin_trap();
    for (std::size_t i = 0; i < ds.count; ++i) {
        const float* r = ds.sample(i);
        const float len = r[0];
        if (!(len >= 1 && len <= static_cast<float>(T)) || len != static_cast<float>(static_cast<std::size_t>(len)))
            __builtin_trap();
        for (std::size_t k = 1 + static_cast<std::size_t>(len) * C; k < row; ++k)
            if (r[k] != 0.0f) __builtin_trap();
    }
    if (ds.is_classification()) {
        const std::size_t per = ds.target_steps > 0 ? static_cast<std::size_t>(ds.target_steps) : 1;
        if (ds.labels.size() != ds.count * per) __builtin_trap();
        for (std::int32_t l : ds.labels)
            if (l < -1 || l >= ds.num_classes || (per == 1 && l < 0)) __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::uint8_t a = data[0], b = data[1];
    const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
    try {
        if (a & 1) {
            thresher::data::TokenCsvOptions o;
            o.header = ((a >> 1) & 3) % 3 - 1;
            o.truncate = (a >> 6) & 1;
            o.classification = !((a >> 7) & 1);
            o.max_steps = b & 15;
            o.num_classes = b >> 4;
            o.vocabulary = (a >> 3) & 1 ? 100 : 0;
            check(thresher::data::parse_token_csv(text, "fuzz.csv", o));
            return 0;
        }
        thresher::data::SequenceCsvOptions o;
        o.header = ((a >> 1) & 3) % 3 - 1;
        o.align = (a >> 3) & 1 ? thresher::data::SequenceAlign::end : thresher::data::SequenceAlign::start;
        o.labels = static_cast<thresher::data::SequenceLabels>(((a >> 4) & 3) % 3);
        o.truncate = (a >> 6) & 1;
        o.classification = !((a >> 7) & 1);
        o.max_steps = b & 15;
        o.num_classes = b >> 4;
        std::vector<std::string_view> pieces;
        std::size_t start = 0;
        for (std::size_t i = 0; i <= text.size(); ++i)
            if (i == text.size() || text[i] == '\0') {
                pieces.push_back(text.substr(start, i - start));
                start = i + 1;
            }
        std::vector<thresher::data::SequenceText> seqs;
        for (std::size_t i = 0; i < pieces.size(); i += 2) {
            const std::string n = std::to_string(i / 2);
            if (i + 1 < pieces.size())
                seqs.push_back({"f/" + n + ".csv", pieces[i], "l/" + n + ".csv", pieces[i + 1]});
            else
                seqs.push_back({"s/" + n + ".csv", pieces[i], "", {}});
        }
        check(thresher::data::parse_sequences(seqs, o));
    } catch (const thresher::Error&) {
    }
    return 0;
}
