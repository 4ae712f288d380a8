// Builds the ONNX graph of a layer stack with Debian's ONNX protobuf classes (libonnx-dev), checks
// it with ONNX's own checker and strict shape inference, and serialises it.
//
// Layouts need no conversion, only shapes: Thresher's activations are NCHW row-major like
// ONNX's, dense weights are [in x out] (Gemm's B without transB), convolution weights OIHW, and
// a dense layer after an image flattens it in NCHW order (ONNX Flatten, axis 1), which is the
// order Thresher's dense layer reads it. Worked example, LeNet on 1x28x28:
//   input [batch,1,28,28] -> Conv "convolution_0" [batch,20,24,24] -> MaxPool [batch,20,12,12]
//   -> Conv [batch,50,8,8] -> MaxPool [batch,50,4,4] -> Flatten [batch,800]
//   -> Gemm(800x500) + Relu -> Gemm(500x10) + Softmax = "output" [batch,10]
// Each layer's output tensor is declared (value_info) with the shape Thresher inferred, so ONNX's
// shape inference refuses the export if any operator would compute another shape.
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "export/model_export.h"
#include "export/onnx_export.h"

#ifndef THRESHER_VERSION
#define THRESHER_VERSION "unknown"
#endif

namespace thresher::model_export {

namespace {

using config::Activation;
using config::LayerConfig;
using config::LayerType;
using config::Shape;

constexpr std::int64_t kIrVersion = 7;  // the IR version that introduced opset 13

// Node names: the model's layer names, unique; layers without one (or with a name taken, or one
// of the graph's own tensor names) get "<kind>_<index>".
// The graph's input tensors: "input" for a model with one input, each input's own name for several.
std::vector<std::string> input_tensor_names(const config::ModelConfig& model) {
    if (model.input_count() == 1) return {"input"};
    std::vector<std::string> names;
    for (std::size_t k = 0; k < model.input_count(); ++k) names.push_back(model.input_name_of(k));
    return names;
}

std::vector<std::string> node_names(const config::ModelConfig& model) {
    std::set<std::string> taken{"input", "output", "normalization"};
    for (const auto& n : input_tensor_names(model)) taken.insert(n);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < model.layers.size(); ++i) {
        const auto& l = model.layers[i];
        std::string name = l.name;
        if (name.empty() || taken.contains(name)) name = std::string(config::to_string(l.type)) + "_" + std::to_string(i);
        const std::string base = name;  // a user's layer may be called "dense_3" too
        for (int k = 1; taken.contains(name); ++k) name = base + "_" + std::to_string(k);
        taken.insert(name);
        names.push_back(name);
    }
    return names;
}

class GraphBuilder {
public:
    explicit GraphBuilder(onnx::GraphProto& g) : g_(g) {}

    // Parameters in [begin, end): a block asked for twice (a shared layer's later call reads
    // its owner's slice) is one initializer, named once and read by every node that uses it.
    void parameters(const float* begin, std::size_t n) { params_ = {begin, begin + n}; }

