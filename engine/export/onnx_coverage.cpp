// What ONNX export can express, decided from the config alone (so a refusal comes before any
// file is touched, and without libonnx). Every layer kind and activation Thresher trains today
// has an ONNX form; the switches name each one, and a kind added later is refused by name until
// onnx_writer.cpp learns it.
#include "export/onnx_export.h"

namespace thresher::model_export {

namespace {

using config::Activation;
using config::LayerConfig;
using config::LayerType;

std::optional<std::string> activation_refusal(const LayerConfig& l) {
    switch (l.activation.kind) {
        case Activation::Identity:
        case Activation::Relu:
        case Activation::LeakyRelu:
        case Activation::Tanh:
        case Activation::Sigmoid:
        case Activation::Elu:
        case Activation::Selu:
        case Activation::Relu6:
        case Activation::HardSigmoid:
        case Activation::Softplus:
        case Activation::Softsign:
        case Activation::ThresholdedRelu:
        case Activation::Swish:
        case Activation::Gelu:
        case Activation::GeluTanh:
        case Activation::GeluSigmoid: return std::nullopt;
        case Activation::Softmax:
            // Thresher's softmax runs over the features of [batch, features] and over the channels
            // of each pixel of an image output: ONNX's Softmax over axis 1 either way.
            return std::nullopt;
        default: break;
    }
    return "activation " + std::string(config::to_string(l.activation.kind)) + " has no ONNX form in this exporter";
}

}  // namespace

std::optional<std::string> onnx_refusal(const config::ModelConfig& model) {
    // Protobuf refuses to serialise a message of 2 GiB or more, and this exporter writes no
    // external data files: the weights must fit in one file, with room for the graph.
    constexpr double kMaxWeightBytes = 2147483648.0 - (1 << 20);
    const double weight_bytes = static_cast<double>(model.param_count()) * sizeof(float);
    if (weight_bytes > kMaxWeightBytes)
        return "the model's " + std::to_string(model.param_count()) + " parameters take " +
               std::to_string(static_cast<int>(weight_bytes / (1 << 20))) +
               " MiB, more than one ONNX file holds (2 GiB; ONNX's external data files are not written)";
    for (std::size_t i = 0; i < model.layers.size(); ++i) {
        const auto& l = model.layers[i];
        const auto refuse = [&](const std::string& why) {
            return l.label(i) + ": ONNX cannot express this layer: " + why;
        };
        if (l.in_shape.sequence() || l.out_shape.sequence()) return refuse("sequence models (steps x features) have no export yet (issue 23)");
        switch (l.type) {
            case LayerType::Dense:
            case LayerType::Output:
            case LayerType::Convolution:
            case LayerType::DepthwiseConvolution:
            case LayerType::SeparableConvolution:
            case LayerType::TransposedConvolution:
            case LayerType::BatchNorm:
            case LayerType::Dropout:
            case LayerType::PRelu:
            case LayerType::Activation:
            case LayerType::ZeroPadding:
            case LayerType::Cropping:
            case LayerType::Upsampling:
            case LayerType::Add:
            case LayerType::Subtract:
            case LayerType::Multiply:
            case LayerType::Average:
            case LayerType::Maximum:
            case LayerType::Concatenate:
            case LayerType::Subset:
            case LayerType::Reshape:
            case LayerType::Permute: break;
            case LayerType::Subsampling:
                // ONNX (and ONNX Runtime) require each pooling pad to be smaller than the window;
                // Thresher's own pooling accepts more (windows wholly in the padding).
                if (!l.global)
                    for (int axis = 0; axis < 2; ++axis) {
                        const int before = l.pads[axis], after = l.pads[axis + 2];
                        if (before >= l.kernel[axis] || after >= l.kernel[axis])
                            return refuse("padding " + std::to_string(l.padding[0]) + "x" + std::to_string(l.padding[1]) +
                                          " is not smaller than its " + std::to_string(l.kernel[0]) + "x" +
                                          std::to_string(l.kernel[1]) +
                                          " window (ONNX pooling needs every pad smaller than the window)");
                    }
                break;
            default:
                // A layer kind newer than this exporter.
                return refuse("layer kind " + std::string(config::to_string(l.type)) + " has no ONNX form in this exporter yet");
        }
        if (auto why = activation_refusal(l)) return refuse(*why);
    }
    return std::nullopt;
}

}  // namespace thresher::model_export
