// Plans the Keras model of a Thresher model: which Keras layers, their names and configs, and
// what each reads, decided from the config alone so a refusal comes before any file is touched.
// A layer stack becomes a Sequential, a graph a Functional model whose vertices are Keras merge
// layers. One piece of state runs beside each tensor, as in the Keras importer: whether Keras
// holds it as an image ([h, w, c]) or as features. Thresher's Shape cannot say it (a 1x1 image
// and a vector look alike), and Keras needs a Flatten exactly where an image meets a Dense.
#include <algorithm>
#include <cmath>
#include <map>

#include "config/graph.h"
#include "config/model_config.h"
#include "export/keras_model.h"
#include "export/keras_sequence_export.h"
#include "export/model_export.h"

namespace thresher::model_export {

namespace {

using config::Activation;
using config::ActivationSpec;
using config::ConvMode;
using config::LayerConfig;
using config::LayerType;
using config::LossKind;
using config::Shape;
using config::UpdaterKind;
using config::UpdaterSpec;
using config::WeightInit;

std::vector<int> keras_shape(const Shape& s, bool image) {
    if (s.sequence()) return {s.t, s.c};  // Keras's [steps, features]
    if (!image) return {static_cast<int>(s.size())};
    return {s.h, s.w, s.c};
}

nlohmann::json pair(const std::array<int, 2>& v) { return nlohmann::json::array({v[0], v[1]}); }

// Thresher's weight initialisations as Keras initializers (the Keras importer reads each back).
// Uniform (±1/√fan_in) is VarianceScaling's uniform with scale 1/3: limit √(3·scale/fan_in).
nlohmann::json initializer(KerasDialect d, WeightInit w) {
    const nlohmann::json seed{{"seed", nullptr}};
    switch (w) {
        case WeightInit::Xavier: return keras_object(d, "keras.initializers", "GlorotNormal", seed);
        case WeightInit::XavierUniform: return keras_object(d, "keras.initializers", "GlorotUniform", seed);
        case WeightInit::Relu: return keras_object(d, "keras.initializers", "HeNormal", seed);
        case WeightInit::Normal: return keras_object(d, "keras.initializers", "LecunNormal", seed);
        case WeightInit::Uniform:
            return keras_object(d, "keras.initializers", "VarianceScaling",
                                {{"scale", 1.0 / 3.0}, {"mode", "fan_in"}, {"distribution", "uniform"}, {"seed", nullptr}});
        case WeightInit::Zero: return keras_object(d, "keras.initializers", "Zeros", nlohmann::json::object());
    }
    return keras_object(d, "keras.initializers", "GlorotUniform", seed);
}

nlohmann::json constant(KerasDialect d, float value) {
    if (value == 0.f) return keras_object(d, "keras.initializers", "Zeros", nlohmann::json::object());
    if (value == 1.f) return keras_object(d, "keras.initializers", "Ones", nlohmann::json::object());
    return keras_object(d, "keras.initializers", "Constant", {{"value", config::decimal(value)}});
}

// Keras penalises l2·Σw² (gradient 2·l2·w); Thresher adds l2·w to the gradient: half of it.
nlohmann::json regularizer(KerasDialect d, float l1, float l2) {
    if (l1 == 0.f && l2 == 0.f) return nullptr;
    return keras_object(d, "keras.regularizers", "L1L2", {{"l1", config::decimal(l1)}, {"l2", config::decimal(l2) / 2.0}});
}

// An activation Keras names in a layer's "activation" field, or the layer Keras needs for it.
struct KerasActivation {
    std::string name;                 // "relu", ...; empty: a layer of its own
    std::string layer;                // "LeakyReLU", "ELU", "ReLU"
    nlohmann::json layer_config;
};

// Refusals come back as text (empty: fine).
KerasActivation keras_activation(const ActivationSpec& a, KerasDialect d, std::string& why) {
    const double alpha = config::decimal(a.alpha);
    switch (a.kind) {
        case Activation::Identity: return {"linear", {}, {}};
        case Activation::Relu: return {"relu", {}, {}};
        case Activation::Tanh: return {"tanh", {}, {}};
        case Activation::Sigmoid: return {"sigmoid", {}, {}};
        case Activation::Softmax: return {"softmax", {}, {}};
        case Activation::Selu: return {"selu", {}, {}};
        case Activation::Softplus: return {"softplus", {}, {}};
        case Activation::Softsign: return {"softsign", {}, {}};
        case Activation::Swish: return {"swish", {}, {}};
        case Activation::Gelu: return {"gelu", {}, {}};  // Keras's gelu: approximate=False, the erf form
        case Activation::Elu:
            if (a.alpha == 1.f) return {"elu", {}, {}};
            return {"", "ELU", {{"alpha", alpha}}};
        case Activation::LeakyRelu:
            return {"", "LeakyReLU", {{d == KerasDialect::Keras2 ? "alpha" : "negative_slope", alpha}}};
        case Activation::Relu6:
            return {"", "ReLU", {{"max_value", 6.0}, {"negative_slope", 0.0}, {"threshold", 0.0}}};
        case Activation::ThresholdedRelu:
            return {"", "ReLU", {{"max_value", nullptr}, {"negative_slope", 0.0}, {"threshold", alpha}}};
        case Activation::HardSigmoid: {
            // Keras 2's hard_sigmoid is clip(0.2x + 0.5), Keras 3's relu6(x + 3) / 6: slope 1/6.
            const float slope = d == KerasDialect::Keras2 ? 0.2f : 1.f / 6.f;
            if (a.alpha == slope) return {"hard_sigmoid", {}, {}};
            why = "hardsigmoid with slope " + nlohmann::json(alpha).dump() + ": Keras " +
                  (d == KerasDialect::Keras2 ? "2's hard_sigmoid has slope 0.2" : "3's hard_sigmoid has slope 1/6");
            return {};
        }
        default: break;
    }
    why = "activation " + std::string(config::to_string(a.kind)) + " has no Keras form (Keras names no such activation)";
    return {};
}

bool same_updater(const UpdaterSpec& a, const UpdaterSpec& b) {
    return a.kind == b.kind && a.learning_rate == b.learning_rate && a.momentum == b.momentum && a.beta1 == b.beta1 &&
           a.beta2 == b.beta2 && a.epsilon == b.epsilon && a.rms_decay == b.rms_decay;
}

// The learning rate: a number, or the Keras LearningRateSchedule of the model's schedule.
nlohmann::json learning_rate(const config::ModelConfig& c, KerasDialect d) {
    if (!c.lr_schedule) return config::decimal(c.updater.learning_rate);
    const auto& s = *c.lr_schedule;
    const auto refuse = [&](const std::string& why) -> nlohmann::json {
        throw KerasRefusal{"updater: learning-rate schedule \"" + s.describe() + "\": " + why};
    };
    if (s.by != config::ScheduleUnit::Iteration) refuse("Keras schedules count iterations, this one epochs");
    if (s.ramp != 0) refuse("Keras has no ramp around a schedule");
    const char* module = "keras.optimizers.schedules";
    switch (s.kind) {
        case config::ScheduleKind::Exponential:
            return keras_object(d, module, "ExponentialDecay",
                                {{"initial_learning_rate", s.initial}, {"decay_steps", s.decay_steps}, {"decay_rate", s.rate},
                                 {"staircase", s.staircase}, {"name", "ExponentialDecay"}});
        case config::ScheduleKind::Inverse:
            if (s.power != 1.0) refuse("Keras's InverseTimeDecay has power 1");
            return keras_object(d, module, "InverseTimeDecay",
                                {{"initial_learning_rate", s.initial}, {"decay_steps", s.decay_steps}, {"decay_rate", s.rate},
                                 {"staircase", s.staircase}, {"name", "InverseTimeDecay"}});
        case config::ScheduleKind::Polynomial:
            return keras_object(d, module, "PolynomialDecay",
                                {{"initial_learning_rate", s.initial}, {"decay_steps", s.decay_steps},
                                 {"end_learning_rate", s.end}, {"power", s.power}, {"cycle", s.cycle}, {"name", "PolynomialDecay"}});
        case config::ScheduleKind::Cosine: {
            nlohmann::json cfg{{"initial_learning_rate", s.initial}, {"decay_steps", s.decay_steps}, {"alpha", s.alpha},
                               {"name", "CosineDecay"}, {"warmup_target", nullptr}, {"warmup_steps", 0}};
            if (s.warmup) cfg["warmup_target"] = s.warmup_target, cfg["warmup_steps"] = s.warmup_steps;
            return keras_object(d, module, "CosineDecay", cfg);
        }
        case config::ScheduleKind::Map: {
            // Keras changes the value after a boundary step: position p is boundary p - 1.
            auto boundaries = nlohmann::json::array(), values = nlohmann::json::array();
            for (std::size_t k = 0; k < s.points.size(); ++k) {
                if (k > 0) boundaries.push_back(s.points[k].first - 1);
                values.push_back(s.points[k].second);
            }
            return keras_object(d, module, "PiecewiseConstantDecay",
                                {{"boundaries", boundaries}, {"values", values}, {"name", "PiecewiseConstant"}});
        }
        default: break;
    }
    return refuse("Keras has no LearningRateSchedule of this kind");
}

nlohmann::json optimizer(const config::ModelConfig& c, KerasDialect d) {
    const auto& u = c.updater;
    const auto lr = learning_rate(c, d);
    const char* module = "keras.optimizers";
    switch (u.kind) {
        case UpdaterKind::Sgd:
        case UpdaterKind::Nesterovs: {
            const bool nesterov = u.kind == UpdaterKind::Nesterovs;
            return keras_object(d, module, "SGD",
                                {{"name", "SGD"}, {"learning_rate", lr}, {"momentum", nesterov ? config::decimal(u.momentum) : 0.0},
                                 {"nesterov", nesterov}});
        }
        case UpdaterKind::Adam:
            return keras_object(d, module, "Adam",
                                {{"name", "Adam"}, {"learning_rate", lr}, {"beta_1", config::decimal(u.beta1)},
                                 {"beta_2", config::decimal(u.beta2)}, {"epsilon", config::decimal(u.epsilon)}, {"amsgrad", false}});
        case UpdaterKind::RmsProp:
            return keras_object(d, module, "RMSprop",
                                {{"name", "RMSprop"}, {"learning_rate", lr}, {"rho", config::decimal(u.rms_decay)}, {"momentum", 0.0},
                                 {"epsilon", config::decimal(u.epsilon)}, {"centered", false}});
        case UpdaterKind::AdaGrad:
            // Thresher's AdaGrad history starts at 0.
            return keras_object(d, module, "Adagrad",
                                {{"name", "Adagrad"}, {"learning_rate", lr}, {"initial_accumulator_value", 0.0},
                                 {"epsilon", config::decimal(u.epsilon)}});
    }
    throw KerasRefusal{"updater: " + std::string(config::to_string(u.kind)) + " has no Keras optimizer"};
}

// A Keras tensor: the layer whose output it is, its shape without the batch, and whether it is an image.
struct Tensor {
    std::string name;
    std::vector<int> shape;
    bool image = false;
    int node = 0;  // which call of the layer (a shared layer's later calls: 1, 2, ...)
};

class Planner {
public:
    Planner(const ExportableModel& m, KerasDialect d) : m_(m), d_(d) {
        out_.dialect = d;
        // Kept names first: automatic ones ("dense_1") must not take a name a later layer keeps.
        for (const auto& l : m.config.layers)
            if (KerasNames::usable(l.name)) names_.reserve(l.name);
    }