    const std::string& weights(const std::string& name, std::vector<std::int64_t> dims, const float* values) {
        const bool parameter = values >= params_.first && values < params_.second;
        if (parameter)
            if (const auto it = shared_.find({values, dims}); it != shared_.end()) return it->second;
        auto* t = g_.add_initializer();
        if (parameter) shared_[{values, dims}] = name;
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::FLOAT);
        std::size_t n = 1;
        for (auto d : dims) {
            t->add_dims(d);
            n *= static_cast<std::size_t>(d);
        }
        // raw_data is little-endian IEEE floats, which is what this machine holds.
        t->set_raw_data(reinterpret_cast<const char*>(values), n * sizeof(float));
        return t->name();
    }
    std::string scalar(const std::string& name, float v) { return weights(name, {}, &v); }
    // A 1-D int64 constant (Pad's pads, Slice's starts and ends).
    const std::string& ints(const std::string& name, const std::vector<std::int64_t>& values) {
        auto* t = g_.add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::INT64);
        t->add_dims(static_cast<std::int64_t>(values.size()));
        for (auto v : values) t->add_int64_data(v);
        return t->name();
    }

    onnx::NodeProto& node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                          const std::string& output) {
        auto* n = g_.add_node();
        n->set_op_type(op);
        n->set_name(name);
        for (const auto& in : inputs) n->add_input(in);
        n->add_output(output);
        return *n;
    }

    static void attr(onnx::NodeProto& n, const std::string& name, float v) {
        auto* a = n.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(v);
    }
    static void attr(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
        auto* a = n.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(v);
    }
    static void attr(onnx::NodeProto& n, const std::string& name, std::vector<std::int64_t> v) {
        auto* a = n.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INTS);
        for (auto x : v) a->add_ints(x);
    }

    // A float tensor [batch, dims...] with a dynamic batch dimension.
    static void batch_tensor(onnx::ValueInfoProto& v, const std::string& name, const std::vector<std::int64_t>& dims) {
        v.set_name(name);
        auto* t = v.mutable_type()->mutable_tensor_type();
        t->set_elem_type(onnx::TensorProto::FLOAT);
        auto* shape = t->mutable_shape();
        shape->add_dim()->set_dim_param("batch");
        for (auto d : dims) shape->add_dim()->set_dim_value(d);
    }

private:
    onnx::GraphProto& g_;
    std::pair<const float*, const float*> params_{nullptr, nullptr};
    std::map<std::pair<const float*, std::vector<std::int64_t>>, std::string> shared_;
};

// The per-sample dims of a tensor of Thresher shape `s`, as rank 4 (image) or rank 2 (flat).
std::vector<std::int64_t> dims_of(const Shape& s, bool image) {
    if (image) return {s.c, s.h, s.w};
    return {static_cast<std::int64_t>(s.size())};
}

