// normalizer.bin of a DL4J export: the input normalisation a model was trained with (`train
// --normalize`), as DL4J's NormalizerSerializer writes it, so restoreMultiLayerNetworkAndNormalizer
// gives the JVM service the transform `thresher-engine predict` applies. The inverse of
// config/dl4j_normalizer.cpp (its header has the byte layout). Thresher keeps x' = (x - shift)·scale
// per feature; DL4J's forms carry the same numbers:
//   standardize  STANDARDIZE, fitLabel false, mean = shift, std = 1/scale
//   minmax       MIN_MAX, fitLabel false, target [0, 1], min = shift, max = shift + 1/scale
// both statistics as ND4J rows [1, features] (nd4j_writer.h), one value per input feature (DL4J
// normalises the flat rows that a FeedForwardToCnn preprocessor then shapes into the image).
#include <bit>
#include <cmath>
#include <cstdint>

#include "export/dl4j_export.h"
#include "export/nd4j_writer.h"

namespace thresher::model_export {

namespace {

void be(std::string& out, std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void utf(std::string& out, const std::string& s) {
    be(out, s.size(), 2);
    out += s;
}

}  // namespace

std::optional<std::string> dl4j_normalizer_refusal(const InputNormalization& n) {
    if (!n.active()) return std::nullopt;
    if (n.kind != "standardize" && n.kind != "minmax")
        return "input normalisation \"" + n.kind + "\" has no DL4J normalizer (standardize and minmax do)";
    for (std::size_t i = 0; i < n.scale.size(); ++i)
        // DL4J rounds a standard deviation or range below 1e-5 up to 1e-5: it would scale less.
        if (!(n.scale[i] > 0.f) || !(1.0 / n.scale[i] >= 1e-5) || !std::isfinite(n.shift[i]))
            return "input normalisation (" + n.kind + "): feature " + std::to_string(i) + " has scale " + std::to_string(n.scale[i]) +
                   ", which DL4J's normalizer cannot hold (its spread must be at least 1e-5)";
    return std::nullopt;
}

std::string dl4j_normalizer_bytes(const InputNormalization& n) {
    std::string out;
    utf(out, "NORMALIZER");
    be(out, 1, 4);  // NormalizerSerializer's version
    const bool standardize = n.kind == "standardize";
    utf(out, standardize ? "STANDARDIZE" : "MIN_MAX");
    out.push_back(0);  // fitLabel: labels are not normalised
    std::vector<float> spread(n.scale.size());
    if (standardize) {
        for (std::size_t i = 0; i < n.scale.size(); ++i) spread[i] = static_cast<float>(1.0 / n.scale[i]);
    } else {
        be(out, std::bit_cast<std::uint64_t>(0.0), 8);  // targetMin
        be(out, std::bit_cast<std::uint64_t>(1.0), 8);  // targetMax
        for (std::size_t i = 0; i < n.scale.size(); ++i) spread[i] = static_cast<float>(n.shift[i] + 1.0 / n.scale[i]);
    }
    out += nd4j_row_bytes(n.shift);  // mean, or min
    out += nd4j_row_bytes(spread);   // std, or max
    return out;
}

}  // namespace thresher::model_export