    KerasModel plan() {
        const auto& c = m_.config;
        if (m_.normalization.active())
            throw KerasRefusal{"the model " + m_.normalization.kind +
                               "s its inputs, and a Keras export does not write that normalisation (a Keras "
                               "Normalization layer) yet: export to ONNX, whose graph applies it"};
        // Several inputs or outputs need a Functional model (input_layers, output_layers).
        // Shared layers too: a Sequential calls each layer once.
        out_.functional = c.is_graph() || c.input_count() > 1 || c.output_layers.size() > 1 ||
                          std::any_of(c.layers.begin(), c.layers.end(), [](const auto& l) { return l.shares_index >= 0; });
        out_.name = KerasNames::usable(c.name) ? c.name
                    : out_.functional       ? (d_ == KerasDialect::Keras2 ? "model" : "functional")
                                            : "sequential";
        // A graph's layers name the model's input: the InputLayer keeps that name where it can.
        if (out_.functional)
            for (std::size_t k = 0; k < c.input_count(); ++k)
                if (KerasNames::usable(c.input_name_of(k))) names_.reserve(c.input_name_of(k));
        out_.input_name = out_.functional ? names_.keep_or_fresh(c.input_name, "InputLayer") : names_.fresh("InputLayer");
        input_image_ = !c.input.flat() && !c.input.sequence();
        // An input of token ids that an Embedding reads is [steps] in Keras.
        auto input_shape = [&](std::size_t k) {
            const auto& shape = c.input_shape(k);
            for (const auto& l : c.layers)
                if (l.type == LayerType::Embedding && l.sources.at(0) == (k == 0 ? LayerConfig::kModelInput : LayerConfig::model_input(k)))
                    return std::vector<int>{shape.t};
            return keras_shape(shape, !shape.flat());
        };
        out_.input_shape = input_shape(0);
        for (std::size_t k = 1; k < c.input_count(); ++k)
            out_.extra_inputs.push_back({names_.keep_or_fresh(c.input_name_of(k), "InputLayer"), input_shape(k)});
        tensor_.resize(c.layers.size());
        for (std::size_t i = 0; i < c.layers.size(); ++i) {
            layer_index_ = i;
            layer(i);
            tensor_[i] = {current_, current_shape_, image_, current_node_};
        }
        // The outputs in Thresher's output_layers order (main first), each with its loss.
        const auto outputs = c.output_layers.empty() ? std::vector<std::size_t>{c.layers.size() - 1} : c.output_layers;
        for (const auto j : outputs) {
            if (tensor_[j].node != 0) refuse(j, "a model output from a later call of a shared layer is not written yet");
            out_.output_names.push_back(tensor_[j].name);
            out_.losses.push_back(check_loss(j));
        }
        out_.output_name = out_.output_names.front();
        out_.loss = out_.losses.front();
        for (std::size_t i = 0; i < c.layers.size(); ++i)
            if (c.layers[i].updater && !same_updater(*c.layers[i].updater, c.updater))
                refuse(i, "it has an updater of its own (" + std::string(config::to_string(c.layers[i].updater->kind)) +
                              "), and a Keras model has one optimizer for every layer");
        out_.optimizer = optimizer(c, d_);
        return std::move(out_);
    }

private:
    [[noreturn]] void refuse(std::size_t i, const std::string& why) const {
        throw KerasRefusal{m_.config.layers[i].label(i) + ": Keras cannot express this layer: " + why};
    }

