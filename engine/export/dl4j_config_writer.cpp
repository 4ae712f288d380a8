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
#include <cmath>

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
           t == LayerType::PRelu;
}

// Whether the layer needs an image in, and whether it leaves one.
bool reads_image(const LayerConfig& l) {
    return l.type == LayerType::Convolution || l.type == LayerType::Subsampling || l.type == LayerType::ZeroPadding ||
           l.type == LayerType::Cropping || l.type == LayerType::Upsampling;
}

struct Plan {
    json confs = json::array();
    json preprocessors = json::object();
};

// The whole configuration, or a Dl4jRefusal naming the first layer DL4J cannot express.
Plan plan(const ExportableModel& em) {
    const auto& m = em.config;
    for (std::size_t i = 0; i < m.layers.size(); ++i)
        if (config::is_vertex(m.layers[i].type))
            throw Dl4jRefusal{layer_label(m, i) + ": DL4J cannot express this layer: it is a vertex of a graph (" +
                              std::string(config::to_string(m.layers[i].type)) +
                              "), and the DL4J export writes a MultiLayerNetwork (a layer stack); export the graph as ONNX"};
    if (m.is_graph())
        for (std::size_t i = 0; i < m.layers.size(); ++i)
            if (m.layers[i].sources.size() != 1 || m.layers[i].sources[0] != static_cast<int>(i) - 1)
                throw Dl4jRefusal{layer_label(m, i) + ": DL4J cannot express this layer: it does not read the layer before it "
                                  "(a graph), and the DL4J export writes a MultiLayerNetwork (a layer stack); export it as ONNX"};
    if (auto why = dl4j_normalizer_refusal(em.normalization)) throw Dl4jRefusal{*why};

    Plan out;
    bool image = !m.input.flat();
    // DL4J's setInputType(convolutionalFlat(h, w, c)) leaves this preprocessor at layer 0 (the
    // importer reads the input shape from it). A dense first layer reads the flat image as it is.
    if (image && !m.layers.empty() && m.layers[0].type != LayerType::Dense && m.layers[0].type != LayerType::Output)
        out.preprocessors["0"] = {{"@class", "org.deeplearning4j.nn.conf.preprocessor.FeedForwardToCnnPreProcessor"},
                                  {"inputHeight", m.input.h}, {"inputWidth", m.input.w}, {"numChannels", m.input.c}};
    else
        image = false;
    const std::string pl = "org.deeplearning4j.nn.conf.layers.";
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const auto& l = m.layers[i];
        const std::string at = layer_label(m, i) + ": DL4J cannot express this layer: ";
        try {
            json layer{{"layerName", l.name.empty() ? "layer" + std::to_string(i) : l.name}, {"idropout", nullptr},
                       {"constraints", nullptr}, {"gradientNormalization", "None"}, {"gradientNormalizationThreshold", 1.0}};
            json variables = json::array();
            const bool global = l.type == LayerType::Subsampling && l.global;
            if ((reads_image(l) || global) && !image)
                throw Dl4jRefusal{"an image layer after the features were flattened (DL4J's layer stack cannot rebuild the image)"};
            switch (l.type) {
                case LayerType::Dense:
                case LayerType::Output:
                    if (image) {  // DL4J flattens the image (c, h, w: Thresher's order too) in a preprocessor
                        out.preprocessors[std::to_string(i)] = {
                            {"@class", "org.deeplearning4j.nn.conf.preprocessor.CnnToFeedForwardPreProcessor"}, {"format", "NCHW"},
                            {"inputHeight", l.in_shape.h}, {"inputWidth", l.in_shape.w}, {"numChannels", l.in_shape.c}};
                        image = false;
                    }
                    layer["@class"] = pl + (l.type == LayerType::Dense ? "DenseLayer" : "OutputLayer");
                    layer["nin"] = l.in_shape.size();
                    layer["nout"] = l.units;
                    layer["activationFn"] = activation(l.activation);
                    layer["hasLayerNorm"] = false;
                    if (l.type == LayerType::Output) layer["lossFn"] = loss(l.loss);
                    variables = {"W", "b"};
                    break;
                case LayerType::Convolution:
                    layer["@class"] = pl + "ConvolutionLayer";
                    layer["nin"] = l.in_shape.c;
                    layer["nout"] = l.units;
                    layer["activationFn"] = activation(l.activation);
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
                    variables = {"W", "b"};
                    break;
                case LayerType::Subsampling:
                    if (global) {
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
                    layer["idropout"] = {{"@class", "org.deeplearning4j.nn.conf.dropout.Dropout"}, {"p", num(l.retain)},
                                         {"pSchedule", nullptr}};
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
                        layer["@class"] = pl + "LossLayer";
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
                case LayerType::DepthwiseConvolution:
                case LayerType::SeparableConvolution:
                case LayerType::TransposedConvolution:
                    throw Dl4jRefusal{"the DL4J export does not write depthwise, separable or transposed convolutions yet "
                                      "(DL4J's Deconvolution2D and friends; Thresher's DL4J importer does not map their "
                                      "weights either)"};
                default: throw Dl4jRefusal{"it has no DL4J layer"};
            }
            if (has_params(l.type)) {
                layer["biasInit"] = 0.0;
                layer["biasUpdater"] = nullptr;
                layer["gainInit"] = 1.0;
                if (l.type != LayerType::BatchNorm && l.type != LayerType::PRelu) {
                    layer["hasBias"] = true;
                    layer["timeDistributedFormat"] = nullptr;
                }
                layer["iupdater"] = updater(m.effective_updater(i), m.lr_schedule);
                layer["regularization"] = regularization(l.l1.value_or(m.l1), l.l2.value_or(m.l2));
                layer["regularizationBias"] = json::array();
                layer["weightInitFn"] = weight_init(m.effective_weight_init(i));
                layer["weightNoise"] = nullptr;
            }
            out.confs.push_back({{"cacheMode", "NONE"}, {"dataType", "FLOAT"}, {"epochCount", em.epochs},
                                 {"iterationCount", em.iterations}, {"layer", layer}, {"maxNumLineSearchIterations", 5},
                                 {"miniBatch", true}, {"minimize", true}, {"optimizationAlgo", "STOCHASTIC_GRADIENT_DESCENT"},
                                 {"seed", m.seed}, {"stepFunction", nullptr}, {"variables", variables}});
        } catch (const Dl4jRefusal& r) {
            // Activation and schedule refusals come without the layer: name it here.
            if (r.why.rfind("updater:", 0) == 0) throw;
            throw Dl4jRefusal{at + r.why};
        }
    }
    return out;
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

nlohmann::json dl4j_configuration(const ExportableModel& m) {
    Plan p;
    try {
        p = plan(m);
    } catch (const Dl4jRefusal& r) {
        throw ExportError(m.source + ": " + r.why + "; nothing was written");
    }
    return json{{"backpropType", "Standard"},
                {"cacheMode", "NONE"},
                {"confs", std::move(p.confs)},
                {"dataType", "FLOAT"},
                {"epochCount", m.epochs},
                {"inferenceWorkspaceMode", "ENABLED"},
                {"inputPreProcessors", std::move(p.preprocessors)},
                {"iterationCount", m.iterations},
                {"tbpttBackLength", 20},
                {"tbpttFwdLength", 20},
                {"trainingWorkspaceMode", "ENABLED"},
                {"validateOutputLayerConfig", true}};
}

}  // namespace thresher::model_export
