// Activation layers: y = act(x) on their own, no parameters (Keras Activation, DL4J
// ActivationLayer). The backends' element-wise kernels do the work, the same ones dense and
// convolution layers run when their activation is not fused. The derivative comes from y, or
// from x for the activations that need the pre-activation (swish, gelu) -- x is this layer's
// input, so nothing is kept. As the last layer (the output, DL4J's LossLayer) the loss has folded
// the activation into dL/dx already, and backward passes it on. Softmax over an image (only as
// an output: DL4J's CnnLossLayer, a Keras segmentation head) is over the channels of each pixel.
#include <algorithm>

#include "nn/layer_step.h"

namespace thresher::nn {

namespace {

class ActivationStep final : public LayerStep {
public:
    ActivationStep(backend::Backend& be, const config::LayerConfig& l, int batch, bool relu_done)
        : be_(be), act_(l.activation),
          // A sequence: softmax normalises each step's features ([N*T x C]).
          rows_(batch * std::max(l.in_shape.t, 1)),
          cols_(l.in_shape.sequence() ? l.in_shape.c : static_cast<int>(l.in_shape.size())),
          channels_(l.in_shape.c), pixels_(l.in_shape.h * l.in_shape.w), is_output_(l.is_output), relu_done_(relu_done) {}
    void forward(float*, const float* x, float* y, const StepContext&) override {
        if (relu_done_ && x == y) return;  // training: the batch norm before wrote y (StepPlan)
        if (act_.kind == backend::Activation::Softmax && pixels_ > 1)
            return be_.softmax_channels(x, y, rows_, channels_, pixels_);
        be_.activation_forward(act_, x, y, rows_, cols_);
    }
    void backward(const float*, const float* x, const float* y, float* dy, float* dx, float*) override {
        if (!dx) return;
        if (is_output_ || relu_done_) return be_.copy(dx, dy, static_cast<std::size_t>(rows_) * cols_);
        be_.activation_backward(act_, backend::derivative_from_input(act_.kind) ? x : y, dy, dx, rows_, cols_);
    }

private:
    backend::Backend& be_;
    backend::ActivationSpec act_;
    int rows_, cols_;  // softmax normalises each row: [batch x features]
    int channels_, pixels_;  // an image's: softmax over channels at each pixel
    bool is_output_;
    bool relu_done_;
};

}  // namespace

std::unique_ptr<LayerStep> plan_activation(backend::Backend& be, const config::LayerConfig& l, int batch,
                                           StepPlan plan) {
    return std::make_unique<ActivationStep>(be, l, batch, plan.relu_done);
}

}  // namespace thresher::nn
