#include "layer_schema.h"

#include <QJsonArray>

namespace thresher::ui {

namespace {

using Kind = FieldSpec::Kind;

const QStringList kActivations{"identity", "relu", "leakyrelu", "tanh", "sigmoid", "softmax",
                               "elu", "selu", "relu6", "hardsigmoid", "softplus", "softsign",
                               "thresholdedrelu", "swish", "gelu", "gelu_tanh", "gelu_sigmoid"};

FieldSpec activation(const QString& fallback) {
    return {"activation", "Activation", Kind::Choice, kActivations, fallback, "applied to the layer's output"};
}

}  // namespace

QStringList layer_types() {
    return {"convolution", "subsampling", "dense", "batch_norm", "dropout", "output", "prelu", "activation",
            "zero_padding", "cropping", "upsampling", "depthwise_convolution", "separable_convolution", "transposed_convolution",
            // Sequences (a model input of steps × features).
            "lstm", "gru", "simple_rnn", "embedding", "convolution1d", "repeat_vector",
            // Graph vertices (no parameters): they read the layers their "inputs" name.
            "add", "subtract", "multiply", "average", "maximum", "concatenate", "subset", "reshape", "permute"};
}

bool is_vertex_type(const QString& type) {
    static const QStringList vertices{"add", "subtract", "multiply", "average", "maximum", "concatenate", "subset",
                                      "reshape", "permute"};
    return vertices.contains(type);
}

bool joins_branches(const QString& type) {
    return is_vertex_type(type) && type != "subset" && type != "reshape" && type != "permute";
}

QList<FieldSpec> layer_fields(const QString& type) {
    if (type == "dense")
        return {{"units", "Units", Kind::Int, {}, QJsonValue(), "outputs of the layer"}, activation("relu")};
    if (type == "convolution")
        return {{"filters", "Filters", Kind::Int, {}, QJsonValue(), "output channels"},
                {"kernel", "Kernel", Kind::Pair, {}, QJsonValue(), "height × width"},
                {"stride", "Stride", Kind::Pair, {}, 1, ""},
                {"padding", "Padding", Kind::Pair, {}, 0, "truncate mode only"},
                {"dilation", "Dilation", Kind::Pair, {}, 1, ""},
                {"mode", "Mode", Kind::Choice, {"truncate", "same"}, "truncate", "same: output = ceil(input / stride)"},
                activation("identity")};
    if (type == "subsampling")
        return {{"pooling", "Pooling", Kind::Choice, {"max", "avg"}, "max", ""},
                {"kernel", "Kernel", Kind::Pair, {}, 2, ""},
                {"stride", "Stride", Kind::Pair, {}, QJsonValue(), "default: the kernel"},
                {"padding", "Padding", Kind::Pair, {}, 0, ""},
                {"mode", "Mode", Kind::Choice, {"truncate", "same"}, "truncate", ""}};
    if (type == "batch_norm")
        return {{"eps", "Epsilon", Kind::Float, {}, 1e-5, ""},
                {"decay", "Decay", Kind::Float, {}, 0.9, "running = decay·running + (1−decay)·batch"}};
    if (type == "dropout")
        return {{"retain", "Retain probability", Kind::Float, {}, 0.5, "probability of keeping an activation"}};
    if (type == "prelu")  // shared_axes has no form field: the JSON tab edits it
        return {{"alpha_init", "Initial alpha", Kind::Float, {}, 0.0, "the learned negative slope starts here"}};
    if (type == "activation")  // last in the model, it is the output and takes the loss (the JSON tab sets it)
        return {activation("relu")};
    // [top, bottom, left, right] has no form field (a pair sets top/bottom and left/right alike):
    // the JSON tab edits asymmetric ones.
    if (type == "zero_padding")
        return {{"padding", "Padding", Kind::Pair, {}, 1, "rows × columns of zeros on each side"}};
    if (type == "cropping")
        return {{"cropping", "Cropping", Kind::Pair, {}, 1, "rows × columns cut off each side"}};
    if (type == "upsampling")
        return {{"size", "Size", Kind::Pair, {}, 2, "each pixel repeated rows × columns times (nearest)"}};
    if (type == "depthwise_convolution" || type == "separable_convolution") {
        QList<FieldSpec> f;
        if (type == "separable_convolution") f << FieldSpec{"filters", "Filters", Kind::Int, {}, QJsonValue(), "output channels (after the 1×1 step)"};
        f << FieldSpec{"depth_multiplier", "Depth multiplier", Kind::Int, {}, 1, "kernels per input channel"}
          << FieldSpec{"kernel", "Kernel", Kind::Pair, {}, QJsonValue(), "height × width"}
          << FieldSpec{"stride", "Stride", Kind::Pair, {}, 1, ""}
          << FieldSpec{"mode", "Mode", Kind::Choice, {"truncate", "same"}, "truncate", ""} << activation("identity");
        return f;
    }
    if (type == "subset")
        return {{"channels", "Channels", Kind::Pair, {}, 0, "first and last channel kept (0-based, both kept)"}};
    // reshape's "shape" and permute's "axes" have no form field: the JSON tab edits them.
    if (type == "reshape")
        return {{"order", "Order", Kind::Choice, {"channels_first", "channels_last"}, "channels_first",
                 "how values are counted: channels_last moves them as Keras's Reshape does"}};
    if (type == "transposed_convolution")
        return {{"filters", "Filters", Kind::Int, {}, QJsonValue(), "output channels"},
                {"kernel", "Kernel", Kind::Pair, {}, QJsonValue(), "height × width"},
                {"stride", "Stride", Kind::Pair, {}, 1, "the image grows by it"},
                {"padding", "Padding", Kind::Pair, {}, 0, "truncate mode only: cut from each side"},
                {"mode", "Mode", Kind::Choice, {"truncate", "same"}, "truncate", "same: output = input × stride"},
                activation("identity")};
    if (type == "lstm" || type == "gru" || type == "simple_rnn") {
        QList<FieldSpec> f{{"units", "Units", Kind::Int, {}, QJsonValue(), "hidden size of each direction"},
                           {"return_sequences", "Every step", Kind::Bool, {}, false,
                            "output every step (a sequence), else the last valid step's"},
                           {"bidirectional", "Bidirectional", Kind::Choice, {"none", "concat", "sum", "mul", "average"}, "none",
                            "also run right to left, joining the two directions so"}};
        if (type == "lstm")
            f << FieldSpec{"peepholes", "Peepholes", Kind::Bool, {}, false, "DL4J's GravesLSTM"}
              << FieldSpec{"forget_bias", "Forget bias", Kind::Float, {}, 1.0, "the forget gate's initial bias"};
        if (type == "gru")
            f << FieldSpec{"reset_after", "Reset after", Kind::Bool, {}, true, "Keras ≥ 2.3's default (oneDNN's linear-before-reset GRU)"};
        if (type == "simple_rnn") {
            f << FieldSpec{"activation", "Activation", Kind::Choice, kActivations, "tanh", "h = act(W·x + R·h′ + b)"};
        } else {
            // oneDNN's primitives run sigmoid gates with a tanh cell; any other pair runs the host path.
            f << FieldSpec{"activation", "Cell activation", Kind::Choice, kActivations, "tanh",
                           type == "lstm" ? "the cell input's and the output's" : "the candidate's"}
              << FieldSpec{"gate_activation", "Gate activation", Kind::Choice, {"sigmoid", "hardsigmoid"}, "sigmoid",
                           "hardsigmoid: Keras 2's recurrent default (slope 0.2; gate_alpha in the JSON tab)"};
        }
        f << FieldSpec{"input_retain", "Input retain", Kind::Float, {}, 1.0,
                       "training: keep each input feature with this probability, one mask per sample for all steps (Keras dropout = 1 − it)"}
          << FieldSpec{"recurrent_retain", "Recurrent retain", Kind::Float, {}, 1.0,
                       "training: the same for the state the recurrence reads (Keras recurrent_dropout = 1 − it)"}
          << FieldSpec{"go_backwards", "Go backwards", Kind::Bool, {}, false,
                       "read each sample from its last step back (Keras go_backwards; not with Bidirectional)"};
        return f;
    }
    if (type == "embedding")
        return {{"vocabulary", "Vocabulary", Kind::Int, {}, QJsonValue(), "ids 0 … V−1"},
                {"units", "Units", Kind::Int, {}, QJsonValue(), "features per id"}};
    if (type == "convolution1d")
        return {{"filters", "Filters", Kind::Int, {}, QJsonValue(), "output features per step"},
                {"kernel", "Kernel", Kind::Int, {}, QJsonValue(), "steps"},
                {"stride", "Stride", Kind::Int, {}, 1, ""},
                {"dilation", "Dilation", Kind::Int, {}, 1, ""},
                {"mode", "Mode", Kind::Choice, {"truncate", "same", "causal"}, "truncate", "causal: pads before the first step"},
                activation("identity")};
    if (type == "repeat_vector") return {{"times", "Times", Kind::Int, {}, QJsonValue(), "steps made of one vector"}};
    if (type == "output")
        return {{"units", "Units", Kind::Int, {}, QJsonValue(), "classes (or regression targets)"},
                activation("softmax"),
                {"loss", "Loss", Kind::Choice, {"mcxent", "negativeloglikelihood", "xent", "mse", "mae"}, "mcxent",
                 "mcxent and negativeloglikelihood need softmax; xent needs sigmoid"}};
    return {};
}

QJsonObject default_layer(const QString& type) {
    if (type == "dense") return {{"type", type}, {"units", 100}, {"activation", "relu"}};
    if (type == "convolution")
        return {{"type", type}, {"filters", 16}, {"kernel", QJsonArray{3, 3}}, {"activation", "relu"}};
    if (type == "subsampling")
        return {{"type", type}, {"pooling", "max"}, {"kernel", QJsonArray{2, 2}}, {"stride", QJsonArray{2, 2}}};
    if (type == "batch_norm") return {{"type", type}};
    if (type == "dropout") return {{"type", type}, {"retain", 0.5}};
    if (type == "activation") return {{"type", type}, {"activation", "relu"}};
    if (type == "zero_padding") return {{"type", type}, {"padding", QJsonArray{1, 1}}};
    if (type == "cropping") return {{"type", type}, {"cropping", QJsonArray{1, 1}}};
    if (type == "upsampling") return {{"type", type}, {"size", QJsonArray{2, 2}}};
    if (type == "subset") return {{"type", type}, {"channels", QJsonArray{0, 0}}};
    if (type == "reshape") return {{"type", type}, {"shape", QJsonObject{{"size", 1}}}};
    if (type == "permute") return {{"type", type}, {"axes", QJsonArray{"channels", "width", "height"}}};
    if (type == "output") return {{"type", type}, {"units", 10}, {"activation", "softmax"}, {"loss", "mcxent"}};
    if (type == "depthwise_convolution")
        return {{"type", type}, {"depth_multiplier", 1}, {"kernel", QJsonArray{3, 3}}, {"mode", "same"}, {"activation", "relu"}};
    if (type == "separable_convolution")
        return {{"type", type}, {"filters", 16}, {"kernel", QJsonArray{3, 3}}, {"mode", "same"}, {"activation", "relu"}};
    if (type == "transposed_convolution")
        return {{"type", type}, {"filters", 16}, {"kernel", QJsonArray{3, 3}}, {"stride", QJsonArray{2, 2}}, {"mode", "same"},
                {"activation", "relu"}};
    if (type == "lstm" || type == "gru") return {{"type", type}, {"units", 64}};
    if (type == "simple_rnn") return {{"type", type}, {"units", 64}, {"activation", "tanh"}};
    if (type == "embedding") return {{"type", type}, {"vocabulary", 1000}, {"units", 32}};
    if (type == "convolution1d") return {{"type", type}, {"filters", 32}, {"kernel", 3}, {"mode", "same"}, {"activation", "relu"}};
    if (type == "repeat_vector") return {{"type", type}, {"times", 4}};
    return {{"type", type}};
}

QStringList updater_types() { return {"sgd", "nesterovs", "adagrad", "rmsprop", "adam"}; }

QList<FieldSpec> updater_fields(const QString& type) {
    QList<FieldSpec> fields{{"learning_rate", "Learning rate", Kind::Float, {}, type == "sgd" || type == "adam" ? 1e-3 : 0.1, ""}};
    if (type == "nesterovs") fields.append({"momentum", "Momentum", Kind::Float, {}, 0.9, ""});
    if (type == "adagrad") fields.append({"epsilon", "Epsilon", Kind::Float, {}, 1e-6, ""});
    if (type == "rmsprop") {
        fields.append({"rms_decay", "RMS decay", Kind::Float, {}, 0.95, ""});
        fields.append({"epsilon", "Epsilon", Kind::Float, {}, 1e-8, ""});
    }
    if (type == "adam") {
        fields.append({"beta1", "β₁", Kind::Float, {}, 0.9, ""});
        fields.append({"beta2", "β₂", Kind::Float, {}, 0.999, ""});
        fields.append({"epsilon", "Epsilon", Kind::Float, {}, 1e-8, ""});
    }
    return fields;
}

}  // namespace thresher::ui
