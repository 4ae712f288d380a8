// Activation functions as a model names them: what engine/config parses and the backends compute.
// Plain vocabulary (no behaviour beyond constants): it lives below both config and backend so the
// app, which links config but no backend, can speak it (DESIGN.md "Layers").
#pragma once

namespace thresher::vocab {

// Elu .. Softsign: what imported DL4J/Keras files use. Every element-wise derivative is computed
// from the output y (each is monotone), so no pre-activation copy is kept.
// ThresholdedRelu: x where x > alpha (the threshold θ >= 0), else 0 (DL4J ThresholdedReLU, Keras
// ThresholdedReLU / ReLU(threshold)); monotone, and y > 0 exactly where x > θ.
// Swish .. GeluSigmoid are not monotone: their derivative needs the pre-activation x, so layers
// keep a copy of it and pass x (not y) to activation_backward (derivative_from_input()).
//   Swish        x·sigmoid(x)                                (Keras swish/silu, DL4J ActivationSwish)
//   Gelu         x·Φ(x) = x/2·(1 + erf(x/√2))                (Keras gelu, approximate=False)
//   GeluTanh     x/2·(1 + tanh(√(2/π)(x + 0.044715x³)))      (Keras gelu, approximate=True)
//   GeluSigmoid  x·sigmoid(1.702x)                           (DL4J ActivationGELU, precise=false)
enum class Activation { Identity, Relu, LeakyRelu, Tanh, Sigmoid, Softmax, Elu, Selu, Relu6, HardSigmoid, Softplus, Softsign,
                        ThresholdedRelu, Swish, Gelu, GeluTanh, GeluSigmoid };

// True for the activations whose activation_backward takes the pre-activation x in place of y.
constexpr bool derivative_from_input(Activation a) {
    return a == Activation::Swish || a == Activation::Gelu || a == Activation::GeluTanh ||
           a == Activation::GeluSigmoid;
}

struct ActivationSpec {
    Activation kind = Activation::Identity;
    // leakyrelu: the negative slope (DL4J's default 0.01); elu: alpha (1); hardsigmoid: the slope
    // of clamp(alpha·x + 0.5, 0, 1) (0.2 in DL4J and Keras 2, 1/6 in Keras 3).
    float alpha = 0.01f;
};

// SELU's fixed constants (Klambauer et al. 2017, as DL4J and Keras use them).
inline constexpr float kSeluLambda = 1.0507009873554805f;
inline constexpr float kSeluAlpha = 1.6732632423543772f;

}  // namespace thresher::vocab
