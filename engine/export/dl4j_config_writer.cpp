// configuration.json of a DL4J export: the MultiLayerConfiguration DL4J 1.0 writes
// (MultiLayerConfiguration.toJson), field for field as the real files in
// tests/engine/config/data (dl4j_lenet.json, dl4j_1.0.0_swish_gelu_prelu.json) spell them, and as
// config/dl4j_import.cpp reads them back. Worked example, LeNet on 1x28x28:
//   confs[0] ConvolutionLayer "cnn1" nin 1 nout 20, confs[1] SubsamplingLayer, ... confs[4]
//   DenseLayer nin 800, confs[5] OutputLayer with lossFn; inputPreProcessors {"0":
//   FeedForwardToCnn 28x28x1 (setInputType(convolutionalFlat)), "4": CnnToFeedForward 4x4x50}.
// One piece of state runs beside the layers, as in the Keras exporter: whether the activations
// are still an image. A dense layer that reads one needs DL4J's CnnToFeedForwardPreProcessor in
// front of it, and an image layer after the features were flattened has no DL4J form.
//
// A graph becomes the ComputationGraphConfiguration DL4J 1.0 writes (plan_graph): one vertex per
// layer in the model's order, the same layer objects wrapped in LayerVertex, and the order DL4J
// flattens parameters in (its topological order of those vertices, config/dl4j_graph.h), which
// dl4j_params.cpp follows. Worked example, the ResNet template: the input is vertex 0, stem 1,
// ..., b1_out 10, b2_conv1 11, ..., b2_shortcut 16. b1_out's readers {11, 16} sit in a Java
// HashSet of 16 buckets, 16 in bucket 0 before 11 in bucket 11, so DL4J flattens b2_shortcut
// before b2_conv1 although the model lists it after b2_bn2.
#include <cmath>
#include <map>
#include <set>

#include "config/dl4j_graph.h"
#include "config/model_config.h"
#include "export/dl4j_export.h"
#include "export/model_export.h"

