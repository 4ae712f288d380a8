// Keras layers are walked in order with one piece of state beside the layers built so far:
// whether the tensor is flat yet. Keras applies Dense to the last axis of an image (per pixel),
// which Thresher cannot do, so a Dense before any Flatten is refused rather than flattened.
#include "config/keras_import.h"

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "config/import_support.h"
#include "config/json_fields.h"
#include "config/keras_fields.h"
#include "config/keras_recurrent.h"
#include "config/keras_calls.h"
#include "config/keras_training.h"
#include "core/error.h"
#include "config/model_config.h"

namespace thresher::config {

namespace {

using import::Place;

const char* kSupportedLayers =
    "InputLayer, Dense, Conv2D, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D, "
    "BatchNormalization, Dropout, SpatialDropout2D, Flatten, ZeroPadding2D, Cropping2D, UpSampling2D (nearest), "
    "Activation, ReLU, LeakyReLU, ELU, ThresholdedReLU, Softmax, PReLU, and in functional models Add, Subtract, "
    "Multiply, Average, Maximum, Concatenate, DepthwiseConv2D, SeparableConv2D, Conv2DTranspose, Reshape (to features or "
    "an image), Permute (of an image); Keras 1's Convolution2D, Deconvolution2D, "
    "SeparableConvolution2D and Merge";

bool supported_layer(const std::string& kind) {
    static const std::set<std::string> known{"InputLayer", "Dense", "Conv2D", "Convolution2D", "MaxPooling2D",
                                             "MaxPool2D", "AveragePooling2D", "AvgPool2D", "BatchNormalization",
                                             "Dropout", "SpatialDropout2D", "Flatten", "Activation", "ReLU", "LeakyReLU", "Softmax",
                                             "ELU", "ThresholdedReLU", "GlobalAveragePooling2D", "GlobalAvgPool2D",
                                             "GlobalMaxPooling2D", "GlobalMaxPool2D", "ZeroPadding2D", "PReLU",
                                             "Cropping2D", "UpSampling2D", "Add", "Subtract", "Multiply", "Average",
                                             "Maximum", "Concatenate", "Merge", "DepthwiseConv2D",
                                             "SeparableConv2D", "SeparableConvolution2D", "Conv2DTranspose",
                                             "Convolution2DTranspose", "Deconvolution2D", "Reshape", "Permute"};
    return known.count(kind) > 0 || is_keras_sequence_layer(kind);
}

}  // namespace

// Declared in keras_fields.h (keras_recurrent.cpp reads them too).
ActivationSpec activation_from_name(Place& p, const std::string& key, const nlohmann::json& v, bool keras3) {
    if (v.is_null()) return {Activation::Identity, 0.01f};
    if (!v.is_string()) p.fail(key, "custom activation " + json_summary(v) + " is not supported");
    const auto name = v.get<std::string>();
    if (name == "linear") return {Activation::Identity, 0.01f};
    if (name == "relu") return {Activation::Relu, 0.01f};
    if (name == "tanh") return {Activation::Tanh, 0.01f};
    if (name == "sigmoid") return {Activation::Sigmoid, 0.01f};
    if (name == "softmax") return {Activation::Softmax, 0.01f};
    if (name == "leaky_relu") return {Activation::LeakyRelu, 0.2f};  // Keras 3's default slope
    if (name == "elu") return {Activation::Elu, 1.f};
    if (name == "selu") return {Activation::Selu, 0.01f};
    if (name == "relu6") return {Activation::Relu6, 0.01f};
    if (name == "hard_sigmoid") return {Activation::HardSigmoid, keras3 ? 1.f / 6.f : 0.2f};
    if (name == "softplus") return {Activation::Softplus, 0.01f};
    if (name == "softsign") return {Activation::Softsign, 0.01f};
    if (name == "swish" || name == "silu") return {Activation::Swish, 0.01f};
    if (name == "gelu") return {Activation::Gelu, 0.01f};  // keras.activations.gelu's default: approximate=False
    p.fail(key, "activation \"" + name + "\" is not supported (Thresher has linear, relu, leaky_relu, tanh, sigmoid, "
                "softmax, elu, selu, relu6, hard_sigmoid, softplus, softsign, swish, silu, gelu)");
}

// {"class_name": "GlorotUniform", "config": {...}} (Keras 3 adds "module" and "registered_name").
// Keras 1 writes a name: "init": "glorot_uniform".
WeightInit read_initializer(Place& p, const char* key) {
    if (!p.has(key)) return WeightInit::XavierUniform;  // Keras's default kernel initializer
    const auto& init = p.json()[key];
    std::string name;
    nlohmann::json cfg = nlohmann::json::object();
    if (init.is_string()) {
        name = init.get<std::string>();
        p.ignore({key});
    } else {
        const auto* obj = p.object({key});
        name = import::text_or(*obj, "class_name", "");
        cfg = obj->value("config", nlohmann::json::object());
    }
    auto approx = [&](WeightInit w, const std::string& why) {
        p.note(std::string(1, '"').append(key) + "\": " + name + " " + why);
        return w;
    };
    if (name == "GlorotUniform" || name == "glorot_uniform") return WeightInit::XavierUniform;
    if (name == "GlorotNormal" || name == "glorot_normal") return WeightInit::Xavier;
    if (name == "HeNormal" || name == "he_normal") return WeightInit::Relu;
    if (name == "LecunNormal" || name == "lecun_normal") return WeightInit::Normal;
    if (name == "Zeros" || name == "zeros" || name == "zero") return WeightInit::Zero;
    if (name == "HeUniform" || name == "he_uniform") return approx(WeightInit::Relu, "approximated by relu (He normal)");
    if (name == "VarianceScaling" && cfg.is_object()) {
        // Keras 2.0-2.2 wrote glorot_uniform and friends as VarianceScaling.
        const double scale = import::number_or(cfg, "scale", 1.0);
        const auto mode = import::text_or(cfg, "mode", "fan_in");
        const auto dist = import::text_or(cfg, "distribution", "normal");
        const bool uniform = dist == "uniform";
        if (scale == 1.0 && mode == "fan_avg") return uniform ? WeightInit::XavierUniform : WeightInit::Xavier;
        if (scale == 2.0 && mode == "fan_in" && !uniform) return WeightInit::Relu;
        if (scale == 1.0 && mode == "fan_in" && !uniform) return WeightInit::Normal;
        // Thresher's uniform, ±1/√fan_in, as Thresher's Keras export writes it: √(3·scale/fan_in).
        if (std::abs(scale - 1.0 / 3.0) < 1e-12 && mode == "fan_in" && uniform) return WeightInit::Uniform;
    }
    if (name == "RandomNormal" || name == "TruncatedNormal" || name == "normal")
        return approx(WeightInit::Normal, "approximated by normal (N(0, 1/fan_in))");
    if (name == "RandomUniform" || name == "uniform") return approx(WeightInit::Uniform, "approximated by uniform (±1/√fan_in)");
    return approx(WeightInit::Xavier, "has no Thresher equivalent: using xavier");
}

namespace {

// PReLU's "alpha_initializer" (Keras 1: "init"): Zeros (the default) or Constant(value).
float read_alpha_initializer(Place& p) {
    const char* key = p.has("init") ? "init" : "alpha_initializer";
    if (!p.has(key)) return 0.f;
    const auto& init = p.json()[key];
    const std::string name = init.is_string() ? init.get<std::string>() : import::text_or(init, "class_name", "");
    p.ignore({key});
    if (name == "Zeros" || name == "zeros" || name == "zero") return 0.f;
    if (name == "Ones" || name == "ones" || name == "one") return 1.f;
    if (name == "Constant" && init.is_object() && init.contains("config") && init["config"].is_object()) {
        const auto& v = init["config"].value("value", nlohmann::json());
        if (v.is_number() && std::isfinite(v.get<double>()) && std::abs(v.get<double>()) <= 100.0)
            return static_cast<float>(v.get<double>());
    }
    p.fail(key, "alpha initializer " + json_summary(init) + " is not supported (Zeros, Ones or Constant with a value in [-100, 100])");
}

}  // namespace

// Declared in keras_fields.h.
// Keras adds l2·Σw² to the loss, so its gradient is 2·l2·w; Thresher adds l2·w to the gradient.
// Keras 2/3: "kernel_regularizer": {"class_name": "L2", "config": {"l2": 0.01}}; Keras 1:
// "W_regularizer": {"name": "WeightRegularizer", "l1": 0.0, "l2": 0.009999999776482582}.
void read_regularizer(Place& p, LayerConfig& l) {
    l.l1 = 0.f;
    l.l2 = 0.f;
    const char* key = p.has("W_regularizer") ? "W_regularizer" : "kernel_regularizer";
    if (const auto* r = p.object({key})) {
        const bool keras1 = !r->contains("class_name");
        const auto name = import::text_or(*r, keras1 ? "name" : "class_name", "");
        const auto cfg = keras1 ? *r : r->value("config", nlohmann::json::object());
        if (name != "L1L2" && name != "L1" && name != "L2" && name != "l1_l2" && name != "l1" && name != "l2" &&
            name != "WeightRegularizer")
            p.fail(key, "regularizer " + name + " is not supported (L1, L2, L1L2)");
        std::vector<std::string> scratch;
        Place c(cfg, p.source(), p.where() + "." + key, scratch);
        l.l1 = static_cast<float>(c.hyper({"l1"}, import::kRegularisation).value_or(0.0));
        // Keras stores float32 values (0.009999999776482582 for 0.01): keep the float's decimal.
        // Half of Thresher's bound: it doubles.
        const float l2 = static_cast<float>(c.hyper({"l2"}, import::Range{0.0, 500.0}).value_or(0.0));
        l.l2 = static_cast<float>(2.0 * decimal(l2));
        if (*l.l2 != 0.f)
            p.note(std::string("\"") + key + "\": l2 " + import::number_text(l2) + " becomes Thresher l2 " +
                   import::number_text(*l.l2) + " (Keras penalises l2·Σw², whose gradient is 2·l2·w)");
    }
    for (const char* key : {"bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint",
                            "gamma_regularizer", "beta_regularizer", "gamma_constraint", "beta_constraint",
                            "b_regularizer", "W_constraint", "b_constraint"})
        if (p.has(key)) p.note(std::string(1, '"').append(key) + "\" ignored");
}

namespace {

// Fields Keras writes that change nothing for a config imported without weights.
void ignore_harmless(Place& p) {
    p.ignore({"name", "trainable", "dtype", "data_format", "seed", "bias_initializer", "beta_initializer",
              "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer", "synchronized",
              "autocast", "input_dtype", "batch_input_shape", "batch_shape", "input_shape", "sparse", "ragged",
              "optional", "build_config", "kernel_regularizer", "bias_regularizer", "activity_regularizer",
              "kernel_constraint", "bias_constraint", "gamma_regularizer", "beta_regularizer", "gamma_constraint",
              "beta_constraint", "quantization_config", "lora_rank", "lora_alpha", "renorm", "renorm_clipping",
              "renorm_momentum", "fused", "virtual_batch_size", "adjustment",
              // Keras 1 spellings of the same
              "input_dtype", "input_dim", "W_regularizer", "b_regularizer", "W_constraint", "b_constraint",
              "dim_ordering", "beta_init", "gamma_init"});
}

std::vector<int> shape_of(Place& p, const nlohmann::json& v, const std::string& key, bool has_batch) {
    if (!v.is_array() || v.empty()) p.fail(key, "must be a shape array, got " + json_summary(v));
    std::vector<int> dims;
    for (std::size_t i = has_batch ? 1 : 0; i < v.size(); ++i) {
        if (!v[i].is_number_integer() || v[i].get<long long>() < 1 || v[i].get<long long>() > (1 << 16))
            p.fail(key, "variable or invalid dimension in " + json_summary(v) + " (Thresher needs fixed sizes)");
        dims.push_back(v[i].get<int>());
    }
    if (dims.empty() || dims.size() > 3) p.fail(key, "shape " + json_summary(v) + " is not features, [h, w] or [h, w, c]");
    return dims;
}

// A sequence input's shape with its open time dimension (null: Input(shape=(None, C)), an
// Embedding's [None]) set to `steps` (ImportOptions::steps; 0: left open, and refused as such).
// Only [T] and [T, C] (after the batch) are sequences; an image's [h, w, c] is left alone.
nlohmann::json with_open_steps(const nlohmann::json& shape, bool has_batch, int steps) {
    const std::size_t t = has_batch ? 1 : 0;
    if (steps <= 0 || !shape.is_array() || shape.size() <= t || shape.size() > t + 2 || !shape[t].is_null()) return shape;
    auto filled = shape;
    filled[t] = steps;
    return filled;
}

bool positively_homogeneous(Activation a) {  // act(k·x) = k·act(x) for k > 0: commutes with dropout
    return a == Activation::Relu || a == Activation::LeakyRelu || a == Activation::Identity;
}

// Keras's ZeroPadding2D / Cropping2D amounts: n, [h, w] or [[top, bottom], [left, right]], as
// Thresher's [top, bottom, left, right].
std::array<int, 4> read_margins(Place& p, const char* key, const nlohmann::json& v) {
    p.ignore({key});
    auto count = [](const nlohmann::json& x) { return x.is_number_integer() && x.get<long long>() >= 0 && x.get<long long>() < (1 << 16); };
    if (count(v)) return {v.get<int>(), v.get<int>(), v.get<int>(), v.get<int>()};
    if (v.is_array() && v.size() == 2 && count(v[0]) && count(v[1])) return {v[0].get<int>(), v[0].get<int>(), v[1].get<int>(), v[1].get<int>()};
    if (v.is_array() && v.size() == 2 && v[0].is_array() && v[1].is_array() && v[0].size() == 2 && v[1].size() == 2 &&
        count(v[0][0]) && count(v[0][1]) && count(v[1][0]) && count(v[1][1]))
        return {v[0][0].get<int>(), v[0][1].get<int>(), v[1][0].get<int>(), v[1][1].get<int>()};
    p.fail(key, "must be n, [h, w] or [[top, bottom], [left, right]], got " + json_summary(v));
}

// UpSampling2D's size: n or [rows, columns], each at least `min`.
std::array<int, 2> read_pair(Place& p, const char* key, const nlohmann::json& v, int min) {
    p.ignore({key});
    auto ok = [&](const nlohmann::json& x) { return x.is_number_integer() && x.get<long long>() >= min && x.get<long long>() <= 1024; };
    if (ok(v)) return {v.get<int>(), v.get<int>()};
    if (v.is_array() && v.size() == 2 && ok(v[0]) && ok(v[1])) return {v[0].get<int>(), v[1].get<int>()};
    p.fail(key, "must be n or [rows, columns] from " + std::to_string(min) + " to 1024, got " + json_summary(v));
}

// An activation layer becomes the activation of the dense or convolution layer before it when
// that layer has none (one fused pass instead of two), also through layers it commutes with: max
// pooling (monotone activations) and dropout (relu-like ones). Flatten is no layer here, and
// element-wise activations commute with it anyway. False: it stays a layer of its own.
bool fold_activation(std::vector<LayerConfig>& layers, ActivationSpec act) {
    if (act.kind == Activation::Softmax && (layers.empty() || layers.back().type != LayerType::Dense))
        return false;  // softmax normalises the features a Dense layer produced, nothing else
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
        if (it->type == LayerType::Dense || is_convolution(it->type) || it->type == LayerType::Convolution1d) {
            if (it->activation.kind != Activation::Identity) return false;
            it->activation = act;
            return true;
        }
        // Swish and GELU are not monotone, so they do not commute with max pooling.
        const bool max_pool = it->type == LayerType::Subsampling && it->max_pool && !vocab::derivative_from_input(act.kind);
        const bool dropout = it->type == LayerType::Dropout && positively_homogeneous(act.kind);
        if (!max_pool && !dropout) return false;
    }
    return false;
}


// The layers a functional model's layer reads, by name, from its "inbound_nodes":
//   Keras 1/2, TF.js  [[["conv_1", 0, 0, {}], ["conv_2", 0, 0, {}]]]   (one node: one call)
//   Keras 3           [{"args": [[{"class_name": "__keras_tensor__", "config": {"keras_history": ["conv_1", 0, 0]}}, ...]], "kwargs": {}}]
// Shared layers and nested models arrive here already split into one call per layer
// (keras_calls.h), so a second node or a reference to call 1 means a file this reader misread.
std::vector<std::string> inbound_names(Place& p, const nlohmann::json& layer) {
    std::vector<std::string> names;
    if (!layer.contains("inbound_nodes") || !layer["inbound_nodes"].is_array()) return names;
    const auto& nodes = layer["inbound_nodes"];
    if (nodes.empty()) return names;
    if (nodes.size() > 1)
        p.fail("is called " + std::to_string(nodes.size()) + " times (a shared layer): Thresher gives each layer one "
               "call, so shared weights cannot be represented");
    auto history = [&](const nlohmann::json& ref) {
        if (!ref.is_array() || ref.empty() || !ref[0].is_string())
            p.fail("inbound_nodes", "an input reference must be [layer name, node, tensor], got " + json_summary(ref));
        if (ref.size() >= 2 && ref[1].is_number_integer() && ref[1].get<long long>() != 0)
            p.fail("reads call " + ref[1].dump() + " of layer \"" + ref[0].get<std::string>() +
                   "\" (a shared layer): Thresher gives each layer one call");
        if (ref.size() >= 3 && ref[2].is_number_integer() && ref[2].get<long long>() != 0)
            p.fail("reads output " + ref[2].dump() + " of layer \"" + ref[0].get<std::string>() +
                   "\": Thresher's layers have one output");
        names.push_back(ref[0].get<std::string>());
    };
    const auto& node = nodes[0];
    if (node.is_object()) {  // Keras 3: the call's arguments, tensors marked by keras_history
        for_each_keras_history(node, history);
    } else if (node.is_array()) {
        for (const auto& ref : node) history(ref);
    } else {
        p.fail("inbound_nodes", "must list the layer's inputs, got " + json_summary(node));
    }
    return names;
}

// A functional model's "input_layers" / "output_layers": [["name", 0, 0], ...] or one ["name", 0, 0].
std::vector<std::string> endpoint_names(Place& p, const char* key) {
    std::vector<std::string> names;
    if (!p.has(key)) return names;
    const auto& v = p.json()[key];
    p.ignore({key});
    if (v.is_array() && !v.empty() && v[0].is_string()) return {v[0].get<std::string>()};
    if (v.is_array())
        for (const auto& e : v)
            if (e.is_array() && !e.empty() && e[0].is_string()) names.push_back(e[0].get<std::string>());
    return names;
}

// Keras's merge layers (and Keras 1's Merge with its mode) as Thresher vertices.
LayerType merge_type(Place& p, const std::string& kind) {
    if (kind == "Add") return LayerType::Add;
    if (kind == "Subtract") return LayerType::Subtract;
    if (kind == "Multiply") return LayerType::Multiply;
    if (kind == "Average") return LayerType::Average;
    if (kind == "Maximum") return LayerType::Maximum;
    if (kind == "Concatenate") return LayerType::Concatenate;
    const auto mode = p.string({"mode"}).value_or("sum");
    if (mode == "sum") return LayerType::Add;
    if (mode == "mul") return LayerType::Multiply;
    if (mode == "ave") return LayerType::Average;
    if (mode == "max") return LayerType::Maximum;
    if (mode == "concat") return LayerType::Concatenate;
    p.fail("mode", "Merge mode \"" + mode + "\" is not supported (sum, mul, ave, max, concat)");
}

}  // namespace

