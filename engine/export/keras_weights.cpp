// Thresher's parameter blocks in Keras's layouts, the inverse of engine/config/weight_import.cpp:
//   Dense kernel      Thresher [in, out] -> Keras [in, out]; after a Flatten of an h x w x c
//                     image, Keras row (y*W + x)*C + c is Thresher's row (c*H + y)*W + x
//   Conv2D kernel     Thresher [out, in, kh, kw] -> Keras [kh, kw, in, out] (HWIO)
//   DepthwiseConv2D   Thresher [in * mult, 1, kh, kw] (output c * mult + m) -> Keras
//                     depthwise_kernel [kh, kw, in, mult]; SeparableConv2D also pointwise_kernel:
//                     Thresher [filters, in * mult] -> Keras [1, 1, in * mult, filters]
//   Conv2DTranspose   Thresher [in, out, kh, kw] -> Keras [kh, kw, out, in] (not flipped: both
//                     are the adjoint of the same cross-correlation)
//   PReLU alpha       Thresher [c', h', w'] -> Keras [h', w', c'] (a shared axis has extent 1),
//                     [c'] on features
//   BatchNormalization gamma, beta, moving_mean, moving_variance: per channel, as they are
// Every block is copied whole; the sizes are the config's, checked by export_model beforehand.
#include "config/model_config.h"
#include "export/keras_model.h"
#include "export/keras_sequence_export.h"

