// Steps of the sequence layers (seq_spec.md). Recurrent layers run on the backend's RnnOp (one
// oneDNN primitive over all steps on the CPU); embedding, repeat_vector and pooling over time
// are gathers and sums that run on host memory (the CPU backend); a backend without them is
// refused here, at plan time, naming the layer. Padded steps (from a sample's length on) are
// written as zeros and give zero gradient; the network zeroes them around every layer as well.
#include "nn/sequence_step.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace thresher::nn {

namespace {

using config::LayerType;

backend::RnnCell cell_of(const config::LayerConfig& l) {
    if (l.type == LayerType::Lstm) return backend::RnnCell::Lstm;
    if (l.type == LayerType::Gru) return l.reset_after ? backend::RnnCell::GruResetAfter : backend::RnnCell::Gru;
    return backend::RnnCell::Vanilla;
}

backend::RnnMerge merge_of(config::BiMode b) {
    switch (b) {
        case config::BiMode::None: return backend::RnnMerge::None;
        case config::BiMode::Concat: return backend::RnnMerge::Concat;
        case config::BiMode::Sum: return backend::RnnMerge::Sum;
        case config::BiMode::Mul: return backend::RnnMerge::Mul;
        case config::BiMode::Average: return backend::RnnMerge::Average;
    }
    return backend::RnnMerge::None;
}

class RecurrentStep final : public LayerStep {
public:
    RecurrentStep(backend::Backend& be, const config::LayerConfig& l, int batch) {
        backend::RnnDesc d;
        d.cell = cell_of(l);
        d.batch = batch;
        d.steps = l.in_shape.t;
        d.in = l.in_shape.c;
        d.hidden = l.units;
        d.act = l.activation.kind;
        d.peepholes = l.peepholes;
        d.merge = merge_of(l.bidirectional);
        d.return_sequences = l.return_sequences;
        op_ = be.make_rnn(d);
    }
    void forward(float* params, const float* x, float* y, const StepContext& ctx) override {
        lengths_ = ctx.lengths;
        op_->forward(x, lengths_, params, y, ctx.mode);
    }
    void backward(const float* params, const float* x, const float*, float* dy, float* dx, float* grads) override {
        op_->backward(x, lengths_, params, dy, dx, grads);
    }

private:
    std::unique_ptr<backend::RnnOp> op_;
    const int* lengths_ = nullptr;
};

// Rows of E by id: y[n][t] = E[id(n, t)] for t < L, zeros after. Backward adds dy's rows into
// dE in sample and step order (deterministic); ids have no gradient.
class EmbeddingStep final : public LayerStep {
public:
    EmbeddingStep(const config::LayerConfig& l, std::size_t index, int batch)
        : label_(l.label(index)), batch_(batch), steps_(l.in_shape.t), units_(l.units), vocabulary_(l.vocabulary) {}
    void forward(float* params, const float* x, float* y, const StepContext& ctx) override {
        lengths_ = ctx.lengths;
        const auto e = static_cast<std::size_t>(units_);
        for (int n = 0; n < batch_; ++n) {
            for (int t = 0; t < steps_; ++t) {
                float* row = y + (static_cast<std::size_t>(n) * steps_ + t) * e;
                if (t >= lengths_[n]) {
                    std::fill(row, row + e, 0.f);
                    continue;
                }
                const float v = x[static_cast<std::size_t>(n) * steps_ + t];
                const std::size_t id = checked_id(v, n, t);
                std::copy_n(params + id * e, e, row);
            }
        }
    }
    void backward(const float*, const float* x, const float*, float* dy, float* dx, float* grads) override {
        const auto e = static_cast<std::size_t>(units_);
        std::fill(grads, grads + static_cast<std::size_t>(vocabulary_) * e, 0.f);
        for (int n = 0; n < batch_; ++n)
            for (int t = 0; t < lengths_[n]; ++t) {
                const std::size_t id = checked_id(x[static_cast<std::size_t>(n) * steps_ + t], n, t);
                const float* g = dy + (static_cast<std::size_t>(n) * steps_ + t) * e;
                float* to = grads + id * e;
                for (std::size_t j = 0; j < e; ++j) to[j] += g[j];
            }
        if (dx) std::fill(dx, dx + static_cast<std::size_t>(batch_) * steps_, 0.f);
    }

private:
    std::size_t checked_id(float v, int n, int t) const {
        if (!(v >= 0.f) || v >= static_cast<float>(vocabulary_) || std::floor(v) != v)
            throw DataError(label_ + ": token id " + std::to_string(v) + " at step " + std::to_string(t) + " of sample " +
                            std::to_string(n) + " of the batch is not an integer in [0, " + std::to_string(vocabulary_) + ")");
        return static_cast<std::size_t>(v);
    }

