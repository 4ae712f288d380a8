#include "train/text_sampling.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/error.h"
#include "data/text_corpus.h"

namespace thresher::train {

namespace {

// What sampling needs to know about the model, checked once.
struct CharModel {
    int steps = 0;        // T
    int features = 0;     // V (one-hot) or 1 (ids)
    bool per_step = false;
    int classes = 0;      // the output's units (per step)
    std::size_t row = 0;  // the input row: 1 + T * features
    std::size_t out = 0;  // floats predict writes per sample
};

CharModel check_model(const config::ModelConfig& cfg, std::size_t vocabulary) {
    const std::string what = "sample text: model \"" + cfg.name + "\"";
    if (vocabulary == 0)
        throw ConfigError(what + " has no character vocabulary: only a model trained on a text corpus (.txt) can sample text");
    if (cfg.input_count() != 1 || cfg.output_layers.size() != 1)
        throw ConfigError(what + " has several inputs or outputs; a character model reads one sequence and predicts one character");
    const auto& in = cfg.input_shape(0);
    if (!in.sequence())
        throw ConfigError(what + ": its input is " + in.str() + ", not a sequence of characters");
    CharModel m;
    m.steps = in.t;
    m.features = in.c;
    if (m.features != 1 && static_cast<std::size_t>(m.features) < vocabulary)
        throw ConfigError(what + ": its input has " + std::to_string(m.features) + " features per step, fewer than the " +
                          std::to_string(vocabulary) + " characters of its vocabulary (one-hot) and not 1 (ids)");
    if (!cfg.is_classifier())
        throw ConfigError(what + ": its output is not a classifier (cross-entropy over characters)");
    const auto& o = cfg.main_output();
    m.per_step = o.out_shape.sequence();
    m.classes = cfg.output_size();
    if (static_cast<std::size_t>(m.classes) < vocabulary)
        throw ConfigError(what + ": its output has " + std::to_string(m.classes) + " classes, fewer than the " +
                          std::to_string(vocabulary) + " characters of its vocabulary");
    if (m.per_step && o.out_shape.t != m.steps)
        throw ConfigError(what + ": its per-step output has " + std::to_string(o.out_shape.t) + " steps, its input " +
                          std::to_string(m.steps) + "; sampling reads the prediction after the window's last character");
    m.row = cfg.input_size();
    m.out = cfg.target_size();
    return m;
}

// A uniform number in [0, 1) from the generator's top 53 bits (std::generate_canonical's result
// is left to the library; this is the same everywhere).
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

int draw_character(const float* p, std::size_t n, double temperature, std::mt19937_64& rng) {
    if (temperature == 0.0) return static_cast<int>(std::max_element(p, p + n) - p);
    // Weights p^(1/T), computed as exp((log p - log max) / T) so a low temperature does not
    // underflow every weight to zero.
    const double top = std::max(static_cast<double>(*std::max_element(p, p + n)), 1e-30);
    std::vector<double> w(n);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double v = std::max(static_cast<double>(p[i]), 0.0);
        w[i] = v > 0 ? std::exp((std::log(v) - std::log(top)) / temperature) : 0.0;
        sum += w[i];
    }
    if (!(sum > 0) || !std::isfinite(sum)) return static_cast<int>(std::max_element(p, p + n) - p);
    double u = uniform01(rng) * sum;
    for (std::size_t i = 0; i < n; ++i) {
        if (u < w[i]) return static_cast<int>(i);
        u -= w[i];
    }
    // Rounding left u at the end: the last character with any weight.
    for (std::size_t i = n; i-- > 0;)
        if (w[i] > 0) return static_cast<int>(i);
    return 0;
}


TextSample sample_text(nn::Network& net, const std::vector<std::string>& vocabulary, const TextSampleOptions& options) {
    if (options.length < 1 || options.length > kMaxSampleLength)
        throw ConfigError("sample text: length " + std::to_string(options.length) + " is outside 1.." +
                          std::to_string(kMaxSampleLength));
    if (!(options.temperature >= 0.0 && options.temperature <= kMaxTemperature))
        throw ConfigError("sample text: temperature must be between 0 (greedy) and " +
                          std::to_string(static_cast<int>(kMaxTemperature)));
    const auto m = check_model(net.config(), vocabulary.size());

    std::unordered_map<std::string, int> id_of;
    for (std::size_t i = 0; i < vocabulary.size(); ++i) id_of.emplace(vocabulary[i], static_cast<int>(i));
    std::mt19937_64 rng(options.seed);

    std::vector<int> context;  // every character so far, as ids
    TextSample result;
    if (options.prime.empty()) {
        const auto first = static_cast<std::size_t>(uniform01(rng) * static_cast<double>(vocabulary.size()));
        context.push_back(static_cast<int>(std::min(first, vocabulary.size() - 1)));
        result.prime = vocabulary[static_cast<std::size_t>(context.back())];
    } else {
        const auto code_points = data::decode_utf8(options.prime, "sample text: --prime");
        for (std::size_t i = 0; i < code_points.size(); ++i) {
            const auto c = data::encode_utf8(code_points[i]);
            const auto it = id_of.find(c);
            if (it == id_of.end())
                throw ConfigError("sample text: character " + std::to_string(i + 1) + " of the prime (\"" + c + "\", " +
                                  data::code_point_name(code_points[i]) + ") is not in the model's vocabulary of " +
                                  std::to_string(vocabulary.size()) + " characters");
            context.push_back(it->second);
        }
        result.prime = options.prime;
    }

    std::vector<float> x(m.row), y(m.out);
    const auto V = vocabulary.size();
    for (int k = 0; k < options.length; ++k) {
        const std::size_t L = std::min(context.size(), static_cast<std::size_t>(m.steps));
        const int* window = context.data() + (context.size() - L);
        std::fill(x.begin(), x.end(), 0.0f);
        x[0] = static_cast<float>(L);
        for (std::size_t s = 0; s < L; ++s) {
            if (m.features == 1) x[1 + s] = static_cast<float>(window[s]);
            else x[1 + s * static_cast<std::size_t>(m.features) + static_cast<std::size_t>(window[s])] = 1.0f;
        }
        net.predict(x.data(), 1, y.data());
        const float* p = y.data() + (m.per_step ? (L - 1) * static_cast<std::size_t>(m.classes) : 0);
        const int c = draw_character(p, V, options.temperature, rng);
        context.push_back(c);
        result.text += vocabulary[static_cast<std::size_t>(c)];
    }
    return result;
}

}  // namespace thresher::train
