// The payload of a node's predictions (MessageType::Predictions, `thresher-engine predict` on a
// cluster; engine/dist/README.md, section 3): each node predicts its shard of the rows (row i on
// node i mod nodes) and sends them to node 0, which prints them all in row order:
//   u64 rows, u32 outputs k, then per row u64 index and k f32,
// in network byte order. Pure, so it is unit-tested (test_predictions_wire) and fuzzed
// (fuzz_predictions_wire): a node holds the run secret, so its payload is authentic, but a buggy
// one must still not make node 0 read out of bounds or allocate what the payload does not hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace thresher::dist {

inline constexpr std::size_t kPredictionsHeaderBytes = 12;

// Rows of predictions: index[r] is the data set's row, values[r·k .. r·k + k) its k outputs.
struct Predictions {
    std::vector<std::uint64_t> index;
    std::vector<float> values;
};

// `values` holds index.size() × k floats.
std::vector<std::uint8_t> pack_predictions(std::span<const std::size_t> index, std::span<const float> values,
                                           std::uint32_t k);

// nullopt unless the payload holds exactly its rows of `k` outputs each, each row's index below
// `n` (the rows being predicted), and at most n rows. Nothing is allocated before the payload's
// size has been checked to hold what its counts claim.
std::optional<Predictions> parse_predictions(std::span<const std::uint8_t> payload, std::uint32_t k, std::size_t n);

}  // namespace thresher::dist