    std::string label_;
    int batch_, steps_, units_, vocabulary_;
    const int* lengths_ = nullptr;
};

// Flat [C] -> `times` steps of it; backward sums the steps' gradients.
class RepeatVectorStep final : public LayerStep {
public:
    RepeatVectorStep(const config::LayerConfig& l, int batch) : batch_(batch), times_(l.repeat), c_(l.in_shape.c) {}
    void forward(float*, const float* x, float* y, const StepContext&) override {
        const auto c = static_cast<std::size_t>(c_);
        for (int n = 0; n < batch_; ++n)
            for (int t = 0; t < times_; ++t) std::copy_n(x + n * c, c, y + (static_cast<std::size_t>(n) * times_ + t) * c);
    }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (!dx) return;
        const auto c = static_cast<std::size_t>(c_);
        std::fill(dx, dx + static_cast<std::size_t>(batch_) * c, 0.f);
        for (int n = 0; n < batch_; ++n)
            for (int t = 0; t < times_; ++t) {
                const float* g = dy + (static_cast<std::size_t>(n) * times_ + t) * c;
                for (std::size_t j = 0; j < c; ++j) dx[n * c + j] += g[j];
            }
    }

private:
    int batch_, times_, c_;
};

// Global pooling over the valid steps (masked): the mean or the maximum of steps 0..L-1.
class TimePoolStep final : public LayerStep {
public:
    TimePoolStep(const config::LayerConfig& l, int batch)
        : batch_(batch), steps_(l.in_shape.t), c_(l.in_shape.c), max_(l.max_pool),
          argmax_(static_cast<std::size_t>(batch) * l.in_shape.c) {}
    void forward(float*, const float* x, float* y, const StepContext& ctx) override {
        lengths_ = ctx.lengths;
        const auto c = static_cast<std::size_t>(c_);
        for (int n = 0; n < batch_; ++n) {
            const float* xs = x + static_cast<std::size_t>(n) * steps_ * c;
            float* out = y + n * c;
            const int len = lengths_[n];
            for (std::size_t j = 0; j < c; ++j) {
                if (max_) {
                    int best = 0;
                    for (int t = 1; t < len; ++t)
                        if (xs[t * c + j] > xs[best * c + j]) best = t;
                    argmax_[n * c + j] = best;
                    out[j] = xs[best * c + j];
                } else {
                    double s = 0.0;
                    for (int t = 0; t < len; ++t) s += xs[t * c + j];
                    out[j] = static_cast<float>(s / len);
                }
            }
        }
    }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (!dx) return;
        const auto c = static_cast<std::size_t>(c_);
        std::fill(dx, dx + static_cast<std::size_t>(batch_) * steps_ * c, 0.f);
        for (int n = 0; n < batch_; ++n) {
            float* d = dx + static_cast<std::size_t>(n) * steps_ * c;
            const int len = lengths_[n];
            for (std::size_t j = 0; j < c; ++j) {
                if (max_) d[argmax_[n * c + j] * c + j] = dy[n * c + j];
                else
                    for (int t = 0; t < len; ++t) d[t * c + j] = dy[n * c + j] / static_cast<float>(len);
            }
        }
    }

private:
    int batch_, steps_, c_;
    bool max_;
    std::vector<int> argmax_;
    const int* lengths_ = nullptr;
};

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

std::unique_ptr<LayerStep> plan_sequence_layer(backend::Backend& be, const config::LayerConfig& l, std::size_t index, int batch) {
    const std::string label = l.label(index);
    if (config::is_recurrent(l.type)) {
        if (!be.has_rnn())
            throw ConfigError(label + ": the " + be.info().name + " backend has no recurrent layers yet (use the CPU backend)");
        return std::make_unique<RecurrentStep>(be, l, batch);
    }
    if (!be.host_memory())
        throw ConfigError(label + ": the " + be.info().name + " backend cannot run " + std::string(config::to_string(l.type)) +
                          " on sequences yet (use the CPU backend)");
    switch (l.type) {
        case LayerType::Embedding: return std::make_unique<EmbeddingStep>(l, index, batch);
        case LayerType::RepeatVector: return std::make_unique<RepeatVectorStep>(l, batch);
        case LayerType::Convolution1d: return std::make_unique<Convolution1dStep>(be, l, batch);
        case LayerType::Subsampling:
            if (l.global) return std::make_unique<TimePoolStep>(l, batch);
            break;
        default: break;
    }
    throw ConfigError(label + ": " + std::string(config::to_string(l.type)) +
                      (l.type == LayerType::Subsampling ? " along time with a window (not global)" : "") +
                      " cannot run yet (sequence layers, issue 23)");
}

}  // namespace thresher::nn