namespace thresher::model_export {

namespace {

using config::Activation;
using config::ActivationSpec;
using config::LayerConfig;
using config::LayerType;
using config::LossKind;
using config::ScheduleKind;
using config::UpdaterKind;
using config::WeightInit;
using nlohmann::json;

// Thrown while planning with the reason; dl4j_refusal returns its text.
struct Dl4jRefusal {
    std::string why;
};

json cls(const std::string& name) { return json{{"@class", name}}; }
double num(float v) { return config::decimal(v); }

std::string layer_label(const config::ModelConfig& m, std::size_t i) {
    const auto& l = m.layers[i];
    return "layers[" + std::to_string(i) + "] (" + std::string(config::to_string(l.type)) +
           (l.name.empty() ? "" : " \"" + l.name + "\"") + ")";
}

// org.nd4j.linalg.activations.impl.Activation*; the importer reads each back to the same spec.
json activation(const ActivationSpec& a) {
    const std::string p = "org.nd4j.linalg.activations.impl.Activation";
    const auto refuse = [](const std::string& why) -> json { throw Dl4jRefusal{why}; };
    switch (a.kind) {
        case Activation::Identity: return cls(p + "Identity");
        case Activation::Relu: return {{"@class", p + "ReLU"}, {"max", nullptr}, {"negativeSlope", nullptr}, {"threshold", nullptr}};
        case Activation::LeakyRelu:
            if (!(a.alpha >= 0.f && a.alpha <= 1.f)) refuse("leakyrelu with alpha " + std::to_string(a.alpha) + ": DL4J's LReLU takes [0, 1]");
            return {{"@class", p + "LReLU"}, {"alpha", num(a.alpha)}};
        case Activation::Tanh: return cls(p + "TanH");
        case Activation::Sigmoid: return cls(p + "Sigmoid");
        case Activation::Softmax: return cls(p + "Softmax");
        case Activation::Elu: return {{"@class", p + "ELU"}, {"alpha", num(a.alpha)}};
        case Activation::Selu: return cls(p + "SELU");
        case Activation::Relu6: return cls(p + "ReLU6");
        case Activation::HardSigmoid:
            // DL4J's hardsigmoid is clamp(0.2x + 0.5, 0, 1): slope 0.2 only.
            if (a.alpha != 0.2f) refuse("hardsigmoid with slope " + json(num(a.alpha)).dump() + ": DL4J's HardSigmoid has slope 0.2");
            return cls(p + "HardSigmoid");
        case Activation::Softplus: return cls(p + "SoftPlus");
        case Activation::Softsign: return cls(p + "SoftSign");
        case Activation::ThresholdedRelu: return {{"@class", p + "ThresholdedReLU"}, {"theta", num(a.alpha)}};
        case Activation::Swish: return cls(p + "Swish");
        case Activation::GeluSigmoid: return {{"@class", p + "GELU"}, {"precise", false}};  // x·sigmoid(1.702x)
        case Activation::Gelu:
        case Activation::GeluTanh:
            refuse("activation " + std::string(config::to_string(a.kind)) +
                   " has no DL4J form (DL4J's GELU is x·sigmoid(1.702x), Thresher's gelu_sigmoid; its precise form "
                   "is another formula)");
    }
    refuse("activation " + std::string(config::to_string(a.kind)) + " has no DL4J form");
    return {};
}

// org.nd4j.linalg.lossfunctions.impl.Loss* as DL4J 1.0 writes them (no per-output weights).
json loss(LossKind k) {
    const std::string p = "org.nd4j.linalg.lossfunctions.impl.Loss";
    switch (k) {
        case LossKind::MultiClassCrossEntropy: return {{"@class", p + "MCXENT"}, {"softmaxClipEps", 1e-10}, {"weights", nullptr}};
        case LossKind::NegativeLogLikelihood:
            return {{"@class", p + "NegativeLogLikelihood"}, {"softmaxClipEps", 1e-10}, {"weights", nullptr}};
        case LossKind::BinaryCrossEntropy: return {{"@class", p + "BinaryXENT"}, {"clipEps", 1e-5}, {"weights", nullptr}};
        case LossKind::MSE: return {{"@class", p + "MSE"}, {"weights", nullptr}};
        case LossKind::MAE: return {{"@class", p + "MAE"}, {"weights", nullptr}};
    }
    throw Dl4jRefusal{"loss " + std::string(config::to_string(k)) + " has no DL4J form"};
}

json weight_init(WeightInit w) {
    const std::string p = "org.deeplearning4j.nn.weights.WeightInit";
    switch (w) {
        case WeightInit::Xavier: return cls(p + "Xavier");
        case WeightInit::XavierUniform: return cls(p + "XavierUniform");
        case WeightInit::Relu: return cls(p + "Relu");
        case WeightInit::Normal: return cls(p + "Normal");
        case WeightInit::Uniform: return cls(p + "Uniform");
        case WeightInit::Zero: return {{"@class", p + "Constant"}, {"value", 0.0}};
    }
    return cls(p + "Xavier");
}

// An org.nd4j.linalg.schedule.ISchedule the importer (config/schedule_import.cpp) reads back to
// the same LrSchedule; Keras's kinds and forms DL4J has no class for are refused.
json schedule(const config::LrSchedule& s) {
    const std::string p = "org.nd4j.linalg.schedule.";
    const auto refuse = [&](const std::string& why) -> json {
        throw Dl4jRefusal{"updater: learning-rate schedule \"" + s.describe() + "\": " + why};
    };
    json out{{"scheduleType", s.by == config::ScheduleUnit::Epoch ? "EPOCH" : "ITERATION"}};
    switch (s.kind) {
        case ScheduleKind::Map: {
            json values = json::object();
            for (const auto& [at, v] : s.points) values[std::to_string(at)] = v;
            out["@class"] = p + "MapSchedule";
            out["values"] = values;
            break;
        }
        case ScheduleKind::Exponential:
            if (s.staircase) {  // StepSchedule: initial·decayRate^floor(i/step)
                out["@class"] = p + "StepSchedule";
                out["initialValue"] = s.initial;
                out["decayRate"] = s.rate;
                out["step"] = s.decay_steps;
            } else {
                if (s.decay_steps != 1.0) refuse("DL4J's ExponentialSchedule decays every step (decay_steps 1)");
                out["@class"] = p + "ExponentialSchedule";
                out["initialValue"] = s.initial;
                out["gamma"] = s.rate;
            }
            break;
        case ScheduleKind::Inverse:
            if (s.decay_steps != 1.0 || s.staircase) refuse("DL4J's InverseSchedule has decay_steps 1 and no staircase");
            out["@class"] = p + "InverseSchedule";
            out["initialValue"] = s.initial;
            out["gamma"] = s.rate;
            out["power"] = s.power;
            break;
        case ScheduleKind::Poly:
            if (s.decay_steps != std::floor(s.decay_steps) || s.decay_steps < 1) refuse("DL4J's PolySchedule needs a whole maxIter");
            out["@class"] = p + "PolySchedule";
            out["initialValue"] = s.initial;
            out["power"] = s.power;
            out["maxIter"] = static_cast<long long>(s.decay_steps);
            break;
        case ScheduleKind::Sigmoid:
            if (s.step != std::floor(s.step)) refuse("DL4J's SigmoidSchedule needs a whole stepSize");
            out["@class"] = p + "SigmoidSchedule";
            out["initialValue"] = s.initial;
            out["gamma"] = s.rate;
            out["stepSize"] = static_cast<long long>(s.step);
            break;
        case ScheduleKind::Cycle:
            out["@class"] = p + "CycleSchedule";
            out["initialLearningRate"] = s.initial;
            out["maxLearningRate"] = s.max;
            out["cycleLength"] = s.cycle_length;
            out["annealingLength"] = s.annealing_length;
            out["annealingDecay"] = s.annealing_decay;
            break;
        case ScheduleKind::Polynomial:
        case ScheduleKind::Cosine: refuse("DL4J has no such schedule (Keras's " + std::string(config::to_string(s.kind)) + ")");
    }
    if (s.ramp == 0) return out;
    return json{{"@class", p + "RampSchedule"}, {"baseSchedule", out}, {"numIter", s.ramp}};
}

// org.nd4j.linalg.learning.config.*, with the fields DL4J 1.0 writes for each.
json updater(const config::UpdaterSpec& u, const std::optional<config::LrSchedule>& sched) {
    const std::string p = "org.nd4j.linalg.learning.config.";
    json out;
    switch (u.kind) {
        case UpdaterKind::Sgd: out = cls(p + "Sgd"); break;
        case UpdaterKind::Nesterovs:
            out = cls(p + "Nesterovs");
            out["momentum"] = num(u.momentum);
            out["momentumISchedule"] = nullptr;
            out["momentumSchedule"] = nullptr;
            break;
        case UpdaterKind::Adam:
            out = cls(p + "Adam");
            out["beta1"] = num(u.beta1);
            out["beta2"] = num(u.beta2);
            out["epsilon"] = num(u.epsilon);
            break;
        case UpdaterKind::AdaGrad:
            out = cls(p + "AdaGrad");
            out["epsilon"] = num(u.epsilon);
            break;
        case UpdaterKind::RmsProp:
            out = cls(p + "RmsProp");
            out["rmsDecay"] = num(u.rms_decay);
            out["epsilon"] = num(u.epsilon);
            break;
    }
    out["learningRate"] = num(u.learning_rate);
    out["learningRateSchedule"] = sched ? schedule(*sched) : json(nullptr);
    return out;
}

json regularization(float l1, float l2) {
    json list = json::array();
    const std::string p = "org.nd4j.linalg.learning.regularization.";
    const auto fixed = [](float v) { return json{{"@class", "org.nd4j.linalg.schedule.FixedSchedule"}, {"value", num(v)}}; };
    if (l1 != 0.f) list.push_back({{"@class", p + "L1Regularization"}, {"l1", fixed(l1)}});
    if (l2 != 0.f) list.push_back({{"@class", p + "L2Regularization"}, {"l2", fixed(l2)}});
    return list;
}

json pair(const std::array<int, 2>& v) { return json::array({v[0], v[1]}); }

bool has_params(LayerType t) {
    return t == LayerType::Dense || t == LayerType::Output || t == LayerType::Convolution || t == LayerType::BatchNorm ||
           t == LayerType::PRelu || t == LayerType::DepthwiseConvolution || t == LayerType::SeparableConvolution ||
           t == LayerType::TransposedConvolution || config::is_recurrent(t) || t == LayerType::Embedding ||
           t == LayerType::Convolution1d;
}

// Whether the layer needs an image in.
bool reads_image(const LayerConfig& l) {
    return config::is_convolution(l.type) || l.type == LayerType::TransposedConvolution || l.type == LayerType::Subsampling ||
           l.type == LayerType::ZeroPadding || l.type == LayerType::Cropping || l.type == LayerType::Upsampling;
}

bool is_dense(const LayerConfig& l) { return l.type == LayerType::Dense || l.type == LayerType::Output; }

json feed_forward_to_cnn(const config::Shape& s) {
    return {{"@class", "org.deeplearning4j.nn.conf.preprocessor.FeedForwardToCnnPreProcessor"},
            {"inputHeight", s.h}, {"inputWidth", s.w}, {"numChannels", s.c}};
}

// One layer as DL4J writes it: the NeuralNetConfiguration ("conf": a MultiLayer's confs[i], a
// graph's LayerVertex layerConf) and the preprocessor in front of it (null when none).
struct Dl4jLayer {
    json conf;
    json preprocessor;
};

// layers[i] for DL4J. `image` says whether its input is an image in DL4J (a 4-d array) and
// becomes whether its output is one. A Dl4jRefusal names the layer.
// `loss_after`: a layer stack's image output other than an activation layer (a convolution with
// the loss) is written without its activation, and plan_stack follows it with a CnnLossLayer
// carrying the activation and the loss (split_image_output); a graph's is refused.
Dl4jLayer layer_conf(const ExportableModel& em, std::size_t i, bool& image, const std::string& name, bool loss_after = false) {
    const auto& m = em.config;
    const auto& l = m.layers[i];
    const std::string at = layer_label(m, i) + ": DL4J cannot express this layer: ";
    const std::string pl = "org.deeplearning4j.nn.conf.layers.";
    Dl4jLayer out;
    out.preprocessor = nullptr;
    try {
        json layer{{"layerName", name}, {"idropout", nullptr},
                   {"constraints", nullptr}, {"gradientNormalization", "None"}, {"gradientNormalizationThreshold", 1.0}};
        json variables = json::array();
        // Sequences: DL4J's recurrent layers, embeddings, 1-d convolutions and pooling, and the
        // per-step RnnOutputLayer / RnnLossLayer (config/README.md, "DL4J sequence layers").
        const bool sequence = l.in_shape.sequence() || l.out_shape.sequence();
        if (sequence && !config::is_recurrent(l.type) && l.type != LayerType::Embedding && l.type != LayerType::Convolution1d &&
            l.type != LayerType::Output && !(l.type == LayerType::Activation && l.is_output) && l.type != LayerType::Dropout &&
            l.type != LayerType::Subsampling)
            throw Dl4jRefusal{"a " + std::string(config::to_string(l.type)) + " layer on a sequence has no DL4J export yet "
                              "(DL4J would need RnnToFeedForward/FeedForwardToRnn preprocessors around it)"};
        std::string bidirectional;  // DL4J's Bidirectional mode around a recurrent layer
        bool last_step = false;     // LastTimeStep around it
        const bool global = l.type == LayerType::Subsampling && l.global;
        // DL4J's outputs are output layers: an image output other than an activation layer (a
        // convolution with the loss) would be that layer and a CnnLossLayer, another architecture.
        if (l.image_output() && l.type != LayerType::Activation && !loss_after)
            throw Dl4jRefusal{"an image output that is a " + std::string(config::to_string(l.type)) +
                              " layer has no DL4J form in a graph (DL4J ends with a CnnLossLayer): give the " + std::string(config::to_string(l.type)) +
                              " no activation and follow it with an activation layer carrying the activation and the loss"};
        const config::ActivationSpec own_activation = loss_after ? config::ActivationSpec{Activation::Identity, 0.01f} : l.activation;
        if ((reads_image(l) || global) && !image && !l.in_shape.sequence())
            throw Dl4jRefusal{"an image layer after the features were flattened (DL4J's layer stack cannot rebuild the image)"};
        // ConvolutionLayer's fields, which its depthwise, separable and transposed forms share.
        const auto convolution = [&](const char* cls, int n_out) {
            layer["@class"] = pl + cls;
            layer["nin"] = l.in_shape.c;
            layer["nout"] = n_out;
            layer["activationFn"] = activation(own_activation);
            layer["cnn2dDataFormat"] = "NCHW";
            layer["convolutionMode"] = l.mode == config::ConvMode::Same ? "Same" : "Truncate";
            layer["cudnnAlgoMode"] = "PREFER_FASTEST";
            layer["cudnnBwdDataAlgo"] = nullptr;
            layer["cudnnBwdFilterAlgo"] = nullptr;
            layer["cudnnFwdAlgo"] = nullptr;
            layer["kernelSize"] = pair(l.kernel);
            layer["stride"] = pair(l.stride);
            layer["padding"] = pair(l.padding);
            layer["dilation"] = pair(l.dilation);
        };
        switch (l.type) {
            case LayerType::Dense:
            case LayerType::Output:
                if (image) {  // DL4J flattens the image (c, h, w: Thresher's order too) in a preprocessor
                    out.preprocessor = {
                        {"@class", "org.deeplearning4j.nn.conf.preprocessor.CnnToFeedForwardPreProcessor"}, {"format", "NCHW"},
                        {"inputHeight", l.in_shape.h}, {"inputWidth", l.in_shape.w}, {"numChannels", l.in_shape.c}};
                    image = false;
                }
                layer["@class"] = pl + (l.type == LayerType::Dense ? "DenseLayer" : sequence ? "RnnOutputLayer" : "OutputLayer");
                layer["nin"] = sequence ? static_cast<std::size_t>(l.in_shape.c) : l.in_shape.size();
                layer["nout"] = l.units;
                layer["activationFn"] = activation(l.activation);
                layer["hasLayerNorm"] = false;
                if (l.type == LayerType::Output) layer["lossFn"] = loss(l.loss);
                variables = {"W", "b"};
                break;
            case LayerType::Convolution:
                convolution("ConvolutionLayer", l.units);
                variables = {"W", "b"};
                break;
            case LayerType::DepthwiseConvolution:  // DepthwiseConvolutionParamInitializer: b, W
                convolution("DepthwiseConvolution2D", l.units);
                layer["depthMultiplier"] = l.depth_multiplier;
                variables = {"W", "b"};
                break;
            case LayerType::SeparableConvolution:  // SeparableConvolutionParamInitializer: b, W, pW
                convolution("SeparableConvolution2D", l.units);
                layer["depthMultiplier"] = l.depth_multiplier;
                variables = {"W", "pW", "b"};
                break;
            case LayerType::TransposedConvolution:  // DeconvolutionParamInitializer: b, W [nIn, nOut, kh, kw]
                convolution("Deconvolution2D", l.units);
                variables = {"W", "b"};
                break;
            case LayerType::Subsampling:
                if (l.in_shape.sequence() && !global) {  // along time: [k, 1]
                    layer["@class"] = pl + "Subsampling1DLayer";
                    layer["convolutionMode"] = l.mode == config::ConvMode::Same ? "Same" : "Truncate";
                    layer["kernelSize"] = json::array({l.kernel[0], 1});
                    layer["stride"] = json::array({l.stride[0], 1});
                    layer["padding"] = json::array({0, 0});
                    layer["dilation"] = json::array({1, 1});
                } else if (global) {
                    layer["@class"] = pl + "GlobalPoolingLayer";
                    layer["collapseDimensions"] = true;
                    layer["pnorm"] = 2;
                    layer["poolingDimensions"] = nullptr;
                    image = false;
                } else {
                    layer["@class"] = pl + "SubsamplingLayer";
                    layer["cnn2dDataFormat"] = "NCHW";
                    layer["convolutionMode"] = l.mode == config::ConvMode::Same ? "Same" : "Truncate";
                    layer["kernelSize"] = pair(l.kernel);
                    layer["stride"] = pair(l.stride);
                    layer["padding"] = pair(l.padding);
                    layer["dilation"] = json::array({1, 1});
                    // Thresher averages the real pixels only, never the padding.
                    layer["avgPoolIncludePadInDivisor"] = false;
                    layer["cudnnAllowFallback"] = true;
                    layer["eps"] = 1e-8;
                    layer["pnorm"] = 0;
                }
                layer["poolingType"] = l.max_pool ? "MAX" : "AVG";
                break;
            case LayerType::BatchNorm:
                layer["@class"] = pl + "BatchNormalization";
                layer["nin"] = l.in_shape.flat() ? l.in_shape.size() : static_cast<std::size_t>(l.in_shape.c);
                layer["nout"] = layer["nin"];
                layer["activationFn"] = activation({Activation::Identity, 0.01f});
                layer["eps"] = num(l.bn_eps);
                layer["decay"] = num(l.bn_decay);
                layer["gamma"] = 1.0;
                layer["beta"] = 0.0;
                layer["isMinibatch"] = true;
                layer["lockGammaBeta"] = false;
                layer["useLogStd"] = false;  // the variance itself, as Thresher keeps it
                variables = {"gamma", "beta", "mean", "var"};
                break;
            case LayerType::Dropout:
                layer["@class"] = pl + "DropoutLayer";
                layer["nin"] = l.in_shape.size();
                layer["nout"] = l.in_shape.size();
                // DL4J's Dropout(p): p is the probability of keeping an activation, as retain.
                // SpatialDropout: the same p, whole channels (DL4J's spatial dropout on CNN activations).
                layer["idropout"] = {{"@class", std::string("org.deeplearning4j.nn.conf.dropout.") + (l.spatial ? "SpatialDropout" : "Dropout")},
                                     {"p", num(l.retain)}, {"pSchedule", nullptr}};
                break;
            case LayerType::PRelu: {
                layer["@class"] = pl + "PReLULayer";
                layer["nin"] = 0;
                layer["nout"] = 0;
                layer["activationFn"] = activation({Activation::Identity, 0.01f});
                const auto& s = l.in_shape;
                layer["inputShape"] = image ? json::array({s.c, s.h, s.w}) : json::array({static_cast<int>(s.size())});
                json axes = json::array();  // DL4J counts inputShape's axes from 1
                for (int a = 0; a < (image ? 3 : 1); ++a)
                    if (l.prelu_shared[static_cast<std::size_t>(a)]) axes.push_back(a + 1);
                layer["sharedAxes"] = axes;
                variables = {"W"};
                break;
            }
            case LayerType::Activation:
                if (l.is_output) {  // DL4J's LossLayer: activation and loss, no parameters
                    // On an image: CnnLossLayer, each pixel an example (a softmax over its channels).
                    layer["@class"] = pl + (image ? "CnnLossLayer" : l.in_shape.sequence() ? "RnnLossLayer" : "LossLayer");
                    if (image) layer["format"] = "NCHW";
                    layer["lossFn"] = loss(l.loss);
                } else {
                    layer["@class"] = pl + "ActivationLayer";
                }
                layer["activationFn"] = activation(l.activation);
                break;
            case LayerType::ZeroPadding:
            case LayerType::Cropping: {
                const bool pad = l.type == LayerType::ZeroPadding;
                layer["@class"] = pl + (pad ? "ZeroPaddingLayer" : "convolutional.Cropping2D");
                layer[pad ? "padding" : "cropping"] = json::array({l.margins[0], l.margins[1], l.margins[2], l.margins[3]});
                layer["dataFormat"] = "NCHW";
                break;
            }
            case LayerType::Upsampling:
                layer["@class"] = pl + "Upsampling2D";
                layer["size"] = pair(l.scale);
                break;
            case LayerType::Lstm:
            case LayerType::SimpleRnn: {
                const bool lstm = l.type == LayerType::Lstm;
                // DL4J's recurrent layers read forwards; its ReverseTimeSeriesVertex would reverse
                // the whole padded sequence, not each sample within its length.
                if (l.go_backwards)
                    throw Dl4jRefusal{"go_backwards (reading each sample backwards) has no DL4J layer; Bidirectional has one"};
                layer["@class"] = pl + (lstm ? (l.peepholes ? "GravesLSTM" : "LSTM") : "recurrent.SimpleRnn");
                layer["nin"] = l.in_shape.c;
                layer["nout"] = l.units;
                // The cell's (lstm) or the layer's (simple_rnn) activation and the gates'; activation()
                // refuses what DL4J cannot hold (a hard sigmoid slope other than 0.2).
                layer["activationFn"] = activation(lstm ? l.cell_activation : l.activation);
                if (lstm) {
                    layer["gateActivationFn"] = activation(l.gate_activation);
                    layer["forgetGateBiasInit"] = num(l.forget_bias);
                }
                layer["weightInitFnRecurrent"] = nullptr;
                static const std::map<config::BiMode, const char*> modes{
                    {config::BiMode::Concat, "CONCAT"}, {config::BiMode::Sum, "ADD"}, {config::BiMode::Mul, "MUL"}, {config::BiMode::Average, "AVERAGE"}};
                if (l.bidirectional != config::BiMode::None) bidirectional = modes.at(l.bidirectional);
                // LastTimeStep around the layer, inside a Bidirectional: each direction's own last
                // step, Thresher's return_sequences false (DL4J's LastTimeStep outside a Bidirectional
                // would take the backward direction after one step, dl4j_recurrent.h).
                last_step = !l.return_sequences;
                variables = bidirectional.empty() ? json{"W", "RW", "b"} : json{"fW", "fRW", "fb", "bW", "bRW", "bb"};
                break;
            }
            case LayerType::Embedding:  // the lookup alone: no bias, identity
                layer["@class"] = pl + "EmbeddingSequenceLayer";
                layer["nin"] = l.vocabulary;
                layer["nout"] = l.units;
                layer["inputLength"] = l.in_shape.t;
                layer["inferInputLength"] = false;
                layer["activationFn"] = activation({Activation::Identity, 0.01f});
                variables = {"W"};
                break;
            case LayerType::Convolution1d:
                layer["@class"] = pl + "Convolution1DLayer";
                layer["nin"] = l.in_shape.c;
                layer["nout"] = l.units;
                layer["activationFn"] = activation(l.activation);
                layer["convolutionMode"] = l.mode == config::ConvMode::Same ? "Same" : l.mode == config::ConvMode::Causal ? "Causal" : "Truncate";
                layer["kernelSize"] = json::array({l.kernel[0], 1});
                layer["stride"] = json::array({l.stride[0], 1});
                layer["padding"] = json::array({0, 0});
                layer["dilation"] = json::array({l.dilation[0], 1});
                layer["rnnDataFormat"] = "NCW";
                variables = {"W", "b"};
                break;
            default: throw Dl4jRefusal{"it has no DL4J layer"};
        }
        if (has_params(l.type)) {
            layer["biasInit"] = 0.0;
            layer["biasUpdater"] = nullptr;
            layer["gainInit"] = 1.0;
            if (l.type != LayerType::BatchNorm && l.type != LayerType::PRelu) {
                layer["hasBias"] = l.type != LayerType::Embedding;
                layer["timeDistributedFormat"] = nullptr;
            }
            layer["iupdater"] = updater(m.effective_updater(i), m.lr_schedule);
            layer["regularization"] = regularization(l.l1.value_or(m.l1), l.l2.value_or(m.l2));
            layer["regularizationBias"] = json::array();
            layer["weightInitFn"] = weight_init(m.effective_weight_init(i));
            layer["weightNoise"] = nullptr;
        }
        // The wrappers DL4J reads the recurrent layer through: Bidirectional(LastTimeStep(layer)),
        // both directions one layer's copy.
        if (last_step) layer = {{"@class", pl + "recurrent.LastTimeStep"}, {"layerName", name}, {"underlying", layer}};
        if (!bidirectional.empty())
            layer = {{"@class", pl + "recurrent.Bidirectional"}, {"layerName", name}, {"mode", bidirectional},
                     {"nin", l.in_shape.c}, {"nout", l.units}, {"idropout", nullptr}, {"fwd", layer}, {"bwd", layer}};
        out.conf = {{"cacheMode", "NONE"}, {"dataType", "FLOAT"}, {"epochCount", em.epochs},
                    {"iterationCount", em.iterations}, {"layer", layer}, {"maxNumLineSearchIterations", 5},
                    {"miniBatch", true}, {"minimize", true}, {"optimizationAlgo", "STOCHASTIC_GRADIENT_DESCENT"},
                    {"seed", m.seed}, {"stepFunction", nullptr}, {"variables", variables}};
    } catch (const Dl4jRefusal& r) {
        // Activation and schedule refusals come without the layer: name it here.
        if (r.why.rfind("updater:", 0) == 0) throw;
        throw Dl4jRefusal{at + r.why};
    }
    return out;
}

struct Plan {
    json confs = json::array();
    json preprocessors = json::object();
    // A ComputationGraph: its vertices, what each reads, in the order written, and DL4J's
    // topological order of inputs and vertices.
    bool graph = false;
    std::vector<std::string> vertex_names;
    json vertices = json::object(), vertex_inputs = json::object();
    std::vector<std::string> topological;
    std::vector<int> topological_index;
    std::vector<std::size_t> layer_order;  // Thresher layers in DL4J's flattening order
    std::vector<std::string> network_inputs, network_outputs;  // a graph's, in the model's order
};

// A layer stack as a MultiLayerConfiguration, or a Dl4jRefusal naming the first layer DL4J
// cannot express.
Plan plan_stack(const ExportableModel& em) {
    const auto& m = em.config;
    Plan out;
    bool image = !m.input.flat();
    // DL4J's setInputType(convolutionalFlat(h, w, c)) leaves this preprocessor at layer 0 (the
    // importer reads the input shape from it). A dense first layer reads the flat image as it is.
    if (image && !m.layers.empty() && !is_dense(m.layers[0]))
        out.preprocessors["0"] = feed_forward_to_cnn(m.input);
    else
        image = false;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const auto& l = m.layers[i];
        const std::string name = l.name.empty() ? "layer" + std::to_string(i) : l.name;
        const bool split = l.image_output() && l.type != LayerType::Activation;
        auto d = layer_conf(em, i, image, name, split);
        if (!d.preprocessor.is_null()) out.preprocessors[std::to_string(i)] = d.preprocessor;
        out.layer_order.push_back(i);
        if (!split) {
            out.confs.push_back(std::move(d.conf));
            continue;
        }
        // DL4J's CnnLossLayer after it: the activation and the loss, no parameters (so the
        // flattened parameters are unchanged). Read back, it is an activation layer with the loss.
        json loss_conf = d.conf;
        out.confs.push_back(std::move(d.conf));
        auto& layer = loss_conf["layer"];
        layer = {{"@class", "org.deeplearning4j.nn.conf.layers.CnnLossLayer"}, {"layerName", name + "_loss"}, {"idropout", nullptr},
                 {"constraints", nullptr}, {"gradientNormalization", "None"}, {"gradientNormalizationThreshold", 1.0},
                 {"activationFn", activation(l.activation)}, {"lossFn", loss(l.loss)}, {"format", "NCHW"}};
        loss_conf["variables"] = json::array();
        out.confs.push_back(std::move(loss_conf));
    }
    return out;
}

// A graph as a ComputationGraphConfiguration: one vertex per layer, in the model's order (a
// LayerVertex, or ElementWiseVertex / MergeVertex / SubsetVertex / ReshapeVertex), named as the
// model names its layers ("layer<i>" for an unnamed one). Each image input is fed as DL4J's
// convolutionalFlat input type feeds it: flat rows, a FeedForwardToCnnPreProcessor on each layer
// that reads it as an image (a dense layer reads the C·H·W features as they are) and a
// PreprocessorVertex "<input>_image" in front of the vertices that read it. networkInputs are the
// model's inputs in order (DL4J numbers them 0.. before the vertices), networkOutputs its outputs
// in output_layers order. DL4J flattens the parameters in its topological order of these vertices
// from all the inputs (dl4j_graph.h, the importer's emulation of
// ComputationGraph.calculateIndices), written down as topologicalOrder(Str) as DL4J caches it.
// Worked example, the two-input template: networkInputs [top, bottom], vertices top_conv 2 ...
// predictions 9, networkOutputs [predictions, top_guess] (its "outputs" order), each OutputLayer
// with its own lossFn.
Plan plan_graph(const ExportableModel& em) {
    const auto& m = em.config;
    Plan out;
    out.graph = true;
    const std::size_t n = m.layers.size();
    const std::size_t n_inputs = m.input_count();
    // networkInputs: the model's inputs in order (input 0 first).
    std::vector<std::string> net_inputs(n_inputs);
    for (std::size_t k = 0; k < n_inputs; ++k) {
        net_inputs[k] = m.input_name_of(k);
        if (net_inputs[k].empty()) net_inputs[k] = k == 0 ? "input" : "input" + std::to_string(k);
    }
    std::set<std::string> taken(net_inputs.begin(), net_inputs.end());
    std::vector<std::string> names(n);
    for (std::size_t i = 0; i < n; ++i) taken.insert(m.layers[i].name);
    for (std::size_t i = 0; i < n; ++i) {
        names[i] = m.layers[i].name;
        if (names[i].empty()) {
            names[i] = "layer" + std::to_string(i);
            while (taken.count(names[i])) names[i] += "_";
            taken.insert(names[i]);
        }
    }
    // Each image input is fed flat (convolutionalFlat); the vertices that read it read a
    // PreprocessorVertex "<input>_image" in front of them (one per image input read by a vertex).
    std::vector<bool> input_image(n_inputs);
    for (std::size_t k = 0; k < n_inputs; ++k) input_image[k] = !m.input_shape(k).flat();
    std::vector<std::string> image_input(n_inputs);
    std::vector<bool> input_read(n_inputs, false), input_shape_kept(n_inputs, false);
    for (std::size_t i = 0; i < n; ++i)
        for (int s : m.layers[i].sources) {
            if (s >= 0) continue;
            const std::size_t k = LayerConfig::input_index(s);
            input_read[k] = true;
            if (!config::is_vertex(m.layers[i].type)) input_shape_kept[k] = true;  // a preprocessor or a dense nIn states it
            if (!input_image[k] || !config::is_vertex(m.layers[i].type) || !image_input[k].empty()) continue;
            image_input[k] = net_inputs[k] + "_image";
            while (taken.count(image_input[k])) image_input[k] += "_";
            taken.insert(image_input[k]);
            out.vertex_names.push_back(image_input[k]);
            out.vertices[image_input[k]] = {{"@class", "org.deeplearning4j.nn.conf.graph.PreprocessorVertex"},
                                            {"preProcessor", feed_forward_to_cnn(m.input_shape(k))}};
            out.vertex_inputs[image_input[k]] = json::array({net_inputs[k]});
            input_shape_kept[k] = true;
        }
    // The importer finds a further input's shape in a preprocessor or a dense layer's nIn; a flat
    // input only vertices read keeps none in DL4J's configuration.
    for (std::size_t k = 0; k < n_inputs; ++k)
        if (!input_read[k] || !input_shape_kept[k])
            throw Dl4jRefusal{"input \"" + net_inputs[k] + "\": " +
                              (input_read[k] ? std::string("only vertices read these flat features, and DL4J's configuration would keep no size for it")
                                             : std::string("no layer reads it"))};
    std::vector<bool> image(n, false);
    const std::string pg = "org.deeplearning4j.nn.conf.graph.";
    for (std::size_t i = 0; i < n; ++i) {
        const auto& l = m.layers[i];
        json inputs = json::array();
        std::vector<bool> ranks;
        for (int s : l.sources) {
            if (s >= 0) {
                inputs.push_back(names[static_cast<std::size_t>(s)]);
                ranks.push_back(image[static_cast<std::size_t>(s)]);
                continue;
            }
            const std::size_t k = LayerConfig::input_index(s);
            const bool as_image = input_image[k] && config::is_vertex(l.type);
            inputs.push_back(as_image ? image_input[k] : net_inputs[k]);
            ranks.push_back(as_image);
        }
        out.vertex_names.push_back(names[i]);
        out.vertex_inputs[names[i]] = inputs;
        if (!config::is_vertex(l.type)) {
            bool img = ranks.empty() ? false : ranks[0];
            json pre = nullptr;
            if (l.sources.size() == 1 && l.sources[0] < 0 && input_image[LayerConfig::input_index(l.sources[0])] && !is_dense(l)) {
                pre = feed_forward_to_cnn(m.input_shape(LayerConfig::input_index(l.sources[0])));  // convolutionalFlat(h, w, c)
                img = true;
            }
            auto d = layer_conf(em, i, img, names[i]);
            if (!d.preprocessor.is_null()) pre = d.preprocessor;
            image[i] = img;
            out.vertices[names[i]] = {{"@class", pg + "LayerVertex"}, {"layerConf", std::move(d.conf)},
                                      {"outputVertex", false}, {"preProcessor", pre}};
            continue;
        }
        for (std::size_t k = 1; k < ranks.size(); ++k)
            if (ranks[k] != ranks[0])
                throw Dl4jRefusal{layer_label(m, i) + ": DL4J cannot express this layer: it joins an image (a 4-d array in DL4J) "
                                  "with flat features"};
        image[i] = !ranks.empty() && ranks[0];
        json v;
        switch (l.type) {
            case LayerType::Add: v = {{"@class", pg + "ElementWiseVertex"}, {"op", "Add"}}; break;
            case LayerType::Subtract: v = {{"@class", pg + "ElementWiseVertex"}, {"op", "Subtract"}}; break;
            case LayerType::Multiply: v = {{"@class", pg + "ElementWiseVertex"}, {"op", "Product"}}; break;
            case LayerType::Average: v = {{"@class", pg + "ElementWiseVertex"}, {"op", "Average"}}; break;
            case LayerType::Maximum: v = {{"@class", pg + "ElementWiseVertex"}, {"op", "Max"}}; break;
            case LayerType::Concatenate: v = {{"@class", pg + "MergeVertex"}}; break;  // along dimension 1
            case LayerType::Subset: v = {{"@class", pg + "SubsetVertex"}, {"from", l.subset[0]}, {"to", l.subset[1]}}; break;
            case LayerType::Reshape: {
                // ReshapeVertex reshapes the NCHW activations in 'c' order: Thresher's channels_first
                // (the same values, a new shape). newShape counts the minibatch first.
                if (l.channels_last_order)
                    throw Dl4jRefusal{layer_label(m, i) + ": DL4J cannot express this layer: reshape with order channels_last "
                                      "(DL4J's ReshapeVertex counts the values channels first)"};
                const auto& t = l.reshape_to;
                v = {{"@class", pg + "ReshapeVertex"}, {"maskShape", nullptr}, {"reshapeOrder", "c"},
                     {"newShape", t.flat() ? json::array({-1, t.c}) : json::array({-1, t.c, t.h, t.w})}};
                image[i] = !t.flat();
                break;
            }
            case LayerType::Permute:
                throw Dl4jRefusal{layer_label(m, i) + ": DL4J cannot express this layer: DL4J has no vertex that permutes "
                                  "channels, height and width"};
            default: throw Dl4jRefusal{layer_label(m, i) + ": DL4J cannot express this layer: it has no DL4J vertex"};
        }
        out.vertices[names[i]] = v;
    }
    // networkOutputs in the model's output order (the main output first).
    out.network_inputs = net_inputs;
    for (std::size_t o : m.output_layers) out.network_outputs.push_back(names[o]);
    if (out.network_outputs.empty()) out.network_outputs.push_back(names.back());
    // DL4J's numbering: the network inputs, then the vertices in the order written.
    std::vector<std::pair<std::string, std::vector<std::string>>> listed;
    for (const auto& name : out.vertex_names) listed.emplace_back(name, out.vertex_inputs[name].get<std::vector<std::string>>());
    out.topological = config::dl4j_topological_order(net_inputs, listed);
    std::map<std::string, int> index;
    for (std::size_t k = 0; k < n_inputs; ++k) index[net_inputs[k]] = static_cast<int>(k);
    for (std::size_t k = 0; k < out.vertex_names.size(); ++k) index[out.vertex_names[k]] = static_cast<int>(n_inputs + k);
    std::map<std::string, std::size_t> layer_of;
    for (std::size_t i = 0; i < n; ++i) layer_of[names[i]] = i;
    for (const auto& name : out.topological) {
        out.topological_index.push_back(index.at(name));
        if (const auto it = layer_of.find(name); it != layer_of.end()) out.layer_order.push_back(it->second);
    }
    return out;
}

// The whole configuration, or a Dl4jRefusal naming the first layer DL4J cannot express.
Plan plan(const ExportableModel& em) {
    if (auto why = dl4j_normalizer_refusal(em.normalization)) throw Dl4jRefusal{*why};
    const auto& m = em.config;
    // A DL4J vertex owns its parameters: a shared layer's later call would train weights of its
    // own there. Shared layers without parameters (pooling, activations) are written as copies.
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const auto& l = m.layers[i];
        if (l.shares_index < 0) continue;
        const auto owner = static_cast<std::size_t>(l.shares_index);
        if (m.layers[owner].param_count > 0)
            throw Dl4jRefusal{l.label(i) + ": DL4J ComputationGraphs cannot share a layer's parameters: layer \"" + l.name +
                              "\" uses those of " + m.layers[owner].label(owner)};
    }
    bool graph = m.is_graph();
    for (const auto& l : m.layers) graph = graph || config::is_vertex(l.type);
    // Only a ComputationGraph's networkInputTypes keep a sequence's steps (InputTypeRecurrent).
    if (m.input.sequence() && m.input_count() > 1)
        throw Dl4jRefusal{"a sequence model with several inputs has no DL4J export yet"};
    graph = graph || m.input.sequence();
    return graph ? plan_graph(em) : plan_stack(em);
}

}  // namespace

