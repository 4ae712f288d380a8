// Recurrent layers (lstm, gru, simple_rnn): the backend's RnnOp does the whole layer, both
// directions and the masking by length (backend.h RnnDesc; on the CPU one oneDNN primitive over
// all steps per direction, engine/backend/cpu/rnn_op.cpp, or the host path for activations
// oneDNN lacks, cpu/rnn_host.cpp). The parameter slice is passed as it
// is: its blocks (shape inference) are in the order RnnOp reads them.
#include "nn/sequence_step.h"

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
    return d;
}

class RecurrentStep final : public LayerStep {
public:
    RecurrentStep(backend::Backend& be, const backend::RnnDesc& d) : op_(be.make_rnn(d)) {}
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

}  // namespace

std::unique_ptr<LayerStep> plan_recurrent(backend::Backend& be, const config::LayerConfig& l, const std::string& label,
                                          int batch) {
    const backend::RnnDesc d = desc_of(l, batch);
    if (auto why = be.rnn_refusal(d))
        throw ConfigError(label + ": the " + be.info().name + " backend cannot run this layer: " + *why +
                          " (use the CPU backend)");
    return std::make_unique<RecurrentStep>(be, d);
}

}  // namespace thresher::nn
