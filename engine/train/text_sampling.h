// Text from a character model (issue 23): the model reads a window of characters and predicts the
// next one; sampling feeds its own choices back in.
//
// The model: a sequence input of T steps with V features (one-hot characters) or 1 feature (ids
// for an embedding), where V >= the vocabulary's size, and a classifier over at least the
// vocabulary's characters — per step (the prediction at each step is the next character, the
// text templates' form) or per sample (the window's next character). Each new character is drawn
// from the prediction after the last character of the window; the window is the last up to T
// characters (prime, then what was drawn), so every draw is a full forward pass over at most T
// steps: O(length x T) work, which for the few hundred characters people ask for is milliseconds.
//
// Drawing: p_i ∝ p_i^(1/temperature) over the vocabulary's characters (classes past it were never
// targets and are left out); temperature 0 takes the most probable character (greedy). Uniform
// numbers come from a 64-bit Mersenne Twister seeded with `seed`, turned into [0,1) by its top 53
// bits, so a seed gives the same text on every machine.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "nn/network.h"

namespace thresher::train {

struct TextSampleOptions {
    int length = 200;          // characters to draw, 1 .. kMaxSampleLength
    double temperature = 1.0;  // 0 (greedy) .. kMaxTemperature
    std::string prime;         // UTF-8; empty: one character drawn uniformly from the vocabulary
    std::uint64_t seed = 1;
};

inline constexpr int kMaxSampleLength = 100000;
inline constexpr double kMaxTemperature = 100.0;

struct TextSample {
    std::string prime;  // as used (the drawn first character when none was given)
    std::string text;   // the drawn characters only
};

// One draw from `n` probabilities at `temperature` (as above): the index drawn.
int draw_character(const float* p, std::size_t n, double temperature, std::mt19937_64& rng);

// Throws ConfigError naming what does not fit: a model that is not a character model (its input
// not a sequence of V or 1 features, its output not a classifier over >= V classes), a vocabulary
// that is empty (the model was not trained on text), options out of range, a prime character
// outside the vocabulary (named, with its position), or invalid UTF-8 in the prime.
TextSample sample_text(nn::Network& net, const std::vector<std::string>& vocabulary, const TextSampleOptions& options);

}  // namespace thresher::train