    // A Keras layer reading the current tensor (or `inbound`, for a merge); its output becomes
    // the current tensor, of shape `output_shape` (Keras's, without the batch).
    KerasLayer& add(std::string class_name, const std::string& wanted_name, nlohmann::json cfg, std::vector<int> input_shape,
                    std::vector<int> output_shape, std::vector<Tensor> inbound = {}) {
        if (inbound.empty()) inbound.push_back({current_, current_shape_, image_, current_node_});
        // The Keras layer of the Thresher layer itself (not a Flatten or activation added beside it).
        const auto& thresher = m_.config.layers[layer_index_];
        const bool itself = !wanted_name.empty() && wanted_name == thresher.name;
        if (itself && thresher.shares_index >= 0) {
            // A later call of a shared layer: one more inbound node of the owner's Keras layer.
            const auto owner = static_cast<std::size_t>(thresher.shares_index);
            const auto it = keras_of_.find(owner);
            if (it == keras_of_.end() || out_.layers[it->second].class_name != class_name)
                refuse(layer_index_, "it shares the parameters of " + m_.config.layers[owner].label(owner) +
                                         ", which Keras writes differently (" + class_name + " here): a shared Keras layer is one layer called twice");
            auto& k = out_.layers[it->second];
            KerasLayer::Call call;
            for (const auto& t : inbound) {
                call.inbound.push_back(t.name);
                call.inbound_node.push_back(t.node);
                call.inbound_shapes.push_back(t.shape);
            }
            k.later_calls.push_back(std::move(call));
            current_ = k.name;
            current_node_ = static_cast<int>(k.later_calls.size());
            current_shape_ = std::move(output_shape);
            discard_ = KerasLayer{};  // the caller's params_of and after_flatten are the owner's already
            return discard_;
        }
        KerasLayer k;
        k.name = wanted_name.empty() ? names_.fresh(class_name) : names_.keep_or_fresh(wanted_name, class_name);
        k.class_name = std::move(class_name);
        k.config = std::move(cfg);
        k.input_shape = std::move(input_shape);
        for (const auto& t : inbound) {
            k.inbound.push_back(t.name);
            k.inbound_node.push_back(t.node);
            k.inbound_shapes.push_back(t.shape);
        }
        current_ = k.name;
        current_node_ = 0;
        current_shape_ = std::move(output_shape);
        if (itself) keras_of_[layer_index_] = out_.layers.size();
        out_.layers.push_back(std::move(k));
        return out_.layers.back();
    }

