// A layer planned for one batch size: the backend ops it needs, built once and executed every
// iteration. Parameters, gradients and activations are pointers into backend memory; a layer's
// parameters and gradients are its slice of the network's flat buffers (ParamBlock offsets).
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "config/model_config.h"

namespace thresher::nn {

struct StepContext {
    backend::Mode mode = backend::Mode::Training;
    std::uint64_t seed = 0;  // per iteration; dropout derives its mask from it and the layer index
    // The lengths of the layer's sequence input (host, one per sample; seq_spec.md), null when
    // it reads no sequence. Valid until the next forward, so backward may use them too.
    const int* lengths = nullptr;
};

class LayerStep {
public:
    virtual ~LayerStep() = default;
    // `params` is writable because batch normalisation updates its running statistics there.
    virtual void forward(float* params, const float* x, float* y, const StepContext&) = 0;
    // dy = dL/dy (the step may overwrite it); dx = dL/dx, null when no layer below needs it;
    // grads = this layer's slice of the gradient buffer, fully overwritten.
    virtual void backward(const float* params, const float* x, const float* y, float* dy, float* dx,
                          float* grads) = 0;
};

// What the network decided around a layer (Network::choose_layouts, choose_fusions).
struct StepPlan {
    // The layouts of the layer's input and output images: Native only where the network chose
    // the backend's own layout; convolution, pooling and batch norm pass them to the backend,
    // element-wise layers need not know.
    backend::ImageLayout in = backend::ImageLayout::Plain, out = backend::ImageLayout::Plain;
    // Batch norm: apply the ReLU layer that alone reads it (BatchNormDesc::relu).
    bool fuse_relu = false;
    // That ReLU layer: its input already went through the ReLU. In training its output IS its
    // input (the network hands both as one buffer) and backward passes dL/dy through, the batch
    // norm's backward masking it; in inference it copies.
    bool relu_done = false;
};

// `index` is the layer's position (for seeds); the last layer's backward receives dL/dz of its
// pre-activation (the loss folds the activation in), other layers receive dL/dy.
std::unique_ptr<LayerStep> plan_layer(backend::Backend&, const config::LayerConfig&, std::size_t index, int batch,
                                      StepPlan = {});

std::unique_ptr<LayerStep> plan_dense(backend::Backend&, const config::LayerConfig&, int batch);
std::unique_ptr<LayerStep> plan_convolution(backend::Backend&, const config::LayerConfig&, int batch,
                                            StepPlan = {});
std::unique_ptr<LayerStep> plan_subsampling(backend::Backend&, const config::LayerConfig&, int batch,
                                            StepPlan = {});
std::unique_ptr<LayerStep> plan_batch_norm(backend::Backend&, const config::LayerConfig&, int batch,
                                            StepPlan = {});
std::unique_ptr<LayerStep> plan_prelu(backend::Backend&, const config::LayerConfig&, int batch);
std::unique_ptr<LayerStep> plan_activation(backend::Backend&, const config::LayerConfig&, int batch, StepPlan = {});
// Zero padding, cropping and upsampling layers.
std::unique_ptr<LayerStep> plan_resize(backend::Backend&, const config::LayerConfig&, int batch);
std::unique_ptr<LayerStep> plan_dropout(backend::Backend&, const config::LayerConfig&, std::size_t index, int batch);

}  // namespace thresher::nn
