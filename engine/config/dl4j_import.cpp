// Reading one DL4J layer takes four questions whose answers come in two spellings (current
// "@class" objects, older strings): which activation, which weight init, which updater, which
// regularisation. Each has one function below that accepts both.
#include "config/dl4j_import.h"

#include <cmath>
#include <filesystem>
#include <map>

#include "config/dl4j_graph.h"
#include "config/dl4j_recurrent.h"
#include "config/import_support.h"
#include "config/json_fields.h"
#include "config/schedule_import.h"
#include "core/error.h"

namespace thresher::config {

namespace {

using import::Place;
using import::simple_class_name;

enum class Kind { Dense, Output, Convolution, Subsampling, BatchNorm, Dropout, Activation, GlobalPooling, ZeroPadding, PRelu, Loss,
                  CnnLoss, Cropping, Upsampling, DepthwiseConvolution, SeparableConvolution, TransposedConvolution,
                  Recurrent, Embedding, Convolution1d, Subsampling1d };

std::optional<Kind> kind_of(const std::string& name) {
    static const std::map<std::string, Kind> kinds{
        {"DenseLayer", Kind::Dense},          {"dense", Kind::Dense},
        {"OutputLayer", Kind::Output},        {"output", Kind::Output},
        {"ConvolutionLayer", Kind::Convolution}, {"Convolution2D", Kind::Convolution},
        {"convolution", Kind::Convolution},   {"SubsamplingLayer", Kind::Subsampling},
        {"Subsampling2D", Kind::Subsampling}, {"subsampling", Kind::Subsampling},
        {"BatchNormalization", Kind::BatchNorm}, {"batchNormalization", Kind::BatchNorm},
        {"DropoutLayer", Kind::Dropout},      {"dropout", Kind::Dropout},
        {"ActivationLayer", Kind::Activation}, {"activation", Kind::Activation},
        {"GlobalPoolingLayer", Kind::GlobalPooling}, {"GlobalPooling", Kind::GlobalPooling},
        {"ZeroPaddingLayer", Kind::ZeroPadding}, {"zeroPadding", Kind::ZeroPadding},
        {"PReLULayer", Kind::PRelu}, {"prelu", Kind::PRelu},
        {"LossLayer", Kind::Loss}, {"loss", Kind::Loss}, {"CnnLossLayer", Kind::CnnLoss},
        {"Cropping2D", Kind::Cropping}, {"Upsampling2D", Kind::Upsampling},
        {"DepthwiseConvolution2D", Kind::DepthwiseConvolution}, {"SeparableConvolution2D", Kind::SeparableConvolution},
        {"Deconvolution2D", Kind::TransposedConvolution},
        // Sequences (dl4j_recurrent.h): an RnnOutputLayer is an output, an RnnLossLayer a loss
        // layer, on a sequence (a loss per step).
        {"RnnOutputLayer", Kind::Output}, {"rnnoutput", Kind::Output}, {"RnnLossLayer", Kind::Loss},
        {"LSTM", Kind::Recurrent}, {"GravesLSTM", Kind::Recurrent}, {"gravesLSTM", Kind::Recurrent},
        {"GravesBidirectionalLSTM", Kind::Recurrent}, {"gravesBidirectionalLSTM", Kind::Recurrent},
        {"SimpleRnn", Kind::Recurrent}, {"EmbeddingLayer", Kind::Embedding}, {"EmbeddingSequenceLayer", Kind::Embedding},
        {"embedding", Kind::Embedding}, {"Convolution1DLayer", Kind::Convolution1d}, {"Convolution1D", Kind::Convolution1d},
        {"convolution1d", Kind::Convolution1d}, {"Subsampling1DLayer", Kind::Subsampling1d}, {"subsampling1d", Kind::Subsampling1d}};
    auto it = kinds.find(name);
    if (it == kinds.end()) return std::nullopt;
    return it->second;
}

// Fields every DL4J version writes that either match what Thresher does or only steer DL4J's own
// execution (workspaces, cuDNN algorithm choice); reading them would change nothing.
void ignore_harmless(Place& p) {
    p.ignore({"@class", "layerName", "biasInit", "gainInit", "constraints", "timeDistributedFormat",
              "cudnnAlgoMode", "cudnnFwdAlgo", "cudnnBwdFilterAlgo", "cudnnBwdDataAlgo",
              "cudnnAllowFallback", "dist", "variables", "pnorm", "eps", "biasLearningRate",
              "learningRateSchedule", "lrScoreBasedDecay", "momentumSchedule", "momentumAfter",
              "learningRateAfter", "gradientNormalizationThreshold", "convolutionType",
              "avgPoolIncludePadInDivisor", "useLogStd", "isMinibatch", "gamma", "beta",
              "collapseDimensions", "nin", "nIn", "nout", "nOut", "weightNoise", "biasUpdater",
              "gradientNormalization", "hasLayerNorm", "regularizationBias", "l1Bias", "l2Bias",
              "customLossFunction", "rho", "adamMeanDecay", "adamVarDecay", "rmsDecay", "epsilon",
              "momentum", "learningRate"});
}

const char* kSupportedActivations =
    "identity, relu, leakyrelu, tanh, sigmoid, softmax, elu, selu, relu6, hardsigmoid, softplus, softsign, "
    "thresholdedrelu, swish, gelu (precise=false)";

ActivationSpec activation_from_name(Place& p, const std::string& key, const std::string& name, float alpha) {
    const std::string n = normalise_name(name);
    if (n == "identity" || n == "linear") return {Activation::Identity, 0.01f};
    if (n == "relu") return {Activation::Relu, 0.01f};
    if (n == "leakyrelu" || n == "lrelu") return {Activation::LeakyRelu, alpha};
    if (n == "tanh") return {Activation::Tanh, 0.01f};
    if (n == "sigmoid") return {Activation::Sigmoid, 0.01f};
    if (n == "softmax") return {Activation::Softmax, 0.01f};
    if (n == "elu") return {Activation::Elu, 1.f};
    if (n == "selu") return {Activation::Selu, 0.01f};
    if (n == "relu6") return {Activation::Relu6, 0.01f};
    if (n == "hardsigmoid") return {Activation::HardSigmoid, 0.2f};  // DL4J: clamp(0.2x + 0.5, 0, 1)
    if (n == "softplus") return {Activation::Softplus, 0.01f};
    if (n == "softsign") return {Activation::Softsign, 0.01f};
    if (n == "thresholdedrelu") return {Activation::ThresholdedRelu, 1.f};
    if (n == "swish") return {Activation::Swish, 0.01f};
    if (n == "gelu") return {Activation::GeluSigmoid, 0.01f};  // DL4J's default: x·sigmoid(1.702x)
    p.fail(key, "activation \"" + name + "\" is not supported (Thresher has " + kSupportedActivations + ")");
}

// "activationFn": {"@class": "org.nd4j.linalg.activations.impl.ActivationReLU", ...} (1.0.0-alpha
// on), {"ReLU": {}} (0.7 - 0.9.x, Jackson's wrapper object), or the oldest "activationFunction":
// "relu" (with the leaky slope at the conf level, "leakyreluAlpha").
// `key` names another activation field of the same spelling (an LSTM's "gateActivationFn").
ActivationSpec read_activation(Place& p, float legacy_alpha, const char* key) {
    const bool main_key = std::string(key) == "activationFn";
    if (const auto* fn = p.object({key})) {
        const auto t = import::typed(*fn);
        if (!t) p.fail(key, "expected {\"@class\": ...} or {\"<activation>\": {...}}, got " + json_summary(*fn));
        std::vector<std::string> scratch;  // an activation object has nothing worth a note
        Place a(*t->body, p.source(), p.where() + "." + std::string(key), scratch);
        // 1.0 spells classes ActivationReLU, 0.x wrappers ReLU.
        std::string cls = t->name;
        if (!t->wrapped) {
            if (cls.rfind("Activation", 0) != 0) p.fail(key, "unknown activation class " + json_summary(*fn));
            cls = cls.substr(10);
        }
        const auto n = normalise_name(cls);
        if (n == "relu") {
            // DL4J 1.0's ReLU carries optional max / threshold / negativeSlope.
            const auto slope = a.hyper({"negativeSlope"}, import::kUnit).value_or(0.0);
            const auto max = a.number({"max"}).value_or(0.0);
            const auto threshold = a.hyper({"threshold"}, import::Range{0.0, 100.0}).value_or(0.0);
            if (threshold != 0.0 && max == 0.0 && slope == 0.0) return {Activation::ThresholdedRelu, static_cast<float>(threshold)};
            if (threshold != 0.0 || (max != 0.0 && (max != 6.0 || slope != 0.0)))
                p.fail(key, "ReLU with a threshold and a max or slope, or a max other than 6, is not supported");
            if (max == 6.0) return {Activation::Relu6, 0.01f};
            if (slope != 0.0) return {Activation::LeakyRelu, static_cast<float>(slope)};
            return {Activation::Relu, 0.01f};
        }
        if (n == "lrelu" || n == "leakyrelu")
            return {Activation::LeakyRelu, static_cast<float>(a.hyper({"alpha"}, import::kUnit).value_or(0.01))};
        if (n == "thresholdedrelu")
            return {Activation::ThresholdedRelu, static_cast<float>(a.hyper({"theta"}, import::Range{0.0, 100.0}).value_or(1.0))};
        if (n == "elu") return {Activation::Elu, static_cast<float>(a.hyper({"alpha"}, import::Range{0.0, 100.0}).value_or(1.0))};
        // ActivationGELU: precise=false (the default) is libnd4j's GELU op, x·sigmoid(1.702x);
        // precise=true is libnd4j's PreciseGELU, whose cubic term differs from the published tanh form.
        if (n == "gelu" && a.boolean({"precise"}).value_or(false))
            p.fail(key, "GELU with precise=true is not supported (Thresher has DL4J's default GELU, "
                                   "precise=false: x·sigmoid(1.702x))");
        return activation_from_name(p, key, cls, 0.01f);
    }
    if (auto name = main_key ? p.string({"activationFunction"}) : std::nullopt) {
        if (normalise_name(*name) == "leakyrelu" && !import::Range{0.0, 1.0}.contains(legacy_alpha))
            p.fail("activationFunction", "leakyrelu needs the conf's \"leakyreluAlpha\" in [0, 1]");
        return activation_from_name(p, "activationFunction", *name, legacy_alpha);
    }
    if (main_key) p.note("no activation given: using DL4J's default, sigmoid");
    return {Activation::Sigmoid, 0.01f};
}
ActivationSpec read_activation(Place& p, float legacy_alpha) { return read_activation(p, legacy_alpha, "activationFn"); }

WeightInit init_from_name(Place& p, const std::string& key, const std::string& name) {
    const std::string n = normalise_name(name);
    if (n == "xavier") return WeightInit::Xavier;
    if (n == "xavieruniform") return WeightInit::XavierUniform;
    if (n == "relu") return WeightInit::Relu;
    if (n == "normal") return WeightInit::Normal;
    if (n == "uniform") return WeightInit::Uniform;
    if (n == "zero") return WeightInit::Zero;
    if (n == "reluuniform") {
        p.note("\"" + key + "\": " + name + " approximated by relu (He normal)");
        return WeightInit::Relu;
    }
    if (n == "distribution") {
        p.note("\"" + key + "\": DISTRIBUTION approximated by normal (N(0, 1/fan_in)); the distribution's own "
               "parameters are not used");
        return WeightInit::Normal;
    }
    p.note("\"" + key + "\": " + name + " has no Thresher equivalent: using xavier");
    return WeightInit::Xavier;
}

// "weightInitFn": {"@class": "org.deeplearning4j.nn.weights.WeightInitXavier"} (1.0.0-beta4 on), the
// wrapper spelling {"WeightInitXavier": {}}, or "weightInit": "XAVIER" (with "dist" for DISTRIBUTION).
std::optional<WeightInit> read_weight_init(Place& p) {
    if (const auto* fn = p.object({"weightInitFn"})) {
        const auto t = import::typed(*fn);
        if (!t) p.fail("weightInitFn", "expected {\"@class\": ...} or {\"<weight init>\": {...}}, got " + json_summary(*fn));
        std::string cls = t->name;
        if (cls == "WeightInitConstant" && import::number_or(*t->body, "value", 1.0) == 0.0) return WeightInit::Zero;
        if (cls.rfind("WeightInit", 0) == 0) cls = cls.substr(10);
        else if (!t->wrapped) p.fail("weightInitFn", "unknown weight init class " + json_summary(*fn));
        return init_from_name(p, "weightInitFn", cls);
    }
    if (auto name = p.string({"weightInit"})) return init_from_name(p, "weightInit", *name);
    return std::nullopt;
}

// A DL4J hyperparameter is a number or an ISchedule object; a schedule is imported as its start.
// Either way the value must lie in `range`.
double scheduled_value(Place& p, const std::string& key, const nlohmann::json& v, const import::Range& range) {
    auto checked = [&](const nlohmann::json& x) {
        if (!x.is_number() || !range.contains(x.get<double>()))
            p.fail(key, "must be a number " + range.text() + ", got " + json_summary(x));
        return x.get<double>();
    };
    if (v.is_number() || v.is_string()) return checked(v);
    if (const auto t = import::typed(v)) {
        const auto& b = *t->body;
        if (t->name == "FixedSchedule" && b.contains("value")) return checked(b["value"]);
        if (b.is_object() && b.contains("initialValue")) {
            const double start = checked(b["initialValue"]);
            p.note("\"" + key + "\": " + t->name + " imported as its initial value " + import::number_text(start) +
                   " (Thresher has no schedules)");
            return start;
        }
        if (b.is_object() && b.contains("values") && b["values"].is_object()) {
            // MapSchedule: {"values": {"0": 0.1, "1000": 0.01}}; what applies from iteration 0.
            const auto& values = b["values"];
            if (!values.contains("0")) p.fail(key, t->name + " has no value for 0: " + json_summary(v));
            const double start = checked(values["0"]);
            p.note("\"" + key + "\": " + t->name + " imported as its value at 0, " + import::number_text(start) +
                   " (Thresher has no schedules)");
            return start;
        }
        p.fail(key, "schedule " + t->name + " is not supported: " + json_summary(v));
    }
    p.fail(key, "must be a number or a schedule, got " + json_summary(v));
}

UpdaterSpec default_updater(UpdaterKind kind) {
    // DL4J's defaults per updater, as Thresher JSON uses them.
    UpdaterSpec u;
    u.kind = kind;
    switch (kind) {
        case UpdaterKind::Sgd: u.learning_rate = 1e-3f; break;
        case UpdaterKind::Nesterovs: u.learning_rate = 0.1f; break;
        case UpdaterKind::AdaGrad: u.learning_rate = 0.1f; u.epsilon = 1e-6f; break;
        case UpdaterKind::RmsProp: u.learning_rate = 0.1f; u.epsilon = 1e-8f; break;
        case UpdaterKind::Adam: u.learning_rate = 1e-3f; u.epsilon = 1e-8f; break;
    }
    return u;
}

std::optional<UpdaterKind> updater_kind(const std::string& name) {
    const std::string n = normalise_name(name);
    if (n == "sgd") return UpdaterKind::Sgd;
    if (n == "nesterovs") return UpdaterKind::Nesterovs;
    if (n == "adagrad") return UpdaterKind::AdaGrad;
    if (n == "rmsprop") return UpdaterKind::RmsProp;
    if (n == "adam") return UpdaterKind::Adam;
    return std::nullopt;
}

// The fields `kind` uses, read strictly: a NaN, infinite or out-of-range value is refused, never
// replaced by a default. Fields of other updaters (DL4J 0.x writes them all, mostly "NaN") are left.
// `names` gives the file's spelling of each: 1.0's updater objects say beta1, 0.x layers adamMeanDecay.
struct UpdaterFieldNames {
    const char *beta1, *beta2;
};
// `legacy`: a 0.x layer's "updater" string, whose "epsilon": "NaN" DL4J itself reads as the
// updater's default (BaseNetConfigDeserializer's backward compatibility); every other NaN stays refused.
void read_updater_fields(Place& u, UpdaterSpec& s, const UpdaterFieldNames& names, bool legacy = false) {
    if (s.kind == UpdaterKind::Nesterovs)
        if (auto v = u.hyper({"momentum"}, import::kUnit)) s.momentum = static_cast<float>(*v);
    if (s.kind == UpdaterKind::Adam) {
        if (auto v = u.hyper({names.beta1}, import::kUnitOpenTop)) s.beta1 = static_cast<float>(*v);
        if (auto v = u.hyper({names.beta2}, import::kUnitOpenTop)) s.beta2 = static_cast<float>(*v);
    }
    if (s.kind == UpdaterKind::RmsProp)
        if (auto v = u.hyper({"rmsDecay"}, import::kUnit)) s.rms_decay = static_cast<float>(*v);
    const auto& j = u.json();
    if (legacy && j.contains("epsilon") && j["epsilon"].is_string() && j["epsilon"].get<std::string>() == "NaN") {
        u.ignore({"epsilon"});
        return;  // default_updater's epsilon, as DL4J
    }
    if (s.kind == UpdaterKind::AdaGrad || s.kind == UpdaterKind::RmsProp || s.kind == UpdaterKind::Adam)
        if (auto v = u.hyper({"epsilon"}, import::Range{0.0, 1.0, true, false})) s.epsilon = static_cast<float>(*v);
}

// "iupdater": {"@class": "org.nd4j.linalg.learning.config.Nesterovs", "learningRate": 0.1, ...}
// (or its wrapper spelling {"Nesterovs": {...}}), or the older "updater": "NESTEROVS" with
// "learningRate", "momentum", ... beside it on the layer.
std::optional<UpdaterSpec> read_updater(Place& p, std::optional<LrSchedule>& schedule) {
    const char* kSupported = " is not supported (Thresher has Sgd, Nesterovs, AdaGrad, RmsProp, Adam)";
    if (const auto* obj = p.object({"iupdater", "iUpdater"})) {
        const auto t = import::typed(*obj);
        if (!t) p.fail("iupdater", "expected {\"@class\": ...} or {\"<updater>\": {...}}, got " + json_summary(*obj));
        Place u = p.nested(*t->body, ".iupdater");
        auto kind = updater_kind(t->name);
        if (!kind) p.fail("iupdater", "updater " + t->name + kSupported);
        UpdaterSpec s = default_updater(*kind);
        // 1.0 writes "learningRate": "NaN" beside a schedule; otherwise the rate must be a number.
        const auto* sched = u.object({"learningRateSchedule"});
        if (!sched) {
            if (auto lr = u.hyper({"learningRate"}, import::kNonNegative)) s.learning_rate = static_cast<float>(*lr);
        } else {
            double fixed = 0.0;
            schedule = import::dl4j_schedule(u, "learningRateSchedule", *sched, &fixed);
            s.learning_rate = static_cast<float>(schedule ? schedule->value_at(0, 0) : fixed);
            u.ignore({"learningRate"});
        }
        if (u.has("momentumISchedule") || u.has("momentumSchedule"))
            p.note("\"iupdater\": momentum schedule ignored (Thresher schedules the learning rate only)");
        read_updater_fields(u, s, {"beta1", "beta2"});
        return s;
    }
    auto name = p.string({"updater"});
    if (!name) return std::nullopt;
    auto kind = updater_kind(*name);
    if (!kind) p.fail("updater", "updater " + *name + kSupported);
    UpdaterSpec s = default_updater(*kind);
    if (auto v = p.hyper({"learningRate"}, import::kNonNegative)) s.learning_rate = static_cast<float>(*v);
    read_updater_fields(p, s, {"adamMeanDecay", "adamVarDecay"}, true);
    return s;
}

// "regularization": [{"@class": "...L2Regularization", "l2": {FixedSchedule}}, ...] or the older
// plain "l1" / "l2" numbers.
void read_regularisation(Place& p, LayerConfig& l, bool legacy_enabled) {
    float l1 = 0.f, l2 = 0.f;
    if (const auto* list = p.array({"regularization"})) {
        for (const auto& r : *list) {
            const auto t = import::typed(r);
            const std::string cls = t ? t->name : "";
            auto value = [&](const char* key) -> float {
                if (!t->body->contains(key)) p.fail("regularization", cls + " without \"" + key + "\": " + json_summary(r));
                return static_cast<float>(
                    scheduled_value(p, std::string("regularization.") + key, (*t->body)[key], import::kRegularisation));
            };
            if (cls == "L1Regularization") {
                l1 += value("l1");
            } else if (cls == "L2Regularization") {
                l2 += value("l2");
            } else if (cls == "WeightDecay") {
                const float c = value("coeff");
                l2 += c;
                p.note("\"regularization\": WeightDecay " + import::number_text(c) +
                       " approximated as l2 (Thresher adds l2·w to the gradient before the updater)");
            } else {
                p.fail("regularization", "unsupported regularization " + json_summary(r));
            }
        }
    } else if (!legacy_enabled) {
        // DL4J 0.x reads none of these when the conf says "useRegularization": false, and writes
        // "NaN" for those never set: whatever they hold (a number, "NaN", "Infinity") is unused.
        std::string unused;
        for (const char* key : {"l1", "l2", "l1Bias", "l2Bias"}) {
            const auto& j = p.json();
            const auto it = j.find(key);
            if (it == j.end() || it->is_null() || (it->is_number() && it->get<double>() == 0.0)) continue;
            unused += (unused.empty() ? "\"" : ", \"") + std::string(key) + "\": " + it->dump();
        }
        p.ignore({"l1", "l2", "l1Bias", "l2Bias"});
        if (!unused.empty()) p.note(unused + " not used: the conf says \"useRegularization\": false");
        l.l1 = l.l2 = 0.f;
        return;
    } else {
        l1 = static_cast<float>(p.hyper({"l1"}, import::kRegularisation).value_or(0.0));
        l2 = static_cast<float>(p.hyper({"l2"}, import::kRegularisation).value_or(0.0));
    }
    l.l1 = l1;
    l.l2 = l2;
    const auto* bias = p.array({"regularizationBias"});
    if ((bias && !bias->empty()) || p.number({"l1Bias"}).value_or(0.0) != 0.0 || p.number({"l2Bias"}).value_or(0.0) != 0.0)
        p.note("bias regularisation ignored (Thresher never regularises biases)");
}

// The probability of *keeping* an input (DL4J's dropOut(p) and Dropout(p) both mean retain);
// `spatial` is set for SpatialDropout (whole channels kept or dropped, the same p).
std::optional<float> read_dropout(Place& p, bool* spatial = nullptr) {
    if (const auto* d = p.object({"idropout"})) {
        const auto t = import::typed(*d);
        const std::string cls = t ? t->name : json_summary(*d);
        if (cls != "Dropout" && cls != "SpatialDropout")
            p.fail("idropout", cls + " is not supported (only Dropout and SpatialDropout)");
        if (spatial) *spatial = cls == "SpatialDropout";
        std::vector<std::string> scratch;
        Place dp(*t->body, p.source(), p.where() + ".idropout", scratch);
        if (dp.has("pSchedule")) p.note("\"idropout\": dropout schedule ignored; using p");
        return static_cast<float>(dp.hyper({"p"}, import::kRetain).value_or(0.5));
    }
    // 0.x: 0 meant "no dropout"; otherwise the retain probability.
    if (p.number({"dropOut"}).value_or(0.0) == 0.0) return std::nullopt;
    return static_cast<float>(*p.hyper({"dropOut"}, import::kRetain));
}

// "lossFn": {"@class": "org.nd4j.linalg.lossfunctions.impl.LossMCXENT", ...} (1.0), {"MCXENT": {...}}
// (0.7 - 0.9.x), or the oldest "lossFunction": "MCXENT".
LossKind read_loss(Place& p) {
    std::string name;
    if (const auto* fn = p.object({"lossFn"})) {
        const auto t = import::typed(*fn);
        if (!t) p.fail("lossFn", "expected {\"@class\": ...} or {\"<loss>\": {...}}, got " + json_summary(*fn));
        name = t->name;
        if (t->body->contains("weights") && !(*t->body)["weights"].is_null())
            p.fail("lossFn", "per-output loss weights are not supported");
        if (name.rfind("Loss", 0) == 0) name = name.substr(4);
    } else if (auto s = p.string({"lossFunction"})) {
        name = *s;
    } else {
        p.fail("lossFn", "is required on an output layer");
    }
    const std::string n = normalise_name(name);
    if (n == "mcxent") return LossKind::MultiClassCrossEntropy;
    if (n == "negativeloglikelihood") return LossKind::NegativeLogLikelihood;
    if (n == "binaryxent" || n == "xent") return LossKind::BinaryCrossEntropy;
    if (n == "mse") return LossKind::MSE;
    if (n == "mae" || n == "meanabsoluteerror") return LossKind::MAE;
    p.fail(p.has("lossFn") ? "lossFn" : "lossFunction",
           "loss " + name + " is not supported (Thresher has MCXENT, NEGATIVELOGLIKELIHOOD, XENT, MSE, MAE)");
}

ConvMode read_mode(Place& p) {
    const auto mode = p.string({"convolutionMode"}).value_or("Truncate");
    const auto n = normalise_name(mode);
    if (n == "same") return ConvMode::Same;
    if (n == "truncate") return ConvMode::Truncate;
    if (n == "causal") return ConvMode::Causal;  // Convolution1DLayer only (shape inference refuses it elsewhere)
    if (n == "strict") {
        p.note("convolutionMode Strict imported as Truncate (same sizes whenever Strict accepts them)");
        return ConvMode::Truncate;
    }
    p.fail("convolutionMode", mode + " is not supported (Truncate, Strict, Same or, in one dimension, Causal)");
}

// What a layer said its input size was, checked against shape inference once the whole model is
// known: the surest sign that the input shape was understood.
struct InputCheck {
    std::size_t layer;
    int n_in;
    std::string where;
};

// One spatial dimension through convolution and pooling layers (shape_inference.cpp's formulas);
// 0 when a window does not fit.
int forward_dim(int in, const std::vector<LayerConfig>& layers, int d) {
    for (const auto& l : layers) {
        // Padding adds its two sides, cropping takes them off, upsampling multiplies.
        if (l.type == LayerType::ZeroPadding) in += l.margins[2 * d] + l.margins[2 * d + 1];
        if (l.type == LayerType::Cropping) in -= l.margins[2 * d] + l.margins[2 * d + 1];
        if (l.type == LayerType::Upsampling) in *= l.scale[d];
        if (in < 1) return 0;
        if (l.type != LayerType::Convolution && l.type != LayerType::Subsampling) continue;
        const int dil = l.type == LayerType::Convolution ? l.dilation[d] : 1;
        const long long k_eff = static_cast<long long>(l.kernel[d] - 1) * dil + 1;
        if (l.mode == ConvMode::Same) {
            in = (in + l.stride[d] - 1) / l.stride[d];
        } else {
            const long long span = static_cast<long long>(in) + 2LL * l.padding[d] - k_eff;
            if (span < 0) return 0;
            in = static_cast<int>(span / l.stride[d] + 1);
        }
    }
    return in;
}

struct Preprocessor {
    std::string kind;  // simple class name
    int height = 0, width = 0, channels = 0;
    std::string where;
};

// RnnToFeedForward and FeedForwardToRnn let DL4J run a dense layer on every step ([mb, n, T] as
// [mb*T, n] and back); Thresher's dense and output layers do that on a sequence themselves.
bool is_rnn_flattening(const std::string& kind) {
    return kind == "RnnToFeedForwardPreProcessor" || kind == "FeedForwardToRnnPreProcessor" || kind == "rnnToFeedForward" ||
           kind == "feedForwardToRnn";
}

std::map<int, Preprocessor> read_preprocessors(Place& root) {
    std::map<int, Preprocessor> out;
    const auto* pre = root.object({"inputPreProcessors"});
    if (!pre) return out;
    static const std::map<std::string, std::string> legacy{{"cnnToFeedForward", "CnnToFeedForwardPreProcessor"},
                                                           {"feedForwardToCnn", "FeedForwardToCnnPreProcessor"},
                                                           {"rnnToFeedForward", "RnnToFeedForwardPreProcessor"},
                                                           {"feedForwardToRnn", "FeedForwardToRnnPreProcessor"},
                                                           {"cnnToRnn", "CnnToRnnPreProcessor"},
                                                           {"rnnToCnn", "RnnToCnnPreProcessor"}};
    for (const auto& [key, value] : pre->items()) {
        const std::string where = "inputPreProcessors[" + key + "]";
        int index = -1;
        try {
            index = std::stoi(key);
        } catch (const std::exception&) {
        }
        if (index < 0 || std::to_string(index) != key) root.fail("inputPreProcessors", "key \"" + key + "\" is not a layer index");
        Preprocessor p;
        p.where = where;
        const nlohmann::json* body = &value;
        if (value.is_object() && value.contains("@class")) {
            p.kind = simple_class_name(value["@class"].is_string() ? value["@class"].get<std::string>() : "");
        } else if (value.is_object() && value.size() == 1 && value.begin().value().is_object()) {
            auto it = legacy.find(value.begin().key());
            p.kind = it == legacy.end() ? value.begin().key() : it->second;
            body = &value.begin().value();
        } else {
            root.fail("inputPreProcessors", where + " is not a preprocessor: " + json_summary(value));
        }
        if (is_rnn_flattening(p.kind)) continue;
        if (p.kind != "CnnToFeedForwardPreProcessor" && p.kind != "FeedForwardToCnnPreProcessor")
            throw ConfigError(root.source() + ": " + where + ": preprocessor " + p.kind + " is not supported" +
                              (p.kind.find("Rnn") != std::string::npos ? " (Thresher's sequences are not made from images or into them)" : ""));
        std::vector<std::string> scratch;
        Place b(*body, root.source(), where, scratch);
        p.height = b.integer({"inputHeight"}, 1).value_or(0);
        p.width = b.integer({"inputWidth"}, 1).value_or(0);
        p.channels = b.integer({"numChannels"}, 1).value_or(0);
        if (!p.height || !p.width || !p.channels)
            b.fail("needs \"inputHeight\", \"inputWidth\" and \"numChannels\"");
        out[index] = p;
    }
    return out;
}

// A conf's layer in either spelling: {"@class": "...DenseLayer", ...} or {"dense": {...}}.
struct ConfLayer {
    std::string cls, name;
    const nlohmann::json* body = nullptr;
    Dl4jWrapping wrapping;  // Bidirectional / LastTimeStep around it
};

ConfLayer layer_of(Place& c) {
    const auto* layer = c.object({"layer"});
    if (!layer) c.fail("layer", "is required");
    auto t = import::typed(*layer);
    if (!t) c.fail("layer", "expected {\"@class\": ...} or {\"<layer type>\": {...}}, got " + json_summary(*layer));
    // FrozenLayer ("layer") and FrozenLayerWithBackprop ("underlying") wrap the layer they freeze.
    if (t->name == "FrozenLayer" || t->name == "FrozenLayerWithBackprop") {
        const char* key = t->body->contains("underlying") ? "underlying" : "layer";
        if (!t->body->contains(key) || !(*t->body)[key].is_object()) c.fail("layer", t->name + " without the layer it wraps");
        t = import::typed((*t->body)[key]);
        if (!t) c.fail("layer", "the layer a FrozenLayer wraps is not a layer object");
    }
    ConfLayer out{t->name, "", t->body, {}};
    if (t->body->contains("layerName") && (*t->body)["layerName"].is_string())
        out.name = (*t->body)["layerName"].get<std::string>();
    // Bidirectional and LastTimeStep: the wrapped layer holds the settings (dl4j_recurrent.h).
    const auto inner = dl4j_unwrap_sequence_layer(c, *t, out.wrapping);
    out.cls = inner->name;
    out.body = inner->body;
    return out;
}

Place layer_place(const Place& c, const ConfLayer& l, std::vector<std::string>& notes) {
    const auto& what = l.wrapping.label.empty() ? l.cls : l.wrapping.label;
    return Place(*l.body, c.source(), c.where() + " (" + what + (l.name.empty() ? "" : " \"" + l.name + "\"") + ")", notes);
}

std::string kUnsupportedLayer(const std::string& cls) {
    return "layer type " + cls + " is not supported (Thresher imports DenseLayer, OutputLayer, ConvolutionLayer, "
           "SubsamplingLayer, GlobalPoolingLayer, ZeroPaddingLayer, Cropping2D, Upsampling2D, BatchNormalization, DropoutLayer, "
           "PReLULayer, ActivationLayer, LossLayer, CnnLossLayer, DepthwiseConvolution2D, SeparableConvolution2D, Deconvolution2D, "
           "LSTM, GravesLSTM, GravesBidirectionalLSTM, SimpleRnn, Bidirectional, LastTimeStep, EmbeddingLayer, "
           "EmbeddingSequenceLayer, Convolution1DLayer, Subsampling1DLayer, RnnOutputLayer and RnnLossLayer)";
}


// What every DL4J model ends with: model-wide defaults hoisted from the layers, the one learning-
// rate schedule, the validated model, and each layer's nIn checked against its inferred input
// (the surest sign the input shape was understood).
ModelConfig finish_layers(ModelConfig& m, const std::vector<InputCheck>& checks,
                          const std::vector<std::pair<std::string, std::optional<LrSchedule>>>& schedules,
                          std::vector<std::string>& notes, const std::string& source) {
    import::hoist_layer_defaults(m);
    if (!schedules.empty() && schedules.front().second) {
        m.lr_schedule = schedules.front().second;
        m.updater.learning_rate = static_cast<float>(m.lr_schedule->value_at(0, 0));
        notes.push_back("learning rate: " + m.lr_schedule->describe());
    }
    auto model = import::validated(m, source);
    for (const auto& c : checks) {
        const auto& l = model.layers[c.layer];
        const bool per_channel = is_convolution(l.type) || (l.type == LayerType::BatchNorm && !l.in_shape.flat()) ||
                                 l.in_shape.sequence();  // a sequence's nIn counts one step's features
        const auto have = per_channel ? static_cast<std::size_t>(l.in_shape.c) : l.in_shape.size();
        if (have != static_cast<std::size_t>(c.n_in))
            throw ConfigError(source + ": " + c.where + ": \"nIn\": is " + std::to_string(c.n_in) + " but the layer's input is " +
                              l.in_shape.str() + (per_channel ? " (channels " : " (") + std::to_string(have) + ")");
    }
    return model;
}

// --- ComputationGraphConfiguration ---------------------------------------------------------------

// A vertex in either spelling: {"@class": "org.deeplearning4j.nn.conf.graph.MergeVertex", ...}
// (1.0) or {"MergeVertex": {...}} (0.x).
struct GraphVertexJson {
    std::string cls;
    const nlohmann::json* body = nullptr;
};

// The input shape a graph states: networkInputTypes (1.0.0-beta on) or a FeedForwardToCnn
// preprocessor on a layer that reads the input.
struct GraphInput {
    std::optional<Shape> shape;
    std::string where;
    // A graph with several inputs: the shapes found for the others, by input name.
    std::map<std::string, Shape> others;
    int sequence_steps = 0;  // an EmbeddingSequenceLayer's inputLength, when it reads the input
    int given_steps = 0;     // ImportOptions::steps: for a sequence input whose steps the file leaves open
};

// Layers whose input is a sequence whatever comes before them.
bool reads_sequence(LayerType t) { return is_recurrent(t) || t == LayerType::Embedding || t == LayerType::Convolution1d; }

const char* const kNeedsSteps =
    "Thresher needs the number of time steps of a sequence input, the longest sequence the model will read "
    "(shorter ones are padded and masked): give it with --steps N (the app asks for it), or save the model with "
    "setInputTypes(InputType.recurrent(size, timeSeriesLength)) (a ComputationGraph), or start it with an "
    "EmbeddingSequenceLayer with an inputLength";

// `given_steps`: ImportOptions::steps, for a recurrent input type without a timeSeriesLength.
std::optional<Shape> input_type_shape(Place& root, const nlohmann::json& t, int given_steps) {
    const auto typed = import::typed(t);
    if (!typed) root.fail("networkInputTypes", "expected an InputType object, got " + json_summary(t));
    std::string kind = typed->name;
    if (const auto dollar = kind.rfind('$'); dollar != std::string::npos) kind = kind.substr(dollar + 1);
    const auto& b = *typed->body;
    auto num = [&](const char* key) -> int {
        if (!b.contains(key) || !b[key].is_number_integer() || b[key].get<long long>() < 1 || b[key].get<long long>() > (1 << 24))
            root.fail("networkInputTypes", kind + ": \"" + key + "\" must be a positive integer, got " +
                                               (b.contains(key) ? json_summary(b[key]) : std::string("nothing")));
        return b[key].get<int>();
    };
    if (kind == "InputTypeFeedForward") return Shape{num("size"), 1, 1};
    if (kind == "InputTypeConvolutional" || kind == "InputTypeConvolutionalFlat") {
        const int c = num(b.contains("channels") ? "channels" : "depth");
        if (b.contains("format") && b["format"].is_string() && b["format"].get<std::string>() == "NHWC")
            root.note("networkInputTypes: NHWC: Thresher feeds images as channels x height x width");
        return Shape{c, num("height"), num("width")};
    }
    if (kind == "InputTypeRecurrent") {
        // DL4J writes timeSeriesLength -1 for InputType.recurrent(size) without a length.
        const auto& len = b.contains("timeSeriesLength") ? b["timeSeriesLength"] : nlohmann::json();
        const bool open = !len.is_number_integer() || len.get<long long>() < 1;
        if (open && given_steps > 0) return sequence_shape(given_steps, num("size"));
        if (open)
            root.fail("networkInputTypes", "InputTypeRecurrent without a timeSeriesLength (got " + json_summary(len) + "): " + kNeedsSteps);
        if (len.get<long long>() > kMaxImportSteps) root.fail("networkInputTypes", "timeSeriesLength beyond 2^20 steps");
        return sequence_shape(len.get<int>(), num("size"));
    }
    root.fail("networkInputTypes", "input type " + kind + " is not supported (feed-forward, convolutional or recurrent)");
}

std::string kUnsupportedVertex(const std::string& cls) {
    return "vertex type " + cls + " is not supported (Thresher imports LayerVertex, ElementWiseVertex (Add, Subtract, "
           "Product, Average, Max), MergeVertex, SubsetVertex, ReshapeVertex ('c' order) and PreprocessorVertex with "
           "CnnToFeedForwardPreProcessor)";
}

// Walks the vertices in DL4J's order, each LayerVertex through `read_conf` (the MultiLayer path),
// each other vertex into a Thresher vertex or, when it changes nothing (a flattening
// preprocessor), into a name for its input.
template <typename ReadConf>
GraphInput import_graph(Place& root, ModelConfig& m, ReadConf& read_conf, const std::vector<std::string>& vertex_order) {
    const auto* vertices = root.object({"vertices"});
    const auto* vertex_inputs = root.object({"vertexInputs"});
    const auto* net_inputs = root.array({"networkInputs"});
    const auto* net_outputs = root.array({"networkOutputs"});
    if (!vertices || !vertex_inputs || !net_inputs || !net_outputs)
        root.fail("a ComputationGraph configuration needs \"vertices\", \"vertexInputs\", \"networkInputs\" and \"networkOutputs\"");
    auto names_of = [&](const nlohmann::json& list, const char* key) {
        std::vector<std::string> out;
        for (const auto& v : list) {
            if (!v.is_string()) root.fail(key, "must list names, got " + json_summary(v));
            out.push_back(v.get<std::string>());
        }
        return out;
    };
    const auto inputs = names_of(*net_inputs, "networkInputs");
    const auto outputs = names_of(*net_outputs, "networkOutputs");
    if (inputs.empty() || inputs.size() > 64) root.fail("networkInputs", "must list the graph's inputs (1 to 64)");
    if (outputs.empty() || outputs.size() > 64) root.fail("networkOutputs", "must list the graph's outputs (1 to 64)");
    auto is_input = [&](const std::string& n) { return std::find(inputs.begin(), inputs.end(), n) != inputs.end(); };
    auto is_output = [&](const std::string& n) { return std::find(outputs.begin(), outputs.end(), n) != outputs.end(); };

    // The vertices in the file's order (the order DL4J numbers them in).
    std::vector<std::string> keys = vertex_order;
    if (keys.size() != vertices->size()) {
        keys.clear();
        for (const auto& [k, v] : vertices->items()) keys.push_back(k);
    }
    std::vector<std::pair<std::string, std::vector<std::string>>> listed;
    std::map<std::string, GraphVertexJson> by_name;
    std::map<std::string, int> readers;
    for (const auto& name : keys) {
        const auto& v = (*vertices)[name];
        const std::string where = "vertices[\"" + name + "\"]";
        const auto t = import::typed(v);
        if (!t) root.fail("vertices", where + " is not a vertex: " + json_summary(v));
        GraphVertexJson g{simple_class_name(t->name), t->body};
        std::vector<std::string> ins;
        if (vertex_inputs->contains(name) && (*vertex_inputs)[name].is_array())
            for (const auto& in : (*vertex_inputs)[name]) {
                if (!in.is_string()) root.fail("vertexInputs", "\"" + name + "\" must list names, got " + json_summary(in));
                ins.push_back(in.get<std::string>());
                ++readers[in.get<std::string>()];
            }
        if (ins.empty()) root.fail("vertexInputs", "vertex \"" + name + "\" reads nothing");
        for (const auto& in : ins)
            if (!vertices->contains(in) && std::find(inputs.begin(), inputs.end(), in) == inputs.end())
                root.fail("vertexInputs", "vertex \"" + name + "\" reads \"" + in + "\", which is neither a vertex nor a network input");
        listed.emplace_back(name, ins);
        by_name[name] = g;
    }
    // Every vertex and layer type first: an unsupported one is what the user hears about.
    for (const auto& [name, ins] : listed) {
        const auto& g = by_name[name];
        std::vector<std::string> scratch;
        Place p(*g.body, root.source(), "vertices[\"" + name + "\"] (" + g.cls + ")", scratch);
        if (g.cls == "LayerVertex") {
            const auto* conf = p.object({"layerConf"});
            if (!conf) p.fail("layerConf", "is required");
            Place c(*conf, root.source(), "vertices[\"" + name + "\"]", scratch);
            const auto l = layer_of(c);
            if (!kind_of(l.cls)) layer_place(c, l, scratch).fail(kUnsupportedLayer(l.cls));
        } else if (g.cls != "ElementWiseVertex" && g.cls != "MergeVertex" && g.cls != "SubsetVertex" &&
                   g.cls != "ReshapeVertex" && g.cls != "PreprocessorVertex" && g.cls != "LastTimeStepVertex") {
            p.fail(kUnsupportedVertex(g.cls));
        }
    }

    // DL4J's own order: its parameters are flattened in it, and Thresher's follow the layer list.
    std::vector<std::string> order;
    if (root.has("topologicalOrderStr")) {
        order = names_of(*root.array({"topologicalOrderStr"}), "topologicalOrderStr");
        root.ignore({"topologicalOrder"});
    } else {
        order = dl4j_topological_order(inputs, listed);
    }
    if (order.size() != listed.size() + inputs.size())
        root.fail("vertices", "the graph has a cycle, or topologicalOrderStr does not list every vertex once");

    m.input_name = inputs[0];
    for (std::size_t k = 1; k < inputs.size(); ++k) m.extra_inputs.push_back({inputs[k], Shape{}});  // shapes: finish_graph
    GraphInput input;
    std::map<std::string, std::string> alias;  // a vertex that became no layer: the name it passes on
    auto resolve = [&](std::string n) {
        for (auto it = alias.find(n); it != alias.end(); it = alias.find(n)) n = it->second;
        return n;
    };
    // A FeedForwardToCnn preprocessor on a network input (fed flat, convolutionalFlat): that
    // input is the image it describes.
    auto input_image = [&](const nlohmann::json& body, const std::string& where, const std::string& name) {
        Place b(body, root.source(), where + ".preProcessor", root.notes());
        const auto h = b.integer({"inputHeight"}, 1), w = b.integer({"inputWidth"}, 1), c = b.integer({"numChannels"}, 1);
        if (!h || !w || !c) b.fail("needs \"inputHeight\", \"inputWidth\" and \"numChannels\"");
        if (name != inputs[0]) {
            input.others[name] = Shape{*c, *h, *w};
        } else {
            input.shape = Shape{*c, *h, *w};
            input.where = where + ".preProcessor";
        }
    };
    bool first_layer = true;
    for (const auto& name : order) {
        if (is_input(name)) continue;
        const auto it = by_name.find(name);
        if (it == by_name.end()) root.fail("topologicalOrderStr", "lists \"" + name + "\", which is not a vertex");
        const auto& g = it->second;
        const auto& raw = std::find_if(listed.begin(), listed.end(), [&](const auto& e) { return e.first == name; })->second;
        std::vector<std::string> ins;
        for (const auto& r : raw) ins.push_back(resolve(r));
        const std::string where = "vertices[\"" + name + "\"]";
        Place p(*g.body, root.source(), where + " (" + g.cls + ")", root.notes());
        p.ignore({"@class"});
        if (g.cls == "LayerVertex") {
            if (const auto* pre = p.object({"preProcessor"})) {
                const auto t = import::typed(*pre);
                const std::string kind = t ? simple_class_name(t->name) : "";
                const bool flatten = kind == "CnnToFeedForwardPreProcessor" || kind == "cnnToFeedForward";
                const bool unflatten = kind == "FeedForwardToCnnPreProcessor" || kind == "feedForwardToCnn";
                if (unflatten && ins.size() == 1 && is_input(ins[0])) {
                    input_image(*t->body, where, ins[0]);
                } else if (!flatten && !is_rnn_flattening(kind)) {
                    p.fail("preProcessor", "preprocessor " + (kind.empty() ? json_summary(*pre) : kind) +
                                               " is not supported here (CnnToFeedForward, RnnToFeedForward and FeedForwardToRnn anywhere, "
                                               "FeedForwardToCnn on the network input)");
                }
            }
            p.ignore({"layerConf", "outputVertex", "preProcessor"});
            p.note_unread();
            const bool may_fold = ins.size() == 1 && raw.size() == 1 && raw[0] == ins[0] && !m.layers.empty() &&
                                  m.layers.back().name == ins[0] && readers[ins[0]] == 1;
            const std::size_t before = m.layers.size();
            const std::string back_before = before ? m.layers.back().name : "";
            const auto back_inputs = before ? m.layers.back().inputs : std::vector<std::string>{};
            read_conf((*g.body)["layerConf"], where, first_layer, is_output(name), may_fold);
            first_layer = false;
            if (m.layers.size() > before) {
                auto& first = m.layers[before];
                first.inputs = ins;
                m.layers.back().name = name;  // what other vertices read it by
            } else if (!m.layers.empty() && m.layers.back().name != back_before) {
                m.layers.back().inputs = back_inputs;  // a zero padding folded into this convolution
                m.layers.back().name = name;
                alias[back_before] = name;
            } else {
                alias[name] = ins[0];  // folded into its input, or a dropout without dropout
            }
            continue;
        }
        if (g.cls == "LastTimeStepVertex") {
            // Each sample's last valid step of a recurrent layer that nothing else reads: that
            // layer with return_sequences false.
            auto producer = std::find_if(m.layers.begin(), m.layers.end(), [&](const LayerConfig& l) { return l.name == ins[0]; });
            if (ins.size() != 1 || producer == m.layers.end() || !is_recurrent(producer->type) || !producer->return_sequences ||
                readers[raw[0]] != 1)
                p.fail("LastTimeStepVertex is supported right after a recurrent layer that nothing else reads (it reads \"" +
                       raw[0] + "\")");
            if (producer->bidirectional != BiMode::None)  // as LastTimeStep (dl4j_recurrent.cpp)
                p.fail("LastTimeStepVertex after a bidirectional layer is not supported (DL4J's backward direction has read only "
                       "the last step there, Thresher's the whole sequence)");
            producer->return_sequences = false;
            p.ignore({"maskArrayInputName"});
            p.note_unread();
            alias[name] = ins[0];
            continue;
        }
        LayerConfig l;
        l.name = name;
        l.origin = where;
        l.origin_what = g.cls + " \"" + name + "\"";
        l.inputs = ins;
        if (g.cls == "ElementWiseVertex") {
            const auto op = p.string({"op"}).value_or("Add");
            static const std::map<std::string, LayerType> ops{{"Add", LayerType::Add}, {"Subtract", LayerType::Subtract},
                                                              {"Product", LayerType::Multiply}, {"Average", LayerType::Average},
                                                              {"Max", LayerType::Maximum}};
            const auto o = ops.find(op);
            if (o == ops.end()) p.fail("op", "\"" + op + "\" is not supported (Add, Subtract, Product, Average, Max)");
            l.type = o->second;
        } else if (g.cls == "MergeVertex") {
            // Along dimension 1: channels of images, features of flat activations and of each step of
            // recurrent ones ([batch, size, T]).
            if (const auto axis = p.integer({"mergeAxis"}, -100); axis && *axis != 1)
                p.fail("mergeAxis", "merging along dimension " + std::to_string(*axis) + " is not supported (only 1, the channels)");
            l.type = LayerType::Concatenate;
        } else if (g.cls == "SubsetVertex") {
            const auto from = p.integer({"from"}, 0), to = p.integer({"to"}, 0);
            if (!from || !to) p.fail("needs \"from\" and \"to\"");
            l.type = LayerType::Subset;
            l.subset = {*from, *to};
        } else if (g.cls == "ReshapeVertex") {
            // newShape counts the minibatch first: [mb, n] (flat) or [mb, c, h, w] (NCHW). 'c' order
            // on NCHW activations is Thresher's channels_first reshape (the same values, a new shape).
            const auto order = p.string({"reshapeOrder"}).value_or("c");
            if (order != "c") p.fail("reshapeOrder", "'" + order + "' is not supported (only 'c', counting the values channels first)");
            const auto* shape = p.array({"newShape"});
            if (!shape || (shape->size() != 2 && shape->size() != 4))
                p.fail("newShape", "must be [minibatch, size] or [minibatch, channels, height, width]");
            std::vector<int> dims;
            for (std::size_t k = 1; k < shape->size(); ++k) {
                const auto& d = (*shape)[k];
                if (!d.is_number_integer() || d.get<long long>() < 1 || d.get<long long>() > (1 << 24))
                    p.fail("newShape", "every size after the minibatch must be a positive integer, got " + json_summary(d));
                dims.push_back(d.get<int>());
            }
            p.ignore({"maskShape"});
            l.type = LayerType::Reshape;
            l.reshape_to = dims.size() == 1 ? Shape{dims[0], 1, 1} : Shape{dims[0], dims[1], dims[2]};
            l.channels_last_order = false;
        } else {  // PreprocessorVertex
            const auto* pre = p.object({"preProcessor"});
            const auto t = pre ? import::typed(*pre) : std::nullopt;
            const std::string kind = t ? simple_class_name(t->name) : "";
            const bool unflatten = kind == "FeedForwardToCnnPreProcessor" || kind == "feedForwardToCnn";
            if (unflatten && ins.size() == 1 && is_input(ins[0])) {
                // The network input fed flat (convolutionalFlat) and made an image for the
                // vertices that read it: Thresher's input is the image itself.
                input_image(*t->body, where, ins[0]);
            } else if (kind != "CnnToFeedForwardPreProcessor" && kind != "cnnToFeedForward" && !is_rnn_flattening(kind)) {
                p.fail("preProcessor", "preprocessor " + (kind.empty() ? std::string("(none)") : kind) +
                                           " is not supported (CnnToFeedForwardPreProcessor, or FeedForwardToCnnPreProcessor on "
                                           "the network input: Thresher's dense layers flatten images themselves)");
            }
            p.ignore({"preProcessor"});
            p.note_unread();
            alias[name] = ins[0];
            continue;
        }
        p.note_unread();
        m.layers.push_back(std::move(l));
    }
    if (m.layers.empty()) root.fail("networkOutputs", "the graph computes nothing Thresher keeps");
    if (outputs.size() == 1 && resolve(outputs[0]) != m.layers.back().name)
        root.fail("networkOutputs", "the output \"" + outputs[0] + "\" must be the last vertex that computes something");
    if (outputs.size() > 1) {
        for (const auto& o : outputs) {
            const auto name = resolve(o);
            if (std::none_of(m.layers.begin(), m.layers.end(), [&](const LayerConfig& l) { return l.name == name; }))
                root.fail("networkOutputs", "the output \"" + o + "\" computes nothing Thresher keeps");
            m.outputs.push_back(name);
        }
    }
    return input;
}

// After the layers: the input shape, model-wide defaults and the learning-rate schedule, the
// validated model, and each layer's nIn checked against its inferred input.
ImportResult finish_graph(Place& root, ModelConfig& m, const GraphInput& input, const std::vector<InputCheck>& checks,
                          const std::vector<std::pair<std::string, std::optional<LrSchedule>>>& schedules,
                          ImportResult result) {
    const auto source = root.source();
    const auto* types = root.array({"networkInputTypes"});
    // Further inputs: networkInputTypes (in networkInputs order), a FeedForwardToCnn preprocessor,
    // or the nIn of a dense layer that reads them.
    for (std::size_t k = 0; k < m.extra_inputs.size(); ++k) {
        auto& e = m.extra_inputs[k];
        if (types && types->size() > k + 1) {
            if (const auto shape = input_type_shape(root, (*types)[k + 1], input.given_steps)) e.shape = *shape;
        } else if (const auto it = input.others.find(e.name); it != input.others.end()) {
            e.shape = it->second;
        } else {
            for (const auto& c : checks)
                if (e.shape.size() == 0 && m.layers[c.layer].inputs.size() == 1 && m.layers[c.layer].inputs[0] == e.name &&
                    (m.layers[c.layer].type == LayerType::Dense || m.layers[c.layer].type == LayerType::Output))
                    e.shape = Shape{c.n_in, 1, 1};
        }
        if (e.shape.size() == 0)
            root.fail("networkInputs", "cannot tell the shape of input \"" + e.name +
                                           "\": no networkInputTypes for it, no FeedForwardToCnn preprocessor and no dense layer with an nIn reads it");
    }
    // The first layer that reads the input: past the dropout DL4J puts in front of a layer with
    // dropOut (0.x graphs of LSTMs have one).
    std::size_t first_read = 0;
    while (first_read < m.layers.size() && m.layers[first_read].type == LayerType::Dropout) ++first_read;
    if (types && !types->empty()) {
        if (const auto shape = input_type_shape(root, (*types)[0], input.given_steps)) m.input = *shape;
    } else if (input.shape) {
        m.input = *input.shape;
    } else if (!checks.empty() && checks.front().layer == 0 && (m.layers[0].type == LayerType::Dense || m.layers[0].type == LayerType::Output)) {
        m.input = Shape{checks.front().n_in, 1, 1};
    } else if (const auto c = std::find_if(checks.begin(), checks.end(), [&](const InputCheck& c) {
                   const auto& l = m.layers[c.layer];
                   return l.inputs.size() == 1 && l.inputs[0] == m.input_name && (l.type == LayerType::Dense || l.type == LayerType::Output);
               });
               !m.extra_inputs.empty() && c != checks.end()) {
        m.input = Shape{c->n_in, 1, 1};  // several inputs: a dense layer that reads the first
    } else if (first_read < m.layers.size() && m.layers[first_read].type == LayerType::Embedding &&
               (input.sequence_steps || input.given_steps)) {
        m.input = sequence_shape(input.sequence_steps ? input.sequence_steps : input.given_steps, 1);
    } else if (first_read < m.layers.size() && reads_sequence(m.layers[first_read].type) && input.given_steps && !checks.empty() &&
               checks.front().layer == first_read) {
        m.input = sequence_shape(input.given_steps, checks.front().n_in);  // the first layer's nIn: its features
    } else if (first_read < m.layers.size() && reads_sequence(m.layers[first_read].type)) {
        root.fail("networkInputTypes", std::string("cannot tell the input shape: the first layer reads a sequence. ") + kNeedsSteps);
    } else {
        root.fail("cannot tell the input shape: no networkInputTypes (DL4J writes them for setInputTypes(...)), no "
                  "FeedForwardToCnn preprocessor on the input, and the first layer is not a dense layer with an nIn");
    }
    result.model = finish_layers(m, checks, schedules, result.notes, source);
    root.ignore({"vertices", "vertexInputs", "networkInputs", "networkOutputs", "networkInputTypes", "defaultConfiguration",
                 "backpropType", "cacheMode", "dataType", "epochCount", "iterationCount", "inferenceWorkspaceMode",
                 "trainingWorkspaceMode", "tbpttBackLength", "tbpttFwdLength", "validateOutputLayerConfig",
                 "topologicalOrder", "topologicalOrderStr", "pretrain", "backprop"});
    root.note_unread();
    return result;
}
}  // namespace

ImportResult import_dl4j(const nlohmann::json& root_json, const std::string& source,
                         const std::vector<std::string>& vertex_order, const ImportOptions& options) {
    ImportResult result;
    result.format = ModelFormat::Dl4j;
    auto& notes = result.notes;
    Place root(root_json, source, "model", notes);
    // A ComputationGraphConfiguration: named vertices and what each reads, instead of "confs".
    const bool graph = root.has("vertices") || root.has("networkInputs");
    static const nlohmann::json kNoConfs = nlohmann::json::array();
    const auto* confs = graph ? &kNoConfs : root.array({"confs"});
    if (!confs || (!graph && confs->empty())) root.fail("confs", "must be a non-empty array of layer configurations");

    ModelConfig m;
    m.name = std::filesystem::path(source).stem().string();
    if (m.name.empty()) m.name = "dl4j";
    std::vector<InputCheck> checks;
    std::vector<std::size_t> first_of_conf;  // our index of each conf's first layer (a dropout in front, if any)
    std::vector<std::pair<std::string, std::optional<LrSchedule>>> schedules;  // per layer with parameters
    int sequence_steps = 0;  // the time steps the first layer states (EmbeddingSequenceLayer's inputLength)

    // Every layer's type is checked before anything else, so an unsupported layer is what the user
    // hears about first, never a shape or hyperparameter complaint that follows from it.
    for (std::size_t i = 0; i < confs->size(); ++i) {
        const std::string conf_where = "confs[" + std::to_string(i) + "]";
        std::vector<std::string> scratch;
        Place c((*confs)[i], source, conf_where, scratch);
        const auto l = layer_of(c);
        if (!kind_of(l.cls)) layer_place(c, l, scratch).fail(kUnsupportedLayer(l.cls));
    }

    // One NeuralNetConfiguration ("conf": a MultiLayer's confs[i], a graph's LayerVertex layerConf)
    // into the layer (and an input dropout in front of it) it stands for. `may_fold`: the layer
    // before it in m.layers is its only input and nothing else reads that, so an activation layer
    // or a zero padding may be merged into it.
    auto read_conf = [&](const nlohmann::json& conf_json, const std::string& conf_where, bool first, bool last,
                         bool may_fold) {
        Place c(conf_json, source, conf_where, notes);
        if (c.json().contains("layer") && c.json()["layer"].is_object()) {
            const auto t = import::typed(c.json()["layer"]);
            if (t && (t->name == "FrozenLayer" || t->name == "FrozenLayerWithBackprop"))
                c.note("layer: " + t->name + " is trained here like the layer it wraps (Thresher cannot hold parameters fixed)");
        }
        const auto conf_layer = layer_of(c);
        const std::string& cls = conf_layer.cls;
        const std::string& name = conf_layer.name;
        Place p = layer_place(c, conf_layer, notes);
        const std::string where = p.where();
        const std::string what = cls + (name.empty() ? "" : " \"" + name + "\"");
        const auto kind = kind_of(cls);
        if (!kind) p.fail(kUnsupportedLayer(cls));

        // Conf-level settings. Every conf repeats the builder's seed; the first stands for the model.
        if (auto s = c.number({"seed"}); first && s && *s >= 0 && *s < 9.007199254740992e15)
            m.seed = static_cast<std::uint64_t>(*s);
        const bool use_regularization = c.boolean({"useRegularization"}).value_or(true);
        // Only a leakyrelu layer uses it (read_activation checks the range then); DL4J writes "NaN" when unset.
        const auto& alpha_json = c.json().contains("leakyreluAlpha") ? c.json()["leakyreluAlpha"] : nlohmann::json(0.01);
        // Out of range stays out of range (and a double beyond float is never cast): read_activation refuses it.
        const double alpha_value = alpha_json.is_number() ? alpha_json.get<double>() : std::nan("");
        const float leaky_alpha = alpha_value >= 0.0 && alpha_value <= 1.0 ? static_cast<float>(alpha_value) : std::nanf("");
        c.ignore({"leakyreluAlpha"});
        if (auto algo = c.string({"optimizationAlgo"}); algo && normalise_name(*algo) != "stochasticgradientdescent")
            c.note("optimizationAlgo " + *algo + " ignored: Thresher trains with minibatch gradient descent");
        if (auto n = c.number({"numIterations"}); n && *n > 1)
            c.note("numIterations " + std::to_string(static_cast<int>(*n)) + " ignored: one update per minibatch");
        if (c.boolean({"minimize"}).value_or(true) == false) c.fail("minimize", "maximising the loss is not supported");
        c.ignore({"layer", "cacheMode", "dataType", "epochCount", "iterationCount", "maxNumLineSearchIterations",
                  "miniBatch", "stepFunction", "variables", "l1ByParam", "l2ByParam", "learningRateByParam",
                  "lrPolicyDecayRate", "lrPolicyPower", "lrPolicySteps", "useDropConnect", "pretrain",
                  "learningRatePolicy"});
        // Read below with the layer's learning rate; checked here so a bad policy is refused
        // also on a layer without parameters.
        c.note_unread();

        first_of_conf.push_back(m.layers.size());
        bool spatial_input = false;
        if (auto retain = read_dropout(p, &spatial_input); retain && *retain < 1.f && *kind != Kind::Dropout) {
            LayerConfig d;
            d.type = LayerType::Dropout;
            d.spatial = spatial_input;
            d.name = (name.empty() ? conf_where : name) + " input dropout";
            d.origin = conf_where;
            d.origin_what = what + (p.has("idropout") ? " \"idropout\"" : " \"dropOut\"");
            d.retain = *retain;
            m.layers.push_back(d);
        }

        LayerConfig l;
        l.name = name.empty() ? conf_where : name;
        l.origin = conf_where;
        l.origin_what = what;
        const auto n_in = p.integer({"nin", "nIn"}, 0);
        const auto n_out = p.integer({"nout", "nOut"}, 0);
        auto need_n_out = [&]() {
            if (!n_out || *n_out < 1) p.fail("nOut", "is required: a positive number of outputs");
            return *n_out;
        };
        // Every path ends here, so whatever field nobody read is named in a note.
        auto finish = [&]() {
            ignore_harmless(p);
            p.ignore({"activationFn", "activationFunction", "weightInitFn", "weightInit", "iupdater", "iUpdater",
                      "updater", "regularization", "l1", "l2", "idropout", "dropOut", "lossFn", "lossFunction",
                      "hasBias", "kernelSize", "stride", "padding", "dilation", "convolutionMode", "poolingType",
                      "decay", "lockGammaBeta", "cnn2dDataFormat", "dataFormat"});
            p.note_unread();
        };
        bool params = false;
        switch (*kind) {
            case Kind::Dense:
            case Kind::Output:
                l.type = *kind == Kind::Dense ? LayerType::Dense : LayerType::Output;
                l.units = need_n_out();
                l.activation = read_activation(p, leaky_alpha);
                if (*kind == Kind::Output) l.loss = read_loss(p);
                if (n_in && *n_in > 0) checks.push_back({m.layers.size(), *n_in, where});
                params = true;
                break;
            case Kind::Convolution:
            case Kind::DepthwiseConvolution:
            case Kind::SeparableConvolution:
            case Kind::TransposedConvolution:
            case Kind::Convolution1d: {
                l.type = *kind == Kind::Convolution1d           ? LayerType::Convolution1d
                         : *kind == Kind::Convolution            ? LayerType::Convolution
                         : *kind == Kind::DepthwiseConvolution ? LayerType::DepthwiseConvolution
                         : *kind == Kind::TransposedConvolution ? LayerType::TransposedConvolution
                                                               : LayerType::SeparableConvolution;
                if (*kind == Kind::DepthwiseConvolution || *kind == Kind::SeparableConvolution) {
                    l.depth_multiplier = p.integer({"depthMultiplier"}, 1).value_or(1);
                    if (l.depth_multiplier > 1024) p.fail("depthMultiplier", "at most 1024");
                }
                // A depthwise layer's nOut is nIn x depthMultiplier (checked against the inferred
                // channels below, through its nIn).
                if (*kind == Kind::DepthwiseConvolution) {
                    if (n_in && n_out && *n_in > 0 && *n_out != *n_in * l.depth_multiplier)
                        p.fail("nOut", "is " + std::to_string(*n_out) + " but nIn x depthMultiplier is " +
                                           std::to_string(*n_in * l.depth_multiplier));
                } else {
                    l.units = need_n_out();
                }
                l.kernel = p.pair({"kernelSize"}, 1).value_or(std::array<int, 2>{5, 5});
                l.stride = p.pair({"stride"}, 1).value_or(std::array<int, 2>{1, 1});
                l.padding = p.pair({"padding"}, 0).value_or(std::array<int, 2>{0, 0});
                l.dilation = p.pair({"dilation"}, 1).value_or(std::array<int, 2>{1, 1});
                l.mode = read_mode(p);
                if (l.type == LayerType::Convolution1d) {
                    // [k, 1] and so on: the time axis is the first.
                    if (l.padding[0] != 0) p.fail("padding", "padding a Convolution1DLayer is not supported (use convolutionMode Same or Causal)");
                    l.kernel[1] = l.stride[1] = l.dilation[1] = 1;
                    l.padding = {0, 0};
                } else if (l.mode == ConvMode::Causal) {
                    p.fail("convolutionMode", "Causal is for one-dimensional convolutions only");
                }
                if (may_fold && l.type == LayerType::Convolution) import::fold_zero_padding(m.layers, l);
                l.activation = read_activation(p, leaky_alpha);
                if (n_in && *n_in > 0) checks.push_back({m.layers.size(), *n_in, where});
                params = true;
                break;
            }
            case Kind::Subsampling:
            case Kind::Subsampling1d: {
                l.type = LayerType::Subsampling;
                const auto pooling = p.string({"poolingType"}).value_or("MAX");
                const auto pn = normalise_name(pooling);
                if (pn != "max" && pn != "avg")
                    p.fail("poolingType", pooling + " pooling is not supported (MAX or AVG)");
                l.max_pool = pn == "max";
                l.kernel = p.pair({"kernelSize"}, 1).value_or(std::array<int, 2>{1, 1});
                l.stride = p.pair({"stride"}, 1).value_or(std::array<int, 2>{2, 2});
                l.padding = p.pair({"padding"}, 0).value_or(std::array<int, 2>{0, 0});
                if (p.pair({"dilation"}, 1).value_or(std::array<int, 2>{1, 1}) != std::array<int, 2>{1, 1})
                    p.fail("dilation", "dilated pooling is not supported");
                l.mode = read_mode(p);
                if (l.mode == ConvMode::Causal) p.fail("convolutionMode", "Causal pooling is not supported");
                if (*kind == Kind::Subsampling1d) {  // along time, the first axis of [k, 1]
                    if (l.padding[0] != 0) p.fail("padding", "padding a Subsampling1DLayer is not supported (use convolutionMode Same)");
                    l.kernel[1] = l.stride[1] = 1;
                    l.padding = {0, 0};
                }
                break;
            }
            case Kind::ZeroPadding:
            case Kind::Cropping: {
                // "padding" / "cropping": [top, bottom, left, right]. A symmetric padding right
                // before a Truncate convolution becomes its padding (import::fold_zero_padding).
                const char* key = *kind == Kind::ZeroPadding ? "padding" : "cropping";
                const auto* v = p.array({key});
                auto count = [](const nlohmann::json& x) { return x.is_number_integer() && x.get<long long>() >= 0 && x.get<long long>() < (1 << 16); };
                if (!v || v->size() != 4 || !count((*v)[0]) || !count((*v)[1]) || !count((*v)[2]) || !count((*v)[3]))
                    p.fail(key, "must be [top, bottom, left, right], got " + (v ? json_summary(*v) : std::string("nothing")));
                l.type = *kind == Kind::ZeroPadding ? LayerType::ZeroPadding : LayerType::Cropping;
                l.margins = {(*v)[0].get<int>(), (*v)[1].get<int>(), (*v)[2].get<int>(), (*v)[3].get<int>()};
                break;
            }
            case Kind::Upsampling: {
                // "size": [rows, columns] (1.0), or one int for both (0.9).
                const auto& j = p.json();
                const nlohmann::json size = j.contains("size") ? j["size"] : nlohmann::json(2);
                p.ignore({"size"});
                auto ok = [](const nlohmann::json& x) { return x.is_number_integer() && x.get<long long>() >= 1 && x.get<long long>() <= 1024; };
                l.type = LayerType::Upsampling;
                if (ok(size)) l.scale = {size.get<int>(), size.get<int>()};
                else if (size.is_array() && size.size() == 2 && ok(size[0]) && ok(size[1])) l.scale = {size[0].get<int>(), size[1].get<int>()};
                else p.fail("size", "must be [rows, columns] from 1 to 1024, got " + json_summary(size));
                break;
            }
            case Kind::GlobalPooling: {
                l.type = LayerType::Subsampling;
                l.global = true;
                const auto pooling = p.string({"poolingType"}).value_or("MAX");
                const auto pn = normalise_name(pooling);
                if (pn != "max" && pn != "avg")
                    p.fail("poolingType", pooling + " pooling is not supported (MAX or AVG)");
                l.max_pool = pn == "max";
                if (!p.boolean({"collapseDimensions"}).value_or(true))
                    p.note("collapseDimensions false: the pooled C x 1 x 1 output is used as C features");
                p.ignore({"poolingDimensions"});
                break;
            }
            case Kind::BatchNorm:
                l.type = LayerType::BatchNorm;
                l.bn_eps = static_cast<float>(p.hyper({"eps"}, import::kBatchNormEps).value_or(1e-5));
                l.bn_decay = static_cast<float>(p.hyper({"decay"}, import::kUnit).value_or(0.9));
                if (p.boolean({"lockGammaBeta"}).value_or(false))
                    p.fail("lockGammaBeta", "fixed gamma/beta are not supported (Thresher learns both)");
                if (n_in && *n_in > 0) checks.push_back({m.layers.size(), *n_in, where});
                params = true;
                break;
            case Kind::PRelu: {
                // "inputShape": [n] or [c, h, w]; "sharedAxes" count its axes from 1.
                l.type = LayerType::PRelu;
                const auto* shape = p.array({"inputShape"});
                if (!shape || (shape->size() != 1 && shape->size() != 3))
                    p.fail("inputShape", "is required: [features] or [channels, height, width], got " +
                                             (shape ? json_summary(*shape) : std::string("nothing")));
                if (const auto* axes = p.array({"sharedAxes"})) {
                    for (const auto& a : *axes) {
                        const long long ax = a.is_number_integer() ? a.get<long long>() : 0;
                        if (ax < 1 || ax > static_cast<long long>(shape->size()))
                            p.fail("sharedAxes", "axis " + a.dump() + " is not an axis of inputShape " + json_summary(*shape));
                        l.prelu_shared[static_cast<std::size_t>(ax - 1)] = true;
                    }
                }
                p.ignore({"inputShape", "sharedAxes"});
                p.note("PReLU alpha starts at 0 when trained from scratch (DL4J draws it from the layer's weight init)");
                params = true;
                break;
            }
            case Kind::Recurrent:
            case Kind::Embedding: {
                const int steps = read_dl4j_sequence_layer(p, cls, conf_layer.wrapping, l,
                                                           [&](const char* key) { return read_activation(p, leaky_alpha, key); });
                if (first && steps) sequence_steps = steps;
                // An embedding's nIn is its vocabulary, not its input's size.
                if (*kind == Kind::Recurrent && n_in && *n_in > 0) checks.push_back({m.layers.size(), *n_in, where});
                params = true;
                break;
            }
            case Kind::Dropout: {
                auto retain = read_dropout(p, &l.spatial);
                if (!retain || *retain >= 1.f) {
                    p.note("dropout layer without dropout: left out");
                    finish();
                    return;
                }
                l.type = LayerType::Dropout;
                l.retain = *retain;
                break;
            }
            case Kind::Activation: {
                l.activation = read_activation(p, leaky_alpha);
                // Fused into the dense or convolution layer right before it when that one has no
                // activation (one pass instead of two); a layer of its own otherwise.
                auto* prev = m.layers.empty() ? nullptr : &m.layers.back();
                const bool foldable = may_fold && prev && (prev->type == LayerType::Dense || is_convolution(prev->type)) &&
                                      prev->activation.kind == Activation::Identity &&
                                      (l.activation.kind != Activation::Softmax || prev->type == LayerType::Dense);
                if (foldable || l.activation.kind == Activation::Identity) {
                    if (foldable) prev->activation = l.activation;
                    finish();
                    return;
                }
                l.type = LayerType::Activation;
                break;
            }
            case Kind::Loss:
            case Kind::CnnLoss:
                // DL4J's LossLayer: activation and loss without parameters; it must be last.
                // CnnLossLayer: the same on an image, each pixel an example (a softmax is over
                // the channels of each pixel); Thresher averages over the pixels where DL4J sums
                // them (engine/config/README.md, outputs). Its "format" (NCHW or NHWC) says how
                // DL4J lays out its arrays; the softmax is over channels either way.
                if (!last) p.fail(std::string("a ") + (*kind == Kind::Loss ? "LossLayer" : "CnnLossLayer") + " must be the last layer");
                l.type = LayerType::Activation;
                l.activation = read_activation(p, leaky_alpha);
                l.loss = read_loss(p);
                l.declares_loss = true;
                if (*kind == Kind::CnnLoss) p.ignore({"format"});
                break;
        }
        if (params) {
            l.weight_init = read_weight_init(p);
            if (!l.weight_init) l.weight_init = WeightInit::Xavier;
            std::optional<LrSchedule> schedule;
            l.updater = read_updater(p, schedule);
            // DL4J 0.x: the conf's learningRatePolicy on the layer's learning rate.
            if (!schedule && l.updater)
                schedule = import::dl4j_legacy_policy(c, p, l.updater->learning_rate);
            if (schedule) {
                if (!schedules.empty() && (!schedules.front().second || schedules.front().second->to_json() != schedule->to_json()))
                    p.fail("learningRateSchedule", "differs from " + schedules.front().first +
                                                       "'s: Thresher applies one learning-rate schedule to every layer");
            } else if (!schedules.empty() && schedules.front().second) {
                p.fail("learningRateSchedule", "is missing while " + schedules.front().first +
                                                   " has one: Thresher applies one learning-rate schedule to every layer");
            }
            schedules.emplace_back(where, schedule);
            if (!l.updater) {
                p.note("no updater given: using DL4J's default, Sgd with learning rate 1e-3");
                l.updater = default_updater(UpdaterKind::Sgd);
            }
            read_regularisation(p, l, use_regularization);
            if (p.boolean({"hasBias"}).value_or(true) == false && l.type != LayerType::Embedding)
                p.note("hasBias false: Thresher always learns a bias");
            if (p.boolean({"hasLayerNorm"}).value_or(false)) p.fail("hasLayerNorm", "layer normalisation is not supported");
            if (p.has("weightNoise")) p.fail("weightNoise", "weight noise is not supported");
            if (p.has("biasUpdater")) p.note("\"biasUpdater\" ignored: biases use the layer's updater");
            if (auto g = p.string({"gradientNormalization"}); g && normalise_name(*g) != "none")
                p.note("gradientNormalization " + *g + " ignored");
            if (auto b = p.number({"biasInit"}); b && *b != 0.0) p.note("biasInit ignored: biases start at 0");
            if (p.has("constraints") && !p.json()["constraints"].empty()) p.note("constraints ignored");
        }
        if (auto f = p.string({"cnn2dDataFormat", "dataFormat"}); f && normalise_name(*f) == "nhwc")
            p.note("cnn2dDataFormat NHWC: Thresher feeds images as channels x height x width");
        finish();
        m.layers.push_back(std::move(l));
        };
    if (graph) {
        auto input = import_graph(root, m, read_conf, vertex_order);
        input.sequence_steps = sequence_steps;
        input.given_steps = options.steps;
        return finish_graph(root, m, input, checks, schedules, std::move(result));
    }
    for (std::size_t i = 0; i < confs->size(); ++i)
        read_conf((*confs)[i], "confs[" + std::to_string(i) + "]", i == 0, i + 1 == confs->size(), true);

    // The input shape: DL4J keeps InputType.convolutionalFlat(h, w, c) as a FeedForwardToCnn
    // preprocessor in front of layer 0; otherwise the first layer's nIn says it.
    auto pre = read_preprocessors(root);
    bool image_needs_size = false;
    if (auto it = pre.find(0); it != pre.end() && it->second.kind == "FeedForwardToCnnPreProcessor") {
        m.input = Shape{it->second.channels, it->second.height, it->second.width};
        pre.erase(it);
    } else {
        // The first layer that is not dropout says its nIn: DL4J's global .dropOut(p) puts an input
        // dropout on the first layer too, and a DropoutLayer may come first.
        std::size_t first = 0;
        // Layers without an nIn of their own (zero padding, cropping, upsampling) keep the channels.
        auto passes_shape = [](LayerType t) {
            return t == LayerType::Dropout || t == LayerType::ZeroPadding || t == LayerType::Cropping || t == LayerType::Upsampling;
        };
        while (first < m.layers.size() && passes_shape(m.layers[first].type)) ++first;
        const auto* check = checks.empty() || checks.front().layer != first ? nullptr : &checks.front();
        const auto t = first < m.layers.size() ? m.layers[first].type : LayerType::Dense;
        if (reads_sequence(t)) {
            // A MultiLayerConfiguration keeps no InputType: only an embedding's inputLength says the
            // steps, or the user (ImportOptions::steps).
            if (!sequence_steps) sequence_steps = options.steps;
            if (!sequence_steps) root.fail(std::string("cannot tell the input shape: the first layer reads a sequence. ") + kNeedsSteps);
            if (t != LayerType::Embedding && !check) root.fail("cannot tell the input shape: the first layer has no nIn");
            m.input = sequence_shape(sequence_steps, t == LayerType::Embedding ? 1 : check->n_in);
        } else if (!check) {
            root.fail("cannot tell the input shape: the first layer has no nIn and there is no FeedForwardToCnn "
                      "preprocessor (DL4J writes one for setInputType(InputType.convolutionalFlat(h, w, c)))");
        } else if (t == LayerType::Dense || t == LayerType::Output) {
            m.input = Shape{check->n_in, 1, 1};
        } else {
            m.input = Shape{check->n_in, 0, 0};  // height and width from the CnnToFeedForward below
            image_needs_size = true;
        }
    }
    for (auto& [index, p] : pre) {
        if (index < 0 || static_cast<std::size_t>(index) >= first_of_conf.size() ||
            first_of_conf[index] >= m.layers.size())
            throw ConfigError(source + ": " + p.where + ": no layer " + std::to_string(index) + " to stand in front of");
        if (p.kind != "CnnToFeedForwardPreProcessor")
            throw ConfigError(source + ": " + p.where + ": " + p.kind +
                              " between layers is not supported (images can be flattened, not rebuilt)");
        if (image_needs_size) {
            // InputType.convolutional(h, w, c) leaves no trace but the flattening preprocessor's
            // size: walk each dimension back to the smallest input that gives it.
            const std::vector<LayerConfig> before(m.layers.begin(), m.layers.begin() + first_of_conf[index]);
            int hw[2] = {0, 0};
            const int want[2] = {p.height, p.width};
            for (int d = 0; d < 2; ++d)
                for (int in = 1; in <= 16384 && !hw[d]; ++in)
                    if (forward_dim(in, before, d) == want[d]) hw[d] = in;
            if (!hw[0] || !hw[1])
                throw ConfigError(source + ": " + p.where + ": no input height/width leads to " +
                                  std::to_string(p.height) + "x" + std::to_string(p.width) + " here");
            m.input.h = hw[0];
            m.input.w = hw[1];
            notes.push_back("input: height x width " + std::to_string(hw[0]) + "x" + std::to_string(hw[1]) +
                            " inferred from " + p.where + " (the smallest size that gives it)");
            image_needs_size = false;
        }
    }
    if (image_needs_size)
        root.fail("cannot tell the input height and width: no FeedForwardToCnn or CnnToFeedForward preprocessor "
                  "records them (DL4J writes them for setInputType(InputType.convolutionalFlat(h, w, c)))");
    if (m.layers.empty()) root.fail("confs", "no layers left to import");

    result.model = finish_layers(m, checks, schedules, notes, source);
    for (const auto& [index, p] : pre) {
        const auto& l = result.model.layers[first_of_conf[index]];
        if (l.in_shape.size() != static_cast<std::size_t>(p.channels) * p.height * p.width)
            throw ConfigError(source + ": " + p.where + ": flattens " + std::to_string(p.channels) + "x" +
                              std::to_string(p.height) + "x" + std::to_string(p.width) + " but layer " +
                              std::to_string(index) + "'s input is " + l.in_shape.str());
    }
    root.ignore({"confs", "inputPreProcessors", "backpropType", "cacheMode", "dataType", "epochCount", "iterationCount",
                 "inferenceWorkspaceMode", "trainingWorkspaceMode", "tbpttBackLength", "tbpttFwdLength",
                 "validateOutputLayerConfig", "validateTbpttConfig", "backprop", "pretrain"});
    if (root.boolean({"pretrain"}).value_or(false)) root.note("\"pretrain\": true ignored (no layer-wise pretraining)");
    root.note_unread();
    return result;
}

}  // namespace thresher::config
