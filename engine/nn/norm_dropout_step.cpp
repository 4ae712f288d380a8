// Batch normalisation and dropout: the two layers that behave differently in training and in
// inference, and that keep per-iteration state (batch statistics, the dropout mask). Batch norm's
// running statistics change only through the update vector (see BatchNormStep::backward).
#include "core/rng.h"
#include "nn/layer_step.h"
#include "nn/sequence_step.h"

namespace thresher::nn {

namespace {

class BatchNormStep final : public LayerStep {
public:
    BatchNormStep(backend::Backend& be, const config::LayerConfig& l, int batch, StepPlan plan)
        : be_(be), c_(static_cast<std::size_t>(l.in_shape.c)), decay_(l.bn_decay),
          size_(static_cast<std::size_t>(batch) * l.in_shape.size()),
          batch_mean_(be, c_), batch_var_(be, c_) {
        op_ = be.make_batch_norm({batch, l.in_shape.c, l.in_shape.h, l.in_shape.w, l.bn_eps, plan.in, plan.fuse_relu});
    }
    // Slice layout (shape_inference.cpp): gamma, beta, running mean, running var.
    void forward(float* p, const float* x, float* y, const StepContext& ctx) override {
        if (ctx.mode == backend::Mode::Training) {
            op_->forward_training(x, p, p + c_, y, batch_mean_.data(), batch_var_.data());
        } else {
            op_->forward_inference(x, p, p + c_, p + 2 * c_, p + 3 * c_, y);
        }
    }
    void backward(const float* p, const float* x, const float*, float* dy, float* dx,
                  float* g) override {
        if (!dx) {  // first layer: oneDNN still wants somewhere to write dL/dx
            if (scratch_.size() < size_) scratch_ = backend::Buffer(be_, size_);
            dx = scratch_.data();
        }
        op_->backward(x, dy, p, p + c_, batch_mean_.data(), batch_var_.data(), dx, g, g + c_);
        // The running statistics move by an update like any parameter's (DL4J's way, with a NoOp
        // updater): u = running - (decay * running + (1 - decay) * batch), so that gradient
        // sharing carries them to every replica and the replicas stay equal; θ -= u then gives
        // the blend. The batch statistics are not needed after the backward pass above.
        for (std::size_t k = 0; k < 2; ++k) {
            float* batch = k == 0 ? batch_mean_.data() : batch_var_.data();
            const float* running = p + (2 + k) * c_;
            be_.blend(batch, running, 1.f - decay_, c_);  // batch := decay * running + (1 - decay) * batch
            be_.copy(g + (2 + k) * c_, running, c_);
            be_.axpy(-1.f, batch, g + (2 + k) * c_, c_);
        }
    }

private:
    backend::Backend& be_;
    std::size_t c_;
    float decay_;
    std::size_t size_;
    backend::Buffer batch_mean_, batch_var_, scratch_;
    std::unique_ptr<backend::BatchNormOp> op_;
};

class DropoutStep final : public LayerStep {
public:
    DropoutStep(backend::Backend& be, const config::LayerConfig& l, std::size_t index, int batch)
        : be_(be), retain_(l.retain), index_(index),
          size_(static_cast<std::size_t>(batch) * l.in_shape.size()),
          group_(l.spatial ? static_cast<std::size_t>(l.in_shape.h) * l.in_shape.w : 1), mask_(be, size_) {}
    void forward(float*, const float* x, float* y, const StepContext& ctx) override {
        if (ctx.mode == backend::Mode::Training && retain_ < 1.f) {
            // Spatial dropout: a sample's channel is one run of h x w values in NCHW, all kept or
            // all dropped (neighbouring pixels are correlated, so dropping single ones barely
            // regularises a convolution); the mask is still per value, so backward is unchanged.
            be_.dropout_forward(x, y, mask_.data(), size_, retain_, derive_seed(ctx.seed, index_), group_);
        } else {
            be_.copy(y, x, size_);
            be_.fill(mask_.data(), 1.f, size_);
        }
    }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (dx) be_.multiply(dy, mask_.data(), dx, size_);
    }

private:
    backend::Backend& be_;
    float retain_;
    std::size_t index_;
    std::size_t size_, group_;
    backend::Buffer mask_;
};

}  // namespace

std::unique_ptr<LayerStep> plan_batch_norm(backend::Backend& be, const config::LayerConfig& l, int batch,
                                           StepPlan io) {
    return std::make_unique<BatchNormStep>(be, l, batch, io);
}

std::unique_ptr<LayerStep> plan_dropout(backend::Backend& be, const config::LayerConfig& l, std::size_t index,
                                        int batch) {
    return std::make_unique<DropoutStep>(be, l, index, batch);
}

std::unique_ptr<LayerStep> plan_layer(backend::Backend& be, const config::LayerConfig& l, std::size_t index,
                                      int batch, StepPlan io) {
    switch (l.type) {
        case config::LayerType::Dense:
        case config::LayerType::Output: return plan_dense(be, l, batch);
        case config::LayerType::Convolution:
        case config::LayerType::DepthwiseConvolution:
        case config::LayerType::SeparableConvolution:
        case config::LayerType::TransposedConvolution: return plan_convolution(be, l, batch, io);
        case config::LayerType::Subsampling:
            if (l.in_shape.sequence()) return plan_sequence_layer(be, l, index, batch);  // along time
            return plan_subsampling(be, l, batch, io);
        case config::LayerType::BatchNorm: return plan_batch_norm(be, l, batch, io);
        case config::LayerType::Dropout: return plan_dropout(be, l, index, batch);
        case config::LayerType::PRelu: return plan_prelu(be, l, batch);
        case config::LayerType::Activation: return plan_activation(be, l, batch, io);
        case config::LayerType::ZeroPadding:
        case config::LayerType::Cropping:
        case config::LayerType::Upsampling: return plan_resize(be, l, batch);
        case config::LayerType::Add:
        case config::LayerType::Subtract:
        case config::LayerType::Multiply:
        case config::LayerType::Average:
        case config::LayerType::Maximum:
        case config::LayerType::Concatenate:
        case config::LayerType::Subset:
        case config::LayerType::Reshape:
        case config::LayerType::Permute: return nullptr;  // vertices: plan_vertex (nn/vertex_step.h)
        case config::LayerType::Lstm:
        case config::LayerType::Gru:
        case config::LayerType::SimpleRnn:
        case config::LayerType::Embedding:
        case config::LayerType::Convolution1d:
        case config::LayerType::RepeatVector: return plan_sequence_layer(be, l, index, batch);  // nn/sequence_step.h
    }
    return nullptr;
}

}  // namespace thresher::nn
