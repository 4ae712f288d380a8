// convolution1d: a 1-D convolution along time, on the backend's 2-D ConvOp.
#include <vector>

#include "nn/sequence_step.h"

namespace thresher::nn {

namespace {

// convolution1d on the backend's ConvOp: [N, T, C] is transposed to NCHW [N, C, 1, T] (a host
// gather), convolved with kh = 1 (W [filters x C x k] is OIHW with H = 1), and the result
// [N, F, 1, T'] transposed back to [N, T', F]. Causal mode pads (k - 1) * dilation steps on the
// left only (shape inference's pads). The activation runs as its own pass on [N, T', F].
class Convolution1dStep final : public LayerStep {
public:
    Convolution1dStep(backend::Backend& be, const config::LayerConfig& l, int batch)
        : be_(be), act_(l.activation), batch_(batch), t_in_(l.in_shape.t), t_out_(l.out_shape.t), c_(l.in_shape.c),
          f_(l.units), bias_offset_(l.blocks[1].offset) {
        backend::ConvDesc d;
        d.batch = batch;
        d.in_c = c_, d.in_h = 1, d.in_w = t_in_;
        d.out_c = f_, d.out_h = 1, d.out_w = t_out_;
        d.kh = 1, d.kw = l.kernel[0];
        d.sh = 1, d.sw = l.stride[0];
        d.dh = 1, d.dw = l.dilation[0];
        d.pad_l = l.pads[0], d.pad_r = l.pads[2];
        op_ = be.make_conv(d);
        const auto n = static_cast<std::size_t>(batch);
        x_t_.resize(n * t_in_ * c_);
        dx_t_.resize(n * t_in_ * c_);
        z_t_.resize(n * t_out_ * f_);
        if (backend::derivative_from_input(act_.kind)) z_.resize(n * t_out_ * f_);
    }
    void forward(float* params, const float* x, float* y, const StepContext&) override {
        transpose(x, x_t_.data(), t_in_, c_);
        op_->forward(x_t_.data(), params, params + bias_offset_, z_t_.data());
        float* z = z_.empty() ? y : z_.data();
        transpose(z_t_.data(), z, f_, t_out_);
        be_.activation_forward(act_, z, y, batch_ * t_out_, f_);
    }
    void backward(const float* params, const float*, const float* y, float* dy, float* dx, float* grads) override {
        be_.activation_backward(act_, z_.empty() ? y : z_.data(), dy, dy, batch_ * t_out_, f_);
        transpose(dy, z_t_.data(), t_out_, f_);
        op_->backward(x_t_.data(), params, z_t_.data(), dx ? dx_t_.data() : nullptr, grads, grads + bias_offset_);
        if (dx) transpose(dx_t_.data(), dx, c_, t_in_);
    }

private:
    // Per sample, [rows x cols] -> [cols x rows].
    void transpose(const float* in, float* out, int rows, int cols) const {
        const auto size = static_cast<std::size_t>(rows) * cols;
        for (int n = 0; n < batch_; ++n) {
            const float* a = in + n * size;
            float* b = out + n * size;
            for (int r = 0; r < rows; ++r)
                for (int q = 0; q < cols; ++q) b[static_cast<std::size_t>(q) * rows + r] = a[static_cast<std::size_t>(r) * cols + q];
        }
    }

    backend::Backend& be_;
    backend::ActivationSpec act_;
    int batch_, t_in_, t_out_, c_, f_;
    std::size_t bias_offset_;
    std::vector<float> x_t_, dx_t_, z_t_, z_;
    std::unique_ptr<backend::ConvOp> op_;
};

}  // namespace

std::unique_ptr<LayerStep> plan_convolution1d(backend::Backend& be, const config::LayerConfig& l, int batch) {
    return std::make_unique<Convolution1dStep>(be, l, batch);
}

}  // namespace thresher::nn
