#include "nn/weight_init.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/rng.h"

namespace thresher::nn {

namespace {

void fill_weights(config::WeightInit init, float* w, std::size_t n, double fan_in, double fan_out, Rng& rng) {
    auto normal = [&](double stddev) {
        std::normal_distribution<double> d(0.0, stddev);
        for (std::size_t i = 0; i < n; ++i) w[i] = static_cast<float>(d(rng));
    };
    auto uniform = [&](double a) {
        std::uniform_real_distribution<double> d(-a, a);
        for (std::size_t i = 0; i < n; ++i) w[i] = static_cast<float>(d(rng));
    };
    switch (init) {
        case config::WeightInit::Xavier: normal(std::sqrt(2.0 / (fan_in + fan_out))); return;
        case config::WeightInit::XavierUniform: uniform(std::sqrt(6.0 / (fan_in + fan_out))); return;
        case config::WeightInit::Relu: normal(std::sqrt(2.0 / fan_in)); return;
        case config::WeightInit::Normal: normal(1.0 / std::sqrt(fan_in)); return;
        case config::WeightInit::Uniform: uniform(1.0 / std::sqrt(fan_in)); return;
        case config::WeightInit::Zero: std::fill(w, w + n, 0.f); return;
    }
}

}  // namespace

void init_layer(const config::LayerConfig& l, config::WeightInit init, std::uint64_t model_seed,
                std::size_t layer_index, float* slice) {
    Rng rng(derive_seed(model_seed, 0x494e4954 /* "INIT" */, layer_index));
    // A dense layer on a sequence sees one step's features (the same dense at every step).
    double fan_in = static_cast<double>(l.in_shape.sequence() ? l.in_shape.c : l.in_shape.size());
    double fan_out = l.units;
    const double k = static_cast<double>(l.kernel[0]) * l.kernel[1];
    if (l.type == config::LayerType::Convolution || l.type == config::LayerType::TransposedConvolution) {
        fan_in = l.in_shape.c * k;
        fan_out = l.units * k;
    }
    // Depthwise kernels see one input channel each; a separable layer's pointwise kernel is a 1x1
    // convolution from in_c * multiplier channels.
    const double depthwise_fan_in = k, depthwise_fan_out = l.depth_multiplier * k;
    if (l.type == config::LayerType::DepthwiseConvolution) fan_in = depthwise_fan_in, fan_out = depthwise_fan_out;
    if (l.type == config::LayerType::SeparableConvolution) fan_in = static_cast<double>(l.in_shape.c) * l.depth_multiplier, fan_out = l.units;
    // Recurrent layers: W maps one step's features to G gates of H, R the hidden state to them.
    const double gates = l.type == config::LayerType::Lstm ? 4 : l.type == config::LayerType::Gru ? 3 : 1;
    if (config::is_recurrent(l.type)) fan_in = l.in_shape.c, fan_out = gates * l.units;
    if (l.type == config::LayerType::Embedding) fan_in = 1, fan_out = l.units;  // one row per id, as Keras's uniform embeddings
    if (l.type == config::LayerType::Convolution1d) fan_in = static_cast<double>(l.in_shape.c) * l.kernel[0], fan_out = static_cast<double>(l.units) * l.kernel[0];
    for (const auto& b : l.blocks) {
        float* p = slice + b.offset;
        switch (b.role) {
            case config::ParamRole::Weight: fill_weights(init, p, b.size, fan_in, fan_out, rng); break;
            case config::ParamRole::Depthwise: fill_weights(init, p, b.size, depthwise_fan_in, depthwise_fan_out, rng); break;
            case config::ParamRole::Gamma:
            case config::ParamRole::RunningVar: std::fill(p, p + b.size, 1.f); break;
            case config::ParamRole::Bias:
            case config::ParamRole::Beta:
            case config::ParamRole::RunningMean: std::fill(p, p + b.size, 0.f); break;
            case config::ParamRole::Alpha: std::fill(p, p + b.size, l.prelu_init); break;
            case config::ParamRole::Recurrent: fill_weights(init, p, b.size, l.units, gates * l.units, rng); break;
            case config::ParamRole::Peephole: std::fill(p, p + b.size, 0.f); break;
        }
        // An lstm's forget gate (the second of i, f, g, o) starts at forget_bias, so that early
        // on the cell remembers (Keras's unit_forget_bias, DL4J's forgetGateBiasInit).
        if (b.role == config::ParamRole::Bias && l.type == config::LayerType::Lstm) {
            const auto h = static_cast<std::size_t>(l.units);
            std::fill(p + h, p + 2 * h, l.forget_bias);
        }
    }
}

}  // namespace thresher::nn
