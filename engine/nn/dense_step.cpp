// Dense and output layers: y = act(x W + b). The output layer's loss already folds its activation
// into dz, so only hidden dense layers apply the activation's derivative here. Activations whose
// derivative needs the pre-activation (swish, gelu) run as a pass of their own over a kept copy.
#include <algorithm>

#include "nn/layer_step.h"

namespace thresher::nn {

namespace {

class DenseStep final : public LayerStep {
public:
    // On a sequence the same dense runs at every step: one dense over batch * steps rows
    // ([N, T, C] is [N*T, C]); padded steps are the network's to zero.
    DenseStep(backend::Backend& be, const config::LayerConfig& l, int batch)
        : be_(be), act_(l.activation), batch_(batch * std::max(l.in_shape.t, 1)), out_(l.units),
          is_output_(l.type == config::LayerType::Output), bias_offset_(l.blocks[1].offset) {
        const bool keep = backend::derivative_from_input(act_.kind);
        if (keep) z_ = backend::Buffer(be, static_cast<std::size_t>(batch_) * l.units);
        const int in = l.in_shape.sequence() ? l.in_shape.c : static_cast<int>(l.in_shape.size());
        op_ = be.make_dense({batch_, in, l.units,
                             keep ? backend::ActivationSpec{} : l.activation});
    }
    void forward(float* params, const float* x, float* y, const StepContext&) override {
        if (!z_.data()) return op_->forward(x, params, params + bias_offset_, y);
        op_->forward(x, params, params + bias_offset_, z_.data());
        be_.activation_forward(act_, z_.data(), y, batch_, out_);
    }
    void backward(const float* params, const float* x, const float* y, float* dy, float* dx,
                  float* grads) override {
        if (!is_output_) be_.activation_backward(act_, z_.data() ? z_.data() : y, dy, dy, batch_, out_);
        op_->backward(x, params, dy, dx, grads, grads + bias_offset_);
    }

private:
    backend::Backend& be_;
    backend::ActivationSpec act_;
    int batch_, out_;
    bool is_output_;
    std::size_t bias_offset_;
    backend::Buffer z_;  // the pre-activation, for swish/gelu only
    std::unique_ptr<backend::DenseOp> op_;
};

}  // namespace

std::unique_ptr<LayerStep> plan_dense(backend::Backend& be, const config::LayerConfig& l, int batch) {
    return std::make_unique<DenseStep>(be, l, batch);
}

}  // namespace thresher::nn