    // The Keras tensor a Thresher layer's output (or the model's input) is.
    Tensor source(int index) const {
        if (index == config::LayerConfig::kModelInput) return {out_.input_name, out_.input_shape, input_image_};
        if (index < 0) {
            const auto& in = out_.extra_inputs.at(config::LayerConfig::input_index(index) - 1);
            return {in.name, in.shape, in.shape.size() == 3};  // [steps, features] and [features] are no image
        }
        return tensor_[static_cast<std::size_t>(index)];
    }

    // A Thresher input in the user's terms: "layers[3] (convolution \"conv\")", or the model's input.
    std::string input_label(int index) const {
        if (index == config::LayerConfig::kModelInput) return "the model's input";
        if (index < 0) return "the model's input \"" + m_.config.input_name_of(config::LayerConfig::input_index(index)) + "\"";
        return m_.config.layers[static_cast<std::size_t>(index)].label(static_cast<std::size_t>(index));
    }

    void need_image(std::size_t i) const {
        if (!image_) refuse(i, "it needs an image, and Keras holds flat features here (after a Flatten or global pooling)");
    }

    KerasActivation activation_of(std::size_t i) const {
        std::string why;
        auto a = keras_activation(m_.config.layers[i].activation, d_, why);
        if (!why.empty()) refuse(i, why);
        return a;
    }

    // After a layer whose activation Keras cannot name in its "activation" field.
    void activation_layer(const KerasActivation& a, const Shape& shape) {
        if (a.name.empty()) add(a.layer, "", a.layer_config, keras_shape(shape, image_), keras_shape(shape, image_));
    }

    // Dense and Conv2D's shared fields: the activation Keras can name, bias, initializers, regularizers.
    void weighted_fields(std::size_t i, nlohmann::json& cfg, const KerasActivation& a) const {
        const auto& c = m_.config;
        const auto u = c.effective_updater(i);
        cfg["activation"] = a.name.empty() ? "linear" : a.name;
        cfg["use_bias"] = true;
        cfg["kernel_initializer"] = initializer(d_, c.effective_weight_init(i));
        cfg["bias_initializer"] = initializer(d_, WeightInit::Zero);
        cfg["kernel_regularizer"] = regularizer(d_, u.l1, u.l2);
        for (const char* key : {"bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"}) cfg[key] = nullptr;
    }

