// The payload of an averaging round's messages (NodeLink::reduce, node_link_rounds.cpp): a node's
// sums go up the tree as Average, the cluster's come back down as AverageResult, both as
//   u64 round, u32 workers, u64 P, u64 S, then P + S f32 sums (parameters, updater state)
// in network byte order (engine/dist/README.md, section 3). Pure functions, so the payload a peer
// sends is unit-tested (test_round_payload) and fuzzed (fuzz_round_payload) without a cluster:
// a node holds the run secret, so its sums are authentic, but a buggy one must still not make
// another read out of bounds or take sums of the wrong shape.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace thresher::dist {

// At most this many workers in one message's sums (a bound far above any cluster, so a count
// that could not be real is refused rather than added).
inline constexpr std::uint32_t kMaxRoundWorkers = 1u << 20;
// Bytes before the floats: round, workers, P, S.
inline constexpr std::size_t kRoundHeaderBytes = 28;

// The payload for `round`: `workers` replicas' summed parameters and updater state, rounded to float.
std::vector<std::uint8_t> pack_sums(std::uint64_t round, int workers, const std::vector<double>& params,
                                    const std::vector<double>& state);

// Adds a peer's sums into ours (replace: takes them instead, and their worker count); false, and
// nothing changed, unless the payload is for `round`, holds exactly params.size() + state.size()
// floats and between 1 and kMaxRoundWorkers workers. Never reads outside `in`.
bool add_sums(std::span<const std::uint8_t> in, std::uint64_t round, std::vector<double>& params,
              std::vector<double>& state, int& workers, bool replace);

}  // namespace thresher::dist
