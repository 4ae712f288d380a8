// libFuzzer target for the character-corpus reader (data/text_corpus.h): UTF-8 decoding, the
// vocabulary, windows and their next-character targets. Steering byte 0: bits 0-4 steps - 1
// (1..32), bit 5 ids instead of one-hot, bit 6 a 25% test tail, bit 7 a given vocabulary (the
// first line's characters, as a saved model would bring). Byte 1: the stride (0 = steps). Every
// window is checked: lengths in [1, T], one 1 per valid step (one-hot) or an id below V, labels
// in [-1, V) and -1 only after the length.
#include "core/error.h"
#include "data/text_corpus.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace {

void check(const thresher::data::Dataset& ds, std::size_t V, bool one_hot) {
    const auto T = static_cast<std::size_t>(ds.steps);
    const std::size_t C = one_hot ? V : 1;
    const std::size_t row = 1 + T * C;
    if (ds.shape.size() != row || ds.features.size() != ds.count * row) __builtin_trap();
    if (ds.target_size != T * V || ds.targets.size() != ds.count * T * V || ds.labels.size() != ds.count * T) __builtin_trap();
    for (std::size_t i = 0; i < ds.count; ++i) {
        const float* r = ds.sample(i);
        const auto len = static_cast<std::size_t>(r[0]);
        if (len < 1 || len > T || static_cast<float>(len) != r[0]) __builtin_trap();
        for (std::size_t s = 0; s < T; ++s) {
            const std::int32_t l = ds.labels[i * T + s];
            if ((s < len) != (l >= 0) || l >= static_cast<std::int32_t>(V)) __builtin_trap();
            float sum = 0;
            for (std::size_t c = 0; c < C; ++c) sum += r[1 + s * C + c];
            if (one_hot && sum != (s < len ? 1.0f : 0.0f)) __builtin_trap();
            if (!one_hot && (sum < 0 || sum >= static_cast<float>(V) || (s >= len && sum != 0))) __builtin_trap();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    thresher::data::TextCorpusOptions o;
    o.steps = (data[0] & 31) + 1;
    o.one_hot = !((data[0] >> 5) & 1);
    o.test_fraction = (data[0] >> 6) & 1 ? 0.25 : 0.0;
    o.stride = data[1];
    std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
    try {
        if (data[0] >> 7) {
            const std::size_t nl = text.find('\n');
            const std::string_view first = text.substr(0, nl);
            for (char32_t c : thresher::data::decode_utf8(first, "fuzz vocabulary")) o.vocabulary.push_back(thresher::data::encode_utf8(c));
            text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        }
        const thresher::data::DataSplit s = thresher::data::parse_text_corpus(text, "fuzz.txt", o);
        if (!o.vocabulary.empty() && s.vocabulary != o.vocabulary) __builtin_trap();
        check(s.train, s.vocabulary.size(), o.one_hot);
        if (s.has_test) check(s.test, s.vocabulary.size(), o.one_hot);
    } catch (const thresher::Error&) {
    }
    return 0;
}
