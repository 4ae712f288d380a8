// Convolution layers; the activation is fused into the backend's forward op, except swish/gelu,
// whose derivative needs the pre-activation: it runs as a pass of its own over a kept copy.
#include "nn/layer_step.h"

namespace thresher::nn {

namespace {

class ConvStep final : public LayerStep {
public:
    ConvStep(backend::Backend& be, const config::LayerConfig& l, int batch)
        : be_(be), act_(l.activation), batch_(batch), out_size_(static_cast<int>(l.out_shape.size())),
          bias_offset_(l.blocks[1].offset) {
        backend::ConvDesc d;
        d.batch = batch;
        d.in_c = l.in_shape.c, d.in_h = l.in_shape.h, d.in_w = l.in_shape.w;
        d.out_c = l.out_shape.c, d.out_h = l.out_shape.h, d.out_w = l.out_shape.w;
        d.kh = l.kernel[0], d.kw = l.kernel[1];
        d.sh = l.stride[0], d.sw = l.stride[1];
        d.dh = l.dilation[0], d.dw = l.dilation[1];
        d.pad_t = l.pads[0], d.pad_l = l.pads[1], d.pad_b = l.pads[2], d.pad_r = l.pads[3];
        d.act = l.activation;
        if (backend::derivative_from_input(act_.kind)) {
            d.act = {};
            z_ = backend::Buffer(be, static_cast<std::size_t>(batch) * out_size_);
        }
        op_ = be.make_conv(d);
    }
    void forward(float* params, const float* x, float* y, const StepContext&) override {
        if (!z_.data()) return op_->forward(x, params, params + bias_offset_, y);
        op_->forward(x, params, params + bias_offset_, z_.data());
        be_.activation_forward(act_, z_.data(), y, batch_, out_size_);
    }
    void backward(const float* params, const float* x, const float* y, float* dy, float* dx,
                  float* grads) override {
        be_.activation_backward(act_, z_.data() ? z_.data() : y, dy, dy, batch_, out_size_);
        op_->backward(x, params, dy, dx, grads, grads + bias_offset_);
    }

private:
    backend::Backend& be_;
    backend::ActivationSpec act_;
    int batch_, out_size_;
    std::size_t bias_offset_;
    backend::Buffer z_;  // the pre-activation, for swish/gelu only
    std::unique_ptr<backend::ConvOp> op_;
};

class PoolStep final : public LayerStep {
public:
    PoolStep(backend::Backend& be, const config::LayerConfig& l, int batch) {
        backend::PoolDesc d;
        d.batch = batch;
        d.c = l.in_shape.c, d.in_h = l.in_shape.h, d.in_w = l.in_shape.w;
        d.out_h = l.out_shape.h, d.out_w = l.out_shape.w;
        d.kh = l.kernel[0], d.kw = l.kernel[1], d.sh = l.stride[0], d.sw = l.stride[1];
        d.pad_t = l.pads[0], d.pad_l = l.pads[1], d.pad_b = l.pads[2], d.pad_r = l.pads[3];
        d.max = l.max_pool;
        op_ = be.make_pool(d);
    }
    void forward(float*, const float* x, float* y, const StepContext& ctx) override {
        op_->forward(x, y, ctx.mode);
    }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (dx) op_->backward(dy, dx);
    }

private:
    std::unique_ptr<backend::PoolOp> op_;
};

}  // namespace

std::unique_ptr<LayerStep> plan_convolution(backend::Backend& be, const config::LayerConfig& l, int batch) {
    return std::make_unique<ConvStep>(be, l, batch);
}

std::unique_ptr<LayerStep> plan_subsampling(backend::Backend& be, const config::LayerConfig& l, int batch) {
    return std::make_unique<PoolStep>(be, l, batch);
}

}  // namespace thresher::nn
