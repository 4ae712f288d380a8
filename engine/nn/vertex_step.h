// A graph vertex planned for one batch size: it joins several inputs (add, subtract, multiply,
// average, maximum, concatenate) or keeps a range of channels (subset). Vertices have no
// parameters; all work runs on the backend's element-wise ops and strided copies, so every
// backend that runs the layers runs the vertices.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "config/model_config.h"

namespace thresher::nn {

class VertexStep {
public:
    virtual ~VertexStep() = default;
    // xs: one pointer per input, in the order of the vertex's inputs.
    virtual void forward(const std::vector<const float*>& xs, float* y) = 0;
    // dxs[k] = dL/d(input k), overwritten; a null entry is not needed (the model's input). dy
    // is left unchanged.
    virtual void backward(const std::vector<const float*>& xs, const float* y, const float* dy,
                          const std::vector<float*>& dxs) = 0;
};

// `inputs`: the shape of each input, in order (ModelConfig's shapes of the vertex's sources).
std::unique_ptr<VertexStep> plan_vertex(backend::Backend&, const config::LayerConfig&,
                                        const std::vector<config::Shape>& inputs, int batch);

}  // namespace thresher::nn
