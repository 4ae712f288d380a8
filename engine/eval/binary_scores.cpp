#include "eval/binary_scores.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace thresher::eval {

BinaryScores::BinaryScores() : pos_(kBins, 0), neg_(kBins, 0) {}

void BinaryScores::add(const float* scores, const std::int32_t* labels, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
        const float s = std::isnan(scores[i]) ? 0.f : std::clamp(scores[i], 0.f, 1.f);
        const int bin = std::min(kBins - 1, static_cast<int>(s * kBins));
        if (labels[i] == 1) ++pos_[static_cast<std::size_t>(bin)];
        else if (labels[i] == 0) ++neg_[static_cast<std::size_t>(bin)];
    }
}

void BinaryScores::merge(const BinaryScores& o) {
    // Checked before anything is added: a node's counts (from_json) may be up to 2^63 - 1 each.
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    for (std::size_t b = 0; b < static_cast<std::size_t>(kBins); ++b)
        if (pos_[b] > kMax - o.pos_[b] || neg_[b] > kMax - o.neg_[b])
            throw Error("binary scores: merging bin " + std::to_string(b) + " overflows its count");
    for (std::size_t b = 0; b < static_cast<std::size_t>(kBins); ++b) pos_[b] += o.pos_[b], neg_[b] += o.neg_[b];
}

double BinaryScores::auc() const {
    double pairs = 0.0, below = 0.0;  // negatives in lower bins, running
    double positives = 0.0, negatives = 0.0;
    for (int b = 0; b < kBins; ++b) {
        const double p = static_cast<double>(pos_[b]), n = static_cast<double>(neg_[b]);
        pairs += p * below + 0.5 * p * n;
        below += n;
        positives += p;
        negatives += n;
    }
    if (positives == 0.0 || negatives == 0.0) return std::numeric_limits<double>::quiet_NaN();
    return pairs / (positives * negatives);
}

nlohmann::json BinaryScores::to_json() const { return {{"pos", pos_}, {"neg", neg_}}; }

BinaryScores BinaryScores::from_json(const nlohmann::json& j) {
    BinaryScores s;
    for (const char* key : {"pos", "neg"}) {
        const auto it = j.find(key);
        if (it == j.end() || !it->is_array() || it->size() != static_cast<std::size_t>(kBins))
            throw Error(std::string("binary scores: \"") + key + "\" must be " + std::to_string(kBins) + " counts");
        auto& dst = std::string(key) == "pos" ? s.pos_ : s.neg_;
        for (int b = 0; b < kBins; ++b) {
            const auto& v = (*it)[static_cast<std::size_t>(b)];
            if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
                throw Error(std::string("binary scores: \"") + key + "\"[" + std::to_string(b) + "] must be a count");
            dst[static_cast<std::size_t>(b)] = v.get<std::int64_t>();
        }
    }
    return s;
}

}  // namespace thresher::eval