// Appends the nodes of activation `act` from tensor `x` to tensor `y` (x != y).
void activation(GraphBuilder& b, const config::ActivationSpec& act, const std::string& name, const std::string& x,
                const std::string& y) {
    const std::string p = name + "/";
    switch (act.kind) {
        case Activation::Identity: b.node("Identity", p + "identity", {x}, y); return;
        case Activation::Relu: b.node("Relu", p + "relu", {x}, y); return;
        case Activation::LeakyRelu: GraphBuilder::attr(b.node("LeakyRelu", p + "leakyrelu", {x}, y), "alpha", act.alpha); return;
        case Activation::Tanh: b.node("Tanh", p + "tanh", {x}, y); return;
        case Activation::Sigmoid: b.node("Sigmoid", p + "sigmoid", {x}, y); return;
        // Axis 1: the features of [batch, F], the channels of each pixel of an image output [batch, C, H, W].
        case Activation::Softmax: GraphBuilder::attr(b.node("Softmax", p + "softmax", {x}, y), "axis", std::int64_t{1}); return;
        case Activation::Elu: GraphBuilder::attr(b.node("Elu", p + "elu", {x}, y), "alpha", act.alpha); return;
        case Activation::Selu: {
            auto& n = b.node("Selu", p + "selu", {x}, y);
            GraphBuilder::attr(n, "alpha", vocab::kSeluAlpha);
            GraphBuilder::attr(n, "gamma", vocab::kSeluLambda);
            return;
        }
        case Activation::Relu6:
            b.node("Clip", p + "relu6", {x, b.scalar(p + "relu6_min", 0.f), b.scalar(p + "relu6_max", 6.f)}, y);
            return;
        case Activation::HardSigmoid: {  // clamp(alpha·x + 0.5, 0, 1)
            auto& n = b.node("HardSigmoid", p + "hardsigmoid", {x}, y);
            GraphBuilder::attr(n, "alpha", act.alpha);
            GraphBuilder::attr(n, "beta", 0.5f);
            return;
        }
        case Activation::Softplus: b.node("Softplus", p + "softplus", {x}, y); return;
        case Activation::Softsign: b.node("Softsign", p + "softsign", {x}, y); return;
        case Activation::ThresholdedRelu:  // x where x > alpha, as ONNX defines it
            GraphBuilder::attr(b.node("ThresholdedRelu", p + "thresholdedrelu", {x}, y), "alpha", act.alpha);
            return;
        // Opset 13 has no Swish or Gelu: they are written out with the constants the CPU
        // backend uses (backend/cpu/elementwise.cpp).
        case Activation::Swish:  // x·sigmoid(x)
            b.node("Sigmoid", p + "swish_sigmoid", {x}, p + "swish_sigmoid");
            b.node("Mul", p + "swish", {x, p + "swish_sigmoid"}, y);
            return;
        case Activation::GeluSigmoid:  // x·sigmoid(1.702x)
            b.node("Mul", p + "gelu_scale", {x, b.scalar(p + "gelu_k", 1.702f)}, p + "gelu_scaled");
            b.node("Sigmoid", p + "gelu_sigmoid", {p + "gelu_scaled"}, p + "gelu_sigmoid");
            b.node("Mul", p + "gelu", {x, p + "gelu_sigmoid"}, y);
            return;
        case Activation::Gelu: {  // x/2·(1 + erf(x/√2))
            b.node("Mul", p + "gelu_scale", {x, b.scalar(p + "gelu_rsqrt2", 0.70710678118654752f)}, p + "gelu_scaled");
            b.node("Erf", p + "gelu_erf", {p + "gelu_scaled"}, p + "gelu_erf");
            b.node("Add", p + "gelu_plus1", {p + "gelu_erf", b.scalar(p + "gelu_one", 1.f)}, p + "gelu_plus1");
            b.node("Mul", p + "gelu_times_x", {x, p + "gelu_plus1"}, p + "gelu_times_x");
            b.node("Mul", p + "gelu", {p + "gelu_times_x", b.scalar(p + "gelu_half", 0.5f)}, y);
            return;
        }
        case Activation::GeluTanh: {  // x/2·(1 + tanh(√(2/π)(x + 0.044715x³)))
            b.node("Mul", p + "gelu_x2", {x, x}, p + "gelu_x2");
            b.node("Mul", p + "gelu_x3", {p + "gelu_x2", x}, p + "gelu_x3");
            b.node("Mul", p + "gelu_cubic", {p + "gelu_x3", b.scalar(p + "gelu_c", 0.044715f)}, p + "gelu_cubic");
            b.node("Add", p + "gelu_sum", {x, p + "gelu_cubic"}, p + "gelu_sum");
            b.node("Mul", p + "gelu_inner", {p + "gelu_sum", b.scalar(p + "gelu_k", 0.79788456080286536f)}, p + "gelu_inner");
            b.node("Tanh", p + "gelu_tanh", {p + "gelu_inner"}, p + "gelu_tanh");
            b.node("Add", p + "gelu_plus1", {p + "gelu_tanh", b.scalar(p + "gelu_one", 1.f)}, p + "gelu_plus1");
            b.node("Mul", p + "gelu_times_x", {x, p + "gelu_plus1"}, p + "gelu_times_x");
            b.node("Mul", p + "gelu", {p + "gelu_times_x", b.scalar(p + "gelu_half", 0.5f)}, y);
            return;
        }
        default: break;
    }
    // onnx_refusal() rules every other activation out before this runs.
    throw ExportError("ONNX export: activation " + std::string(config::to_string(act.kind)) + " reached the writer");
}

// The weights block of `role` in layer `l`, as a pointer into the model's parameters.
const float* block(const ExportableModel& m, const LayerConfig& l, config::ParamRole role) {
    for (const auto& bl : l.blocks)
        if (bl.role == role) return m.params.data() + l.param_offset + bl.offset;
    throw ExportError("ONNX export: a " + std::string(config::to_string(l.type)) + " layer without its parameter block");
}

