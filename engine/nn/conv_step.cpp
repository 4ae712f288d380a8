// Convolution layers; the activation is fused into the backend's forward op, except swish/gelu,
// whose derivative needs the pre-activation: it runs as a pass of its own over a kept copy.
// As an image output (a "loss" on the layer) the loss has folded the activation into dL/dz, so
// backward skips it; softmax there is over the channels of each pixel (a segmentation head),
// run in place after the convolution.
#include "core/error.h"
#include "nn/layer_step.h"

namespace thresher::nn {

namespace {

class ConvStep final : public LayerStep {
public:
    ConvStep(backend::Backend& be, const config::LayerConfig& l, int batch, StepPlan io)
        : be_(be), act_(l.activation), batch_(batch), out_size_(static_cast<int>(l.out_shape.size())),
          channels_(l.out_shape.c), pixels_(l.out_shape.h * l.out_shape.w), is_output_(l.is_output),
          bias_offset_(l.blocks[1].offset) {
        backend::ConvDesc d;
        d.batch = batch;
        d.in_c = l.in_shape.c, d.in_h = l.in_shape.h, d.in_w = l.in_shape.w;
        d.out_c = l.out_shape.c, d.out_h = l.out_shape.h, d.out_w = l.out_shape.w;
        d.kh = l.kernel[0], d.kw = l.kernel[1];
        d.sh = l.stride[0], d.sw = l.stride[1];
        d.dh = l.dilation[0], d.dw = l.dilation[1];
        d.pad_t = l.pads[0], d.pad_l = l.pads[1], d.pad_b = l.pads[2], d.pad_r = l.pads[3];
        if (l.type == config::LayerType::DepthwiseConvolution) d.groups = l.in_shape.c;
        if (l.type == config::LayerType::TransposedConvolution) {
            if (!be.has_transposed_conv())
                throw BackendError("the " + be.info().name + " backend has no transposed convolution yet (" +
                                            l.label(0).substr(l.label(0).find('(')) + "): train on the CPU backend");
            d.transposed = true;
        }
        d.act = act_.kind == backend::Activation::Softmax ? backend::ActivationSpec{} : l.activation;
        d.src_layout = io.in, d.dst_layout = io.out;
        if (backend::derivative_from_input(act_.kind)) {
            d.act = {};
            z_ = backend::Buffer(be, static_cast<std::size_t>(batch) * out_size_);
        }
        op_ = be.make_conv(d);
    }
    void forward(float* params, const float* x, float* y, const StepContext&) override {
        if (act_.kind == backend::Activation::Softmax) {
            op_->forward(x, params, params + bias_offset_, y);
            return be_.softmax_channels(y, y, batch_, channels_, pixels_);
        }
        if (!z_.data()) return op_->forward(x, params, params + bias_offset_, y);
        op_->forward(x, params, params + bias_offset_, z_.data());
        be_.activation_forward(act_, z_.data(), y, batch_, out_size_);
    }
    void backward(const float* params, const float* x, const float* y, float* dy, float* dx,
                  float* grads) override {
        if (!is_output_) be_.activation_backward(act_, z_.data() ? z_.data() : y, dy, dy, batch_, out_size_);
        op_->backward(x, params, dy, dx, grads, grads + bias_offset_);
    }

private:
    backend::Backend& be_;
    backend::ActivationSpec act_;
    int batch_, out_size_, channels_, pixels_;
    bool is_output_;
    std::size_t bias_offset_;
    backend::Buffer z_;  // the pre-activation, for swish/gelu only
    std::unique_ptr<backend::ConvOp> op_;
};

// A separable convolution: a depthwise convolution (groups = input channels, no bias of its own:
// a zero one is passed) into `mid_`, then a 1x1 convolution with the bias and the activation.
// Backward runs the two in reverse; the depthwise step's bias gradient is computed and dropped.
class SeparableConvStep final : public LayerStep {
public:
    SeparableConvStep(backend::Backend& be, const config::LayerConfig& l, int batch)
        : be_(be), act_(l.activation), batch_(batch), out_size_(static_cast<int>(l.out_shape.size())),
          channels_(l.out_shape.c), pixels_(l.out_shape.h * l.out_shape.w), is_output_(l.is_output),
          depthwise_offset_(l.blocks[0].offset), pointwise_offset_(l.blocks[1].offset), bias_offset_(l.blocks[2].offset) {
        const int mid_c = l.in_shape.c * l.depth_multiplier;
        backend::ConvDesc dw;
        dw.batch = batch;
        dw.in_c = l.in_shape.c, dw.in_h = l.in_shape.h, dw.in_w = l.in_shape.w;
        dw.out_c = mid_c, dw.out_h = l.out_shape.h, dw.out_w = l.out_shape.w;
        dw.kh = l.kernel[0], dw.kw = l.kernel[1], dw.sh = l.stride[0], dw.sw = l.stride[1];
        dw.dh = l.dilation[0], dw.dw = l.dilation[1];
        dw.pad_t = l.pads[0], dw.pad_l = l.pads[1], dw.pad_b = l.pads[2], dw.pad_r = l.pads[3];
        dw.groups = l.in_shape.c;
        backend::ConvDesc pw;
        pw.batch = batch;
        pw.in_c = mid_c, pw.in_h = l.out_shape.h, pw.in_w = l.out_shape.w;
        pw.out_c = l.out_shape.c, pw.out_h = l.out_shape.h, pw.out_w = l.out_shape.w;
        pw.act = act_.kind == backend::Activation::Softmax ? backend::ActivationSpec{} : l.activation;
        if (backend::derivative_from_input(act_.kind)) {
            pw.act = {};
            z_ = backend::Buffer(be, static_cast<std::size_t>(batch) * out_size_);
        }
        const std::size_t mid = static_cast<std::size_t>(batch) * mid_c * l.out_shape.h * l.out_shape.w;
        mid_ = backend::Buffer(be, mid);
        dmid_ = backend::Buffer(be, mid);
        zero_bias_ = backend::Buffer(be, static_cast<std::size_t>(mid_c));  // allocated zero-filled
        dbias_scratch_ = backend::Buffer(be, static_cast<std::size_t>(mid_c));
        depthwise_ = be.make_conv(dw);
        pointwise_ = be.make_conv(pw);
    }
    void forward(float* params, const float* x, float* y, const StepContext&) override {
        depthwise_->forward(x, params + depthwise_offset_, zero_bias_.data(), mid_.data());
        if (act_.kind == backend::Activation::Softmax) {
            pointwise_->forward(mid_.data(), params + pointwise_offset_, params + bias_offset_, y);
            return be_.softmax_channels(y, y, batch_, channels_, pixels_);
        }
        if (!z_.data()) return pointwise_->forward(mid_.data(), params + pointwise_offset_, params + bias_offset_, y);
        pointwise_->forward(mid_.data(), params + pointwise_offset_, params + bias_offset_, z_.data());
        be_.activation_forward(act_, z_.data(), y, batch_, out_size_);
    }
    void backward(const float* params, const float* x, const float* y, float* dy, float* dx, float* grads) override {
        if (!is_output_) be_.activation_backward(act_, z_.data() ? z_.data() : y, dy, dy, batch_, out_size_);
        pointwise_->backward(mid_.data(), params + pointwise_offset_, dy, dmid_.data(), grads + pointwise_offset_,
                             grads + bias_offset_);
        depthwise_->backward(x, params + depthwise_offset_, dmid_.data(), dx, grads + depthwise_offset_,
                             dbias_scratch_.data());
    }

private:
    backend::Backend& be_;
    backend::ActivationSpec act_;
    int batch_, out_size_, channels_, pixels_;
    bool is_output_;
    std::size_t depthwise_offset_, pointwise_offset_, bias_offset_;
    backend::Buffer z_, mid_, dmid_, zero_bias_, dbias_scratch_;
    std::unique_ptr<backend::ConvOp> depthwise_, pointwise_;
};

class PoolStep final : public LayerStep {
public:
    PoolStep(backend::Backend& be, const config::LayerConfig& l, int batch, StepPlan io) {
        backend::PoolDesc d;
        d.batch = batch;
        d.c = l.in_shape.c, d.in_h = l.in_shape.h, d.in_w = l.in_shape.w;
        d.out_h = l.out_shape.h, d.out_w = l.out_shape.w;
        d.kh = l.kernel[0], d.kw = l.kernel[1], d.sh = l.stride[0], d.sw = l.stride[1];
        d.pad_t = l.pads[0], d.pad_l = l.pads[1], d.pad_b = l.pads[2], d.pad_r = l.pads[3];
        d.max = l.max_pool;
        d.src_layout = io.in, d.dst_layout = io.out;
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

std::unique_ptr<LayerStep> plan_convolution(backend::Backend& be, const config::LayerConfig& l, int batch,
                                            StepPlan io) {
    // The separable convolution's two steps stay plain (Network::choose_layouts never picks Native
    // around it).
    if (l.type == config::LayerType::SeparableConvolution) return std::make_unique<SeparableConvStep>(be, l, batch);
    return std::make_unique<ConvStep>(be, l, batch, io);
}

std::unique_ptr<LayerStep> plan_subsampling(backend::Backend& be, const config::LayerConfig& l, int batch,
                                            StepPlan io) {
    return std::make_unique<PoolStep>(be, l, batch, io);
}

}  // namespace thresher::nn
