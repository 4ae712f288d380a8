// Steps of the sequence layers (seq_spec.md), on every backend. Recurrent layers run on the
// backend's RnnOp (recurrent_step.cpp; a backend refuses what its library lacks, at plan time,
// naming the layer), convolution1d on its ConvOp (convolution1d_step.cpp), embedding on its
// RowGatherOp, pooling over time on its TimePoolOp, repeat_vector on strided copies. Padded
// steps (from a sample's length on) are written as zeros and give zero gradient; the network
// zeroes them around every layer as well.
#include "nn/sequence_step.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace thresher::nn {

namespace {

using config::LayerType;

// Rows of E by id (the backend's RowGatherOp): y[n][t] = E[id(n, t)] for t < L, zeros after.
// The ids are checked here, on the host (downloaded first where the backend keeps its data on a
// device): a bad one is the user's data, named by step and sample. Backward sums dy's rows into
// dE by id, each id's rows in sample and step order (deterministic); ids have no gradient.
class EmbeddingStep final : public LayerStep {
public:
    EmbeddingStep(backend::Backend& be, const config::LayerConfig& l, std::size_t index, int batch)
        : be_(be), label_(l.label(index)), batch_(batch), steps_(l.in_shape.t), vocabulary_(l.vocabulary),
          rows_(static_cast<std::size_t>(batch) * l.in_shape.t), ids_(rows_),
          op_(be.make_row_gather({static_cast<int>(rows_), l.units, l.vocabulary})) {}
    void forward(float* params, const float* x, float* y, const StepContext& ctx) override {
        const float* values = x;
        if (!be_.host_memory()) {
            host_.resize(rows_);
            be_.download(host_.data(), x, rows_);
            values = host_.data();
        }
        for (int n = 0; n < batch_; ++n)
            for (int t = 0; t < steps_; ++t) {
                const std::size_t r = static_cast<std::size_t>(n) * steps_ + t;
                ids_[r] = t < ctx.lengths[n] ? checked_id(values[r], n, t) : -1;
            }
        op_->forward(ids_.data(), rows_, params, y);
    }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float* grads) override {
        op_->backward(dy, grads);
        if (dx) be_.fill(dx, 0.f, rows_);
    }

private:
    int checked_id(float v, int n, int t) const {
        if (!(v >= 0.f) || v >= static_cast<float>(vocabulary_) || std::floor(v) != v) {
            // A whole number as the user wrote it (11, not 11.0); anything else as a decimal.
            const bool whole = std::isfinite(v) && std::floor(v) == v && std::abs(v) < 1e15f;
            const std::string text = whole ? std::to_string(static_cast<long long>(v)) : nlohmann::json(config::decimal(v)).dump();
            throw DataError(label_ + ": token id " + text + " at step " + std::to_string(t) + " of sample " +
                            std::to_string(n) + " of the batch is not an integer in [0, " + std::to_string(vocabulary_) + ")");
        }
        return static_cast<int>(v);
    }

    backend::Backend& be_;
    std::string label_;
    int batch_, steps_, vocabulary_;
    std::size_t rows_;
    std::vector<int> ids_;      // per row, -1 at padded steps
    std::vector<float> host_;   // the ids' values, downloaded from a device
    std::unique_ptr<backend::RowGatherOp> op_;
};

// Flat [C] -> `times` steps of it (strided row copies); backward sums the steps' gradients in
// step order (the first copied, each next one added).
class RepeatVectorStep final : public LayerStep {
public:
    RepeatVectorStep(backend::Backend& be, const config::LayerConfig& l, int batch)
        : be_(be), batch_(batch), times_(l.repeat), c_(l.in_shape.c),
          scratch_(be, l.repeat > 1 ? static_cast<std::size_t>(batch) * l.in_shape.c : 0) {}
    void forward(float*, const float* x, float* y, const StepContext&) override {
        const auto c = static_cast<std::size_t>(c_), pitch = c * times_;
        for (int t = 0; t < times_; ++t) be_.copy_rows(y + t * c, pitch, x, c, c, static_cast<std::size_t>(batch_));
    }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (!dx) return;
        const auto c = static_cast<std::size_t>(c_), pitch = c * times_, n = static_cast<std::size_t>(batch_);
        be_.copy_rows(dx, c, dy, pitch, c, n);
        for (int t = 1; t < times_; ++t) {
            be_.copy_rows(scratch_.data(), c, dy + t * c, pitch, c, n);
            be_.axpy(1.f, scratch_.data(), dx, n * c);
        }
    }

private:
    backend::Backend& be_;
    int batch_, times_, c_;
    backend::Buffer scratch_;
};

// Pooling along time over each sample's valid steps (the backend's TimePoolOp): global pooling
// is one window of all T steps, cut to the length; a windowed one pools the valid steps of each
// window (kernel k, stride s, the padding shape inference chose), so neither the padding nor a
// sample's padded steps count (an average divides by the valid steps it saw).
class TimePoolStep final : public LayerStep {
public:
    TimePoolStep(backend::Backend& be, const config::LayerConfig& l, int batch) : op_(be.make_time_pool(desc(l, batch))) {}
    void forward(float*, const float* x, float* y, const StepContext& ctx) override { op_->forward(x, ctx.lengths, y); }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (dx) op_->backward(dy, dx);
    }

private:
    static backend::TimePoolDesc desc(const config::LayerConfig& l, int batch) {
        backend::TimePoolDesc d;
        d.batch = batch, d.t_in = l.in_shape.t, d.channels = l.in_shape.c, d.max = l.max_pool;
        if (l.global) {
            d.t_out = 1, d.kernel = d.stride = l.in_shape.t, d.pad = 0;
        } else {
            d.t_out = l.out_shape.t, d.kernel = l.kernel[0], d.stride = l.stride[0], d.pad = l.pads[0];
        }
        return d;
    }

    std::unique_ptr<backend::TimePoolOp> op_;
};

}  // namespace

std::unique_ptr<LayerStep> plan_sequence_layer(backend::Backend& be, const config::LayerConfig& l, std::size_t index, int batch) {
    const std::string label = l.label(index);
    if (config::is_recurrent(l.type)) {
        if (!be.has_rnn())
            throw ConfigError(label + ": the " + be.info().name + " backend has no recurrent layers yet (use the CPU backend)");
        return plan_recurrent(be, l, index, label, batch);
    }
    switch (l.type) {
        case LayerType::Embedding: return std::make_unique<EmbeddingStep>(be, l, index, batch);
        case LayerType::RepeatVector: return std::make_unique<RepeatVectorStep>(be, l, batch);
        case LayerType::Convolution1d: return plan_convolution1d(be, l, batch);
        case LayerType::Subsampling: return std::make_unique<TimePoolStep>(be, l, batch);
        default: break;
    }
    throw ConfigError(label + ": " + std::string(config::to_string(l.type)) + " cannot run on a sequence");
}

}  // namespace thresher::nn