std::optional<std::string> dl4j_refusal(const ExportableModel& m) {
    try {
        plan(m);
    } catch (const Dl4jRefusal& r) {
        return r.why;
    }
    return std::nullopt;
}

namespace {

Plan checked_plan(const ExportableModel& m) {
    try {
        return plan(m);
    } catch (const Dl4jRefusal& r) {
        throw ExportError(m.source + ": " + r.why + "; nothing was written");
    }
}

}  // namespace

nlohmann::json dl4j_configuration(const ExportableModel& m) {
    Plan p = checked_plan(m);
    json common{{"backpropType", "Standard"},
                {"cacheMode", "NONE"},
                {"dataType", "FLOAT"},
                {"epochCount", m.epochs},
                {"inferenceWorkspaceMode", "ENABLED"},
                {"iterationCount", m.iterations},
                {"tbpttBackLength", 20},
                {"tbpttFwdLength", 20},
                {"trainingWorkspaceMode", "ENABLED"},
                {"validateOutputLayerConfig", true}};
    if (!p.graph) {
        common["confs"] = std::move(p.confs);
        common["inputPreProcessors"] = std::move(p.preprocessors);
        return common;
    }
    // ComputationGraphConfiguration.toJson() of an initialised graph (as ModelSerializer saves
    // it), every field the real DL4J 1.0 graph files in tests/engine/config/data/graphs have.
    const auto& cfg = m.config;
    common["defaultConfiguration"] = {{"cacheMode", "NONE"}, {"dataType", "FLOAT"}, {"epochCount", m.epochs},
                                      {"iterationCount", m.iterations}, {"layer", nullptr}, {"maxNumLineSearchIterations", 5},
                                      {"miniBatch", true}, {"minimize", true}, {"optimizationAlgo", "STOCHASTIC_GRADIENT_DESCENT"},
                                      {"seed", cfg.seed}, {"stepFunction", nullptr}, {"variables", json::array()}};
    common["networkInputs"] = p.network_inputs;
    if (cfg.input.sequence())
        common["networkInputTypes"] = json::array({{{"@class", "org.deeplearning4j.nn.conf.inputs.InputType$InputTypeRecurrent"},
                                                    {"size", cfg.input.c}, {"timeSeriesLength", cfg.input.t}, {"format", "NCW"}}});
    common["networkOutputs"] = p.network_outputs;
    common["topologicalOrder"] = p.topological_index;
    common["topologicalOrderStr"] = p.topological;
    common["vertexInputs"] = std::move(p.vertex_inputs);
    common["vertices"] = std::move(p.vertices);
    return common;
}

std::vector<std::string> dl4j_vertex_order(const ExportableModel& m) { return checked_plan(m).vertex_names; }

std::string dl4j_configuration_text(const ExportableModel& m) {
    const auto j = dl4j_configuration(m);
    auto out = nlohmann::ordered_json::parse(j.dump());  // sorted keys, as DL4J's mapper sorts properties
    if (j.contains("vertices")) {
        nlohmann::ordered_json vertices = nlohmann::ordered_json::object(), inputs = nlohmann::ordered_json::object();
        for (const auto& name : dl4j_vertex_order(m)) {
            vertices[name] = out["vertices"][name];
            inputs[name] = out["vertexInputs"][name];
        }
        out["vertices"] = std::move(vertices);
        out["vertexInputs"] = std::move(inputs);
    }
    return out.dump(2);
}

std::vector<std::size_t> dl4j_layer_order(const ExportableModel& m) { return checked_plan(m).layer_order; }

}  // namespace thresher::model_export
