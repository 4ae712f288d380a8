// Predictions payloads; layout in predictions_wire.h.
#include "dist/masters/predictions_wire.h"

#include "dist/net/wire.h"

namespace thresher::dist {

std::vector<std::uint8_t> pack_predictions(std::span<const std::size_t> index, std::span<const float> values,
                                           std::uint32_t k) {
    const std::size_t row = 8 + 4 * std::size_t{k};
    std::vector<std::uint8_t> out(kPredictionsHeaderBytes + index.size() * row);
    std::uint8_t* p = out.data();
    wire::store(p, static_cast<std::uint64_t>(index.size())), p += 8;
    wire::store(p, k), p += 4;
    for (std::size_t i = 0; i < index.size(); ++i) {
        wire::store(p, static_cast<std::uint64_t>(index[i])), p += 8;
        for (std::size_t j = 0; j < k; ++j) wire::store(p, values[i * k + j]), p += 4;
    }
    return out;
}

std::optional<Predictions> parse_predictions(std::span<const std::uint8_t> in, std::uint32_t k, std::size_t n) {
    if (in.size() < kPredictionsHeaderBytes) return std::nullopt;
    const auto count = wire::load<std::uint64_t>(in.data());
    const auto outputs = wire::load<std::uint32_t>(in.data() + 8);
    const std::size_t row = 8 + 4 * std::size_t{k};
    const std::size_t body = in.size() - kPredictionsHeaderBytes;
    // The count is checked against the bytes present by division: count × row may not fit 64 bits.
    if (outputs != k || count > n || count != body / row || body % row != 0) return std::nullopt;
    Predictions out;
    out.index.resize(count);
    out.values.resize(count * k);
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint8_t* p = in.data() + kPredictionsHeaderBytes + i * row;
        out.index[i] = wire::load<std::uint64_t>(p);
        if (out.index[i] >= n) return std::nullopt;
        for (std::size_t j = 0; j < k; ++j) out.values[i * k + j] = wire::load<float>(p + 8 + 4 * j);
    }
    return out;
}

}  // namespace thresher::dist