    // The Keras class of a convolution kind, for messages and the plan.
    static const char* conv_class(LayerType t) {
        switch (t) {
            case LayerType::DepthwiseConvolution: return "DepthwiseConv2D";
            case LayerType::SeparableConvolution: return "SeparableConv2D";
            case LayerType::TransposedConvolution: return "Conv2DTranspose";
            default: return "Conv2D";
        }
    }

    static const char* merge_class(LayerType t) {
        switch (t) {
            case LayerType::Add: return "Add";
            case LayerType::Subtract: return "Subtract";
            case LayerType::Multiply: return "Multiply";
            case LayerType::Average: return "Average";
            case LayerType::Maximum: return "Maximum";
            default: return "Concatenate";
        }
    }

    // A vertex joining branches: a Keras merge layer reading every input's tensor.
    void merge(std::size_t i) {
        const auto& l = m_.config.layers[i];
        const std::string cls = merge_class(l.type);
        std::vector<Tensor> ins;
        for (const int s : l.sources) ins.push_back(source(s));
        if (ins.size() < 2) refuse(i, "Keras's " + cls + " merges two inputs or more, and this vertex reads one");
        if (l.type == LayerType::Subtract && ins.size() != 2)
            refuse(i, "Keras's Subtract takes exactly two inputs, and this vertex reads " + std::to_string(ins.size()));
        for (std::size_t k = 1; k < ins.size(); ++k)
            if (ins[k].image != ins[0].image) {
                const auto flat = ins[0].image ? k : 0, image = ins[0].image ? 0 : k;
                refuse(i, "it joins flat features (" + input_label(l.sources[flat]) +
                              ", after global pooling or a Flatten in Keras) with an image (" + input_label(l.sources[image]) +
                              "), and Keras's " + cls + " needs inputs of one rank");
            }
        image_ = ins[0].image;
        // Thresher joins channels (the features of flat inputs): channels_last's last axis.
        nlohmann::json cfg = nlohmann::json::object();
        if (l.type == LayerType::Concatenate) cfg["axis"] = -1;
        auto input_shape = ins[0].shape;
        add(cls, l.name, std::move(cfg), std::move(input_shape), keras_shape(l.out_shape, image_), std::move(ins));
    }

    // DepthwiseConv2D, SeparableConv2D, Conv2DTranspose: valid or same, no explicit padding.
    void windowed_convolution(std::size_t i) {
        const auto& l = m_.config.layers[i];
        const std::string cls = conv_class(l.type);
        need_image(i);
        if ((l.stride[0] > 1 || l.stride[1] > 1) && (l.dilation[0] > 1 || l.dilation[1] > 1))
            refuse(i, "strides above 1 together with a dilation above 1 (Keras's " + cls + " allows one or the other)");
        if (l.mode == ConvMode::Truncate && (l.padding[0] > 0 || l.padding[1] > 0))
            refuse(i, "padding " + std::to_string(l.padding[0]) + "x" + std::to_string(l.padding[1]) + ": Keras's " + cls +
                          " pads \"valid\" or \"same\" only (use mode \"same\", or a zero_padding layer before it)");
        const auto a = activation_of(i);
        const bool transposed = l.type == LayerType::TransposedConvolution;
        nlohmann::json cfg = nlohmann::json::object();
        if (l.type != LayerType::DepthwiseConvolution) cfg["filters"] = l.units;
        if (!transposed) cfg["depth_multiplier"] = l.depth_multiplier;
        cfg["kernel_size"] = pair(l.kernel);
        cfg["strides"] = pair(l.stride);
        cfg["padding"] = l.mode == ConvMode::Same ? "same" : "valid";
        cfg["data_format"] = "channels_last";
        cfg["dilation_rate"] = pair(l.dilation);
        if (d_ == KerasDialect::Keras2) {
            cfg["groups"] = 1;  // tf.keras's Conv base config; Keras 3 has none here
            if (transposed) cfg["output_padding"] = nullptr;
        }
        if (transposed) {
            weighted_fields(i, cfg, a);
        } else {
            // The depthwise (and pointwise) kernels take the initializer and the regulariser.
            const auto u = m_.config.effective_updater(i);
            const auto init = initializer(d_, m_.config.effective_weight_init(i));
            cfg["activation"] = a.name.empty() ? "linear" : a.name;
            cfg["use_bias"] = true;
            cfg["depthwise_initializer"] = init;
            if (l.type == LayerType::SeparableConvolution) cfg["pointwise_initializer"] = init;
            cfg["bias_initializer"] = initializer(d_, WeightInit::Zero);
            cfg["depthwise_regularizer"] = regularizer(d_, u.l1, u.l2);
            if (l.type == LayerType::SeparableConvolution) cfg["pointwise_regularizer"] = regularizer(d_, u.l1, u.l2);
            for (const char* key : {"bias_regularizer", "activity_regularizer", "depthwise_constraint", "bias_constraint"}) cfg[key] = nullptr;
            if (l.type == LayerType::SeparableConvolution) cfg["pointwise_constraint"] = nullptr;
        }
        add(cls, l.name, std::move(cfg), keras_shape(l.in_shape, true), keras_shape(l.out_shape, true)).params_of = i;
        activation_layer(a, l.out_shape);
    }

