// PReLU layers: y = x for x > 0, alpha·x otherwise, with alpha learned (the layer's only
// parameter block). Backends without PReLU kernels refuse the layer when it is planned.
#include "core/error.h"
#include "nn/layer_step.h"

namespace thresher::nn {

namespace {

class PReluStep final : public LayerStep {
public:
    PReluStep(backend::Backend& be, const config::LayerConfig& l, int batch) : be_(be) {
        d_.batch = batch;
        d_.c = l.in_shape.c, d_.h = l.in_shape.h, d_.w = l.in_shape.w;
        d_.shared_c = l.prelu_shared[0], d_.shared_h = l.prelu_shared[1], d_.shared_w = l.prelu_shared[2];
    }
    void forward(float* params, const float* x, float* y, const StepContext&) override {
        be_.prelu_forward(d_, x, params, y);
    }
    void backward(const float* params, const float* x, const float*, float* dy, float* dx,
                  float* grads) override {
        be_.prelu_backward(d_, x, params, dy, dx, grads);
    }

private:
    backend::Backend& be_;
    backend::PReluDesc d_;
};

}  // namespace

std::unique_ptr<LayerStep> plan_prelu(backend::Backend& be, const config::LayerConfig& l, int batch) {
    if (!be.has_prelu())
        throw BackendError((l.name.empty() ? std::string("a prelu layer") : "prelu layer \"" + l.name + "\"") +
                                 ": the " + be.info().name + " backend has no PReLU kernels yet (train this model on the CPU backend)");
    return std::make_unique<PReluStep>(be, l, batch);
}

}  // namespace thresher::nn