// Adds layer `l`'s nodes reading tensor `x`, ending in tensor `out`. `image` says whether the
// tensor flowing in is rank 4; it is updated to what flows out.
void layer(GraphBuilder& b, const ExportableModel& m, const LayerConfig& l, const std::string& name, std::string x,
           const std::string& out, bool& image) {
    using config::ParamRole;
    // An activation after the layer's own operator writes `out`; without one the operator does.
    const bool activated = l.activation.kind != Activation::Identity;
    const std::string pre = activated ? name + "/preactivation" : out;
    switch (l.type) {
        case LayerType::Dense:
        case LayerType::Output: {
            if (image) {  // NCHW, flattened per sample: the order the dense weights' rows are in
                GraphBuilder::attr(b.node("Flatten", name + "/flatten", {x}, name + "/flattened"), "axis", std::int64_t{1});
                x = name + "/flattened";
                image = false;
            }
            const auto in = static_cast<std::int64_t>(l.in_shape.size());
            const auto& w = b.weights(name + ".weight", {in, l.units}, block(m, l, ParamRole::Weight));
            const auto& bias = b.weights(name + ".bias", {l.units}, block(m, l, ParamRole::Bias));
            b.node("Gemm", name, {x, w, bias}, pre);
            break;
        }
        case LayerType::Convolution:
        case LayerType::DepthwiseConvolution: {
            // A depthwise convolution is ONNX's grouped Conv with one group per input channel.
            const bool depthwise = l.type == LayerType::DepthwiseConvolution;
            const std::int64_t in_per_group = depthwise ? 1 : l.in_shape.c;
            const auto& w = b.weights(name + ".weight", {l.units, in_per_group, l.kernel[0], l.kernel[1]},
                                      block(m, l, ParamRole::Weight));
            const auto& bias = b.weights(name + ".bias", {l.units}, block(m, l, ParamRole::Bias));
            auto& n = b.node("Conv", name, {x, w, bias}, pre);
            GraphBuilder::attr(n, "kernel_shape", {l.kernel[0], l.kernel[1]});
            GraphBuilder::attr(n, "strides", {l.stride[0], l.stride[1]});
            GraphBuilder::attr(n, "dilations", {l.dilation[0], l.dilation[1]});
            // Thresher's pads are top, left, bottom, right: ONNX's begins then ends, the same order.
            GraphBuilder::attr(n, "pads", {l.pads[0], l.pads[1], l.pads[2], l.pads[3]});
            GraphBuilder::attr(n, "group", std::int64_t{depthwise ? l.in_shape.c : 1});
            break;
        }
        case LayerType::TransposedConvolution: {
            // ONNX's ConvTranspose holds W as Thresher does: [C_in x C_out x kh x kw].
            const auto& w = b.weights(name + ".weight", {l.in_shape.c, l.units, l.kernel[0], l.kernel[1]},
                                      block(m, l, ParamRole::Weight));
            const auto& bias = b.weights(name + ".bias", {l.units}, block(m, l, ParamRole::Bias));
            auto& n = b.node("ConvTranspose", name, {x, w, bias}, pre);
            GraphBuilder::attr(n, "kernel_shape", {l.kernel[0], l.kernel[1]});
            GraphBuilder::attr(n, "strides", {l.stride[0], l.stride[1]});
            GraphBuilder::attr(n, "dilations", {l.dilation[0], l.dilation[1]});
            GraphBuilder::attr(n, "pads", {l.pads[0], l.pads[1], l.pads[2], l.pads[3]});
            break;
        }
        case LayerType::SeparableConvolution: {
            // Depthwise Conv (groups = input channels, no bias), then a 1x1 Conv with the bias.
            const std::int64_t mid = static_cast<std::int64_t>(l.in_shape.c) * l.depth_multiplier;
            const auto& dw = b.weights(name + ".depthwise", {mid, 1, l.kernel[0], l.kernel[1]}, block(m, l, ParamRole::Depthwise));
            auto& d = b.node("Conv", name + "/depthwise", {x, dw}, name + "/depthwise");
            GraphBuilder::attr(d, "kernel_shape", {l.kernel[0], l.kernel[1]});
            GraphBuilder::attr(d, "strides", {l.stride[0], l.stride[1]});
            GraphBuilder::attr(d, "dilations", {l.dilation[0], l.dilation[1]});
            GraphBuilder::attr(d, "pads", {l.pads[0], l.pads[1], l.pads[2], l.pads[3]});
            GraphBuilder::attr(d, "group", std::int64_t{l.in_shape.c});
            const auto& pw = b.weights(name + ".pointwise", {l.units, mid, 1, 1}, block(m, l, ParamRole::Weight));
            const auto& bias = b.weights(name + ".bias", {l.units}, block(m, l, ParamRole::Bias));
            auto& p = b.node("Conv", name, {name + "/depthwise", pw, bias}, pre);
            GraphBuilder::attr(p, "kernel_shape", {1, 1});
            break;
        }
        case LayerType::Subsampling: {
            if (l.global) {
                b.node(l.max_pool ? "GlobalMaxPool" : "GlobalAveragePool", name, {x}, pre);
                break;
            }
            auto& n = b.node(l.max_pool ? "MaxPool" : "AveragePool", name, {x}, pre);
            GraphBuilder::attr(n, "kernel_shape", {l.kernel[0], l.kernel[1]});
            GraphBuilder::attr(n, "strides", {l.stride[0], l.stride[1]});
            GraphBuilder::attr(n, "pads", {l.pads[0], l.pads[1], l.pads[2], l.pads[3]});
            // Thresher averages over the window's real pixels only (oneDNN's exclude-padding).
            if (!l.max_pool) GraphBuilder::attr(n, "count_include_pad", std::int64_t{0});
            break;
        }
        case LayerType::BatchNorm: {  // inference form: the running statistics
            const std::int64_t c = l.in_shape.c;
            const auto& gamma = b.weights(name + ".gamma", {c}, block(m, l, ParamRole::Gamma));
            const auto& beta = b.weights(name + ".beta", {c}, block(m, l, ParamRole::Beta));
            const auto& mean = b.weights(name + ".running_mean", {c}, block(m, l, ParamRole::RunningMean));
            const auto& var = b.weights(name + ".running_var", {c}, block(m, l, ParamRole::RunningVar));
            auto& n = b.node("BatchNormalization", name, {x, gamma, beta, mean, var}, pre);
            GraphBuilder::attr(n, "epsilon", l.bn_eps);
            break;
        }
        case LayerType::Dropout:
            // Identity at inference; kept as Dropout (with its rate) so the layer survives a round trip.
            b.node("Dropout", name, {x, b.scalar(name + ".ratio", 1.f - l.retain)}, pre);
            break;
        case LayerType::PRelu: {
            // alpha is [c' x h' x w'] (a shared axis has extent 1): ONNX broadcasts it from the
            // right over [batch, C, H, W]; over [batch, F] it is [c'].
            const std::int64_t ac = l.prelu_shared[0] ? 1 : l.in_shape.c;
            const std::int64_t ah = l.prelu_shared[1] ? 1 : l.in_shape.h, aw = l.prelu_shared[2] ? 1 : l.in_shape.w;
            std::vector<std::int64_t> dims = image ? std::vector<std::int64_t>{ac, ah, aw} : std::vector<std::int64_t>{ac};
            b.node("PRelu", name, {x, b.weights(name + ".alpha", dims, block(m, l, ParamRole::Alpha))}, pre);
            break;
        }
        case LayerType::Activation:
            // A layer that is only its activation: the activation's nodes read the input directly.
            if (!activated) b.node("Identity", name, {x}, out);
            else activation(b, l.activation, name, x, out);
            return;
        case LayerType::ZeroPadding: {
            // Thresher's margins are top, bottom, left, right; ONNX's pads every axis's begin, then
            // every axis's end, over [batch, C, H, W].
            const auto& m4 = l.margins;
            b.node("Pad", name, {x, b.ints(name + ".pads", {0, 0, m4[0], m4[2], 0, 0, m4[1], m4[3]})}, pre);
            break;
        }
        case LayerType::Cropping: {
            const auto& m4 = l.margins;
            b.node("Slice", name,
                   {x, b.ints(name + ".starts", {m4[0], m4[2]}),
                    b.ints(name + ".ends", {l.in_shape.h - m4[1], l.in_shape.w - m4[3]}), b.ints(name + ".axes", {2, 3})},
                   pre);
            break;
        }
        case LayerType::Upsampling: {
            // Nearest neighbour by whole factors: output pixel i reads input pixel floor(i / scale),
            // which is Resize's "asymmetric" coordinates with "floor" rounding.
            const float scales[4] = {1.f, 1.f, static_cast<float>(l.scale[0]), static_cast<float>(l.scale[1])};
            auto& n = b.node("Resize", name, {x, "", b.weights(name + ".scales", {4}, scales)}, pre);
            auto* mode = n.add_attribute();
            mode->set_name("mode");
            mode->set_type(onnx::AttributeProto::STRING);
            mode->set_s("nearest");
            auto* coords = n.add_attribute();
            coords->set_name("coordinate_transformation_mode");
            coords->set_type(onnx::AttributeProto::STRING);
            coords->set_s("asymmetric");
            auto* rounding = n.add_attribute();
            rounding->set_name("nearest_mode");
            rounding->set_type(onnx::AttributeProto::STRING);
            rounding->set_s("floor");
            break;
        }
        default: throw ExportError("ONNX export: layer kind " + std::string(config::to_string(l.type)) + " reached the writer");
    }
    if (activated) activation(b, l.activation, name, pre, out);
}

