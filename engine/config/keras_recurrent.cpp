// Keras sequence layers, config and weights (keras_recurrent.h). The mapping table is in
// engine/config/README.md ("Keras sequence layers").
#include "config/keras_recurrent.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "config/json_fields.h"
#include "config/keras_fields.h"
#include "core/error.h"

namespace thresher::config {

namespace {

using import::Place;

constexpr int kMaxUnits = 1 << 16;       // units, filters, embedding width, steps repeated
constexpr int kMaxVocabulary = 1 << 24;  // embedding ids

const std::set<std::string>& sequence_classes() {
    static const std::set<std::string> known{
        "LSTM", "GRU", "SimpleRNN", "CuDNNLSTM", "CuDNNGRU", "Bidirectional", "Embedding", "Conv1D", "Convolution1D", "MaxPooling1D", "MaxPool1D",
        "AveragePooling1D", "AvgPool1D", "GlobalMaxPooling1D", "GlobalMaxPool1D", "GlobalAveragePooling1D",
        "GlobalAvgPool1D", "RepeatVector", "TimeDistributed", "TimeDistributedDense", "Masking"};
    return known;
}

bool has_class(const nlohmann::json& j, int depth) {
    if (depth > 16) return false;
    if (j.is_object()) {
        if (const auto c = j.find("class_name"); c != j.end() && c->is_string() && sequence_classes().count(c->get<std::string>()))
            return true;
        for (const auto& [k, v] : j.items())
            if ((v.is_object() || v.is_array()) && has_class(v, depth + 1)) return true;
    } else if (j.is_array()) {
        for (const auto& v : j)
            if (has_class(v, depth + 1)) return true;
    }
    return false;
}

// n or [n] (Keras 2 writes 1-D sizes as one-element lists), at least `min`, at most kMaxUnits.
std::optional<int> one_int(Place& p, std::initializer_list<const char*> keys, int min) {
    for (const char* key : keys) {
        if (!p.has(key)) continue;
        const auto& v = p.json()[key];
        const auto& x = v.is_array() && v.size() == 1 ? v[0] : v;
        if (!x.is_number_integer() || x.get<long long>() < min || x.get<long long>() > kMaxUnits)
            p.fail(key, "must be an integer from " + std::to_string(min) + " to " + std::to_string(kMaxUnits) + " (or [n]), got " +
                            json_summary(v));
        p.ignore({key});
        return x.get<int>();
    }
    return std::nullopt;
}

void refuse_flag(Place& p, const char* key, const std::string& why) {
    if (p.boolean({key}).value_or(false)) p.fail(key, "true is not supported: " + why);
}

void channels_last_only(Place& p) {
    if (p.string({"data_format"}).value_or("channels_last") != "channels_last")
        p.fail("data_format", "channels_first sequences ([features, steps]) are not supported: Thresher reads [steps, features]");
}

// An LSTM, GRU or SimpleRNN config (Keras 1, 2, 3, TF.js) into `l`. Keras 2's CuDNNLSTM and
// CuDNNGRU are the same cells with sigmoid gates and tanh fixed (cuDNN's GRU resets after the
// recurrent matmul: reset_after), with two bias vectors (input, recurrent) that sum.
void read_recurrent(Place& p, const std::string& kind, LayerConfig& l, bool keras3) {
    const bool cudnn = kind.rfind("CuDNN", 0) == 0;
    l.type = kind == "LSTM" || kind == "CuDNNLSTM" ? LayerType::Lstm
             : kind == "GRU" || kind == "CuDNNGRU" ? LayerType::Gru
                                                   : LayerType::SimpleRnn;
    const auto units = p.integer({"units", "output_dim"}, 1);  // Keras 1: output_dim
    if (!units) p.fail("units", "is required");
    if (*units > kMaxUnits) p.fail("units", "at most " + std::to_string(kMaxUnits));
    l.units = *units;
    l.return_sequences = p.boolean({"return_sequences"}).value_or(false);
    refuse_flag(p, "return_state", "Thresher's recurrent layers have one output (the states are not outputs)");
    refuse_flag(p, "stateful", "Thresher starts every batch from zero states");
    // Reading each sample backwards (LayerConfig::go_backwards: Keras's outputs, right-aligned).
    l.go_backwards = p.boolean({"go_backwards"}).value_or(false);
    refuse_flag(p, "time_major", "Thresher reads [batch, steps, features]");
    const auto& c = p.json();
    // Any element-wise activation runs in the cell (oneDNN's primitives for sigmoid gates with a
    // tanh cell, the engine's host path otherwise: standalone Keras 2's default hard_sigmoid
    // gates included); softmax mixes a step's units and has no cell form.
    auto elementwise = [&](const char* key, const char* fallback) {
        const auto v = c.contains(key) ? c[key] : nlohmann::json(fallback);
        const auto a = activation_from_name(p, key, v, keras3);
        if (a.kind == Activation::Softmax) p.fail(key, "softmax is not supported in a recurrent cell (an element-wise activation is)");
        return a;
    };
    if (l.type == LayerType::SimpleRnn) {
        l.activation = elementwise("activation", "tanh");
    } else if (!cudnn) {
        l.cell_activation = elementwise("activation", "tanh");
        // Keras 1 says inner_activation; a saved Keras 2 config always writes recurrent_activation.
        l.gate_activation = elementwise(p.has("inner_activation") ? "inner_activation" : "recurrent_activation", "sigmoid");
    }
    p.ignore({"activation", "recurrent_activation", "inner_activation"});
    // Dropout inside the cell (Keras 1: dropout_W, dropout_U): one mask per sample for all steps,
    // as Keras draws it (LayerConfig::input_retain, recurrent_retain).
    const double input_rate = p.hyper({"dropout", "dropout_W"}, import::kUnitOpenTop).value_or(0.0);
    const double recurrent_rate = p.hyper({"recurrent_dropout", "dropout_U"}, import::kUnitOpenTop).value_or(0.0);
    l.input_retain = static_cast<float>(1.0 - input_rate);
    l.recurrent_retain = static_cast<float>(1.0 - recurrent_rate);
    if (input_rate > 0 || recurrent_rate > 0) {
        // Keras 1 and Keras 2's implementation 1 draw a mask per gate; Thresher one for all gates
        // (Keras 2's implementation 2 and Keras 3).
        if (p.has("dropout_W") || p.has("dropout_U") || p.integer({"implementation"}, 0).value_or(1) == 1)
            p.note("dropout: Keras draws a mask per gate here (implementation 1), Thresher one mask for all four");
        if (l.type == LayerType::Gru && recurrent_rate > 0)
            p.note("recurrent_dropout: Thresher drops h' where the recurrence multiplies it; its update h = z h' + ... reads h' whole");
    }
    if (l.type == LayerType::Gru) l.reset_after = cudnn || p.boolean({"reset_after"}).value_or(false);  // absent: Keras 1, Keras 2 < 2.3
    if (l.type == LayerType::Lstm) {
        // unit_forget_bias (Keras 2/3) or forget_bias_init "one" (Keras 1): the forget gate's bias starts at 1.
        const bool one = p.has("forget_bias_init") ? p.string({"forget_bias_init"}).value_or("") == "one"
                                                   : p.boolean({"unit_forget_bias"}).value_or(true);
        l.forget_bias = one ? 1.f : 0.f;
    }
    l.weight_init = read_initializer(p, p.has("init") ? "init" : "kernel_initializer");
    if (!p.boolean({"use_bias", "bias"}).value_or(true)) p.note("use_bias false: Thresher always learns a bias (it starts at zero)");
    // Thresher regularises a recurrent layer's input kernel W (its weights), not R.
    read_regularizer(p, l);
    for (const char* key : {"recurrent_regularizer", "U_regularizer", "recurrent_constraint", "U_constraint"})
        if (p.has(key)) p.note(std::string("\"") + key + "\" ignored: Thresher regularises the input kernel only");
    p.ignore({"recurrent_initializer", "inner_init", "bias_initializer", "unroll", "implementation", "consume_less",
              "recurrent_regularizer", "U_regularizer", "recurrent_constraint", "U_constraint", "input_length", "use_cudnn",
              "zero_output_for_mask", "kernel_regularizer", "bias_regularizer", "W_regularizer", "b_regularizer",
              "activity_regularizer", "kernel_constraint", "bias_constraint", "W_constraint", "b_constraint"});
}

// TimeDistributed's Dense, or Keras 1's TimeDistributedDense: a dense at every step.
void read_dense(Place& p, LayerConfig& l, bool keras3) {
    l.type = LayerType::Dense;
    const auto units = p.integer({"units", "output_dim"}, 1);
    if (!units) p.fail("units", "is required");
    if (*units > kMaxUnits) p.fail("units", "at most " + std::to_string(kMaxUnits));
    l.units = *units;
    l.activation = activation_from_name(p, "activation", p.json().value("activation", nlohmann::json("linear")), keras3);
    l.weight_init = read_initializer(p, p.has("init") ? "init" : "kernel_initializer");
    if (!p.boolean({"use_bias", "bias"}).value_or(true)) p.note("use_bias false: Thresher always learns a bias (it starts at zero)");
    read_regularizer(p, l);
    p.ignore({"activation", "input_length"});
}

// The inner layer of a Bidirectional or TimeDistributed: {"class_name", "config"}.
std::pair<std::string, Place> inner_layer(Place& p) {
    const auto* inner = p.object({"layer"});
    if (!inner || !inner->contains("config") || !(*inner)["config"].is_object()) p.fail("layer", "is required: the wrapped layer");
    const std::string cls = import::text_or(*inner, "class_name", "");
    const std::string name = import::text_or((*inner)["config"], "name", "");
    return {cls, p.nested((*inner)["config"], ".layer (" + cls + (name.empty() ? "" : " \"" + name + "\"") + ")")};
}

}  // namespace

const char* const kKerasSequenceLayers =
    "LSTM, GRU, SimpleRNN, Keras 2's CuDNNLSTM and CuDNNGRU, Bidirectional (of those), Embedding, Conv1D, MaxPooling1D, AveragePooling1D, GlobalMaxPooling1D, "
    "GlobalAveragePooling1D, RepeatVector, TimeDistributed (of Dense), Masking (by lengths); Keras 1's Convolution1D and TimeDistributedDense";

bool is_keras_sequence_layer(const std::string& class_name) { return sequence_classes().count(class_name) > 0; }

bool keras_model_has_sequences(const nlohmann::json& layers) { return has_class(layers, 0); }

std::string keras_unsupported_wrapped(const nlohmann::json& layer) {
    const std::string cls = import::text_or(layer, "class_name", "");
    if ((cls != "Bidirectional" && cls != "TimeDistributed") || !layer.contains("config") || !layer["config"].is_object() ||
        !layer["config"].contains("layer") || !layer["config"]["layer"].is_object())
        return "";
    const std::string inner = import::text_or(layer["config"]["layer"], "class_name", "");
    const bool ok = cls == "Bidirectional" ? inner == "LSTM" || inner == "GRU" || inner == "SimpleRNN" || inner == "CuDNNLSTM" ||
                                                 inner == "CuDNNGRU"
                                           : inner == "Dense";
    return ok ? "" : inner.empty() ? "?" : inner;
}

void check_fixed_steps(Place& p, const nlohmann::json& shape, const std::string& key, bool has_batch) {
    // [null, T, C] or [null, T] (ids), or without the batch [T, C] / [T]; an image's
    // [null, h, w, c] keeps the image message.
    const std::size_t t = has_batch ? 1 : 0;
    if (shape.is_array() && shape.size() >= t + 1 && shape.size() <= t + 2 && shape[t].is_null())
        p.fail(key, json_summary(shape) + " has no fixed number of steps: Thresher needs the longest sequence the model will read "
                    "(shorter ones are padded at the end and masked): give it with --steps N (the app asks for it), or save "
                    "the model with one, e.g. Input(shape=(T, ...)) or Embedding(input_length=T)");
}

void import_keras_sequence_layer(Place& p, const std::string& kind, LayerConfig l, bool keras3, KerasTensor& tensor,
                                 std::vector<LayerConfig>& layers) {
    auto need_sequence = [&]() {
        if (!tensor.sequence)
            p.fail(kind + " needs a sequence input [steps, features], but it reads " +
                   std::string(tensor.flat ? "flat features" : "an image"));
    };
    if (kind == "LSTM" || kind == "GRU" || kind == "SimpleRNN" || kind == "CuDNNLSTM" || kind == "CuDNNGRU" || kind == "Bidirectional") {
        need_sequence();
        if (kind == "Bidirectional") {
            const auto mode = p.json().contains("merge_mode") ? p.json()["merge_mode"] : nlohmann::json("concat");
            if (mode.is_null())
                p.fail("merge_mode", "None (two outputs) is not supported: Thresher's layers have one output (use concat, sum, mul or ave)");
            const std::string m = mode.is_string() ? mode.get<std::string>() : "";
            l.bidirectional = m == "concat" ? BiMode::Concat : m == "sum" ? BiMode::Sum : m == "mul" ? BiMode::Mul
                              : m == "ave" ? BiMode::Average : BiMode::None;
            if (l.bidirectional == BiMode::None) p.fail("merge_mode", json_summary(mode) + " is not supported (concat, sum, mul, ave)");
            auto [cls, inner] = inner_layer(p);
            if (cls != "LSTM" && cls != "GRU" && cls != "SimpleRNN" && cls != "CuDNNLSTM" && cls != "CuDNNGRU")
                inner.fail("Bidirectional(" + cls + ") is not supported (LSTM, GRU, SimpleRNN, CuDNNLSTM or CuDNNGRU)");
            inner.ignore({"name", "trainable", "dtype", "batch_input_shape", "batch_shape", "input_shape", "input_dim"});
            read_recurrent(inner, cls, l, keras3);
            if (l.go_backwards)
                inner.fail("go_backwards", "true inside Bidirectional is not supported: Keras then swaps which half reads forwards "
                                           "(leave it false; the backward half already reads backwards)");
            inner.note_unread();
            // Keras 3 and tf.keras also write the backward layer's config: the same kind, its own weights.
            p.ignore({"merge_mode", "layer", "backward_layer"});
        } else {
            read_recurrent(p, kind, l, keras3);
        }
        if (!l.return_sequences) tensor = {true, false};
    } else if (kind == "Embedding") {
        if (!tensor.sequence)
            p.fail("Embedding reads token ids: give the model's input a fixed number of steps ([null, T], or input_length)");
        const auto v = p.integer({"input_dim"}, 1), e = p.integer({"output_dim"}, 1);
        if (!v) p.fail("input_dim", "is required: the vocabulary size");
        if (!e) p.fail("output_dim", "is required");
        if (*v > kMaxVocabulary) p.fail("input_dim", "at most " + std::to_string(kMaxVocabulary));
        if (*e > kMaxUnits) p.fail("output_dim", "at most " + std::to_string(kMaxUnits));
        l.type = LayerType::Embedding;
        l.vocabulary = *v;
        l.units = *e;
        if (p.boolean({"mask_zero"}).value_or(false))
            p.note("mask_zero: Thresher masks each sample's steps from its length L on (given with the data), not steps holding "
                   "id 0: pad at the end and give each sample its length (an id 0 inside a sequence is read as a token)");
        if (p.hyper({"dropout"}, import::kUnitOpenTop).value_or(0.0) > 0)  // Keras 1 dropped whole words
            p.fail("dropout", "Keras 1's word dropout inside Embedding is not supported (set it to 0)");
        l.weight_init = read_initializer(p, p.has("init") ? "init" : "embeddings_initializer");
        // Thresher regularises the table as a weight: with Keras's embeddings_regularizer, or none.
        l.l1 = l.l2 = 0.f;
        if (p.has("embeddings_regularizer") || p.has("W_regularizer")) {
            nlohmann::json as_kernel{{"kernel_regularizer", p.json()[p.has("W_regularizer") ? "W_regularizer" : "embeddings_regularizer"]}};
            import::Place k = p.nested(as_kernel, "");
            read_regularizer(k, l);
        }
        p.ignore({"mask_zero", "input_length", "embeddings_regularizer", "embeddings_constraint", "activity_regularizer",
                  "W_regularizer", "W_constraint", "dropout", "sparse"});
    } else if (kind == "Conv1D" || kind == "Convolution1D") {
        need_sequence();
        channels_last_only(p);
        l.type = LayerType::Convolution1d;
        const auto filters = one_int(p, {"filters", "nb_filter"}, 1);
        const auto k = one_int(p, {"kernel_size", "filter_length"}, 1);
        if (!filters) p.fail("filters", "is required");
        if (!k) p.fail("kernel_size", "is required");
        l.units = *filters;
        l.kernel = {*k, 1};
        l.stride = {one_int(p, {"strides", "subsample_length"}, 1).value_or(1), 1};
        l.dilation = {one_int(p, {"dilation_rate"}, 1).value_or(1), 1};
        const char* key = p.has("border_mode") ? "border_mode" : "padding";
        const auto padding = p.string({key}).value_or("valid");
        l.mode = padding == "valid" ? ConvMode::Truncate : padding == "same" ? ConvMode::Same : ConvMode::Causal;
        if (padding != "valid" && padding != "same" && padding != "causal")
            p.fail(key, "\"" + padding + "\" is not supported (valid, same or causal)");
        if (p.integer({"groups"}, 1).value_or(1) != 1) p.fail("groups", "grouped convolution is not supported");
        l.activation = activation_from_name(p, "activation", p.json().value("activation", nlohmann::json("linear")), keras3);
        if (l.activation.kind == Activation::Softmax) p.fail("activation", "softmax on Conv1D is not supported (add a Dense)");
        l.weight_init = read_initializer(p, p.has("init") ? "init" : "kernel_initializer");
        if (!p.boolean({"use_bias", "bias"}).value_or(true)) p.note("use_bias false: Thresher always learns a bias (it starts at zero)");
        read_regularizer(p, l);
        p.ignore({"activation", "input_length"});
    } else if (kind.find("Global") == 0) {
        need_sequence();
        channels_last_only(p);
        if (p.boolean({"keepdims"}).value_or(false)) p.fail("keepdims", "true is not supported (the pooled features are flat)");
        l.type = LayerType::Subsampling;
        l.global = true;
        l.max_pool = kind.find("Max") != std::string::npos;
        tensor = {true, false};
    } else if (kind.find("Pool") != std::string::npos) {  // MaxPooling1D, AveragePooling1D and their short names
        need_sequence();
        channels_last_only(p);
        l.type = LayerType::Subsampling;
        l.max_pool = kind.find("Max") == 0;
        const int k = one_int(p, {"pool_size", "pool_length"}, 1).value_or(2);
        l.kernel = {k, 1};
        l.stride = {one_int(p, {"strides", "stride"}, 1).value_or(k), 1};
        const char* key = p.has("border_mode") ? "border_mode" : "padding";
        const auto padding = p.string({key}).value_or("valid");
        if (padding != "valid" && padding != "same") p.fail(key, "\"" + padding + "\" is not supported (valid or same)");
        l.mode = padding == "same" ? ConvMode::Same : ConvMode::Truncate;
    } else if (kind == "Masking") {
        // Keras skips the steps whose features all equal mask_value; Thresher the steps from each
        // sample's length on. The same for sequences padded at the end, so it becomes no layer.
        need_sequence();
        const double v = p.number({"mask_value"}).value_or(0.0);
        p.note("Masking (mask_value " + import::number_text(v) + "): Thresher masks each sample's steps from its length L on "
               "(given with the data), not steps equal to the mask value: pad at the end and give each sample its length");
        p.note_unread();
        return;
    } else if (kind == "RepeatVector") {
        if (!tensor.flat) p.fail("RepeatVector needs flat features (it repeats one vector)");
        const auto n = p.integer({"n"}, 1);
        if (!n) p.fail("n", "is required");
        if (*n > kMaxUnits) p.fail("n", "at most " + std::to_string(kMaxUnits));
        l.type = LayerType::RepeatVector;
        l.repeat = *n;
        tensor = {false, true};
    } else if (kind == "TimeDistributed") {
        need_sequence();
        auto [cls, inner] = inner_layer(p);
        if (cls != "Dense") inner.fail("TimeDistributed(" + cls + ") is not supported (only TimeDistributed(Dense))");
        inner.ignore({"name", "trainable", "dtype", "batch_input_shape", "batch_shape", "input_shape", "kernel_constraint",
                      "bias_constraint", "kernel_regularizer", "bias_regularizer", "activity_regularizer", "bias_initializer"});
        read_dense(inner, l, keras3);
        inner.note_unread();
        p.ignore({"layer"});
    } else {  // TimeDistributedDense (Keras 1)
        need_sequence();
        read_dense(p, l, keras3);
        p.ignore({"input_length"});
    }
    p.note_unread();
    layers.push_back(std::move(l));
}

// ---------------------------------------------------------------- weights

bool is_keras_sequence_weight_layer(LayerType type) {
    return is_recurrent(type) || type == LayerType::Embedding || type == LayerType::Convolution1d;
}

namespace {

// "bidirectional_1/forward_lstm_1/kernel:0" -> "kernel"; "layers/lstm/cell/vars/0" -> "0".
std::string leaf_of(const std::string& name) {
    std::string leaf = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
    return leaf.substr(0, leaf.rfind(':'));
}

bool has_component_starting(const std::string& name, const std::string& start) {
    std::size_t at = 0;
    while (at <= name.size()) {
        const auto end = std::min(name.find('/', at), name.size());
        if (name.compare(at, start.size(), start) == 0) return true;
        at = end + 1;
    }
    return false;
}

}  // namespace

void map_keras_sequence_weights(const std::string& source, const ModelConfig& m, std::size_t i, const std::vector<KerasWeight>& w,
                                std::vector<float>& params) {
    const auto& l = m.layers[i];
    auto refuse = [&](const std::string& what) { throw ConfigError(source + ": " + l.label(i) + ": " + what); };
    std::string names;
    for (const auto& x : w) names += (names.empty() ? "" : ", ") + x.name + " " + x.value.dims_str();
    auto expect = [&](const KerasWeight& x, std::vector<std::uint64_t> shape) {
        if (x.value.dims != shape) {
            Hdf5File::Floats f;
            f.dims = shape;
            refuse(x.name + " has shape " + x.value.dims_str() + ", the layer needs " + f.dims_str());
        }
        for (std::size_t k = 0; k < x.value.data.size(); ++k)
            if (!std::isfinite(x.value.data[k])) refuse(x.name + " holds a NaN or infinite value (at " + std::to_string(k) + ")");
    };
    // The n-th block of `role` (a bidirectional layer has the forward direction's blocks first).
    auto block = [&](ParamRole role, int n) {
        for (const auto& b : l.blocks)
            if (b.role == role && n-- == 0) return params.data() + l.param_offset + b.offset;
        refuse("has no such parameter block");
        return static_cast<float*>(nullptr);
    };
    const auto in = static_cast<std::size_t>(l.in_shape.c), units = static_cast<std::size_t>(l.units);

    if (l.type == LayerType::Embedding) {
        if (w.size() != 1) refuse("the file holds " + std::to_string(w.size()) + " weight(s) for it (" + names + "), Embedding has 1");
        expect(w[0], {static_cast<std::uint64_t>(l.vocabulary), units});
        std::copy(w[0].value.data.begin(), w[0].value.data.end(), block(ParamRole::Weight, 0));
        return;
    }
    // kernel, [recurrent_kernel,] [bias]: by name in an .h5, in this order in a .keras (vars/0, 1, 2).
    auto by_role = [&](const std::vector<const KerasWeight*>& ws, bool recurrent) {
        std::vector<const KerasWeight*> out(3, nullptr);  // kernel, recurrent_kernel, bias
        bool named = true;
        for (const auto* x : ws) {
            const auto leaf = leaf_of(x->name);
            named = named && (leaf == "kernel" || leaf == "recurrent_kernel" || leaf == "bias");
        }
        for (std::size_t k = 0; k < ws.size(); ++k) {
            const auto leaf = leaf_of(ws[k]->name);
            const std::size_t slot = named ? (leaf == "kernel" ? 0 : leaf == "recurrent_kernel" ? 1 : 2)
                                           : (k == 0 ? 0 : k == 1 && recurrent ? 1 : 2);
            if (out[slot] || (slot == 1 && !recurrent) || k > 2) refuse("the file's weights (" + names + ") are not the kernel, " +
                                                                         (recurrent ? "recurrent_kernel, " : "") + "bias it needs");
            out[slot] = ws[k];
        }
        if (!out[0] || (recurrent && !out[1]))
            refuse("the file's weights (" + names + ") do not name the kernel" + (recurrent ? " and recurrent_kernel" : "") +
                   " the layer needs (Keras 1's per-gate weights W_i, U_i, ... are not imported)");
        return out;
    };
    if (l.type == LayerType::Convolution1d) {
        std::vector<const KerasWeight*> ws;
        for (const auto& x : w) ws.push_back(&x);
        const auto r = by_role(ws, false);
        const auto k = static_cast<std::size_t>(l.kernel[0]);
        expect(*r[0], {k, in, units});
        // Keras [k, in, filters] -> Thresher [filters, in, k].
        float* dst = block(ParamRole::Weight, 0);
        const float* src = r[0]->value.data.data();
        for (std::size_t f = 0; f < units; ++f)
            for (std::size_t c = 0; c < in; ++c)
                for (std::size_t j = 0; j < k; ++j) dst[(f * in + c) * k + j] = src[(j * in + c) * units + f];
        float* b = block(ParamRole::Bias, 0);
        if (r[2]) {
            expect(*r[2], {units});
            std::copy(r[2]->value.data.begin(), r[2]->value.data.end(), b);
        } else {
            std::fill_n(b, units, 0.f);
        }
        return;
    }
    // Recurrent: per direction W [in, G*H], R [H, G*H], b — Keras's gate order is Thresher's.
    const int directions = l.bidirectional == BiMode::None ? 1 : 2;
    std::vector<std::vector<const KerasWeight*>> dir(static_cast<std::size_t>(directions));
    bool by_name = directions == 2;
    for (const auto& x : w) by_name = by_name && (has_component_starting(x.name, "forward_") || has_component_starting(x.name, "backward_"));
    for (std::size_t k = 0; k < w.size(); ++k) {
        const std::size_t d = directions == 1 ? 0 : by_name ? (has_component_starting(w[k].name, "backward_") ? 1 : 0)
                                                             : (k < w.size() / 2 ? 0 : 1);
        dir[d].push_back(&w[k]);
    }
    const std::size_t gates = l.type == LayerType::Lstm ? 4 : l.type == LayerType::Gru ? 3 : 1;
    const std::size_t gh = gates * units;
    for (int d = 0; d < directions; ++d) {
        const auto r = by_role(dir[static_cast<std::size_t>(d)], true);
        expect(*r[0], {in, gh});
        expect(*r[1], {units, gh});
        std::copy(r[0]->value.data.begin(), r[0]->value.data.end(), block(ParamRole::Weight, d));
        std::copy(r[1]->value.data.begin(), r[1]->value.data.end(), block(ParamRole::Recurrent, d));
        float* b = block(ParamRole::Bias, d);
        const std::size_t nb = l.type == LayerType::Gru && l.reset_after ? 4 * units : gh;
        std::fill_n(b, nb, 0.f);
        if (!r[2]) continue;
        const auto& bias_dims = r[2]->value.dims;
        if (l.type == LayerType::Lstm && bias_dims == std::vector<std::uint64_t>{2 * gh}) {
            // CuDNNLSTM: input biases then recurrent ones, both added to every gate.
            expect(*r[2], {2 * gh});
            const float* bi = r[2]->value.data.data();
            for (std::size_t j = 0; j < gh; ++j) b[j] = bi[j] + bi[gh + j];
        } else if (l.type == LayerType::Gru && l.reset_after) {
            // Keras [2, 3H] (CuDNNGRU: [6H]): input biases (z, r, h), then recurrent ones.
            // Thresher: z and r summed, the input candidate bias, then the recurrent candidate
            // bias (applied inside r * (...)).
            if (bias_dims == std::vector<std::uint64_t>{2 * gh}) expect(*r[2], {2 * gh});
            else expect(*r[2], {2, gh});
            const float* bi = r[2]->value.data.data();
            const float* br = bi + gh;
            for (std::size_t j = 0; j < 2 * units; ++j) b[j] = bi[j] + br[j];
            std::copy_n(bi + 2 * units, units, b + 2 * units);
            std::copy_n(br + 2 * units, units, b + 3 * units);
        } else {
            expect(*r[2], {gh});
            std::copy(r[2]->value.data.begin(), r[2]->value.data.end(), b);
        }
    }
}

std::vector<std::string> keras3_variable_groups(const Hdf5File& f, const std::string& base, const LayerConfig& l) {
    if (is_recurrent(l.type)) {
        if (l.bidirectional != BiMode::None) return {base + "/forward_layer/cell/vars", base + "/backward_layer/cell/vars"};
        return {base + "/cell/vars"};
    }
    if (l.origin_what.rfind("TimeDistributed ", 0) == 0 && f.exists(base + "/layer/vars")) return {base + "/layer/vars"};
    return {base + "/vars"};
}

}  // namespace thresher::config
