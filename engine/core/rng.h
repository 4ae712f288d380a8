// Seeded, reproducible randomness. Every random stream in the engine (weight init, shuffling,
// dropout masks) derives its seed from the run seed and a purpose/index tuple, so a resumed run
// draws exactly the numbers the uninterrupted run would have drawn.
#pragma once

#include <cstdint>
#include <random>

namespace thresher {

// SplitMix64 finaliser: spreads (seed, a, b) into an independent 64-bit seed.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0);

using Rng = std::mt19937_64;

}  // namespace thresher