// A graph vertex reading tensors `xs` (each rank 4 when its `images` entry says so), writing `out`.
// Flat vertices flatten any rank-4 input first: a global pooling's [N, C, 1, 1] and a dense
// layer's [N, C] are one Thresher shape, and ONNX would broadcast them into [N, C, N, C].
void vertex(GraphBuilder& b, const LayerConfig& l, const std::string& name, std::vector<std::string> xs,
            const std::vector<bool>& images, const std::string& out, bool& image) {
    if (l.type == LayerType::Reshape || l.type == LayerType::Permute) {
        // Reshape and Transpose on [batch, C, H, W] (0 in a Reshape's shape keeps the batch).
        const auto& in = l.in_shape;
        const auto& o = l.out_shape;
        std::string x = xs[0];
        const auto as_image = [&](const std::string& t) {  // a flat input as [batch, C, H, W]
            b.node("Reshape", name + "/to_image", {t, b.ints(name + ".in_shape", {0, in.c, in.h, in.w})}, name + "/image");
            return name + "/image";
        };
        if (l.type == LayerType::Permute) {
            if (!images[0]) x = as_image(x);
            const auto& a = l.permute_axes;
            GraphBuilder::attr(b.node("Transpose", name, {x}, out), "perm", std::vector<std::int64_t>{0, a[0] + 1, a[1] + 1, a[2] + 1});
            image = true;
            return;
        }
        image = !o.flat();
        const std::vector<std::int64_t> to = image ? std::vector<std::int64_t>{0, o.c, o.h, o.w} : std::vector<std::int64_t>{0, o.c};
        if (!l.channels_last_order) {  // the same values, a new shape
            b.node("Reshape", name, {x, b.ints(name + ".shape", to)}, out);
            return;
        }
        // Values counted channels last: to NHWC, reshape there, back to NCHW.
        if (!images[0]) x = as_image(x);
        GraphBuilder::attr(b.node("Transpose", name + "/to_nhwc", {x}, name + "/nhwc"), "perm", std::vector<std::int64_t>{0, 2, 3, 1});
        if (!image) {
            b.node("Reshape", name, {name + "/nhwc", b.ints(name + ".shape", to)}, out);
            return;
        }
        b.node("Reshape", name + "/reshape", {name + "/nhwc", b.ints(name + ".shape", {0, o.h, o.w, o.c})}, name + "/reshaped");
        GraphBuilder::attr(b.node("Transpose", name, {name + "/reshaped"}, out), "perm", std::vector<std::int64_t>{0, 3, 1, 2});
        return;
    }
    image = !l.out_shape.flat() || (l.type == LayerType::Subset && images[0]);
    if (l.type != LayerType::Subset && l.out_shape.flat()) {
        image = false;
        for (std::size_t k = 0; k < xs.size(); ++k) {
            if (!images[k]) continue;
            const std::string flat = name + "/flatten" + std::to_string(k);
            GraphBuilder::attr(b.node("Flatten", flat, {xs[k]}, flat), "axis", std::int64_t{1});
            xs[k] = flat;
        }
    }
    // Binary operators chain: ((x0 op x1) op x2) ..., as Thresher computes them.
    auto chain = [&](const char* op) {
        std::string acc = xs[0];
        for (std::size_t k = 1; k < xs.size(); ++k) {
            const std::string o = k + 1 == xs.size() ? out : name + "/" + std::to_string(k);
            b.node(op, k + 1 == xs.size() ? name : name + "/" + std::to_string(k), {acc, xs[k]}, o);
            acc = o;
        }
        if (xs.size() == 1) b.node("Identity", name, {xs[0]}, out);
    };
    switch (l.type) {
        case LayerType::Add: chain("Add"); break;
        case LayerType::Subtract: chain("Sub"); break;
        case LayerType::Multiply: chain("Mul"); break;
        case LayerType::Maximum: b.node("Max", name, xs, out); break;
        case LayerType::Average: b.node("Mean", name, xs, out); break;
        case LayerType::Concatenate: GraphBuilder::attr(b.node("Concat", name, xs, out), "axis", std::int64_t{1}); break;
        case LayerType::Subset:
            b.node("Slice", name, {xs[0], b.ints(name + ".starts", {l.subset[0]}), b.ints(name + ".ends", {l.subset[1] + 1}),
                                   b.ints(name + ".axes", {1})},
                   out);
            break;
        default: throw ExportError("ONNX export: " + std::string(config::to_string(l.type)) + " is not a vertex");
    }
}

}  // namespace

