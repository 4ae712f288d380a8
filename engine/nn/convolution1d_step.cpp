// convolution1d: a 1-D convolution along time, on the backend's 2-D ConvOp.
#include <cstdint>
#include <memory>
#include <vector>

#include "nn/sequence_step.h"

namespace thresher::nn {

namespace {

// convolution1d on the backend's ConvOp: [N, T, C] is transposed to NCHW [N, C, 1, T] (the
// backend's GatherOp, so the data stays where the backend keeps it), convolved with kh = 1
// (W [filters x C x k] is OIHW with H = 1), and the result [N, F, 1, T'] transposed back to
// [N, T', F]. Each shape's transpose is one GatherOp: its forward goes [T, C] -> [C, T], its
// backward (the inverse permutation) [C, T] -> [T, C]. Causal mode pads (k - 1) * dilation steps
// on the left only (shape inference's pads). The activation runs as its own pass on [N, T', F].
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
        in_t_ = be.make_gather(transpose_map(t_in_, c_));
        out_t_ = be.make_gather(transpose_map(t_out_, f_));
        const auto n = static_cast<std::size_t>(batch);
        x_t_ = backend::Buffer(be, n * t_in_ * c_);
        dx_t_ = backend::Buffer(be, n * t_in_ * c_);
        z_t_ = backend::Buffer(be, n * t_out_ * f_);
        if (backend::derivative_from_input(act_.kind)) z_ = backend::Buffer(be, n * t_out_ * f_);
    }
    void forward(float* params, const float* x, float* y, const StepContext&) override {
        in_t_->forward(x, x_t_.data(), static_cast<std::size_t>(batch_));
        op_->forward(x_t_.data(), params, params + bias_offset_, z_t_.data());
        float* z = z_.size() ? z_.data() : y;
        out_t_->backward(z_t_.data(), z, static_cast<std::size_t>(batch_));
        be_.activation_forward(act_, z, y, batch_ * t_out_, f_);
    }
    void backward(const float* params, const float*, const float* y, float* dy, float* dx, float* grads) override {
        be_.activation_backward(act_, z_.size() ? z_.data() : y, dy, dy, batch_ * t_out_, f_);
        out_t_->forward(dy, z_t_.data(), static_cast<std::size_t>(batch_));
        op_->backward(x_t_.data(), params, z_t_.data(), dx ? dx_t_.data() : nullptr, grads, grads + bias_offset_);
        if (dx) in_t_->backward(dx_t_.data(), dx, static_cast<std::size_t>(batch_));
    }

private:
    // One sample's [rows x cols] -> [cols x rows] as a gather: y[q * rows + r] = x[r * cols + q].
    static std::vector<std::uint32_t> transpose_map(int rows, int cols) {
        std::vector<std::uint32_t> map(static_cast<std::size_t>(rows) * cols);
        for (int r = 0; r < rows; ++r)
            for (int q = 0; q < cols; ++q)
                map[static_cast<std::size_t>(q) * rows + r] = static_cast<std::uint32_t>(static_cast<std::size_t>(r) * cols + q);
        return map;
    }

    backend::Backend& be_;
    backend::ActivationSpec act_;
    int batch_, t_in_, t_out_, c_, f_;
    std::size_t bias_offset_;
    backend::Buffer x_t_, dx_t_, z_t_, z_;  // z_: the pre-activation, where the derivative reads it
    std::unique_ptr<backend::ConvOp> op_;
    std::unique_ptr<backend::GatherOp> in_t_, out_t_;
};

}  // namespace

std::unique_ptr<LayerStep> plan_convolution1d(backend::Backend& be, const config::LayerConfig& l, int batch) {
    return std::make_unique<Convolution1dStep>(be, l, batch);
}

}  // namespace thresher::nn
