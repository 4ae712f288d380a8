// Thresher's sequence layers as Keras layers and weights (keras_sequence_export.h).
#include "export/keras_sequence_export.h"

#include <cmath>

namespace thresher::model_export {

namespace {

using config::BiMode;
using config::ConvMode;
using config::LayerConfig;
using config::LayerType;
using config::ParamRole;

const char* recurrent_class(LayerType t) {
    return t == LayerType::Lstm ? "LSTM" : t == LayerType::Gru ? "GRU" : "SimpleRNN";
}

const float* nth_block(const ExportableModel& m, const LayerConfig& l, ParamRole role, int n) {
    for (const auto& b : l.blocks)
        if (b.role == role && n-- == 0) return m.params.data() + l.param_offset + b.offset;
    return nullptr;
}

// Keras's dropout rate for a keep probability, as the user wrote it (0.2 for retain 0.8f, not
// 0.19999999).
double rate_of(float retain) { return std::round((1.0 - config::decimal(retain)) * 1e6) / 1e6; }

}  // namespace

bool is_keras_sequence_export(LayerType t) {
    return config::is_recurrent(t) || t == LayerType::Embedding || t == LayerType::Convolution1d || t == LayerType::RepeatVector;
}

KerasSequenceLayer keras_sequence_layer(const LayerConfig& l, KerasDialect d, const nlohmann::json& kernel_init,
                                        const nlohmann::json& kernel_regularizer, const std::string& activation,
                                        const std::string& gate_activation) {
    KerasSequenceLayer k;
    const nlohmann::json zeros = keras_object(d, "keras.initializers", "Zeros", nlohmann::json::object());
    auto nulls = [](nlohmann::json& cfg, std::initializer_list<const char*> keys) {
        for (const char* key : keys) cfg[key] = nullptr;
    };
    if (config::is_recurrent(l.type)) {
        if (l.peepholes) return {"", {}, "an LSTM with peepholes (DL4J's GravesLSTM): Keras's LSTM has none"};
        if (l.type == LayerType::Lstm && l.forget_bias != 0.f && l.forget_bias != 1.f)
            return {"", {}, "its forget-gate bias starts at " + nlohmann::json(config::decimal(l.forget_bias)).dump() +
                                ", and Keras's unit_forget_bias starts it at 1 or 0"};
        nlohmann::json cell{{"units", l.units},
                            {"activation", activation},
                            {"use_bias", true},
                            {"kernel_initializer", kernel_init},
                            {"recurrent_initializer", keras_object(d, "keras.initializers", "Orthogonal", {{"gain", 1.0}, {"seed", nullptr}})},
                            {"bias_initializer", zeros},
                            {"kernel_regularizer", kernel_regularizer},
                            {"dropout", rate_of(l.input_retain)},
                            {"recurrent_dropout", rate_of(l.recurrent_retain)},
                            {"return_sequences", l.return_sequences},
                            {"return_state", false},
                            {"go_backwards", l.go_backwards},
                            {"stateful", false},
                            {"unroll", false}};
        nulls(cell, {"recurrent_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint", "recurrent_constraint",
                     "bias_constraint"});
        if (l.type != LayerType::SimpleRnn) cell["recurrent_activation"] = gate_activation;
        if (l.type == LayerType::Lstm) cell["unit_forget_bias"] = l.forget_bias == 1.f;
        if (l.type == LayerType::Gru) cell["reset_after"] = l.reset_after;
        // Keras 2's implementation 1 draws a dropout mask per gate; 2 one for all, as Thresher.
        if (d == KerasDialect::Keras2) cell["implementation"] = l.input_retain < 1.f || l.recurrent_retain < 1.f ? 2 : 1;
        if (l.bidirectional == BiMode::None) return {recurrent_class(l.type), std::move(cell), ""};
        const char* merge = l.bidirectional == BiMode::Concat ? "concat" : l.bidirectional == BiMode::Sum ? "sum"
                            : l.bidirectional == BiMode::Mul  ? "mul"
                                                              : "ave";
        cell["name"] = keras_snake_case(recurrent_class(l.type));
        cell["trainable"] = true;
        cell["dtype"] = "float32";
        return {"Bidirectional", {{"layer", keras_object(d, "keras.layers", recurrent_class(l.type), cell)}, {"merge_mode", merge}}, ""};
    }
    switch (l.type) {
        case LayerType::Embedding: {
            nlohmann::json cfg{{"input_dim", l.vocabulary},          {"output_dim", l.units},
                               {"embeddings_initializer", kernel_init}, {"embeddings_regularizer", kernel_regularizer},
                               {"mask_zero", false}};
            nulls(cfg, {"activity_regularizer", "embeddings_constraint"});
            if (d == KerasDialect::Keras2) cfg["input_length"] = l.in_shape.t;
            return {"Embedding", std::move(cfg), ""};
        }
        case LayerType::Convolution1d: {
            nlohmann::json cfg{{"filters", l.units},
                               {"kernel_size", {l.kernel[0]}},
                               {"strides", {l.stride[0]}},
                               {"padding", l.mode == ConvMode::Same ? "same" : l.mode == ConvMode::Causal ? "causal" : "valid"},
                               {"data_format", "channels_last"},
                               {"dilation_rate", {l.dilation[0]}},
                               {"groups", 1},
                               {"activation", activation},
                               {"use_bias", true},
                               {"kernel_initializer", kernel_init},
                               {"bias_initializer", zeros},
                               {"kernel_regularizer", kernel_regularizer}};
            nulls(cfg, {"bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"});
            if (l.padding[0] > 0) return {"", {}, "an explicit padding of " + std::to_string(l.padding[0]) + " steps: Keras's Conv1D pads valid, same or causal"};
            return {"Conv1D", std::move(cfg), ""};
        }
        case LayerType::RepeatVector: return {"RepeatVector", {{"n", l.repeat}}, ""};
        case LayerType::Subsampling:
            if (l.global)
                return {l.max_pool ? "GlobalMaxPooling1D" : "GlobalAveragePooling1D", {{"data_format", "channels_last"}, {"keepdims", false}}, ""};
            return {l.max_pool ? "MaxPooling1D" : "AveragePooling1D",
                    {{"pool_size", {l.kernel[0]}},
                     {"strides", {l.stride[0]}},
                     {"padding", l.mode == ConvMode::Same ? "same" : "valid"},
                     {"data_format", "channels_last"}},
                    ""};
        default: break;
    }
    return {"", {}, "layer kind " + std::string(config::to_string(l.type)) + " has no Keras form on sequences"};
}

std::vector<KerasWeight> keras_sequence_weights(const ExportableModel& m, const LayerConfig& l) {
    const auto in = static_cast<std::size_t>(l.in_shape.c), units = static_cast<std::size_t>(l.units);
    std::vector<KerasWeight> out;
    if (l.type == LayerType::Embedding) {
        const float* e = nth_block(m, l, ParamRole::Weight, 0);
        const auto v = static_cast<std::size_t>(l.vocabulary);
        out.push_back({"embeddings", {v, units}, std::vector<float>(e, e + v * units)});
        return out;
    }
    if (l.type == LayerType::Convolution1d) {
        const auto k = static_cast<std::size_t>(l.kernel[0]);
        const float* w = nth_block(m, l, ParamRole::Weight, 0);
        KerasWeight kernel{"kernel", {k, in, units}, std::vector<float>(k * in * units)};
        // Thresher [filters, in, k] -> Keras [k, in, filters].
        for (std::size_t f = 0; f < units; ++f)
            for (std::size_t c = 0; c < in; ++c)
                for (std::size_t j = 0; j < k; ++j) kernel.values[(j * in + c) * units + f] = w[(f * in + c) * k + j];
        const float* b = nth_block(m, l, ParamRole::Bias, 0);
        out.push_back(std::move(kernel));
        out.push_back({"bias", {units}, std::vector<float>(b, b + units)});
        return out;
    }
    if (!config::is_recurrent(l.type)) return out;
    const std::size_t gh = (l.type == LayerType::Lstm ? 4 : l.type == LayerType::Gru ? 3 : 1) * units;
    const bool two = l.bidirectional != BiMode::None;
    const std::string inner = keras_snake_case(recurrent_class(l.type));
    for (int dir = 0; dir < (two ? 2 : 1); ++dir) {
        // Keras 2 names a Bidirectional's weights forward_<inner>/kernel; Keras 3 keeps them in
        // forward_layer/cell/vars. A plain layer: kernel, and cell/vars.
        const std::string prefix = two ? std::string(dir ? "backward_" : "forward_") + inner + "/" : "";
        const std::string group = two ? std::string(dir ? "backward_layer" : "forward_layer") + "/cell" : "cell";
        const float* w = nth_block(m, l, ParamRole::Weight, dir);
        const float* r = nth_block(m, l, ParamRole::Recurrent, dir);
        const float* b = nth_block(m, l, ParamRole::Bias, dir);
        out.push_back({prefix + "kernel", {in, gh}, std::vector<float>(w, w + in * gh), group});
        out.push_back({prefix + "recurrent_kernel", {units, gh}, std::vector<float>(r, r + units * gh), group});
        if (l.type == LayerType::Gru && l.reset_after) {
            // Thresher [u + u', r + r', o, o'] -> Keras [[u+u', r+r', o], [0, 0, o']].
            KerasWeight bias{prefix + "bias", {2, gh}, std::vector<float>(2 * gh, 0.f), group};
            std::copy_n(b, gh, bias.values.begin());
            std::copy_n(b + gh, units, bias.values.begin() + static_cast<std::ptrdiff_t>(gh + 2 * units));
            out.push_back(std::move(bias));
        } else {
            out.push_back({prefix + "bias", {gh}, std::vector<float>(b, b + gh), group});
        }
    }
    return out;
}

}  // namespace thresher::model_export
