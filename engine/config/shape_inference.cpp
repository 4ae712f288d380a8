// Shape inference: walks the layers from the input, computing each layer's output shape, its
// padding (DL4J's Truncate and Same modes) and its parameter blocks, and rejects what cannot
// run. Worked example, LeNet on 1x28x28:
//   conv 5x5x20 truncate   28 - 5 + 1 = 24  -> 20x24x24, 20*1*5*5 + 20 = 520 params
//   max 2x2 stride 2       24 / 2 = 12      -> 20x12x12
//   conv 5x5x50            12 - 5 + 1 = 8   -> 50x8x8,   50*20*25 + 50 = 25050
//   max 2x2                                 -> 50x4x4 = 800 features when flattened
//   dense 500              800*500 + 500 = 400500;  output 10: 500*10 + 10 = 5010
#include <algorithm>
#include <sstream>

#include "core/error.h"
#include "config/model_config.h"

namespace thresher::config {

namespace {

struct Window {
    int out, pad_before, pad_after;
};

// One spatial dimension of a convolution or pooling window.
Window window(int in, int kernel, int stride, int dilation, int padding, ConvMode mode) {
    // 64-bit: kernel, stride and dilation each come from the user up to 2^20.
    const long long k_eff = static_cast<long long>(kernel - 1) * dilation + 1;
    if (mode == ConvMode::Same) {
        // DL4J Same: out = ceil(in / stride), the padding split with the extra at the end.
        const long long out = (static_cast<long long>(in) + stride - 1) / stride;
        const long long total = std::max(0LL, (out - 1) * stride + k_eff - in);
        if (total > (1 << 24)) return {0, 0, 0};
        return {static_cast<int>(out), static_cast<int>(total / 2), static_cast<int>(total - total / 2)};
    }
    // Truncate: floor; rows the last window cannot reach are simply left out. Padding stays
    // symmetric (what oneDNN's floor formula and cuDNN expect).
    const long long span = static_cast<long long>(in) + 2LL * padding - k_eff;
    if (span < 0) return {0, padding, padding};
    return {static_cast<int>(span / stride + 1), padding, padding};
}

bool shape_is_image(const Shape& s) { return !s.flat() && !s.sequence(); }

// "100 flat features", "a 1x28x28 image", "a sequence of 100 steps x 64 features".
std::string describe(const Shape& s) {
    if (s.sequence()) return "a sequence of " + std::to_string(s.t) + " steps x " + std::to_string(s.c) + " features";
    if (s.flat()) return std::to_string(s.c) + " flat features";
    return "a " + s.str() + " image";
}

// A sequence's steps after a window along time (subsampling, convolution1d); causal pads
// (k - 1) * dilation before the first step, so out = ceil(T / stride) as with same.
Window time_window(int steps, int kernel, int stride, int dilation, ConvMode mode) {
    if (mode == ConvMode::Causal) {
        const long long pad = static_cast<long long>(kernel - 1) * dilation;
        if (pad > (1 << 24)) return {0, 0, 0};
        return {static_cast<int>((static_cast<long long>(steps) + stride - 1) / stride), static_cast<int>(pad), 0};
    }
    return window(steps, kernel, stride, dilation, 0, mode);
}

// The settings that come with a layer's parameters (what a sharer must repeat of its owner).
bool same_settings(const LayerConfig& a, const LayerConfig& b) {
    // Inferred from the input, not set: an activation's units (as the output), a depthwise
    // convolution's, global pooling's window.
    const bool units_set = a.type != LayerType::Activation && a.type != LayerType::DepthwiseConvolution;
    const bool window_set = !a.global;
    return a.type == b.type && (!units_set || a.units == b.units) &&
           (!window_set || (a.kernel == b.kernel && a.stride == b.stride && a.padding == b.padding)) &&
           a.dilation == b.dilation && a.mode == b.mode && a.max_pool == b.max_pool && a.global == b.global &&
           a.activation.kind == b.activation.kind && a.activation.alpha == b.activation.alpha && a.loss == b.loss &&
           a.retain == b.retain && a.bn_eps == b.bn_eps && a.bn_decay == b.bn_decay && a.prelu_shared == b.prelu_shared &&
           a.margins == b.margins && a.scale == b.scale && a.subset == b.subset && a.depth_multiplier == b.depth_multiplier &&
           a.permute_axes == b.permute_axes && a.channels_last_order == b.channels_last_order && a.spatial == b.spatial &&
           a.return_sequences == b.return_sequences && a.bidirectional == b.bidirectional && a.peepholes == b.peepholes &&
           a.reset_after == b.reset_after && a.vocabulary == b.vocabulary && a.repeat == b.repeat;
}

}  // namespace

void ModelConfig::infer_shapes(const std::string& source) {
    auto fail = [&](std::size_t i, const std::string& problem) {
        throw ConfigError(source + ": " + layers[i].label(i) + ": " + problem);
    };
    if (input.size() == 0) throw ConfigError(source + ": input: size must be positive");
    for (const auto& e : extra_inputs)
        if (e.shape.size() == 0) throw ConfigError(source + ": input \"" + e.name + "\": size must be positive");
    resolve_graph(source);
    auto name_of = [&](int s) {
        if (s < 0) return "\"" + input_name_of(LayerConfig::input_index(s)) + "\"";
        const auto& l = layers[static_cast<std::size_t>(s)];
        return l.name.empty() ? l.label(static_cast<std::size_t>(s)) : "\"" + l.name + "\"";
    };
    std::size_t offset = 0;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        auto& l = layers[i];
        const Shape shape = shape_of(l.sources.front());
        l.in_shape = shape;
        l.blocks.clear();
        l.pads = {0, 0, 0, 0};
        // An output: no layer reads it (resolve_graph set is_output; the last layer always is).
        const bool last = l.is_output;
        if (i + 1 == layers.size() && l.type != LayerType::Output && l.type != LayerType::Activation && !l.declares_loss)
            fail(i, "the last layer must be an output layer, an activation layer with the loss, or an image output with a "
                    "\"loss\" (a convolution, transposed convolution or upsampling layer), got " +
                        std::string(to_string(l.type)) + " without one");
        switch (l.type) {
            case LayerType::Dense:
            case LayerType::Output: {
                // On a sequence: the same dense at every step (one dense over N * T rows); an
                // output there has a loss per step (seq_spec.md).
                const std::size_t in = shape.sequence() ? static_cast<std::size_t>(shape.c) : shape.size();
                l.out_shape = shape.sequence() ? sequence_shape(shape.t, l.units) : Shape{l.units, 1, 1};
                l.blocks.push_back({ParamRole::Weight, 0, in * l.units});
                l.blocks.push_back({ParamRole::Bias, in * l.units, static_cast<std::size_t>(l.units)});
                break;
            }
            case LayerType::TransposedConvolution: {
                if (!shape_is_image(shape)) fail(i, "needs image input (channels x height x width), but its input is " + describe(shape));
                // The adjoint of a convolution with these settings: out = (in - 1) * stride -
                // pads + span of the kernel; "same" gives in * stride, the padding split as a
                // convolution's (any odd one after).
                int out[2], before[2], after[2];
                for (int d = 0; d < 2; ++d) {
                    const long long span = static_cast<long long>(l.kernel[d] - 1) * l.dilation[d] + 1;
                    const long long in = d == 0 ? shape.h : shape.w;
                    long long o = 0, b = 0, a = 0;
                    if (l.mode == ConvMode::Same) {
                        const long long total = span - l.stride[d];
                        if (total < 0)
                            fail(i, "same mode needs a kernel at least as large as the stride (kernel " +
                                        std::to_string(l.kernel[d]) + ", stride " + std::to_string(l.stride[d]) + ")");
                        o = in * l.stride[d];
                        b = total / 2, a = total - total / 2;
                    } else {
                        o = (in - 1) * l.stride[d] + span - 2LL * l.padding[d];
                        b = a = l.padding[d];
                    }
                    if (o < 1) fail(i, "padding " + std::to_string(l.padding[d]) + " leaves no output");
                    if (o > (1 << 20)) fail(i, "too large: an image side beyond 2^20");
                    out[d] = static_cast<int>(o), before[d] = static_cast<int>(b), after[d] = static_cast<int>(a);
                }
                l.pads = {before[0], before[1], after[0], after[1]};
                l.out_shape = Shape{l.units, out[0], out[1]};
                const std::size_t w = static_cast<std::size_t>(shape.c) * l.units * l.kernel[0] * l.kernel[1];
                l.blocks.push_back({ParamRole::Weight, 0, w});
                l.blocks.push_back({ParamRole::Bias, w, static_cast<std::size_t>(l.units)});
                break;
            }
            case LayerType::Convolution:
            case LayerType::DepthwiseConvolution:
            case LayerType::SeparableConvolution:
            case LayerType::Subsampling: {
                const bool conv = l.type != LayerType::Subsampling;
                if (!conv && shape.sequence()) {
                    // Along time: global pools the valid steps (masked) into flat features.
                    if (l.global) {
                        l.out_shape = Shape{shape.c, 1, 1};
                        break;
                    }
                    if (l.mode == ConvMode::Causal) fail(i, "causal mode is for convolution1d only");
                    l.kernel[1] = 1, l.stride[1] = 1, l.padding = {0, 0};
                    const auto wt = time_window(shape.t, l.kernel[0], l.stride[0], 1, l.mode);
                    if (wt.out < 1)
                        fail(i, "kernel " + std::to_string(l.kernel[0]) + " does not fit its input, " + describe(shape));
                    l.pads = {wt.pad_before, 0, wt.pad_after, 0};
                    l.out_shape = sequence_shape(wt.out, shape.c);
                    break;
                }
                if (!shape_is_image(shape)) fail(i, "needs image input (channels x height x width), but its input is " + describe(shape));
                if (l.global) {  // one window over the whole image: C x 1 x 1
                    l.kernel = {shape.h, shape.w};
                    l.stride = l.kernel;
                    l.padding = {0, 0};
                    l.mode = ConvMode::Truncate;
                }
                const int dil_h = conv ? l.dilation[0] : 1, dil_w = conv ? l.dilation[1] : 1;
                const auto wh = window(shape.h, l.kernel[0], l.stride[0], dil_h, l.padding[0], l.mode);
                const auto ww = window(shape.w, l.kernel[1], l.stride[1], dil_w, l.padding[1], l.mode);
                if (wh.out < 1 || ww.out < 1) {
                    std::ostringstream msg;
                    msg << "kernel " << l.kernel[0] << "x" << l.kernel[1];
                    if (conv && (dil_h > 1 || dil_w > 1)) msg << " (dilation " << dil_h << "x" << dil_w << ")";
                    msg << " does not fit its " << shape.str() << " input with padding "
                        << l.padding[0] << "x" << l.padding[1];
                    fail(i, msg.str());
                }
                l.pads = {wh.pad_before, ww.pad_before, wh.pad_after, ww.pad_after};
                const std::size_t k = static_cast<std::size_t>(l.kernel[0]) * l.kernel[1];
                // Depthwise kernels: one [kh x kw] per output of the depthwise step (in_c x multiplier).
                const std::size_t depthwise = static_cast<std::size_t>(shape.c) * l.depth_multiplier;
                if (l.type == LayerType::DepthwiseConvolution) {
                    if (depthwise > (1u << 20)) fail(i, "too large: more than 2^20 output channels");
                    l.units = static_cast<int>(depthwise);
                }
                l.out_shape = Shape{conv ? l.units : shape.c, wh.out, ww.out};
                if (l.type == LayerType::Convolution) {
                    const std::size_t w = static_cast<std::size_t>(l.units) * shape.c * k;
                    l.blocks.push_back({ParamRole::Weight, 0, w});
                    l.blocks.push_back({ParamRole::Bias, w, static_cast<std::size_t>(l.units)});
                } else if (l.type == LayerType::DepthwiseConvolution) {
                    l.blocks.push_back({ParamRole::Weight, 0, depthwise * k});
                    l.blocks.push_back({ParamRole::Bias, depthwise * k, depthwise});
                } else if (l.type == LayerType::SeparableConvolution) {
                    // [in_c x multiplier x kh x kw] depthwise, [filters x in_c*multiplier] pointwise, bias.
                    const std::size_t pointwise = static_cast<std::size_t>(l.units) * depthwise;
                    l.blocks.push_back({ParamRole::Depthwise, 0, depthwise * k});
                    l.blocks.push_back({ParamRole::Weight, depthwise * k, pointwise});
                    l.blocks.push_back({ParamRole::Bias, depthwise * k + pointwise, static_cast<std::size_t>(l.units)});
                }
                break;
            }
            case LayerType::BatchNorm: {
                if (shape.sequence()) fail(i, "batch_norm on a sequence is not supported yet (its input is " + describe(shape) + ")");
                // Per channel for images, per feature for flat input.
                const auto c = static_cast<std::size_t>(shape.c);
                l.out_shape = shape;
                l.blocks.push_back({ParamRole::Gamma, 0, c});
                l.blocks.push_back({ParamRole::Beta, c, c});
                l.blocks.push_back({ParamRole::RunningMean, 2 * c, c});
                l.blocks.push_back({ParamRole::RunningVar, 3 * c, c});
                break;
            }
            case LayerType::Dropout:
                if (l.spatial && (shape.flat() || shape.sequence()))
                    fail(i, "spatial dropout drops whole channels of an image, but its input is " +
                                (shape.sequence() ? "a sequence (" + shape.str() + ")" : std::to_string(shape.size()) + " flat features"));
                l.out_shape = shape;
                break;
            case LayerType::Activation:
                l.out_shape = shape;
                l.units = last ? shape.c : 0;  // as the output: the values the loss compares with the targets (per step on a sequence)
                break;
            case LayerType::ZeroPadding:
            case LayerType::Cropping:
            case LayerType::Upsampling: {
                if (!shape_is_image(shape)) fail(i, "needs image input (channels x height x width), but its input is " + describe(shape));
                const auto& m = l.margins;
                long long h = shape.h, w = shape.w;
                if (l.type == LayerType::ZeroPadding) h += m[0] + m[1], w += m[2] + m[3];
                if (l.type == LayerType::Cropping) h -= m[0] + m[1], w -= m[2] + m[3];
                if (l.type == LayerType::Upsampling) h *= l.scale[0], w *= l.scale[1];
                if (h < 1 || w < 1)
                    fail(i, "cropping " + std::to_string(m[0]) + "+" + std::to_string(m[1]) + " rows and " +
                                std::to_string(m[2]) + "+" + std::to_string(m[3]) + " columns leaves nothing of its " +
                                shape.str() + " input");
                if (h > (1 << 20) || w > (1 << 20)) fail(i, "too large: an image side beyond 2^20");
                l.out_shape = Shape{shape.c, static_cast<int>(h), static_cast<int>(w)};
                break;
            }
            case LayerType::Add:
            case LayerType::Subtract:
            case LayerType::Multiply:
            case LayerType::Average:
            case LayerType::Maximum:
                for (std::size_t k = 1; k < l.sources.size(); ++k)
                    if (shape_of(l.sources[k]) != shape)
                        fail(i, "its inputs must have one shape: input " + name_of(l.sources[k]) + " is " +
                                    shape_of(l.sources[k]).str() + " but input " + name_of(l.sources[0]) + " is " + shape.str());
                l.out_shape = shape;
                break;
            case LayerType::Concatenate: {
                // Along channels (NCHW's C; flat features when flat): the images must agree in size.
                // Sequences join their features step by step (Keras Concatenate(axis=-1), DL4J's
                // MergeVertex on recurrent activations): all of one length.
                long long c = 0;
                for (int s : l.sources) {
                    const Shape in = shape_of(s);
                    if (in.sequence() != shape.sequence() || in.t != shape.t)
                        fail(i, "joins sequences step by step, so its inputs must all be sequences of one length: input " +
                                    name_of(s) + " is " + describe(in) + " but input " + name_of(l.sources[0]) + " is " + describe(shape));
                    if (in.h != shape.h || in.w != shape.w)
                        fail(i, "concatenates along channels, so its inputs must have one height and width: input " +
                                    name_of(s) + " is " + in.str() + " but input " + name_of(l.sources[0]) + " is " + shape.str());
                    c += in.c;
                }
                if (c > (1LL << 24)) fail(i, "too large: more than 2^24 channels");
                l.out_shape = Shape{static_cast<int>(c), shape.h, shape.w, shape.t};
                break;
            }
            case LayerType::Reshape: {
                // One axis of 0 (an imported -1) takes what the others leave.
                auto& t = l.reshape_to;
                const int unknown = (t.c == 0) + (t.h == 0) + (t.w == 0);
                const std::size_t known = static_cast<std::size_t>(std::max(t.c, 1)) * std::max(t.h, 1) * std::max(t.w, 1);
                if (unknown == 1 && shape.size() % known == 0) {
                    const int rest = static_cast<int>(shape.size() / known);
                    (t.c == 0 ? t.c : t.h == 0 ? t.h : t.w) = rest;
                }
                if (l.channels_last_order && (shape.sequence() || t.sequence()))
                    fail(i, "order channels_last does not apply to sequences: their values are already in Keras's order (time-major)");
                if (l.reshape_to.size() != shape.size() || unknown > 1)
                    fail(i, "reshapes " + shape.str() + " (" + std::to_string(shape.size()) + " values) to " + l.reshape_to.str() +
                                " (" + std::to_string(l.reshape_to.size()) + " values): the counts must agree");
                l.out_shape = l.reshape_to;
                break;
            }
            case LayerType::Permute: {
                if (!shape_is_image(shape)) fail(i, "needs image input (channels x height x width), but its input is " + describe(shape));
                const std::array<int, 3> dims{shape.c, shape.h, shape.w};
                l.out_shape = Shape{dims[static_cast<std::size_t>(l.permute_axes[0])], dims[static_cast<std::size_t>(l.permute_axes[1])],
                                    dims[static_cast<std::size_t>(l.permute_axes[2])]};
                break;
            }
            case LayerType::Subset:
                if (shape.sequence()) fail(i, "subset of a sequence is not supported yet (its input is " + describe(shape) + ")");
                if (l.subset[0] < 0 || l.subset[1] < l.subset[0] || l.subset[1] >= shape.c)
                    fail(i, "keeps channels " + std::to_string(l.subset[0]) + " to " + std::to_string(l.subset[1]) +
                                " but its input " + name_of(l.sources[0]) + " has " + std::to_string(shape.c) +
                                (shape.flat() ? " features" : " channels") + " (0 to " + std::to_string(shape.c - 1) + ")");
                l.out_shape = Shape{l.subset[1] - l.subset[0] + 1, shape.h, shape.w};
                break;
            case LayerType::Lstm:
            case LayerType::Gru:
            case LayerType::SimpleRnn: {
                if (!shape.sequence())
                    fail(i, "needs a sequence input (steps x features), but its input is " + describe(shape));
                // Per direction (forward first): W [in x G*H], R [H x G*H], b [G*H] (GRU with
                // reset_after: [4H], the recurrent candidate bias last), lstm peepholes P [3 x H].
                // Columns gate-major in oneDNN's order (config/README.md "Sequences").
                const std::size_t in = static_cast<std::size_t>(shape.c), h = static_cast<std::size_t>(l.units);
                const std::size_t gates = l.type == LayerType::Lstm ? 4 : l.type == LayerType::Gru ? 3 : 1;
                const std::size_t biases = l.type == LayerType::Gru && l.reset_after ? 4 : gates;
                const int directions = l.bidirectional == BiMode::None ? 1 : 2;
                std::size_t at = 0;
                for (int d = 0; d < directions; ++d) {
                    l.blocks.push_back({ParamRole::Weight, at, in * gates * h});
                    at += in * gates * h;
                    l.blocks.push_back({ParamRole::Recurrent, at, h * gates * h});
                    at += h * gates * h;
                    l.blocks.push_back({ParamRole::Bias, at, biases * h});
                    at += biases * h;
                    if (l.type == LayerType::Lstm && l.peepholes) {
                        l.blocks.push_back({ParamRole::Peephole, at, 3 * h});
                        at += 3 * h;
                    }
                }
                const int features = l.bidirectional == BiMode::Concat ? 2 * l.units : l.units;
                l.out_shape = l.return_sequences ? sequence_shape(shape.t, features) : Shape{features, 1, 1};
                break;
            }
            case LayerType::Embedding: {
                if (!shape.sequence() || shape.c != 1)
                    fail(i, "needs a sequence of token ids ({\"steps\": T, \"features\": 1}), but its input is " + describe(shape));
                l.out_shape = sequence_shape(shape.t, l.units);
                l.blocks.push_back({ParamRole::Weight, 0, static_cast<std::size_t>(l.vocabulary) * l.units});
                break;
            }
            case LayerType::Convolution1d: {
                if (!shape.sequence())
                    fail(i, "needs a sequence input (steps x features), but its input is " + describe(shape));
                const auto wt = time_window(shape.t, l.kernel[0], l.stride[0], l.dilation[0], l.mode);
                if (wt.out < 1)
                    fail(i, "kernel " + std::to_string(l.kernel[0]) + " (dilation " + std::to_string(l.dilation[0]) +
                                ") does not fit its input, " + describe(shape));
                l.pads = {wt.pad_before, 0, wt.pad_after, 0};
                l.out_shape = sequence_shape(wt.out, l.units);
                // W [filters x in x k], b [filters].
                const std::size_t w = static_cast<std::size_t>(l.units) * shape.c * l.kernel[0];
                l.blocks.push_back({ParamRole::Weight, 0, w});
                l.blocks.push_back({ParamRole::Bias, w, static_cast<std::size_t>(l.units)});
                break;
            }
            case LayerType::RepeatVector:
                if (!shape.flat()) fail(i, "needs flat features (it repeats one vector), but its input is " + describe(shape));
                l.out_shape = sequence_shape(l.repeat, shape.c);
                break;
            case LayerType::PRelu: {
                if (shape.sequence()) fail(i, "prelu on a sequence is not supported yet (its input is " + describe(shape) + ")");
                l.out_shape = shape;
                const std::size_t n = static_cast<std::size_t>(l.prelu_shared[0] ? 1 : shape.c) *
                                      (l.prelu_shared[1] ? 1 : shape.h) * (l.prelu_shared[2] ? 1 : shape.w);
                l.blocks.push_back({ParamRole::Alpha, 0, n});
                break;
            }
        }
        l.param_count = 0;
        for (const auto& b : l.blocks) l.param_count += b.size;
        // Sizes are products of user numbers: refuse what no machine could hold before it
        // overflows anything downstream (2^33 floats = 32 GiB).
        constexpr double kMaxValues = 8589934592.0;
        if (static_cast<double>(l.out_shape.size()) > kMaxValues || static_cast<double>(l.param_count) > kMaxValues ||
            static_cast<double>(l.units) * l.in_shape.c * l.kernel[0] * l.kernel[1] > kMaxValues ||
            static_cast<double>(l.units) * static_cast<double>(l.in_shape.size()) > kMaxValues)
            fail(i, "too large: more than 2^33 values in one layer");
        if (l.shares_index >= 0) {
            // Another call of an earlier layer: its settings and the parameters its input needs
            // must be the owner's (a dense layer shared by inputs of different widths cannot be).
            const auto& owner = layers[static_cast<std::size_t>(l.shares_index)];
            const std::string what = "\"shares\": the parameters of " + name_of(l.shares_index);
            if (!same_settings(l, owner)) fail(i, what + " come with its settings, and this layer's differ (units, kernel, stride, padding, mode, activation, ...)");
            bool fits = l.blocks.size() == owner.blocks.size();
            for (std::size_t b = 0; fits && b < l.blocks.size(); ++b)
                fits = l.blocks[b].role == owner.blocks[b].role && l.blocks[b].size == owner.blocks[b].size;
            if (!fits)
                fail(i, what + " were made for its " + owner.in_shape.str() + " input (" + std::to_string(owner.param_count) +
                            " parameters), but this layer reads " + shape.str() + " (" + std::to_string(l.param_count) + ")");
            l.param_count = 0;
            l.param_offset = owner.param_offset;
            continue;
        }
        l.param_offset = offset;
        offset += l.param_count;
    }
    for (std::size_t i = 0; i < layers.size(); ++i) {
        // Softmax over an image is a softmax over the channels of each pixel, whose backward pass
        // Thresher has only folded into mcxent (the segmentation output's loss).
        const auto& l = layers[i];
        if (l.activation.kind == Activation::Softmax && !l.out_shape.flat() && !l.out_shape.sequence() && !l.is_output)
            fail(i, "softmax over a " + l.out_shape.str() + " image (over the channels of each pixel) is supported only on a "
                    "model output with loss mcxent, but other layers read this one");
        if (l.declares_loss && l.type != LayerType::Activation && l.out_shape.flat())
            fail(i, "\"loss\": a " + std::string(to_string(l.type)) + " layer is an output only when it produces an image, "
                    "but it produces " + std::to_string(l.out_shape.size()) + " flat features (end with an output layer)");
    }
    for (const auto o : output_layers) {
        const auto& out = layers[o];
        if (!out.out_shape.flat() && out.activation.kind == Activation::Softmax && out.loss != LossKind::MultiClassCrossEntropy &&
            out.loss != LossKind::NegativeLogLikelihood)
            fail(o, "softmax over the channels of each pixel needs loss mcxent, got " + std::string(to_string(out.loss)));
        // The loss's derivative goes through the output activation from its output alone.
        if (vocab::derivative_from_input(out.activation.kind))
            fail(o, "activation " + std::string(to_string(out.activation.kind)) +
                        " is not supported on an output layer (only on hidden layers)");
        if (out.loss == LossKind::BinaryCrossEntropy && out.output_width() < 1) fail(o, "xent needs at least one output");
        const bool ce = out.loss == LossKind::MultiClassCrossEntropy || out.loss == LossKind::NegativeLogLikelihood;
        if (ce && out.activation.kind != Activation::Softmax && out.activation.kind != Activation::Sigmoid &&
            out.activation.kind != Activation::Softplus)
            fail(o, "as a model output its loss " + std::string(to_string(out.loss)) + " needs activation softmax (or sigmoid, softplus), got " +
                        std::string(to_string(out.activation.kind)));
    }
}

std::string ModelConfig::summary() const {
    std::ostringstream s;
    s << "model \"" << name << "\": input " << input.str();
    for (const auto& e : extra_inputs) s << ", " << e.name << " " << e.shape.str();
    s << ", " << param_count() << " parameters\n";
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const auto& l = layers[i];
        s << "  " << i << "  " << to_string(l.type);
        for (std::size_t pad = to_string(l.type).size(); pad < 12; ++pad) s << ' ';
        s << l.in_shape.str() << " -> " << l.out_shape.str() << "  (" << l.param_count << " params)";
        if (is_recurrent(l.type))
            s << "  " << l.units << " units" << (l.return_sequences ? ", every step" : ", last step")
              << (l.bidirectional == BiMode::None ? "" : ", bidirectional " + std::string(to_string(l.bidirectional)));
        if (!l.inputs.empty()) {  // a graph: what it reads
            s << "  <-";
            for (const auto& in : l.inputs) s << " " << in;
        }
        if (!l.shares.empty()) s << "  shares " << l.shares;  // its parameters are that layer's
        if (!l.origin.empty()) s << "  from " << l.origin << " " << l.origin_what;  // an imported layer
        s << "\n";
    }
    return s.str();
}

}  // namespace thresher::config