namespace thresher::model_export {

namespace {

using config::LayerConfig;
using config::LayerType;
using config::ParamRole;

const float* block(const ExportableModel& m, const LayerConfig& l, ParamRole role) {
    for (const auto& b : l.blocks)
        if (b.role == role) return m.params.data() + l.param_offset + b.offset;
    return nullptr;
}

KerasWeight vector_weight(const ExportableModel& m, const LayerConfig& l, ParamRole role, const char* name, std::size_t n) {
    const float* src = block(m, l, role);
    return {name, {n}, std::vector<float>(src, src + n)};
}

std::vector<KerasWeight> dense_weights(const ExportableModel& m, const LayerConfig& l, bool after_flatten) {
    const auto& s = l.in_shape;
    // On a sequence the kernel is the one every step uses: [features, units].
    const auto in = s.sequence() ? static_cast<std::size_t>(s.c) : s.size(), units = static_cast<std::size_t>(l.units);
    const float* w = block(m, l, ParamRole::Weight);
    KerasWeight kernel{"kernel", {in, units}, std::vector<float>(in * units)};
    if (after_flatten) {
        for (int c = 0; c < s.c; ++c)
            for (int y = 0; y < s.h; ++y)
                for (int x = 0; x < s.w; ++x) {
                    const std::size_t ours = (static_cast<std::size_t>(c) * s.h + y) * s.w + x;
                    const std::size_t theirs = (static_cast<std::size_t>(y) * s.w + x) * s.c + c;
                    std::copy_n(w + ours * units, units, kernel.values.data() + theirs * units);
                }
    } else {
        std::copy_n(w, in * units, kernel.values.data());
    }
    return {std::move(kernel), vector_weight(m, l, ParamRole::Bias, "bias", units)};
}

std::vector<KerasWeight> conv_weights(const ExportableModel& m, const LayerConfig& l) {
    const auto out = static_cast<std::size_t>(l.units), in = static_cast<std::size_t>(l.in_shape.c);
    const auto kh = static_cast<std::size_t>(l.kernel[0]), kw = static_cast<std::size_t>(l.kernel[1]);
    const float* w = block(m, l, ParamRole::Weight);
    KerasWeight kernel{"kernel", {kh, kw, in, out}, std::vector<float>(out * in * kh * kw)};
    for (std::size_t o = 0; o < out; ++o)
        for (std::size_t c = 0; c < in; ++c)
            for (std::size_t y = 0; y < kh; ++y)
                for (std::size_t x = 0; x < kw; ++x)
                    kernel.values[((y * kw + x) * in + c) * out + o] = w[((o * in + c) * kh + y) * kw + x];
    return {std::move(kernel), vector_weight(m, l, ParamRole::Bias, "bias", out)};
}

std::vector<KerasWeight> depthwise_weights(const ExportableModel& m, const LayerConfig& l) {
    const auto in = static_cast<std::size_t>(l.in_shape.c), mult = static_cast<std::size_t>(l.depth_multiplier);
    const auto kh = static_cast<std::size_t>(l.kernel[0]), kw = static_cast<std::size_t>(l.kernel[1]);
    const bool separable = l.type == LayerType::SeparableConvolution;
    const float* d = block(m, l, separable ? ParamRole::Depthwise : ParamRole::Weight);
    std::vector<KerasWeight> out;
    KerasWeight depthwise{"depthwise_kernel", {kh, kw, in, mult}, std::vector<float>(in * mult * kh * kw)};
    for (std::size_t c = 0; c < in; ++c)
        for (std::size_t k = 0; k < mult; ++k)
            for (std::size_t y = 0; y < kh; ++y)
                for (std::size_t x = 0; x < kw; ++x)
                    depthwise.values[((y * kw + x) * in + c) * mult + k] = d[((c * mult + k) * kh + y) * kw + x];
    out.push_back(std::move(depthwise));
    const auto units = static_cast<std::size_t>(l.units), mid = in * mult;
    if (separable) {
        const float* p = block(m, l, ParamRole::Weight);
        KerasWeight pointwise{"pointwise_kernel", {1, 1, mid, units}, std::vector<float>(mid * units)};
        for (std::size_t f = 0; f < units; ++f)
            for (std::size_t j = 0; j < mid; ++j) pointwise.values[j * units + f] = p[f * mid + j];
        out.push_back(std::move(pointwise));
    }
    out.push_back(vector_weight(m, l, ParamRole::Bias, "bias", units));
    return out;
}

std::vector<KerasWeight> transposed_weights(const ExportableModel& m, const LayerConfig& l) {
    const auto out = static_cast<std::size_t>(l.units), in = static_cast<std::size_t>(l.in_shape.c);
    const auto kh = static_cast<std::size_t>(l.kernel[0]), kw = static_cast<std::size_t>(l.kernel[1]);
    const float* w = block(m, l, ParamRole::Weight);
    KerasWeight kernel{"kernel", {kh, kw, out, in}, std::vector<float>(out * in * kh * kw)};
    for (std::size_t c = 0; c < in; ++c)
        for (std::size_t o = 0; o < out; ++o)
            for (std::size_t y = 0; y < kh; ++y)
                for (std::size_t x = 0; x < kw; ++x)
                    kernel.values[((y * kw + x) * out + o) * in + c] = w[((c * out + o) * kh + y) * kw + x];
    return {std::move(kernel), vector_weight(m, l, ParamRole::Bias, "bias", out)};
}

std::vector<KerasWeight> prelu_weights(const ExportableModel& m, const LayerConfig& l, bool image) {
    const auto& s = l.in_shape;
    const auto ac = static_cast<std::size_t>(l.prelu_shared[0] ? 1 : s.c);
    const auto ah = static_cast<std::size_t>(l.prelu_shared[1] ? 1 : s.h);
    const auto aw = static_cast<std::size_t>(l.prelu_shared[2] ? 1 : s.w);
    const float* a = block(m, l, ParamRole::Alpha);
    if (!image) return {{"alpha", {ac}, std::vector<float>(a, a + ac)}};
    KerasWeight alpha{"alpha", {ah, aw, ac}, std::vector<float>(ac * ah * aw)};
    for (std::size_t c = 0; c < ac; ++c)
        for (std::size_t y = 0; y < ah; ++y)
            for (std::size_t x = 0; x < aw; ++x) alpha.values[(y * aw + x) * ac + c] = a[(c * ah + y) * aw + x];
    return {std::move(alpha)};
}

}  // namespace

void fill_keras_weights(KerasModel& k, const ExportableModel& m) {
    for (auto& layer : k.layers) {
        if (layer.params_of >= m.config.layers.size()) continue;
        const auto& l = m.config.layers[layer.params_of];
        switch (l.type) {
            case LayerType::Dense:
            case LayerType::Output: layer.weights = dense_weights(m, l, layer.after_flatten); break;
            case LayerType::Lstm:
            case LayerType::Gru:
            case LayerType::SimpleRnn:
            case LayerType::Embedding:
            case LayerType::Convolution1d: layer.weights = keras_sequence_weights(m, l); break;
            case LayerType::Convolution: layer.weights = conv_weights(m, l); break;
            case LayerType::DepthwiseConvolution:
            case LayerType::SeparableConvolution: layer.weights = depthwise_weights(m, l); break;
            case LayerType::TransposedConvolution: layer.weights = transposed_weights(m, l); break;
            case LayerType::PRelu: layer.weights = prelu_weights(m, l, layer.input_shape.size() == 3); break;
            case LayerType::BatchNorm: {
                const auto c = static_cast<std::size_t>(l.in_shape.c);
                layer.weights = {vector_weight(m, l, ParamRole::Gamma, "gamma", c), vector_weight(m, l, ParamRole::Beta, "beta", c),
                                 vector_weight(m, l, ParamRole::RunningMean, "moving_mean", c),
                                 vector_weight(m, l, ParamRole::RunningVar, "moving_variance", c)};
                break;
            }
            default: break;
        }
    }
}

}  // namespace thresher::model_export