    void layer(std::size_t i) {
        const auto& l = m_.config.layers[i];
        const bool on_sequence = l.in_shape.sequence() || l.out_shape.sequence();
        const bool sequence_kind = is_keras_sequence_export(l.type) || l.type == LayerType::Dense || l.type == LayerType::Output ||
                                   l.type == LayerType::Dropout || l.type == LayerType::Activation || l.type == LayerType::Reshape ||
                                   l.type == LayerType::Subsampling;
        if (on_sequence && (!sequence_kind || (l.type == LayerType::Dropout && l.spatial)))
            refuse(i, "layer kind " + std::string(config::to_string(l.type)) + " on a sequence has no Keras export yet");
        if (config::joins_inputs(l.type)) {
            merge(i);
            return;
        }
        // Every other layer reads one tensor: in a stack the layer before's, in a graph its input's.
        {
            const auto t = source(l.sources.at(0));
            current_ = t.name;
            current_node_ = t.node;
            current_shape_ = t.shape;
            image_ = t.image;
        }
        // Softmax on an image (only on an image output, config/README.md) is over the channels of
        // each pixel in Thresher as in Keras's channels-last tensors: the same computation.
        const auto same_shape = keras_shape(l.in_shape, image_);
        if (is_keras_sequence_export(l.type) || (l.type == LayerType::Subsampling && l.in_shape.sequence())) {
            sequence_layer(i);
            return;
        }
        switch (l.type) {
            case LayerType::Dense:
            case LayerType::Output: {
                bool flattened = false;
                if (image_) {
                    add("Flatten", "", {{"data_format", "channels_last"}}, keras_shape(l.in_shape, true), keras_shape(l.in_shape, false));
                    image_ = false;
                    flattened = true;
                }
                const auto a = activation_of(i);
                nlohmann::json cfg{{"units", l.units}};
                weighted_fields(i, cfg, a);
                auto& k = add("Dense", l.name, std::move(cfg), keras_shape(l.in_shape, false), keras_shape(l.out_shape, false));
                k.params_of = i;
                k.after_flatten = flattened;
                activation_layer(a, l.out_shape);
                return;
            }
            case LayerType::Convolution: {
                need_image(i);
                if ((l.stride[0] > 1 || l.stride[1] > 1) && (l.dilation[0] > 1 || l.dilation[1] > 1))
                    refuse(i, "strides above 1 together with a dilation above 1 (Keras's Conv2D allows one or the other)");
                const Shape padded{l.in_shape.c, l.in_shape.h + 2 * (l.mode == ConvMode::Same ? 0 : l.padding[0]),
                                   l.in_shape.w + 2 * (l.mode == ConvMode::Same ? 0 : l.padding[1])};
                if (l.mode == ConvMode::Truncate && (l.padding[0] > 0 || l.padding[1] > 0))
                    add("ZeroPadding2D", "",
                        {{"padding", {{l.padding[0], l.padding[0]}, {l.padding[1], l.padding[1]}}}, {"data_format", "channels_last"}},
                        keras_shape(l.in_shape, true), keras_shape(padded, true));
                const auto a = activation_of(i);
                nlohmann::json cfg{{"filters", l.units},
                                   {"kernel_size", pair(l.kernel)},
                                   {"strides", pair(l.stride)},
                                   {"padding", l.mode == ConvMode::Same ? "same" : "valid"},
                                   {"data_format", "channels_last"},
                                   {"dilation_rate", pair(l.dilation)},
                                   {"groups", 1}};
                weighted_fields(i, cfg, a);
                add("Conv2D", l.name, std::move(cfg), keras_shape(padded, true), keras_shape(l.out_shape, true)).params_of = i;
                activation_layer(a, l.out_shape);
                return;
            }
            case LayerType::DepthwiseConvolution:
            case LayerType::SeparableConvolution:
            case LayerType::TransposedConvolution: windowed_convolution(i); return;
            case LayerType::Subsampling: {
                need_image(i);
                if (l.global) {
                    add(l.max_pool ? "GlobalMaxPooling2D" : "GlobalAveragePooling2D", l.name,
                        {{"data_format", "channels_last"}, {"keepdims", false}}, keras_shape(l.in_shape, true),
                        keras_shape(l.out_shape, false));
                    image_ = false;
                    return;
                }
                if (l.mode == ConvMode::Truncate && (l.padding[0] > 0 || l.padding[1] > 0))
                    refuse(i, "padding " + std::to_string(l.padding[0]) + "x" + std::to_string(l.padding[1]) +
                                  ": Keras pools with \"valid\" or \"same\" padding only");
                add(l.max_pool ? "MaxPooling2D" : "AveragePooling2D", l.name,
                    {{"pool_size", pair(l.kernel)},
                     {"padding", l.mode == ConvMode::Same ? "same" : "valid"},
                     {"strides", pair(l.stride)},
                     {"data_format", "channels_last"}},
                    keras_shape(l.in_shape, true), keras_shape(l.out_shape, true));
                return;
            }
            case LayerType::BatchNorm: {
                nlohmann::json cfg{{"axis", -1},
                                   {"momentum", config::decimal(l.bn_decay)},
                                   {"epsilon", config::decimal(l.bn_eps)},
                                   {"center", true},
                                   {"scale", true},
                                   {"beta_initializer", constant(d_, 0.f)},
                                   {"gamma_initializer", constant(d_, 1.f)},
                                   {"moving_mean_initializer", constant(d_, 0.f)},
                                   {"moving_variance_initializer", constant(d_, 1.f)}};
                for (const char* key : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}) cfg[key] = nullptr;
                if (d_ == KerasDialect::Keras3) cfg["synchronized"] = false;
                add("BatchNormalization", l.name, std::move(cfg), same_shape, same_shape).params_of = i;
                return;
            }
            case LayerType::Dropout: {
                // Keras gives the drop probability; rounded to a float first so 0.7 reads "rate": 0.3.
                nlohmann::json cfg{{"rate", config::decimal(static_cast<float>(1.0 - config::decimal(l.retain)))}, {"noise_shape", nullptr},
                                   {"seed", nullptr}};
                if (l.spatial) {  // whole channels, as Thresher's spatial dropout
                    cfg["data_format"] = "channels_last";
                    if (d_ == KerasDialect::Keras3) cfg.erase("noise_shape");  // Keras 3's SpatialDropout2D has none
                }
                add(l.spatial ? "SpatialDropout2D" : "Dropout", l.name, std::move(cfg), same_shape, same_shape);
                return;
            }
            case LayerType::PRelu: {
                // Keras's shared axes count its channels-last axes: 1 height, 2 width, 3 channels (1: the features).
                auto axes = nlohmann::json::array();
                if (image_) {
                    if (l.prelu_shared[1]) axes.push_back(1);
                    if (l.prelu_shared[2]) axes.push_back(2);
                    if (l.prelu_shared[0]) axes.push_back(3);
                } else if (l.prelu_shared[0]) {
                    axes.push_back(1);
                }
                add("PReLU", l.name,
                    {{"alpha_initializer", constant(d_, l.prelu_init)},
                     {"alpha_regularizer", nullptr},
                     {"alpha_constraint", nullptr},
                     {"shared_axes", axes.empty() ? nlohmann::json(nullptr) : axes}},
                    same_shape, same_shape)
                    .params_of = i;
                return;
            }
            case LayerType::Activation: {
                const auto a = activation_of(i);
                if (!a.name.empty()) add("Activation", l.name, {{"activation", a.name}}, same_shape, same_shape);
                else add(a.layer, l.name, a.layer_config, same_shape, same_shape);
                return;
            }
            case LayerType::ZeroPadding:
            case LayerType::Cropping: {
                need_image(i);
                const bool pad = l.type == LayerType::ZeroPadding;
                add(pad ? "ZeroPadding2D" : "Cropping2D", l.name,
                    {{pad ? "padding" : "cropping", {{l.margins[0], l.margins[1]}, {l.margins[2], l.margins[3]}}},
                     {"data_format", "channels_last"}},
                    keras_shape(l.in_shape, true), keras_shape(l.out_shape, true));
                return;
            }
            case LayerType::Upsampling:
                need_image(i);
                add("UpSampling2D", l.name, {{"size", pair(l.scale)}, {"data_format", "channels_last"}, {"interpolation", "nearest"}},
                    keras_shape(l.in_shape, true), keras_shape(l.out_shape, true));
                return;
            case LayerType::Reshape: {
                // Keras's Reshape counts values channels last: Thresher's channels_last order. The
                // channels_first order (the same values, a new shape) is that only where neither
                // side has both several channels and several pixels.
                const auto mixed = [](const Shape& s) { return s.c > 1 && s.h * s.w > 1; };
                if (!l.channels_last_order && (mixed(l.in_shape) || mixed(l.out_shape)))
                    refuse(i, "a reshape in channels_first order from " + l.in_shape.str() + " to " + l.out_shape.str() +
                                  " keeps Thresher's channels-first value order, and Keras's Reshape counts values channels "
                                  "last (give the reshape \"order\": \"channels_last\", or Permute around it)");
                const bool to_image = l.out_shape.h * l.out_shape.w > 1;
                const auto target = keras_shape(l.out_shape, to_image);
                add("Reshape", l.name, {{"target_shape", target}}, same_shape, target);
                image_ = to_image;
                return;
            }
            case LayerType::Permute: {
                need_image(i);
                // Output axis k (channels, height, width) is input axis permute_axes[k]; Keras's dims
                // name, for each output axis (height, width, channels), the input axis 1-based:
                // height 1, width 2, channels 3.
                static constexpr int kKerasAxis[] = {3, 1, 2};
                const auto& a = l.permute_axes;
                add("Permute", l.name, {{"dims", {kKerasAxis[a[1]], kKerasAxis[a[2]], kKerasAxis[a[0]]}}}, same_shape,
                    keras_shape(l.out_shape, true));
                return;
            }
            case LayerType::Subset:
                refuse(i, "a subset vertex keeps channels " + std::to_string(l.subset[0]) + " to " + std::to_string(l.subset[1]) +
                              ", and Keras has no layer that slices channels (only a Lambda, which is Python code a "
                              "saved model cannot carry)");
            default: break;
        }
        refuse(i, "layer kind " + std::string(config::to_string(l.type)) + " has no Keras form in this exporter yet");
    }