bool onnx_export_built() { return true; }

OnnxBytes onnx_model_bytes(const ExportableModel& m) {
    const auto& cfg = m.config;
    onnx::ModelProto model;
    model.set_ir_version(kIrVersion);
    model.set_producer_name("Thresher");
    model.set_producer_version(THRESHER_VERSION);
    model.set_doc_string("Exported by thresher-engine export-model from " + m.source);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(kOnnxOpset);
    const auto meta = [&](const std::string& key, const std::string& value) {
        auto* p = model.add_metadata_props();
        p->set_key(key);
        p->set_value(value);
    };
    meta("thresher.input_shape", cfg.input.str());
    const auto input_names = input_tensor_names(cfg);
    const auto names = node_names(cfg);
    const bool several_outputs = cfg.output_layers.size() > 1;
    if (cfg.input_count() > 1) {  // each input's tensor and shape, in the order a sample row holds them
        auto inputs = nlohmann::json::array();
        for (std::size_t k = 0; k < cfg.input_count(); ++k) inputs.push_back({{"name", input_names[k]}, {"shape", cfg.input_shape(k).str()}});
        meta("thresher.inputs", inputs.dump());
    }
    if (several_outputs) {  // each output's tensor and width, in the order predictions hold them
        auto outputs = nlohmann::json::array();
        for (const auto j : cfg.output_layers) outputs.push_back({{"name", names[j]}, {"size", cfg.layers[j].out_shape.size()}});
        meta("thresher.outputs", outputs.dump());
    }
    if (m.normalization.active()) meta("thresher.normalization", m.normalization.kind);
    meta("thresher.output", cfg.is_classifier() ? "probabilities" : "outputs");
    if (!m.class_names.empty()) meta("class_names", nlohmann::json(m.class_names).dump());

    auto& g = *model.mutable_graph();
    g.set_name(cfg.name);
    GraphBuilder b(g);
    b.parameters(m.params.data(), m.params.size());
    bool image = !cfg.input.flat();
    std::vector<std::string> xs_in;
    std::vector<bool> input_images;
    for (std::size_t k = 0; k < cfg.input_count(); ++k) {
        const auto& shape = cfg.input_shape(k);
        GraphBuilder::batch_tensor(*g.add_input(), input_names[k], dims_of(shape, !shape.flat()));
        xs_in.push_back(input_names[k]);
        input_images.push_back(!shape.flat());
    }

    std::string x = "input";
    if (m.normalization.active() && cfg.input_count() > 1)
        throw ExportError(m.source + ": ONNX export of a normalised model with several inputs is not written yet; nothing was written");
    if (m.normalization.active()) {  // x' = (x - shift) * scale, per input feature
        const auto dims = dims_of(cfg.input, image);
        b.node("Sub", "normalization/shift", {x, b.weights("normalization.shift", dims, m.normalization.shift.data())},
               "normalization/shifted");
        b.node("Mul", "normalization", {"normalization/shifted", b.weights("normalization.scale", dims, m.normalization.scale.data())},
               "normalization");
        x = "normalization";
    }
    xs_in[0] = cfg.input_count() == 1 ? x : xs_in[0];
    // Each layer's output tensor and whether it is rank 4 (a graph's layers read any of them).
    std::vector<std::string> tensors(cfg.layers.size());
    std::vector<bool> images(cfg.layers.size());
    const bool input_image = image;
    // The graph's outputs in the order predictions hold them (main first).
    const auto outputs = cfg.output_layers.empty() ? std::vector<std::size_t>{cfg.layers.size() - 1} : cfg.output_layers;
    for (std::size_t i = 0; i < cfg.layers.size(); ++i) {
        const auto& l = cfg.layers[i];
        // One output: its tensor is "output"; several: each named after its layer.
        const bool graph_output = std::ranges::find(outputs, i) != outputs.end();
        const bool last = graph_output && !several_outputs;
        const std::string out = last ? "output" : names[i];
        std::vector<std::string> xs;
        std::vector<bool> ranks;
        for (int s : l.sources) {
            const bool model_input = s < 0;
            const auto k = model_input ? LayerConfig::input_index(s) : 0;
            xs.push_back(model_input ? xs_in[k] : tensors[static_cast<std::size_t>(s)]);
            ranks.push_back(model_input ? (k == 0 ? input_image : static_cast<bool>(input_images[k])) : images[static_cast<std::size_t>(s)]);
        }
        image = ranks[0];
        if (config::is_vertex(l.type)) vertex(b, l, names[i], xs, ranks, out, image);
        else layer(b, m, l, names[i], xs[0], out, image);
        // Thresher's shape for the tensor, for ONNX's shape inference to agree with.
        if (!graph_output) GraphBuilder::batch_tensor(*g.add_value_info(), out, dims_of(l.out_shape, image));
        tensors[i] = out;
        images[i] = image;
    }
    for (const auto j : outputs) GraphBuilder::batch_tensor(*g.add_output(), tensors[j], dims_of(cfg.layers[j].out_shape, images[j]));

    try {
        onnx::checker::check_model(model);
        // In place (a copy would double the weights in memory): it also records the shapes of the
        // helper tensors (activations, flattening) in value_info, which viewers show.
        onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(/*check_type=*/true, /*error_mode=*/1));
    } catch (const std::exception& e) {
        throw ExportError(m.source + ": the ONNX graph for this model does not pass ONNX's checks (an exporter bug): " + e.what());
    }
    OnnxBytes result;
    result.nodes = static_cast<std::size_t>(g.node_size());
    if (!model.SerializeToString(&result.bytes))
        throw ExportError(m.source + ": the ONNX model could not be serialised (over protobuf's 2 GiB limit?)");
    return result;
}

}  // namespace thresher::model_export
