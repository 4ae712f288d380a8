// Parsing, serialising and validating Thresher's own model JSON. Shape inference lives in
// shape_inference.cpp.
#include "config/model_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "config/json_fields.h"
#include "config/model_format.h"

namespace thresher::config {

namespace {

const std::vector<std::string> kLayerTypes{"dense", "convolution", "subsampling", "batch_norm",
                                           "dropout", "output", "prelu", "activation",
                                           "zero_padding", "cropping", "upsampling",
                                           "add", "subtract", "multiply", "average", "maximum",
                                           "concatenate", "subset", "depthwise_convolution",
                                           "separable_convolution", "transposed_convolution", "reshape", "permute",
                                           "lstm", "gru", "simple_rnn", "embedding", "convolution1d", "repeat_vector"};
const std::vector<std::string> kBiModes{"none", "concat", "sum", "mul", "average"};
const std::vector<std::string> kConvModes{"truncate", "same", "causal"};
const std::vector<std::string> kPReluAxes{"channels", "height", "width"};  // also permute's axes
// reshape's "order": how the values are counted, before and after (channels_last: Keras's).
const std::vector<std::string> kOrders{"channels_first", "channels_last"};
const std::vector<std::string> kActivations{"identity", "relu",     "leakyrelu",   "tanh",
                                            "sigmoid",  "softmax",  "elu",         "selu",
                                            "relu6",    "hardsigmoid", "softplus", "softsign",
                                            "thresholdedrelu", "swish", "gelu", "gelu_tanh",
                                            "gelu_sigmoid"};
const std::vector<std::string> kLosses{"mcxent", "negativeloglikelihood", "xent", "mse", "mae"};
const std::vector<std::string> kInits{"xavier", "xavier_uniform", "relu", "normal", "uniform",
                                      "zero"};
const std::vector<std::string> kUpdaters{"sgd", "nesterovs", "adagrad", "rmsprop", "adam"};

// `schedule`: where the model's updater puts its learning-rate schedule; null for a layer's
// override (one schedule drives every layer's learning rate).
UpdaterSpec parse_updater(const nlohmann::json& j, const std::string& source,
                          const std::string& path, std::optional<LrSchedule>* schedule = nullptr) {
    JsonFields f(j, source, path);
    UpdaterSpec u;
    auto kind = f.choice("type", kUpdaters);
    if (!kind) f.fail("type", "is required (one of sgd, nesterovs, adagrad, rmsprop, adam)");
    u.kind = static_cast<UpdaterKind>(*kind);
    // DL4J's defaults per updater.
    switch (u.kind) {
        case UpdaterKind::Sgd: u.learning_rate = 1e-3f; break;
        case UpdaterKind::Nesterovs: u.learning_rate = 0.1f; break;
        case UpdaterKind::AdaGrad: u.learning_rate = 0.1f; u.epsilon = 1e-6f; break;
        case UpdaterKind::RmsProp: u.learning_rate = 0.1f; u.epsilon = 1e-8f; break;
        case UpdaterKind::Adam: u.learning_rate = 1e-3f; u.epsilon = 1e-8f; break;
    }
    const auto lr = f.number("learning_rate", 0.0, 1e6);
    if (lr) u.learning_rate = static_cast<float>(*lr);
    if (f.has("schedule")) {
        if (!schedule) f.fail("schedule", "only the model's updater has a schedule (it sets every layer's learning rate)");
        *schedule = LrSchedule::from_json(*f.object("schedule"), source, path + ".schedule");
        const auto start = static_cast<float>((*schedule)->value_at(0, 0));
        // Relative tolerance: a saved schedule's fields are float decimals, its start recomputed.
        if (lr && std::abs(*lr - start) > 1e-6 * std::max(std::abs(*lr), 1e-30))
            f.fail("learning_rate", "is " + nlohmann::json(decimal(static_cast<float>(*lr))).dump() +
                                        " but the schedule starts at " + nlohmann::json(decimal(start)).dump() +
                                        " (leave it out: the schedule gives the learning rate)");
        u.learning_rate = start;
    }
    if (u.kind == UpdaterKind::Nesterovs)
        if (auto v = f.number("momentum", 0.0, 1.0)) u.momentum = static_cast<float>(*v);
    if (u.kind == UpdaterKind::Adam) {
        if (auto v = f.number("beta1", 0.0, 1.0)) u.beta1 = static_cast<float>(*v);
        if (auto v = f.number("beta2", 0.0, 1.0)) u.beta2 = static_cast<float>(*v);
    }
    if (u.kind == UpdaterKind::RmsProp)
        if (auto v = f.number("rms_decay", 0.0, 1.0)) u.rms_decay = static_cast<float>(*v);
    if (u.kind == UpdaterKind::AdaGrad || u.kind == UpdaterKind::RmsProp || u.kind == UpdaterKind::Adam)
        if (auto v = f.number("epsilon", 0.0, 1.0)) u.epsilon = static_cast<float>(*v);
    f.finish();
    return u;
}

nlohmann::json updater_json(const UpdaterSpec& u) {
    nlohmann::json j{{"type", kUpdaters[static_cast<int>(u.kind)]}, {"learning_rate", decimal(u.learning_rate)}};
    if (u.kind == UpdaterKind::Nesterovs) j["momentum"] = decimal(u.momentum);
    if (u.kind == UpdaterKind::Adam) {
        j["beta1"] = decimal(u.beta1);
        j["beta2"] = decimal(u.beta2);
    }
    if (u.kind == UpdaterKind::RmsProp) j["rms_decay"] = decimal(u.rms_decay);
    if (u.kind == UpdaterKind::AdaGrad || u.kind == UpdaterKind::RmsProp || u.kind == UpdaterKind::Adam)
        j["epsilon"] = decimal(u.epsilon);
    return j;
}

// "alpha": leakyrelu's negative slope (default 0.01, in [0, 1]), elu's alpha (default 1, in
// [0, 100]), hardsigmoid's slope (default 0.2, in (0, 10]). A recurrent layer's gates read the
// same pair under other names (`gate_activation`, `gate_alpha`).
ActivationSpec parse_activation(JsonFields& f, Activation fallback, const std::string& key = "activation",
                                const std::string& alpha_key = "alpha") {
    ActivationSpec a{fallback, 0.01f};
    if (auto k = f.choice(key, kActivations)) a.kind = static_cast<Activation>(*k);
    if (a.kind == Activation::Elu) a.alpha = 1.f;
    if (a.kind == Activation::HardSigmoid) a.alpha = 0.2f;
    if (a.kind == Activation::ThresholdedRelu) a.alpha = 1.f;  // DL4J's and Keras's default θ
    if (f.has(alpha_key)) {
        double lo = 0.0, hi = 1.0;
        if (a.kind == Activation::Elu || a.kind == Activation::ThresholdedRelu) hi = 100.0;
        else if (a.kind == Activation::HardSigmoid) lo = 1e-6, hi = 10.0;
        else if (a.kind != Activation::LeakyRelu && a.kind != Activation::ThresholdedRelu)
            f.fail(alpha_key, "only applies to " + key + " leakyrelu, elu, hardsigmoid and thresholdedrelu (its threshold)");
        a.alpha = static_cast<float>(*f.number(alpha_key, lo, hi));
    }
    return a;
}

bool has_alpha(Activation a) {
    return a == Activation::LeakyRelu || a == Activation::Elu || a == Activation::HardSigmoid ||
           a == Activation::ThresholdedRelu;
}

// The loss of the last layer (an output layer, or an activation layer that is last) and whether
// its activation suits it.
void parse_loss(JsonFields& g, LayerConfig& l) {
    if (auto loss = g.choice("loss", kLosses)) l.loss = static_cast<LossKind>(*loss);
    const bool ce = l.loss == LossKind::MultiClassCrossEntropy || l.loss == LossKind::NegativeLogLikelihood;
    // Cross-entropy reads the outputs as probabilities: softmax, or (as DL4J allows) sigmoid and
    // softplus, whose outputs are positive too.
    if (ce && l.activation.kind != Activation::Softmax && l.activation.kind != Activation::Sigmoid &&
        l.activation.kind != Activation::Softplus)
        g.fail("loss", "mcxent/negativeloglikelihood needs activation softmax (or sigmoid, softplus), got " +
                           std::string(to_string(l.activation.kind)));
    if (l.loss == LossKind::BinaryCrossEntropy && l.activation.kind != Activation::Sigmoid)
        g.fail("loss", "xent needs activation sigmoid, got " + std::string(to_string(l.activation.kind)));
    if ((l.loss == LossKind::MSE || l.loss == LossKind::MAE) && l.activation.kind == Activation::Softmax)
        g.fail("loss", std::string(to_string(l.loss)) + " with softmax is not supported; use mcxent");
}

// "padding" / "cropping": n (every side), [h, w] (top and bottom, left and right) or
// [top, bottom, left, right], as Keras and DL4J write them.
std::array<int, 4> parse_margins(JsonFields& g, const char* key) {
    const auto* v = g.value(key);
    auto count = [](const nlohmann::json& x) { return x.is_number_integer() && x.get<long long>() >= 0 && x.get<long long>() < (1 << 16); };
    if (!v) g.fail(key, "is required: n, [height, width] or [top, bottom, left, right]");
    if (count(*v)) return {v->get<int>(), v->get<int>(), v->get<int>(), v->get<int>()};
    if (v->is_array() && v->size() == 2 && count((*v)[0]) && count((*v)[1]))
        return {(*v)[0].get<int>(), (*v)[0].get<int>(), (*v)[1].get<int>(), (*v)[1].get<int>()};
    if (v->is_array() && v->size() == 4 && count((*v)[0]) && count((*v)[1]) && count((*v)[2]) && count((*v)[3]))
        return {(*v)[0].get<int>(), (*v)[1].get<int>(), (*v)[2].get<int>(), (*v)[3].get<int>()};
    g.fail(key, "must be n, [height, width] or [top, bottom, left, right] (integers from 0 to 65535), got " + v->dump());
}

LayerConfig parse_layer(const nlohmann::json& j, std::size_t index, bool last, const std::string& source) {
    const std::string path = "layers[" + std::to_string(index) + "]";
    JsonFields f(j, source, path);
    LayerConfig l;
    auto type = f.choice("type", kLayerTypes);
    if (!type)
        f.fail("type", "is required (one of dense, convolution, subsampling, batch_norm, dropout, output, prelu, activation, "
                       "zero_padding, cropping, upsampling, add, subtract, multiply, average, maximum, concatenate, subset, "
                       "depthwise_convolution, separable_convolution, transposed_convolution, reshape, permute, "
                       "lstm, gru, simple_rnn, embedding, convolution1d, repeat_vector)");
    l.type = static_cast<LayerType>(*type);
    if (auto n = f.string("name")) l.name = *n;
    JsonFields g(j, source, l.label(index));  // messages from here on name the layer type
    g.string("type");
    g.string("name");
    // "inputs": the layers it reads, by name ("input" is the model's input); a string for one.
    if (const auto* v = g.value("inputs")) {
        const bool one = v->is_string();
        if (!one && !(v->is_array() && !v->empty()))
            g.fail("inputs", "must be a layer name or a non-empty array of them, got " + v->dump());
        for (const auto& n : one ? nlohmann::json::array({*v}) : *v) {
            if (!n.is_string() || n.get<std::string>().empty())
                g.fail("inputs", "must name layers (strings), got " + n.dump());
            l.inputs.push_back(n.get<std::string>());
        }
        if (l.inputs.size() > 4096) g.fail("inputs", "at most 4096 inputs");
    }
    // "shares": another call of an earlier layer, using its parameters (resolve_graph checks it).
    if (auto s = g.string("shares")) {
        if (s->empty()) g.fail("shares", "must name the layer whose parameters this one uses");
        l.shares = *s;
    }

    switch (l.type) {
        case LayerType::Dense:
        case LayerType::Output: {
            auto units = g.integer("units", 1, 1 << 24);
            if (!units) g.fail("units", "is required (a positive integer)");
            l.units = *units;
            l.activation = parse_activation(g, l.type == LayerType::Output ? Activation::Softmax
                                                                            : Activation::Relu);
            if (l.type == LayerType::Output) parse_loss(g, l);
            break;
        }
        case LayerType::Convolution:
        case LayerType::DepthwiseConvolution:
        case LayerType::SeparableConvolution:
        case LayerType::TransposedConvolution: {
            if (l.type == LayerType::DepthwiseConvolution) {
                if (g.has("filters")) g.fail("filters", "a depthwise convolution has depth_multiplier outputs per input channel, not filters");
            } else {
                auto filters = g.integer("filters", 1, 1 << 20);
                if (!filters) g.fail("filters", "is required (a positive integer)");
                l.units = *filters;
            }
            if (l.type == LayerType::DepthwiseConvolution || l.type == LayerType::SeparableConvolution)
                if (auto m = g.integer("depth_multiplier", 1, 1024)) l.depth_multiplier = *m;
            auto kernel = g.pair("kernel", 1);
            if (!kernel) g.fail("kernel", "is required, e.g. [5, 5]");
            l.kernel = *kernel;
            if (auto s = g.pair("stride", 1)) l.stride = *s;
            if (auto p = g.pair("padding", 0)) l.padding = *p;
            if (auto d = g.pair("dilation", 1)) l.dilation = *d;
            if (auto m = g.choice("mode", {"truncate", "same"})) l.mode = static_cast<ConvMode>(*m);
            l.activation = parse_activation(g, Activation::Identity);
            // As an image output with "loss": mcxent, softmax over the channels of each pixel.
            l.declares_loss = g.has("loss");
            if (l.declares_loss) parse_loss(g, l);
            if (l.activation.kind == Activation::Softmax && !l.declares_loss)
                g.fail("activation", "softmax on a convolution is a softmax over its channels at each pixel: only on a "
                                     "model output with \"loss\": \"mcxent\" (a segmentation head)");
            break;
        }
        case LayerType::Subsampling: {
            if (auto p = g.choice("pooling", {"max", "avg"})) l.max_pool = *p == 0;
            // Global pooling (Keras GlobalAveragePooling2D, DL4J GlobalPoolingLayer): the window
            // is the whole input, set by shape inference.
            if (g.boolean("global").value_or(false)) {
                l.global = true;
                for (const char* key : {"kernel", "stride", "padding", "mode"})
                    if (g.has(key)) g.fail(key, "global pooling takes the whole image: leave it out");
                break;
            }
            auto kernel = g.pair("kernel", 1);
            l.kernel = kernel ? *kernel : std::array<int, 2>{2, 2};
            auto stride = g.pair("stride", 1);
            l.stride = stride ? *stride : l.kernel;
            if (auto p = g.pair("padding", 0)) l.padding = *p;
            if (auto m = g.choice("mode", {"truncate", "same"})) l.mode = static_cast<ConvMode>(*m);
            break;
        }
        case LayerType::BatchNorm:
            if (auto e = g.number("eps", 1e-12, 1.0)) l.bn_eps = static_cast<float>(*e);
            if (auto d = g.number("decay", 0.0, 1.0)) l.bn_decay = static_cast<float>(*d);
            break;
        case LayerType::Dropout: {
            auto r = g.number("retain", 1e-6, 1.0);
            if (!r) g.fail("retain", "is required: the probability of keeping an activation, in (0, 1]");
            l.retain = static_cast<float>(*r);
            l.spatial = g.boolean("spatial").value_or(false);
            break;
        }
        case LayerType::PRelu: {
            // "shared_axes": ["height", "width"] gives one alpha per channel.
            if (const auto* axes = g.array("shared_axes")) {
                for (const auto& a : *axes) {
                    const auto it = a.is_string() ? std::find(kPReluAxes.begin(), kPReluAxes.end(), a.get<std::string>())
                                                  : kPReluAxes.end();
                    if (it == kPReluAxes.end())
                        g.fail("shared_axes", "must list some of \"channels\", \"height\", \"width\", got " + a.dump());
                    l.prelu_shared[static_cast<std::size_t>(it - kPReluAxes.begin())] = true;
                }
            }
            if (auto v = g.number("alpha_init", -100.0, 100.0)) l.prelu_init = static_cast<float>(*v);
            break;
        }
        case LayerType::Activation:
            // No default: a standalone activation says which one it is.
            if (!g.has("activation")) g.fail("activation", "is required (e.g. \"relu\", \"softmax\")");
            l.activation = parse_activation(g, Activation::Identity);
            // Last, it is the output layer without parameters (DL4J's LossLayer): it has the loss.
            // An activation layer that no layer reads is an output too (a model with several).
            l.declares_loss = g.has("loss");
            if (last || l.declares_loss) parse_loss(g, l);
            break;
        case LayerType::ZeroPadding:
        case LayerType::Cropping:
        case LayerType::Upsampling: {
            if (l.type == LayerType::ZeroPadding) l.margins = parse_margins(g, "padding");
            if (l.type == LayerType::Cropping) l.margins = parse_margins(g, "cropping");
            if (l.type == LayerType::Upsampling) {
                auto size = g.pair("size", 1);
                if (!size) g.fail("size", "is required: n or [rows, columns] per input pixel");
                if ((*size)[0] > 1024 || (*size)[1] > 1024) g.fail("size", "at most 1024 per axis");
                l.scale = *size;
            }
            // An image output (an autoencoder's last upsampling): mse or mae on its values.
            l.declares_loss = g.has("loss");
            if (l.declares_loss) parse_loss(g, l);
            break;
        }
        case LayerType::Add:
        case LayerType::Subtract:
        case LayerType::Multiply:
        case LayerType::Average:
        case LayerType::Maximum:
        case LayerType::Concatenate: break;
        case LayerType::Reshape: {
            const auto* to = g.object("shape");
            if (!to) g.fail("shape", "is required: {\"channels\", \"height\", \"width\"} or {\"size\"}");
            JsonFields t(*to, source, l.label(index) + ".shape");
            if (t.has("size")) {
                auto n = t.integer("size", 1, 1 << 28);
                if (!n) t.fail("size", "must be a positive integer");
                l.reshape_to = Shape{*n, 1, 1};
            } else if (t.has("steps")) {
                auto steps = t.integer("steps", 1, 1 << 20), c = t.integer("features", 1, 1 << 24);
                if (!steps || !c) t.fail("needs \"steps\" and \"features\" (positive integers)");
                l.reshape_to = sequence_shape(*steps, *c);
            } else {
                auto c = t.integer("channels", 1, 1 << 16), h = t.integer("height", 1, 1 << 16), w = t.integer("width", 1, 1 << 16);
                if (!c || !h || !w) t.fail("needs \"size\", or \"channels\", \"height\" and \"width\"");
                l.reshape_to = Shape{*c, *h, *w};
            }
            t.finish();
            if (auto order = g.choice("order", kOrders)) l.channels_last_order = *order == 1;
            break;
        }
        case LayerType::Permute: {
            const auto* axes = g.value("axes");
            if (!axes || !axes->is_array() || axes->size() != 3)
                g.fail("axes", "is required: the input axis each output axis takes, e.g. [\"width\", \"height\", \"channels\"]");
            std::array<bool, 3> seen{};
            for (std::size_t k = 0; k < 3; ++k) {
                const auto& a = (*axes)[k];
                const auto it = a.is_string() ? std::find(kPReluAxes.begin(), kPReluAxes.end(), a.get<std::string>()) : kPReluAxes.end();
                if (it == kPReluAxes.end() || seen[static_cast<std::size_t>(it - kPReluAxes.begin())])
                    g.fail("axes", "must name \"channels\", \"height\" and \"width\" once each, got " + axes->dump());
                seen[static_cast<std::size_t>(it - kPReluAxes.begin())] = true;
                l.permute_axes[k] = static_cast<int>(it - kPReluAxes.begin());
            }
            break;
        }
        case LayerType::Lstm:
        case LayerType::Gru:
        case LayerType::SimpleRnn: {
            auto units = g.integer("units", 1, 1 << 16);
            if (!units) g.fail("units", "is required (a positive integer: the hidden state's size)");
            l.units = *units;
            l.return_sequences = g.boolean("return_sequences").value_or(false);
            if (auto b = g.choice("bidirectional", kBiModes)) l.bidirectional = static_cast<BiMode>(*b);
            if (l.type == LayerType::Lstm) {
                l.peepholes = g.boolean("peepholes").value_or(false);
                if (auto v = g.number("forget_bias", -100.0, 100.0)) l.forget_bias = static_cast<float>(*v);
            }
            if (l.type == LayerType::Gru) l.reset_after = g.boolean("reset_after").value_or(true);
            // The cell/candidate activation (simple_rnn: its only one) and the gates' (lstm, gru):
            // any element-wise activation; softmax mixes a step's units, which no cell does.
            auto& cell = l.type == LayerType::SimpleRnn ? l.activation : l.cell_activation;
            cell = parse_activation(g, Activation::Tanh);
            if (cell.kind == Activation::Softmax)
                g.fail("activation", "softmax is not an element-wise activation: a recurrent cell cannot use it");
            if (l.type != LayerType::SimpleRnn) {
                l.gate_activation = parse_activation(g, Activation::Sigmoid, "gate_activation", "gate_alpha");
                if (l.gate_activation.kind == Activation::Softmax)
                    g.fail("gate_activation", "softmax cannot gate: each gate must act on its own unit (e.g. sigmoid, hardsigmoid)");
            }
            if (auto r = g.number("input_retain", 1e-6, 1.0)) l.input_retain = static_cast<float>(*r);
            if (auto r = g.number("recurrent_retain", 1e-6, 1.0)) l.recurrent_retain = static_cast<float>(*r);
            l.go_backwards = g.boolean("go_backwards").value_or(false);
            if (l.go_backwards && l.bidirectional != BiMode::None)
                g.fail("go_backwards", "reads one direction backwards; a bidirectional layer reads both already");
            break;
        }
        case LayerType::Embedding: {
            auto v = g.integer("vocabulary", 1, 1 << 26);
            if (!v) g.fail("vocabulary", "is required (a positive integer: ids run from 0 to vocabulary - 1)");
            auto e = g.integer("units", 1, 1 << 16);
            if (!e) g.fail("units", "is required (a positive integer: the features of one id's vector)");
            l.vocabulary = *v;
            l.units = *e;
            break;
        }
        case LayerType::Convolution1d: {
            auto filters = g.integer("filters", 1, 1 << 20);
            if (!filters) g.fail("filters", "is required (a positive integer)");
            l.units = *filters;
            auto k = g.integer("kernel", 1, 1 << 16);
            if (!k) g.fail("kernel", "is required: the steps one filter spans (an integer)");
            l.kernel = {*k, 1};
            if (auto s = g.integer("stride", 1, 1 << 16)) l.stride = {*s, 1};
            if (auto d = g.integer("dilation", 1, 1 << 16)) l.dilation = {*d, 1};
            if (auto m = g.choice("mode", kConvModes)) l.mode = static_cast<ConvMode>(*m);
            l.activation = parse_activation(g, Activation::Identity);
            if (l.activation.kind == Activation::Softmax)
                g.fail("activation", "softmax is not supported on convolution layers");
            break;
        }
        case LayerType::RepeatVector: {
            auto n = g.integer("times", 1, 1 << 20);
            if (!n) g.fail("times", "is required: the steps of the sequence it makes (a positive integer)");
            l.repeat = *n;
            break;
        }
        case LayerType::Subset: {
            // DL4J's SubsetVertex: channels from..to, both kept.
            auto c = g.pair("channels", 0);
            if (!c) g.fail("channels", "is required: [first, last] channel kept (0-based, inclusive)");
            l.subset = *c;
            if (l.subset[1] < l.subset[0]) g.fail("channels", "the last channel must not come before the first");
            break;
        }
    }
    const bool has_params = l.type == LayerType::Dense || l.type == LayerType::Output ||
                            is_convolution(l.type) || l.type == LayerType::BatchNorm ||
                            l.type == LayerType::PRelu || is_recurrent(l.type) ||
                            l.type == LayerType::Embedding || l.type == LayerType::Convolution1d;
    if (has_params) {
        if (l.type != LayerType::PRelu)
            if (auto w = g.choice("weight_init", kInits)) l.weight_init = static_cast<WeightInit>(*w);
        if (const auto* u = g.object("updater")) l.updater = parse_updater(*u, source, g.path() + ".updater");
        if (auto v = g.number("l1", 0.0, 1e3)) l.l1 = static_cast<float>(*v);
        if (auto v = g.number("l2", 0.0, 1e3)) l.l2 = static_cast<float>(*v);
    }
    g.finish();
    return l;
}

nlohmann::json pair_json(const std::array<int, 2>& p) { return nlohmann::json::array({p[0], p[1]}); }

}  // namespace

std::string Shape::str() const {
    if (t > 0) return std::to_string(t) + " steps x " + std::to_string(c);
    if (flat()) return std::to_string(c);
    return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

std::string LayerConfig::label(std::size_t index) const {
    const std::string ours = "layers[" + std::to_string(index) + "]";
    if (!origin.empty())
        return origin + " (" + (origin_what.empty() ? "" : origin_what + "; ") + "Thresher " + ours + " " +
               std::string(to_string(type)) + ")";
    std::string s = ours + " (" + std::string(to_string(type));
    if (!name.empty()) s += " \"" + name + "\"";
    return s + ")";
}

double decimal(float v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf - 1, v);
    if (ec != std::errc{}) return v;
    *end = '\0';
    return std::strtod(buf, nullptr);
}

std::string_view to_string(LayerType t) { return kLayerTypes[static_cast<int>(t)]; }
std::string_view to_string(BiMode b) { return kBiModes[static_cast<int>(b)]; }
std::string_view to_string(ConvMode m) { return kConvModes[static_cast<int>(m)]; }

bool is_recurrent(LayerType t) { return t == LayerType::Lstm || t == LayerType::Gru || t == LayerType::SimpleRnn; }
std::string_view to_string(Activation a) { return kActivations[static_cast<int>(a)]; }
std::string_view to_string(LossKind l) { return kLosses[static_cast<int>(l)]; }
std::string_view to_string(WeightInit w) { return kInits[static_cast<int>(w)]; }
std::string_view to_string(UpdaterKind u) { return kUpdaters[static_cast<int>(u)]; }

std::size_t ModelConfig::param_count() const {
    std::size_t n = 0;
    for (const auto& l : layers) n += l.param_count;
    return n;
}

std::size_t ModelConfig::input_size() const {
    std::size_t n = input.size() + (input.sequence() ? 1 : 0);
    for (const auto& e : extra_inputs) n += e.shape.size() + (e.shape.sequence() ? 1 : 0);
    return n;
}

std::size_t ModelConfig::target_size() const {
    if (layers.empty()) return 0;
    // Every value an output gives per sample: a per-step output's T x units, an image's C x H x W.
    auto one = [](const LayerConfig& l) { return static_cast<std::size_t>(l.output_width()); };
    if (output_layers.empty()) return one(layers.back());
    std::size_t n = 0;
    for (auto o : output_layers) n += one(layers[o]);
    return n;
}

const Shape& ModelConfig::shape_of(int source) const {
    return source >= 0 ? layers.at(static_cast<std::size_t>(source)).out_shape : input_shape(LayerConfig::input_index(source));
}

const LayerConfig& ModelConfig::main_output() const {
    return output_layers.empty() ? layers.back() : layers.at(output_layers.front());
}

int ModelConfig::output_size() const {
    // A per-step output counts its units once (one step's classes); an image its C x H x W.
    auto one = [](const LayerConfig& l) { return l.out_shape.sequence() ? l.units : l.output_width(); };
    if (layers.empty()) return 0;
    if (output_layers.empty()) return one(layers.back());
    int n = 0;
    for (auto o : output_layers) n += one(layers[o]);
    return n;
}

bool ModelConfig::is_classifier() const {
    if (layers.empty()) return false;
    const auto loss = main_output().loss;
    return loss == LossKind::MultiClassCrossEntropy || loss == LossKind::NegativeLogLikelihood ||
           loss == LossKind::BinaryCrossEntropy;
}

UpdaterSpec ModelConfig::effective_updater(std::size_t i) const {
    const auto& l = layers.at(i);
    UpdaterSpec u = l.updater.value_or(updater);
    u.l1 = l.l1.value_or(l1);
    u.l2 = l.l2.value_or(l2);
    return u;
}

double ModelConfig::learning_rate_at(std::size_t i, long iteration, int epoch) const {
    if (lr_schedule) return lr_schedule->value_at(iteration, epoch);
    return decimal(effective_updater(i).learning_rate);
}

WeightInit ModelConfig::effective_weight_init(std::size_t i) const {
    return layers.at(i).weight_init.value_or(weight_init);
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j, const std::string& source) {
    JsonFields f(j, source, "model");
    ModelConfig m;
    if (auto fmt = f.string("format"); fmt && *fmt != "thresher-model")
        f.fail("format", "expected \"thresher-model\", got \"" + *fmt + "\"");
    if (auto v = f.integer("version", 1, 1000); v && *v != 1)
        f.fail("version", "this engine reads version 1, got " + std::to_string(*v));
    if (auto n = f.string("name")) m.name = *n;
    if (auto s = f.number("seed", 0, 9.007199254740992e15)) m.seed = static_cast<std::uint64_t>(*s);
    // "input": one input, {"channels", "height", "width"} or {"size"} (and a "name"); or a list of
    // them for a model with several inputs, each named.
    const auto* input_value = f.value("input");
    if (!input_value || !(input_value->is_object() || (input_value->is_array() && !input_value->empty())))
        f.fail("input", "is required: {\"channels\", \"height\", \"width\"} or {\"size\"}, or a list of them");
    const bool several = input_value->is_array();
    if (several && input_value->size() > 64) f.fail("input", "lists more than 64 inputs");
    const std::size_t input_count = several ? input_value->size() : 1;
    for (std::size_t k = 0; k < input_count; ++k) {
        const auto& one = several ? (*input_value)[k] : *input_value;
        const std::string at = several ? "input[" + std::to_string(k) + "]" : "input";
        if (!one.is_object()) f.fail(at, "must be an object: {\"name\", \"channels\", \"height\", \"width\"}, {\"name\", \"size\"} or {\"name\", \"steps\", \"features\"}");
        JsonFields in(one, source, at);
        std::string name = "input";
        if (auto n = in.string("name")) {
            if (n->empty()) in.fail("name", "must not be empty");
            name = *n;
        } else if (several) {
            in.fail("name", "is required when the model has several inputs (layers name the input they read)");
        }
        if (name == "input" && k > 0) in.fail("name", "\"input\" is taken by the first input");
        for (const auto& e : m.extra_inputs)
            if (e.name == name) in.fail("name", "\"" + name + "\" names two inputs");
        if (k > 0 && name == m.input_name) in.fail("name", "\"" + name + "\" names two inputs");
        Shape shape;
        if (in.has("steps")) {  // a sequence: its length travels first in the row (seq_spec.md)
            auto steps = in.integer("steps", 1, 1 << 20);
            if (!steps) in.fail("steps", "must be a positive integer (the longest sequence's steps)");
            auto c = in.integer("features", 1, 1 << 24);
            if (!c) in.fail("features", "is required with \"steps\": the values of one step (1 for token ids)");
            shape = sequence_shape(*steps, *c);
        } else if (in.has("size")) {
            auto size = in.integer("size", 1, 1 << 28);
            if (!size) in.fail("size", "must be a positive integer");
            shape = Shape{*size, 1, 1};
        } else {
            auto c = in.integer("channels", 1, 1 << 16);
            auto h = in.integer("height", 1, 1 << 16);
            auto w = in.integer("width", 1, 1 << 16);
            if (!c || !h || !w) in.fail("needs \"size\", or \"channels\", \"height\" and \"width\"");
            shape = Shape{*c, *h, *w};
        }
        in.finish();
        if (k == 0) {
            m.input_name = name;
            m.input = shape;
        } else {
            m.extra_inputs.push_back({name, shape});
        }
    }
    if (const auto* outs = f.value("outputs")) {
        if (!outs->is_array() || outs->empty() || outs->size() > 64)
            f.fail("outputs", "must list the output layers' names (1 to 64), got " + outs->dump());
        for (const auto& o : *outs) {
            if (!o.is_string() || o.get<std::string>().empty()) f.fail("outputs", "must list layer names, got " + o.dump());
            m.outputs.push_back(o.get<std::string>());
        }
    }
    if (auto w = f.choice("weight_init", kInits)) m.weight_init = static_cast<WeightInit>(*w);
    if (const auto* u = f.object("updater")) m.updater = parse_updater(*u, source, "updater", &m.lr_schedule);
    if (auto v = f.number("l1", 0.0, 1e3)) m.l1 = static_cast<float>(*v);
    if (auto v = f.number("l2", 0.0, 1e3)) m.l2 = static_cast<float>(*v);
    const auto* layers = f.array("layers");
    if (!layers || layers->empty()) f.fail("layers", "is required: a non-empty array of layers");
    for (std::size_t i = 0; i < layers->size(); ++i) m.layers.push_back(parse_layer((*layers)[i], i, i + 1 == layers->size(), source));
    f.finish();
    m.infer_shapes(source);
    return m;
}

ModelConfig ModelConfig::parse(std::string_view text, const std::string& source) {
    return from_json(parse_json_text(text, source), source);
}

ModelConfig ModelConfig::load(const std::string& path) { return import_model_file(path).model; }

nlohmann::json ModelConfig::to_json() const {
    nlohmann::json j{{"format", "thresher-model"}, {"version", 1}, {"name", name}, {"seed", seed}};
    auto input_json = [](const Shape& shape, const std::string& input_name, bool always_named) {
        auto o = shape.sequence() ? nlohmann::json{{"steps", shape.t}, {"features", shape.c}}
                 : shape.flat()   ? nlohmann::json{{"size", shape.c}}
                                  : nlohmann::json{{"channels", shape.c}, {"height", shape.h}, {"width", shape.w}};
        if (always_named || input_name != "input") o["name"] = input_name;
        return o;
    };
    if (extra_inputs.empty()) {
        j["input"] = input_json(input, input_name, false);
    } else {
        j["input"] = nlohmann::json::array({input_json(input, input_name, true)});
        for (const auto& e : extra_inputs) j["input"].push_back(input_json(e.shape, e.name, true));
    }
    if (!outputs.empty()) j["outputs"] = outputs;
    j["weight_init"] = kInits[static_cast<int>(weight_init)];
    j["updater"] = updater_json(updater);
    if (lr_schedule) j["updater"]["schedule"] = lr_schedule->to_json();
    if (l1 != 0.f) j["l1"] = decimal(l1);
    if (l2 != 0.f) j["l2"] = decimal(l2);
    auto& arr = j["layers"] = nlohmann::json::array();
    for (const auto& l : layers) {
        nlohmann::json o{{"type", to_string(l.type)}};
        if (!l.name.empty()) o["name"] = l.name;
        switch (l.type) {
            case LayerType::Dense:
            case LayerType::Output:
                o["units"] = l.units;
                o["activation"] = to_string(l.activation.kind);
                if (l.type == LayerType::Output) o["loss"] = to_string(l.loss);
                break;
            case LayerType::Convolution:
            case LayerType::DepthwiseConvolution:
            case LayerType::SeparableConvolution:
            case LayerType::TransposedConvolution:
                if (l.type != LayerType::DepthwiseConvolution) o["filters"] = l.units;
                if (l.type == LayerType::DepthwiseConvolution || l.type == LayerType::SeparableConvolution)
                    o["depth_multiplier"] = l.depth_multiplier;
                o["kernel"] = pair_json(l.kernel);
                o["stride"] = pair_json(l.stride);
                o["padding"] = pair_json(l.padding);
                o["dilation"] = pair_json(l.dilation);
                o["mode"] = l.mode == ConvMode::Same ? "same" : "truncate";
                o["activation"] = to_string(l.activation.kind);
                break;
            case LayerType::Subsampling:
                o["pooling"] = l.max_pool ? "max" : "avg";
                if (l.global) {
                    o["global"] = true;
                    break;
                }
                o["kernel"] = pair_json(l.kernel);
                o["stride"] = pair_json(l.stride);
                o["padding"] = pair_json(l.padding);
                o["mode"] = l.mode == ConvMode::Same ? "same" : "truncate";
                break;
            case LayerType::BatchNorm:
                o["eps"] = decimal(l.bn_eps);
                o["decay"] = decimal(l.bn_decay);
                break;
            case LayerType::Dropout:
                o["retain"] = decimal(l.retain);
                if (l.spatial) o["spatial"] = true;
                break;
            case LayerType::PRelu: {
                auto axes = nlohmann::json::array();
                for (std::size_t a = 0; a < 3; ++a)
                    if (l.prelu_shared[a]) axes.push_back(kPReluAxes[a]);
                if (!axes.empty()) o["shared_axes"] = axes;
                o["alpha_init"] = decimal(l.prelu_init);
                break;
            }
            case LayerType::Activation:
                o["activation"] = to_string(l.activation.kind);
                if (l.is_output || l.declares_loss || &l == &layers.back()) o["loss"] = to_string(l.loss);
                break;
            case LayerType::ZeroPadding:
            case LayerType::Cropping:
                o[l.type == LayerType::ZeroPadding ? "padding" : "cropping"] =
                    nlohmann::json::array({l.margins[0], l.margins[1], l.margins[2], l.margins[3]});
                break;
            case LayerType::Upsampling: o["size"] = pair_json(l.scale); break;
            case LayerType::Add:
            case LayerType::Subtract:
            case LayerType::Multiply:
            case LayerType::Average:
            case LayerType::Maximum:
            case LayerType::Concatenate: break;
            case LayerType::Subset: o["channels"] = pair_json(l.subset); break;
            case LayerType::Lstm:
            case LayerType::Gru:
            case LayerType::SimpleRnn:
                o["units"] = l.units;
                o["return_sequences"] = l.return_sequences;
                o["bidirectional"] = to_string(l.bidirectional);
                if (l.type == LayerType::Lstm) {
                    o["peepholes"] = l.peepholes;
                    o["forget_bias"] = decimal(l.forget_bias);
                }
                if (l.type == LayerType::Gru) o["reset_after"] = l.reset_after;
                if (l.type == LayerType::SimpleRnn) o["activation"] = to_string(l.activation.kind);  // its alpha: below
                if (l.type != LayerType::SimpleRnn) {
                    o["activation"] = to_string(l.cell_activation.kind);
                    if (has_alpha(l.cell_activation.kind)) o["alpha"] = decimal(l.cell_activation.alpha);
                    o["gate_activation"] = to_string(l.gate_activation.kind);
                    if (has_alpha(l.gate_activation.kind)) o["gate_alpha"] = decimal(l.gate_activation.alpha);
                }
                if (l.input_retain < 1.f) o["input_retain"] = decimal(l.input_retain);
                if (l.recurrent_retain < 1.f) o["recurrent_retain"] = decimal(l.recurrent_retain);
                if (l.go_backwards) o["go_backwards"] = true;
                break;
            case LayerType::Embedding:
                o["vocabulary"] = l.vocabulary;
                o["units"] = l.units;
                break;
            case LayerType::Convolution1d:
                o["filters"] = l.units;
                o["kernel"] = l.kernel[0];
                o["stride"] = l.stride[0];
                o["dilation"] = l.dilation[0];
                o["mode"] = to_string(l.mode);
                o["activation"] = to_string(l.activation.kind);
                break;
            case LayerType::RepeatVector: o["times"] = l.repeat; break;
            case LayerType::Reshape:
                o["shape"] = l.reshape_to.sequence() ? nlohmann::json{{"steps", l.reshape_to.t}, {"features", l.reshape_to.c}}
                             : l.reshape_to.flat() ? nlohmann::json{{"size", l.reshape_to.c}}
                                                 : nlohmann::json{{"channels", l.reshape_to.c}, {"height", l.reshape_to.h},
                                                                  {"width", l.reshape_to.w}};
                o["order"] = kOrders[l.channels_last_order ? 1 : 0];
                break;
            case LayerType::Permute:
                o["axes"] = {kPReluAxes[static_cast<std::size_t>(l.permute_axes[0])], kPReluAxes[static_cast<std::size_t>(l.permute_axes[1])],
                             kPReluAxes[static_cast<std::size_t>(l.permute_axes[2])]};
                break;
        }
        // An image output (a convolution or resize layer with a loss).
        if (l.declares_loss && l.type != LayerType::Activation && l.type != LayerType::Output) o["loss"] = to_string(l.loss);
        if (!l.inputs.empty()) o["inputs"] = l.inputs;
        if (!l.shares.empty()) o["shares"] = l.shares;
        if (has_alpha(l.activation.kind)) o["alpha"] = decimal(l.activation.alpha);
        if (l.weight_init) o["weight_init"] = kInits[static_cast<int>(*l.weight_init)];
        if (l.updater) o["updater"] = updater_json(*l.updater);
        if (l.l1) o["l1"] = decimal(*l.l1);
        if (l.l2) o["l2"] = decimal(*l.l2);
        arr.push_back(std::move(o));
    }
    return j;
}

}  // namespace thresher::config