    // A sequence layer (keras_sequence_export.h): Keras holds sequences as [steps, features].
    void sequence_layer(std::size_t i) {
        const auto& l = m_.config.layers[i];
        const auto& c = m_.config;
        const auto u = c.effective_updater(i);
        KerasActivation a{"linear", {}, {}};
        if (l.type == LayerType::Convolution1d || l.type == LayerType::SimpleRnn) a = activation_of(i);
        // An LSTM's or GRU's cell and gates: activations Keras names in the layer itself.
        std::string cell = a.name.empty() ? "linear" : a.name, gate = "sigmoid";
        if (l.type == LayerType::Lstm || l.type == LayerType::Gru) {
            std::string why;
            cell = keras_activation(l.cell_activation, d_, why).name;
            if (cell.empty()) refuse(i, "its cell activation: " + (why.empty() ? "Keras names it only as a layer of its own" : why));
            gate = keras_activation(l.gate_activation, d_, why).name;
            if (gate.empty()) refuse(i, "its gate activation: " + (why.empty() ? "Keras names it only as a layer of its own" : why));
        }
        auto k = keras_sequence_layer(l, d_, initializer(d_, c.effective_weight_init(i)), regularizer(d_, u.l1, u.l2), cell, gate);
        if (!k.why.empty()) refuse(i, k.why);
        if (l.type == LayerType::SimpleRnn && a.name.empty()) refuse(i, "SimpleRNN's activation must be one Keras names");
        // The embedding reads ids: Keras's [steps], as the model's input says.
        const auto in_shape = l.type == LayerType::Embedding ? current_shape_ : keras_shape(l.in_shape, false);
        auto& added = add(k.class_name, l.name, std::move(k.config), in_shape, keras_shape(l.out_shape, false));
        if (l.param_count > 0) added.params_of = i;
        image_ = false;
        activation_layer(a, l.out_shape);
    }

