// Recurrent layers (lstm, gru, simple_rnn): the backend's RnnOp does the whole layer, both
// directions and the masking by length (backend.h RnnDesc; on the CPU one oneDNN primitive over
// all steps per direction, engine/backend/cpu/rnn_op.cpp, or the host path for activations
// oneDNN lacks, cpu/rnn_host.cpp). The parameter slice is passed as it
// is: its blocks (shape inference) are in the order RnnOp reads them.
//
// go_backwards (Keras, one direction) runs the same forward RnnOp over each sample reversed
// within its length, through the backend's RowGatherOp (indices from the batch's lengths, so the
// same code on every backend): x'[t] = x[L-1-t]. Its last-step output is then Keras's. With
// return_sequences Keras keeps the outputs in reading order, right-aligned over the T steps (its
// cuDNN path reverses the output within L, then the whole sequence): y[p] = y'[p - (T - L)] for
// p >= T - L, zero before; a second RowGatherOp moves them. Keras passes the input's mask on
// unchanged, so what follows reads steps 0..L-1, as it does here.
#include "nn/sequence_step.h"

#include <vector>

#include "core/error.h"
#include "core/rng.h"

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

backend::RnnDesc desc_of(const config::LayerConfig& l, int batch) {
    backend::RnnDesc d;
    d.cell = cell_of(l);
    d.batch = batch;
    d.steps = l.in_shape.t;
    d.in = l.in_shape.c;
    d.hidden = l.units;
    d.act = l.type == config::LayerType::SimpleRnn ? l.activation : l.cell_activation;
    d.gate = l.gate_activation;
    d.peepholes = l.peepholes;
    d.merge = merge_of(l.bidirectional);
    d.return_sequences = l.return_sequences;
    d.input_retain = l.input_retain;
    d.recurrent_retain = l.recurrent_retain;
    return d;
}

// The indices of a sequence's rows moved by each sample's length, for RowGatherOp:
// reverse: row t of sample n reads row L-1-t (t < L); right-align: row p reads row p - (T-L)
// (p >= T - L). -1: a zero row.
void moved_rows(const int* lengths, int batch, int steps, bool reverse, std::vector<int>& ids) {
    ids.assign(static_cast<std::size_t>(batch) * steps, -1);
    for (int n = 0; n < batch; ++n) {
        const int len = lengths[n], base = n * steps;
        for (int t = 0; t < len; ++t) {
            if (reverse) ids[static_cast<std::size_t>(base + t)] = base + len - 1 - t;
            else ids[static_cast<std::size_t>(base + steps - len + t)] = base + t;
        }
    }
}

class RecurrentStep final : public LayerStep {
public:
    RecurrentStep(backend::Backend& be, const backend::RnnDesc& d, std::size_t index)
        : op_(be.make_rnn(d)), index_(index), dropout_(d.has_dropout()) {}
    void forward(float* params, const float* x, float* y, const StepContext& ctx) override {
        lengths_ = ctx.lengths;
        // This iteration's masks, from the iteration's seed and the layer's index (as dropout's).
        if (dropout_ && ctx.mode == backend::Mode::Training) op_->draw_dropout(derive_seed(ctx.seed, index_));
        op_->forward(x, lengths_, params, y, ctx.mode);
    }
    void backward(const float* params, const float* x, const float*, float* dy, float* dx, float* grads) override {
        op_->backward(x, lengths_, params, dy, dx, grads);
    }

private:
    std::unique_ptr<backend::RnnOp> op_;
    const int* lengths_ = nullptr;
    std::size_t index_;  // the layer's, for its dropout masks
    bool dropout_ = false;
};

// go_backwards: the RnnOp between two RowGatherOps (above).
class BackwardsRecurrentStep final : public LayerStep {
public:
    BackwardsRecurrentStep(backend::Backend& be, const backend::RnnDesc& d, std::size_t index)
        : inner_(be, d, index), batch_(d.batch), steps_(d.steps), sequences_(d.return_sequences),
          rows_(static_cast<std::size_t>(d.batch) * d.steps),
          reverse_(be.make_row_gather({static_cast<int>(rows_), d.in, static_cast<int>(rows_)})),
          x_rev_(be, rows_ * d.in), dx_rev_(be, rows_ * d.in) {
        if (sequences_) {
            align_ = be.make_row_gather({static_cast<int>(rows_), d.hidden, static_cast<int>(rows_)});
            y_read_ = backend::Buffer(be, rows_ * d.hidden);
            dy_read_ = backend::Buffer(be, rows_ * d.hidden);
        }
    }
    void forward(float* params, const float* x, float* y, const StepContext& ctx) override {
        moved_rows(ctx.lengths, batch_, steps_, true, ids_);
        reverse_->forward(ids_.data(), rows_, x, x_rev_.data());
        inner_.forward(params, x_rev_.data(), sequences_ ? y_read_.data() : y, ctx);
        if (!sequences_) return;
        moved_rows(ctx.lengths, batch_, steps_, false, ids_);
        align_->forward(ids_.data(), rows_, y_read_.data(), y);
    }
    void backward(const float* params, const float*, const float* y, float* dy, float* dx, float* grads) override {
        float* d_read = dy;
        if (sequences_) {
            align_->backward(dy, dy_read_.data());
            d_read = dy_read_.data();
        }
        inner_.backward(params, x_rev_.data(), y, d_read, dx ? dx_rev_.data() : nullptr, grads);
        if (dx) reverse_->backward(dx_rev_.data(), dx);
    }

private:
    RecurrentStep inner_;
    int batch_, steps_;
    bool sequences_;
    std::size_t rows_;
    std::unique_ptr<backend::RowGatherOp> reverse_, align_;
    backend::Buffer x_rev_, dx_rev_, y_read_, dy_read_;  // x and dx in reading order; y and dy in it
    std::vector<int> ids_;
};

}  // namespace

std::unique_ptr<LayerStep> plan_recurrent(backend::Backend& be, const config::LayerConfig& l, std::size_t index,
                                          const std::string& label, int batch) {
    const backend::RnnDesc d = desc_of(l, batch);
    if (auto why = be.rnn_refusal(d))
        throw ConfigError(label + ": the " + be.info().name + " backend cannot run this layer: " + *why +
                          " (use the CPU backend)");
    if (l.go_backwards) return std::make_unique<BackwardsRecurrentStep>(be, d, index);
    return std::make_unique<RecurrentStep>(be, d, index);
}

}  // namespace thresher::nn