ImportResult import_keras(const nlohmann::json& model, const std::string& source, const KerasLocation& at_file,
                          const ImportOptions& options) {
    ImportResult result;
    result.format = ModelFormat::Keras;
    auto& notes = result.notes;
    const std::string& prefix = at_file.model_path;
    Place root(model, source, prefix.empty() ? "model" : prefix.substr(0, prefix.size() - 1), notes);
    const bool keras3 = model.contains("module");  // Keras 3 names every object's module
    const auto cls = root.string({"class_name"}).value_or("");
    // A functional model (Keras 2 "Model", Keras 3 "Functional") is a graph: each layer names the
    // layers it reads ("inbound_nodes"); Thresher's layers then name their "inputs".
    bool functional = cls == "Model" || cls == "Functional";
    if (!functional && cls != "Sequential")
        root.fail("class_name", "expected \"Sequential\", \"Functional\" or \"Model\", got \"" + cls + "\"");

    // Keras 2.2 on: {"name", "layers": [...]}; Keras 1 and 2.0/2.1: the list itself.
    if (!root.has("config")) root.fail("config", "is required");
    // Shared layers and nested models: one call per layer from here on (keras_calls.h); a
    // Sequential holding a model becomes a functional model.
    const std::optional<KerasCalls> calls = keras_calls(model, source, prefix);
    functional = functional || calls.has_value();
    const auto& cfg = calls ? calls->model["config"] : model["config"];
    const nlohmann::json* list = &cfg;
    ModelConfig m;
    std::vector<std::string> scratch;
    std::optional<Place> config;
    std::string list_path = prefix + "config";
    if (cfg.is_object()) {
        config.emplace(cfg, source, prefix + "config", notes);
        if (auto n = config->string({"name"})) m.name = *n;
        list = config->array({"layers"});
        if (!list) config->fail("layers", "is required");
        list_path += ".layers";
    } else if (functional) {
        root.fail("config", "a functional model's config must be an object with \"layers\"");
    } else if (!cfg.is_array()) {
        root.fail("config", "must be an object with \"layers\" or a list of layers");
    }
    if (m.name == "model") m.name = std::filesystem::path(source).stem().string();
    if (list->empty()) root.fail("config", "has no layers");
    auto layer_path = [&](std::size_t i) {
        if (calls) {
            // Checked access: a const json's operator[] on a missing key is undefined.
            const auto& e = (*list)[i];
            const std::string name =
                e.is_object() && e.contains("config") && e["config"].is_object() ? import::text_or(e["config"], "name", "") : "";
            const auto it = calls->paths.find(name);
            if (it != calls->paths.end()) return it->second;
        }
        return list_path + "[" + std::to_string(i) + "]";
    };

    // Every layer's type first: an unsupported layer is what the user hears about, never a shape
    // complaint that follows from it.
    for (std::size_t i = 0; i < list->size(); ++i) {
        Place outer((*list)[i], source, layer_path(i), scratch);
        const auto kind = outer.string({"class_name"}).value_or("");
        const std::string wrapped = keras_unsupported_wrapped((*list)[i]);  // Bidirectional(ConvLSTM2D), ...
        if (supported_layer(kind) && wrapped.empty()) continue;
        const auto* c = outer.object({"config"});
        const std::string name = c ? import::text_or(*c, "name", "") : "";
        Place p(c ? *c : (*list)[i], source, layer_path(i) + " (" + kind + (name.empty() ? "" : " \"" + name + "\"") + ")", scratch);
        p.fail("layer " + kind + (wrapped.empty() ? "" : "(" + wrapped + ")") + " is not supported (Thresher imports " + kSupportedLayers + "; on sequences " +
               kKerasSequenceLayers + ")");
    }

    // A functional model: what each layer reads, and its single input and output.
    std::vector<std::vector<std::string>> inbound(list->size());
    std::map<std::string, int> readers;  // how many layers read each layer
    std::vector<std::string> input_names, output_names;
    if (functional) {
        for (std::size_t i = 0; i < list->size(); ++i) {
            const auto& layer = (*list)[i];
            const std::string name = layer.contains("config") && layer["config"].is_object()
                                         ? import::text_or(layer["config"], "name", import::text_or(layer, "name", ""))
                                         : import::text_or(layer, "name", "");
            Place lp(layer, source, layer_path(i) + " (" + import::text_or(layer, "class_name", "") + " \"" + name + "\")", scratch);
            inbound[i] = inbound_names(lp, layer);
            for (const auto& in : inbound[i]) ++readers[in];
        }
        input_names = endpoint_names(*config, "input_layers");
        output_names = endpoint_names(*config, "output_layers");
        if (input_names.empty()) config->fail("input_layers", "is required: the model's inputs");
        if (output_names.empty()) config->fail("output_layers", "is required: the model's outputs");
        if (input_names.size() > 64 || output_names.size() > 64)
            config->fail("the model has more than 64 inputs or outputs");
        m.input_name = input_names[0];
    }
    // Keras layers that become no Thresher layer (InputLayer, Flatten, a linear activation, an
    // activation folded into the layer before it) pass their input on: their name means it.
    std::map<std::string, std::string> alias;
    std::map<std::string, bool> flat_after;  // per Thresher tensor: flat features yet?
    std::map<std::string, bool> seq_after;   // per Thresher tensor: a sequence?
    // A model with sequence layers (keras_recurrent.h) reads [steps, features] inputs as
    // sequences, and an input an Embedding reads ([steps]) as a sequence of ids.
    const bool sequences = keras_model_has_sequences(*list);
    auto resolve = [&](std::string n) {
        for (int hops = 0; hops < 100000; ++hops) {
            const auto it = alias.find(n);
            if (it == alias.end()) return n;
            n = it->second;
        }
        return n;
    };

    // Input shape: the InputLayer, the first layer's batch_input_shape / input_shape, or the
    // model's build_input_shape, whichever comes first.
    // (A functional model: its InputLayers, the first of input_layers for the input.)
    auto keras_name_at = [&](std::size_t i) {
        const auto& layer = (*list)[i];
        return layer.is_object() && layer.contains("config") && layer["config"].is_object()
                   ? import::text_or(layer["config"], "name", import::text_or(layer, "name", ""))
                   : std::string();
    };
    auto layer_named = [&](const std::string& name) {
        for (std::size_t i = 0; i < list->size(); ++i)
            if (keras_name_at(i) == name) return i;
        return std::size_t{0};
    };
    auto dims_at = [&](std::size_t i) {
        std::optional<std::vector<int>> d;
        const auto& layer = (*list)[i];
        if (!layer.is_object() || !layer.contains("config") || !layer["config"].is_object()) return d;
        const auto& c = layer["config"];
        Place lp(c, source, layer_path(i), scratch);
        // Open steps are named with the layer (the input the user would change).
        Place named(c, source, layer_path(i) + " (" + import::text_or(layer, "class_name", "") + " \"" + import::text_or(c, "name", "") + "\")",
                    scratch);
        const int steps = sequences ? options.steps : 0;
        for (const char* key : {"batch_input_shape", "batch_shape"})
            if (c.contains(key) && !c[key].is_null()) {
                const auto shape = with_open_steps(c[key], true, steps);
                if (sequences) check_fixed_steps(named, shape, key);
                d = shape_of(lp, shape, key, true);
            }
        if (!d && c.contains("input_shape") && !c["input_shape"].is_null()) {
            const auto shape = with_open_steps(c["input_shape"], false, steps);
            if (sequences) check_fixed_steps(named, shape, "input_shape", false);
            d = shape_of(lp, shape, "input_shape", false);
        }
        if (!d && layer.contains("build_config") && layer["build_config"].is_object() &&
            layer["build_config"].contains("input_shape"))
            d = shape_of(lp, with_open_steps(layer["build_config"]["input_shape"], true, steps), "build_config.input_shape", true);
        return d;
    };
    std::optional<std::vector<int>> dims = dims_at(input_names.empty() ? 0 : layer_named(input_names[0]));
    if (!dims && config && config->has("build_input_shape"))
        dims = shape_of(*config, with_open_steps(cfg["build_input_shape"], true, sequences ? options.steps : 0),
                        "build_input_shape", true);
    if (!dims) root.fail("cannot tell the input shape: no InputLayer, batch_input_shape, input_shape or build_input_shape");
    // Keras 2/3 say data_format "channels_first", Keras 1 dim_ordering "th".
    bool channels_first = false;
    for (const auto& layer : *list)
        if (layer.is_object() && layer.contains("config") && layer["config"].is_object() &&
            (import::text_or(layer["config"], "data_format", "") == "channels_first" ||
             import::text_or(layer["config"], "dim_ordering", "") == "th"))
            channels_first = true;
    // Whether an Embedding reads the input named `n` (a Sequential's: its first layer).
    auto reads_ids = [&](const std::string& n) {
        for (std::size_t i = 0; i < list->size(); ++i) {
            const auto cls = import::text_or((*list)[i], "class_name", "");
            if (!functional && cls != "InputLayer") return cls == "Embedding";
            if (cls == "Embedding" && std::find(inbound[i].begin(), inbound[i].end(), n) != inbound[i].end()) return true;
        }
        return false;
    };
    // An input's shape: [steps, features] or [steps] of ids in a model with sequence layers.
    auto sequence_input = [&](const std::vector<int>& d, const std::string& n) -> std::optional<Shape> {
        if (sequences && d.size() == 2) return sequence_shape(d[0], d[1]);
        if (sequences && d.size() == 1 && reads_ids(n)) return sequence_shape(d[0], 1);
        return std::nullopt;
    };
    // [h, w] without channels (e.g. 28x28 MNIST before a Flatten) is one channel.
    const auto first_sequence = sequence_input(*dims, m.input_name);
    bool needs_flatten = dims->size() == 2 && !first_sequence;
    if (first_sequence) m.input = *first_sequence;
    else if (dims->size() == 1) m.input = Shape{(*dims)[0], 1, 1};
    else if (dims->size() == 2) m.input = Shape{1, (*dims)[0], (*dims)[1]};
    else if (channels_first) m.input = Shape{(*dims)[0], (*dims)[1], (*dims)[2]};
    else m.input = Shape{(*dims)[2], (*dims)[0], (*dims)[1]};
    bool flat = m.input.flat();
    bool seq = m.input.sequence();
    bool flatten_noted = false;

    flat_after[m.input_name] = flat;
    seq_after[m.input_name] = seq;
    // Further inputs: features or an image ([h, w, c], or [c, h, w] channels first).
    for (std::size_t k = 1; k < input_names.size(); ++k) {
        const auto at = layer_named(input_names[k]);
        const auto d = keras_name_at(at) == input_names[k] ? dims_at(at) : std::nullopt;
        if (!d) config->fail("input_layers", "cannot tell the shape of input \"" + input_names[k] + "\" (no InputLayer of that name with a shape)");
        const auto as_sequence = sequence_input(*d, input_names[k]);
        if (d->size() == 2 && !as_sequence)
            config->fail("input_layers", "input \"" + input_names[k] + "\" has shape [height, width]: give it channels ([h, w, 1]) or flatten it");
        const Shape shape = as_sequence ? *as_sequence
                            : d->size() == 1 ? Shape{(*d)[0], 1, 1}
                            : channels_first ? Shape{(*d)[0], (*d)[1], (*d)[2]}
                                             : Shape{(*d)[2], (*d)[0], (*d)[1]};
        m.extra_inputs.push_back({input_names[k], shape});
        flat_after[input_names[k]] = shape.flat();
        seq_after[input_names[k]] = shape.sequence();
    }
    std::set<std::string> shared_owners;  // the first calls of shared layers
    if (calls)
        for (const auto& [later, first] : calls->shares) shared_owners.insert(first);
    auto is_model_input = [&](const std::string& n) {
        return std::find(input_names.begin(), input_names.end(), n) != input_names.end();
    };
    for (std::size_t i = 0; i < list->size(); ++i) {
        // In a functional model, what this layer reads (Thresher names) and whether that is flat.
        std::vector<std::string> ins;
        for (const auto& n : inbound[i]) ins.push_back(resolve(n));
        if (functional && !inbound[i].empty() && flat_after.count(inbound[i][0])) {
            flat = flat_after[inbound[i][0]];
            seq = seq_after[inbound[i][0]];
        }
        // Folding into the layer before (an activation, a zero padding) is exact only when that
        // layer is this one's input and nothing else reads it.
        // Nor into a shared layer's call: the other calls would not get it (their settings must be
        // the first call's), so the activation stays a layer of its own.
        const bool shared = calls && !ins.empty() && (calls->shares.count(ins[0]) || shared_owners.count(ins[0]));
        const bool sole_reader = !functional || (ins.size() == 1 && !m.layers.empty() && m.layers.back().name == ins[0] &&
                                                 inbound[i][0] == ins[0] && readers[ins[0]] == 1 && !shared);
        const std::size_t count_before = m.layers.size();
        const std::string back_before = count_before ? m.layers.back().name : "";
        std::string keras_name;
        auto translate = [&]() {
            const auto& layer = (*list)[i];
            const std::string at = layer_path(i);
            Place outer(layer, source, at, notes);
            const auto kind = outer.string({"class_name"}).value_or("");
            const auto* c = outer.object({"config"});
            if (!c) outer.fail("config", "is required");
            const std::string name = import::text_or(*c, "name", "");
            keras_name = name.empty() ? at : name;
            const std::string what = kind + (name.empty() ? "" : " \"" + name + "\"");
            Place p(*c, source, at + " (" + what + ")", notes);
            outer.ignore({"module", "registered_name", "build_config", "inbound_nodes", "name"});
            outer.note_unread();
            ignore_harmless(p);
            if (c->contains("trainable") && (*c)["trainable"] == false) p.note("\"trainable\": false ignored: Thresher trains every layer");
            if (needs_flatten && kind != "Flatten" && kind != "InputLayer" && kind != "Dropout")
                p.fail("an input of shape [height, width] must go through Flatten first");
            if (is_keras_sequence_layer(kind)) {
                LayerConfig l;
                l.name = name.empty() ? at : name;
                l.origin = at;
                l.origin_what = what;
                KerasTensor tensor{flat, seq};
                import_keras_sequence_layer(p, kind, std::move(l), keras3, tensor, m.layers);
                flat = tensor.flat, seq = tensor.sequence;
                return;
            }
            if (kind == "ZeroPadding2D" || kind == "Cropping2D" || kind == "UpSampling2D") {
                if (flat) p.fail(kind + " needs an image-shaped input");
                LayerConfig l;
                l.name = name.empty() ? at : name;
                l.origin = at;
                l.origin_what = what;
                if (kind == "UpSampling2D") {
                    l.type = LayerType::Upsampling;
                    l.scale = read_pair(p, "size", c->contains("size") ? (*c)["size"] : nlohmann::json(2), 1);
                    if (const auto mode = p.string({"interpolation"}); mode && *mode != "nearest")
                        p.fail("interpolation", "\"" + *mode + "\" is not supported (nearest)");
                } else {
                    // n, [h, w], or [[top, bottom], [left, right]]; a padding right before a valid
                    // Conv2D becomes that convolution's padding when it is symmetric (fold_zero_padding).
                    const char* key = kind == "ZeroPadding2D" ? "padding" : "cropping";
                    l.type = kind == "ZeroPadding2D" ? LayerType::ZeroPadding : LayerType::Cropping;
                    l.margins = read_margins(p, key, c->contains(key) ? (*c)[key] : nlohmann::json(kind == "ZeroPadding2D" ? 1 : 0));
                }
                p.note_unread();
                m.layers.push_back(std::move(l));
                return;
            }

            if (kind == "Reshape" || kind == "Permute") {
                if (channels_first) p.fail(kind + " in a channels_first model is not supported (channels_last only)");
                LayerConfig l;
                l.name = name.empty() ? at : name;
                l.origin = at;
                l.origin_what = what;
                const char* key = kind == "Reshape" ? "target_shape" : "dims";
                const auto* v = c->contains(key) ? &(*c)[key] : nullptr;
                std::vector<int> dims;
                if (v && v->is_array())
                    for (const auto& d : *v)
                        if (d.is_number_integer() && d.get<long long>() >= -1 && d.get<long long>() <= (1 << 24) && d.get<long long>() != 0)
                            dims.push_back(d.get<int>());
                if (!v || !v->is_array() || dims.size() != v->size()) p.fail(key, "must list positive integers (-1 for one), got " + (v ? json_summary(*v) : std::string("nothing")));
                p.ignore({key});
                if (kind == "Reshape") {
                    // Keras counts values channels last; Thresher's reshape does the same with that
                    // order. -1 (one axis) is worked out from the input's size by shape inference.
                    if (std::count(dims.begin(), dims.end(), -1) > 1) p.fail(key, "has more than one -1");
                    auto dim = [](int d) { return d == -1 ? 0 : d; };
                    l.type = LayerType::Reshape;
                    l.channels_last_order = !seq;  // a sequence's values are already in Keras's order
                    if (dims.size() == 2 && sequences) {
                        // To [steps, features]: Keras's order is the sequence layout, from flat
                        // features or another sequence (an image's channels would move).
                        if (!flat && !seq) p.fail(key, "reshaping an image to a sequence " + json_summary(*v) + " is not supported");
                        if (dims[0] < 1 || dims[1] < 1) p.fail(key, "a sequence shape needs both sizes (no -1), got " + json_summary(*v));
                        l.channels_last_order = false;
                        l.reshape_to = sequence_shape(dims[0], dims[1]);
                        seq = true;
                    } else if (dims.size() == 1) l.reshape_to = Shape{dim(dims[0]), 1, 1};
                    else if (dims.size() == 3) l.reshape_to = Shape{dim(dims[2]), dim(dims[0]), dim(dims[1])};
                    else p.fail(key, "reshapes to " + json_summary(*v) + ": Thresher reshapes to features [n] or an image [h, w, c] "
                                     "(a sequence [steps, features] needs recurrent layers)");
                    flat = dims.size() == 1;
                    if (dims.size() != 2) seq = false;
                } else {
                    if (flat) p.fail("Permute needs an image-shaped input [h, w, c]");
                    static constexpr std::array<int, 3> kKerasAxes{1, 2, 3};
                    if (dims.size() != 3 || !std::is_permutation(dims.begin(), dims.end(), kKerasAxes.begin()))
                        p.fail(key, "must be a permutation of [1, 2, 3] (height, width, channels), got " + json_summary(*v));
                    // Keras axis k of (height, width, channels) as Thresher's (channels, height, width) axis.
                    static constexpr int kThresherAxis[] = {1, 2, 0};
                    l.type = LayerType::Permute;
                    l.permute_axes = {kThresherAxis[dims[2] - 1], kThresherAxis[dims[0] - 1], kThresherAxis[dims[1] - 1]};
                }
                p.note_unread();
                m.layers.push_back(std::move(l));
                return;
            }

            LayerConfig l;
            l.name = name.empty() ? at : name;
            l.origin = at;
            l.origin_what = what;
            bool params = false;
            if (kind == "Add" || kind == "Subtract" || kind == "Multiply" || kind == "Average" || kind == "Maximum" ||
                kind == "Concatenate" || kind == "Merge") {
                if (!functional) p.fail(kind + " joins branches: it belongs in a functional model, not a Sequential one");
                l.type = merge_type(p, kind);
                if (l.type == LayerType::Concatenate) {
                    // Thresher concatenates channels (NCHW's C, or the features of flat inputs).
                    const char* key = p.has("concat_axis") ? "concat_axis" : "axis";
                    const auto& v = c->contains(key) ? (*c)[key] : nlohmann::json(-1);
                    const bool ok = v.is_number_integer() &&
                                    (flat ? (v == -1 || v == 1)
                                     : seq ? (v == -1 || v == 2)  // a sequence's features, step by step
                                     : channels_first ? (v == 1 || v == -3) : (v == -1 || v == 3));
                    if (!ok) p.fail(key, "concatenating along axis " + json_summary(v) + " is not supported (only the channel axis)");
                    p.ignore({key});
                }
                p.ignore({"mode", "concat_axis", "dot_axes", "output_shape", "output_shape_type", "output_mask",
                          "output_mask_type", "mode_type", "arguments"});
                p.note_unread();
                l.inputs = ins;
                m.layers.push_back(std::move(l));
                return;
            }
            if (kind == "InputLayer") {
                p.note_unread();
                return;
            } else if (kind == "Dense") {
                if (!flat && !seq)  // on a sequence: the same dense at every step, as Keras
                    p.fail("Dense on an image-shaped input: Keras applies it to the last axis at every position, "
                           "Thresher only to flat features (add Flatten before it)");
                l.type = LayerType::Dense;
                const auto units = p.integer({"units", "output_dim"}, 1);  // Keras 1: output_dim
                if (!units) p.fail("units", "is required");
                l.units = *units;
                l.activation = activation_from_name(p, "activation", c->value("activation", nlohmann::json("linear")), keras3);
                params = true;
            } else if (kind == "Conv2D" || kind == "Convolution2D" || kind == "DepthwiseConv2D" || kind == "SeparableConv2D" ||
                       kind == "SeparableConvolution2D" || kind == "Conv2DTranspose" || kind == "Convolution2DTranspose" ||
                       kind == "Deconvolution2D") {
                l.type = kind == "DepthwiseConv2D"                 ? LayerType::DepthwiseConvolution
                         : kind.rfind("Separable", 0) == 0         ? LayerType::SeparableConvolution
                         : kind.find("Transpose") != std::string::npos || kind == "Deconvolution2D" ? LayerType::TransposedConvolution
                                                                   : LayerType::Convolution;
                if (l.type == LayerType::TransposedConvolution) {
                    if (p.has("output_padding")) p.fail("output_padding", "is not supported (Thresher's output size follows the padding mode)");
                    p.ignore({"output_padding"});
                    // Keras 1's Deconvolution2D states its output shape; Thresher derives the same
                    // one from the padding mode (in * stride for same, as Keras 2 does).
                    if (kind == "Deconvolution2D") p.ignore({"output_shape"});
                }
                if (flat) p.fail(kind + " needs an image-shaped input");
                // Keras 1: nb_filter, nb_row x nb_col, subsample, border_mode.
                if (l.type != LayerType::DepthwiseConvolution) {
                    const auto filters = p.integer({"filters", "nb_filter"}, 1);
                    if (!filters) p.fail("filters", "is required");
                    l.units = *filters;
                }
                if (l.type != LayerType::Convolution) {
                    const auto mult = p.integer({"depth_multiplier"}, 1).value_or(1);
                    if (mult > 1024) p.fail("depth_multiplier", "at most 1024");
                    l.depth_multiplier = mult;
                    for (const char* key : {"depthwise_regularizer", "pointwise_regularizer", "depthwise_constraint",
                                            "pointwise_constraint", "pointwise_initializer"})
                        if (p.has(key) && key != std::string("pointwise_initializer")) p.note(std::string("\"") + key + "\" ignored");
                    p.ignore({"depthwise_regularizer", "pointwise_regularizer", "depthwise_constraint", "pointwise_constraint",
                              "pointwise_initializer"});
                }
                if (p.has("nb_row") || p.has("nb_col")) {
                    const auto rows = p.integer({"nb_row"}, 1), cols = p.integer({"nb_col"}, 1);
                    if (!rows || !cols) p.fail("nb_row", "Keras 1 needs both \"nb_row\" and \"nb_col\"");
                    l.kernel = {*rows, *cols};
                } else {
                    const auto kernel = p.pair({"kernel_size"}, 1);
                    if (!kernel) p.fail("kernel_size", "is required");
                    l.kernel = *kernel;
                }
                l.stride = p.pair({"strides", "subsample"}, 1).value_or(std::array<int, 2>{1, 1});
                l.dilation = p.pair({"dilation_rate"}, 1).value_or(std::array<int, 2>{1, 1});
                if (p.integer({"groups"}, 1).value_or(1) != 1) p.fail("groups", "grouped convolution is not supported");
                l.activation = activation_from_name(p, "activation", c->value("activation", nlohmann::json("linear")), keras3);
                // Keras's softmax is over the last axis: the channels of each pixel when channels
                // last (a segmentation head; shape inference keeps it to an output with mcxent).
                if (l.activation.kind == Activation::Softmax && channels_first)
                    p.fail("activation", "softmax on a channels_first convolution normalises over its width, which is not supported");
                params = true;
            } else if (kind == "MaxPooling2D" || kind == "MaxPool2D" || kind == "AveragePooling2D" || kind == "AvgPool2D") {
                l.type = LayerType::Subsampling;
                l.max_pool = kind.rfind("Max", 0) == 0;
                l.kernel = p.pair({"pool_size"}, 1).value_or(std::array<int, 2>{2, 2});
                l.stride = p.pair({"strides"}, 1).value_or(l.kernel);
            } else if (kind == "GlobalAveragePooling2D" || kind == "GlobalAvgPool2D" || kind == "GlobalMaxPooling2D" ||
                       kind == "GlobalMaxPool2D") {
                if (flat) p.fail("global pooling needs an image-shaped input");
                l.type = LayerType::Subsampling;
                l.max_pool = kind.find("Max") != std::string::npos;
                l.global = true;
                p.ignore({"keepdims"});  // C x 1 x 1 either way; a following Dense sees the C features
                flat = true;             // what follows takes the C features directly (no Flatten needed)
            } else if (kind == "BatchNormalization") {
                l.type = LayerType::BatchNorm;
                if (p.integer({"mode"}, 0).value_or(0) != 0)
                    p.fail("mode", "Keras 1 BatchNormalization mode 1 and 2 (per-sample) are not supported");
                const auto& axis_json = c->contains("axis") ? (*c)["axis"] : nlohmann::json(-1);
                const auto axis = axis_json.is_array() && axis_json.size() == 1 ? axis_json[0] : axis_json;
                const bool ok = axis.is_number_integer() &&
                                (flat ? (axis == -1 || axis == 1)
                                      : channels_first ? (axis == 1 || axis == -3) : (axis == -1 || axis == 3));
                if (!ok) p.fail("axis", "normalising over axis " + json_summary(axis_json) + " is not supported (only the channel axis)");
                p.ignore({"axis"});
                l.bn_decay = static_cast<float>(p.hyper({"momentum"}, import::kUnit).value_or(0.99));
                l.bn_eps = static_cast<float>(p.hyper({"epsilon"}, import::kBatchNormEps).value_or(1e-3));
                if (!p.boolean({"center"}).value_or(true) || !p.boolean({"scale"}).value_or(true))
                    p.note("center/scale false: Thresher learns both beta and gamma");
                params = true;
            } else if (kind == "Dropout" || kind == "SpatialDropout2D") {
                // Keras 1 called the drop probability "p". SpatialDropout2D drops whole channels.
                const auto rate = p.hyper({"rate", "p"}, import::kUnitOpenTop).value_or(0.0);
                if (p.has("noise_shape") && !p.json()["noise_shape"].is_null())
                    p.fail("noise_shape", "dropout with a noise shape is not supported");
                p.ignore({"noise_shape", "data_format"});
                p.note_unread();
                if (rate == 0.0) return;
                l.type = LayerType::Dropout;
                l.spatial = kind == "SpatialDropout2D";
                l.retain = static_cast<float>(1.0 - decimal(static_cast<float>(rate)));  // Keras gives the drop probability
                m.layers.push_back(l);
                return;
            } else if (kind == "Flatten") {
                if (seq) {  // Keras's [steps, features] flattened is Thresher's sequence layout
                    l.type = LayerType::Reshape;
                    l.reshape_to = Shape{0, 1, 1};  // shape inference works out steps x features
                    seq = false, flat = true;
                    p.ignore({"data_format"});
                    p.note_unread();
                    m.layers.push_back(std::move(l));
                    return;
                }
                if (!flat && !flatten_noted && !needs_flatten) {
                    p.note("Keras flattens height x width x channels, Thresher channels x height x width: the features "
                           "are in another order, which does not matter when training from scratch (no weights are imported)");
                    flatten_noted = true;
                }
                flat = true;
                needs_flatten = false;
                p.note_unread();
                return;
            } else if (kind == "PReLU") {
                // shared_axes count Keras's channels-last input axes: 1 = height, 2 = width, 3 = channels
                // for an image, 1 = the features for flat input.
                l.type = LayerType::PRelu;
                l.prelu_init = read_alpha_initializer(p);
                if (const auto* axes = p.array({"shared_axes"})) {
                    for (const auto& a : *axes) {
                        const long long ax = a.is_number_integer() ? a.get<long long>() : 0;
                        if (ax < 1 || ax > (flat ? 1 : 3))
                            p.fail("shared_axes", "axis " + a.dump() + " is not an axis of the " +
                                                      std::string(flat ? "flat input (1)" : "image input (1 height, 2 width, 3 channels)"));
                        l.prelu_shared[flat ? 0 : ax == 3 ? 0 : static_cast<std::size_t>(ax)] = true;
                    }
                }
                p.ignore({"shared_axes"});
                if (p.has("alpha_regularizer") && !p.json()["alpha_regularizer"].is_null())
                    p.fail("alpha_regularizer", "is not supported (Thresher does not regularise PReLU's alpha)");
                if (p.has("alpha_constraint") && !p.json()["alpha_constraint"].is_null())
                    p.fail("alpha_constraint", "is not supported");
                p.ignore({"alpha_regularizer", "alpha_constraint"});
                p.note_unread();
                m.layers.push_back(std::move(l));
                return;
            } else if (kind == "Activation" || kind == "ReLU" || kind == "LeakyReLU" || kind == "ELU" || kind == "Softmax" ||
                       kind == "ThresholdedReLU") {
                ActivationSpec act;
                if (kind == "Activation") {
                    act = activation_from_name(p, "activation", c->value("activation", nlohmann::json("linear")), keras3);
                    p.ignore({"activation"});
                } else if (kind == "ReLU") {
                    const auto max = p.number({"max_value"});
                    const auto slope = p.hyper({"negative_slope"}, import::kUnit).value_or(0.0);
                    const auto threshold = p.hyper({"threshold"}, import::Range{0.0, 100.0}).value_or(0.0);
                    if (threshold != 0.0 && (max || slope != 0.0))
                        p.fail("ReLU with a threshold and a max_value or negative_slope is not supported");
                    if (max && (*max != 6.0 || slope != 0.0)) p.fail("ReLU with a max_value other than 6 is not supported");
                    act = threshold != 0.0 ? ActivationSpec{Activation::ThresholdedRelu, static_cast<float>(threshold)}
                        : max ? ActivationSpec{Activation::Relu6, 0.01f}
                        : slope == 0.0 ? ActivationSpec{Activation::Relu, 0.01f}
                                       : ActivationSpec{Activation::LeakyRelu, static_cast<float>(slope)};
                } else if (kind == "ThresholdedReLU") {
                    act = {Activation::ThresholdedRelu, static_cast<float>(p.hyper({"theta"}, import::Range{0.0, 100.0}).value_or(1.0))};
                } else if (kind == "ELU") {
                    act = {Activation::Elu, static_cast<float>(p.hyper({"alpha"}, import::Range{0.0, 100.0}).value_or(1.0))};
                } else if (kind == "LeakyReLU") {
                    act = {Activation::LeakyRelu, static_cast<float>(p.hyper({"negative_slope", "alpha"}, import::kUnit).value_or(0.3))};
                } else {
                    // The last axis (Keras's default): an image's channels when channels last.
                    act = {Activation::Softmax, 0.01f};
                    const auto& axis = c->contains("axis") ? (*c)["axis"] : nlohmann::json(-1);
                    const bool last = axis == -1 || (axis.is_array() && axis.size() == 1 && axis[0] == -1);
                    if (!flat && !seq && (!last || channels_first))
                        p.fail("axis", "softmax over an image is supported over its channels only (axis -1, channels last), got " +
                                           json_summary(axis));
                    p.ignore({"axis"});
                }
                if (act.kind == Activation::Softmax && !flat && !seq && channels_first)
                    p.fail("activation", "softmax over a channels_first image normalises over its width, which is not supported");
                p.note_unread();
                // Linear is nothing to run; otherwise fused into the layer before it where that is
                // exact, or a layer of its own (after a Dense that has an activation already, say).
                const bool foldable = sole_reader && (!functional || (m.layers.back().type == LayerType::Dense ||
                                                                      is_convolution(m.layers.back().type) ||
                                                                      m.layers.back().type == LayerType::Convolution1d));
                if (act.kind == Activation::Identity || (foldable && fold_activation(m.layers, act))) return;
                l.type = LayerType::Activation;
                l.activation = act;
                m.layers.push_back(std::move(l));
                return;
            }

            if (is_convolution(l.type) || l.type == LayerType::Subsampling) {
                const auto padding = p.string({"padding", "border_mode"}).value_or("valid");
                if (padding == "same") l.mode = ConvMode::Same;
                else if (padding != "valid")
                    p.fail(p.has("border_mode") ? "border_mode" : "padding", "\"" + padding + "\" is not supported (valid or same)");
                if (l.type == LayerType::Convolution && sole_reader) {
                    const auto padding_inputs = m.layers.empty() ? std::vector<std::string>{} : m.layers.back().inputs;
                    const std::size_t n = m.layers.size();
                    import::fold_zero_padding(m.layers, l);
                    if (functional && m.layers.size() < n) l.inputs = padding_inputs;  // reads what the padding read
                }
            }
            if (params) {
                if (l.type != LayerType::BatchNorm) {
                    l.weight_init = read_initializer(p, p.has("init")                        ? "init"
                                                    : p.has("depthwise_initializer") ? "depthwise_initializer"
                                                                                     : "kernel_initializer");
                    if (!p.boolean({"use_bias", "bias"}).value_or(true)) p.note("use_bias false: Thresher always learns a bias");
                }
                read_regularizer(p, l);
                if (l.type == LayerType::BatchNorm) l.l1 = l.l2 = 0.f;
            }
            p.ignore({"activation"});
            p.note_unread();
            m.layers.push_back(std::move(l));
            };
        translate();
        if (!functional) continue;
        const bool added = m.layers.size() > count_before ||
                           (!m.layers.empty() && m.layers.back().name != back_before);
        if (added) {
            auto& l = m.layers.back();
            if (l.inputs.empty()) l.inputs = ins;
            if (l.name != keras_name) alias[keras_name] = l.name;
            // A later call of a shared layer: the first call's parameters, where that call became
            // a layer of its own (an activation folded into the layer before it shares nothing).
            if (calls && l.name == keras_name)
                if (const auto it = calls->shares.find(keras_name); it != calls->shares.end())
                    for (const auto& owner : m.layers)
                        if (owner.name == it->second) l.shares = owner.name;
        } else if (!ins.empty()) {
            alias[keras_name] = ins[0];  // passed its input on
        } else if (keras_name != m.input_name && !is_model_input(keras_name)) {
            alias[keras_name] = m.input_name;
        }
        if (!is_model_input(keras_name)) flat_after[keras_name] = flat, seq_after[keras_name] = seq;  // inputs: from their shapes
    }
    // The outputs: a functional model's output_layers (several are outputs side by side, main
    // first), else the last layer. A Dense becomes an output layer; an activation layer after it
    // is the output itself (it takes the loss, without parameters).
    std::vector<std::size_t> out_layers;
    if (functional) {
        for (const auto& name : output_names) {
            const auto resolved = resolve(name);
            std::optional<std::size_t> at;
            for (std::size_t j = 0; j < m.layers.size(); ++j)
                if (m.layers[j].name == resolved) at = j;
            if (!at) root.fail("output_layers", "the output \"" + name + "\" computes nothing Thresher keeps");
            out_layers.push_back(*at);
        }
        if (output_names.size() == 1 && out_layers[0] + 1 != m.layers.size())
            root.fail("output_layers", "the output \"" + output_names[0] + "\" must be the last layer that computes something");
    } else if (!m.layers.empty()) {
        out_layers.push_back(m.layers.size() - 1);
    }
    if (m.layers.empty()) root.fail("the model has no layer Thresher computes");
    // An image output (Conv2D, Conv2DTranspose, UpSampling2D, ZeroPadding2D, Cropping2D, or an
    // activation over an image) takes the loss at every pixel (engine/config/README.md, outputs).
    auto image_output = [](LayerType t) {
        return is_convolution(t) || t == LayerType::TransposedConvolution || t == LayerType::Upsampling ||
               t == LayerType::ZeroPadding || t == LayerType::Cropping;
    };
    for (const auto j : out_layers) {
        auto& out = m.layers[j];
        if (out.type != LayerType::Dense && out.type != LayerType::Activation && !image_output(out.type))
            root.fail((out_layers.size() > 1 ? "each output must be Dense, an activation or a layer producing an image (Conv2D, "
                                               "Conv2DTranspose, UpSampling2D ...): " + out.origin + " (" + out.origin_what + ") is " +
                                                   std::string(to_string(out.type))
                                             : "the last layer must be Dense, an activation or a layer producing an image (Conv2D, "
                                               "Conv2DTranspose, UpSampling2D ...), got " + out.origin_what + " (" +
                                                   std::string(to_string(out.type)) + ")"));
        if (out.type == LayerType::Dense) out.type = LayerType::Output;
        out.declares_loss = out.type != LayerType::Output;
    }
    if (out_layers.size() > 1)
        for (const auto j : out_layers) m.outputs.push_back(m.layers[j].name);

    // Loss and optimizer: from the compile/training config when the file has one.
    import::KerasTraining training;
    if (at_file.training) training = import::read_keras_training(*at_file.training, source, at_file.training_path, notes);
    if (!training.loss_by_position.empty() && training.loss_by_position.size() != out_layers.size())
        throw ConfigError(source + ": " + at_file.training_path + ".loss: lists " + std::to_string(training.loss_by_position.size()) +
                          " losses for " + std::to_string(out_layers.size()) + " outputs");
    for (const auto& [name, loss] : training.loss_by_output)
        if (std::find(output_names.begin(), output_names.end(), name) == output_names.end())
            throw ConfigError(source + ": " + at_file.training_path + ".loss: names \"" + name + "\", which is not an output");
    for (std::size_t pos = 0; pos < out_layers.size(); ++pos) {
        auto& out = m.layers[out_layers[pos]];
        const std::string out_where = out.origin + " (" + out.origin_what + ")";
        std::optional<LossKind> loss = training.loss;
        std::optional<Activation> logits = training.logits_activation;
        if (!training.loss_by_position.empty()) {
            loss = training.loss_by_position[pos].loss;
            logits = training.loss_by_position[pos].logits_activation;
        } else if (!training.loss_by_output.empty()) {
            const auto it = functional ? training.loss_by_output.find(output_names[pos]) : training.loss_by_output.end();
            if (it == training.loss_by_output.end() && training.loss_by_output.size() == 1 && out_layers.size() == 1) {
                loss = training.loss_by_output.begin()->second.loss;
                logits = training.loss_by_output.begin()->second.logits_activation;
            } else if (it != training.loss_by_output.end()) {
                loss = it->second.loss;
                logits = it->second.logits_activation;
            }
        }
        if (loss) {
            out.loss = *loss;
            if (logits) {
                if (out.activation.kind != Activation::Identity)
                    throw ConfigError(source + ": " + out_where + ": the loss takes logits (from_logits: true), but the layer "
                                      "already applies " + std::string(to_string(out.activation.kind)));
                out.activation.kind = *logits;
                notes.push_back(out_where + ": from_logits: the loss's " + std::string(to_string(out.activation.kind)) +
                                " becomes the layer's activation (the same training; predictions are probabilities)");
            }
            const bool ce = out.loss == LossKind::MultiClassCrossEntropy;
            if (ce && out.activation.kind != Activation::Softmax)
                throw ConfigError(source + ": " + out_where + ": categorical cross-entropy needs a softmax output, got " +
                                  std::string(to_string(out.activation.kind)));
            if (out.loss == LossKind::BinaryCrossEntropy && out.activation.kind != Activation::Sigmoid)
                throw ConfigError(source + ": " + out_where + ": binary cross-entropy needs a sigmoid output, got " +
                                  std::string(to_string(out.activation.kind)));
            if ((out.loss == LossKind::MSE || out.loss == LossKind::MAE) && out.activation.kind == Activation::Softmax)
                throw ConfigError(source + ": " + out_where + ": " + std::string(to_string(out.loss)) +
                                  " on a softmax output is not supported");
        } else {
            out.loss = out.activation.kind == Activation::Softmax ? LossKind::MultiClassCrossEntropy : LossKind::MSE;
            notes.push_back((out_layers.size() > 1 ? out_where : std::string("output")) +
                            ": the file holds no loss (compile() was not saved with it); using " + std::string(to_string(out.loss)) +
                            (out.loss == LossKind::MSE ? " (the output is not softmax)" : " (softmax output)"));
        }
    }
    UpdaterSpec updater;
    if (training.updater) {
        updater = *training.updater;
    } else {
        updater.kind = UpdaterKind::Adam;
        updater.learning_rate = 1e-3f;
        updater.epsilon = 1e-7f;  // Keras's Adam epsilon
        notes.push_back("updater: the file holds no optimizer (compile() was not saved with it); using Adam with "
                        "learning rate 0.001");
    }
    for (auto& l : m.layers)
        if (l.weight_init || l.l1) l.updater = updater;
    import::hoist_layer_defaults(m);
    if (training.schedule) {
        m.lr_schedule = training.schedule;
        notes.push_back("learning rate: " + m.lr_schedule->describe());
    }
    if (config) {
        config->ignore({"layers", "trainable", "dtype", "build_input_shape"});
        config->note_unread();
    }
    root.ignore({"config", "keras_version", "backend", "module", "registered_name", "build_config", "compile_config"});
    root.note_unread();
    result.model = import::validated(m, source);
    return result;
}

}  // namespace thresher::config