    // Keras's cross-entropies read probabilities: softmax for the categorical one, sigmoid for the binary.
    std::string check_loss(std::size_t i) const {
        const auto& out = m_.config.layers[i];
        switch (out.loss) {
            case LossKind::MultiClassCrossEntropy:
            case LossKind::NegativeLogLikelihood:
                if (out.activation.kind != Activation::Softmax)
                    refuse(i, std::string(config::to_string(out.loss)) + " on a " + std::string(config::to_string(out.activation.kind)) +
                                  " output: Keras's categorical_crossentropy reads softmax probabilities");
                return "categorical_crossentropy";
            case LossKind::BinaryCrossEntropy:
                if (out.activation.kind != Activation::Sigmoid)
                    refuse(i, "xent on a " + std::string(config::to_string(out.activation.kind)) +
                                  " output: Keras's binary_crossentropy reads sigmoid probabilities");
                return "binary_crossentropy";
            case LossKind::MSE: return "mean_squared_error";
            case LossKind::MAE: return "mean_absolute_error";
        }
        refuse(i, "loss " + std::string(config::to_string(out.loss)) + " has no Keras form");
    }

    const ExportableModel& m_;
    KerasDialect d_;
    KerasModel out_;
    KerasNames names_;
    bool input_image_ = false;
    std::vector<Tensor> tensor_;  // per Thresher layer: the Keras tensor of its output
    // Shared layers: the Thresher layer being planned, the Keras layer each owner became, the
    // call the current tensor comes from, and where a later call's layer fields go.
    std::size_t layer_index_ = 0;
    std::map<std::size_t, std::size_t> keras_of_;
    int current_node_ = 0;
    KerasLayer discard_;
    // The tensor the next Keras layer reads: its layer, shape, and whether Keras holds an image
    // there ([h, w, c]) or features.
    std::string current_;
    std::vector<int> current_shape_;
    bool image_ = false;
};

}  // namespace

KerasModel plan_keras_model(const ExportableModel& m, KerasDialect d) { return Planner(m, d).plan(); }

KerasModel planned_keras_model(const ExportableModel& m, KerasDialect d) {
    try {
        return plan_keras_model(m, d);
    } catch (const KerasRefusal& r) {
        throw ExportError(m.source + ": " + r.why + "; nothing was written");
    }
}

std::optional<std::string> keras_refusal(const ExportableModel& m, KerasDialect d) {
    try {
        plan_keras_model(m, d);
    } catch (const KerasRefusal& r) {
        return r.why;
    }
    return std::nullopt;
}

}  // namespace thresher::model_export
