// DL4J's updaters as one fused kernel per step: regularisation, the updater's state and the
// gradient-to-update rewrite happen in a single pass over the segment. The formulas and their
// evaluation order are engine/backend/cpu/updaters.cpp's (see the table there); with --fmad=false
// and IEEE sqrt and division (nvcc's defaults) each step rounds as the CPU's does.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/kernels.h"

namespace thresher::backend::cuda::kernels {

namespace {

__global__ void updater_kernel(UpdaterSpec s, float adam_alpha, float* g, float* state,
                               const float* w, std::size_t n) {
    const bool regularise = s.l2 != 0.f || s.l1 != 0.f;
    const float lr = s.learning_rate;
    THRESHER_GRID_STRIDE(i, n) {
        float gi = g[i];
        if (regularise) {
            const float wi = w[i];
            gi += s.l2 * wi + s.l1 * static_cast<float>((wi > 0.f) - (wi < 0.f));
        }
        switch (s.kind) {
            case UpdaterKind::Sgd: gi *= lr; break;
            case UpdaterKind::Nesterovs: {
                const float mu = s.momentum;
                const float prev = state[i];
                const float next = mu * prev - lr * gi;
                state[i] = next;
                gi = mu * prev - (1.f + mu) * next;
                break;
            }
            case UpdaterKind::AdaGrad: {
                const float h = state[i] + gi * gi;
                state[i] = h;
                gi = lr * gi / (sqrtf(h) + s.epsilon);
                break;
            }
            case UpdaterKind::RmsProp: {
                const float d = s.rms_decay;
                const float r = d * state[i] + (1.f - d) * gi * gi;
                state[i] = r;
                gi = lr * gi / sqrtf(r + s.epsilon);
                break;
            }
            case UpdaterKind::Adam: {
                float* m = state;
                float* v = state + n;
                const float b1 = s.beta1, b2 = s.beta2;
                const float mi = b1 * m[i] + (1.f - b1) * gi;
                const float vi = b2 * v[i] + (1.f - b2) * gi * gi;
                m[i] = mi;
                v[i] = vi;
                gi = adam_alpha * mi / (sqrtf(vi) + s.epsilon);
                break;
            }
        }
        g[i] = gi;
    }
}

}  // namespace

void updater_step(cudaStream_t stream, const UpdaterSpec& spec, float adam_alpha, float* grad,
                  float* state, const float* params, std::size_t n) {
    if (n == 0) return;
    updater_kernel<<<blocks_for(n), kThreads, 0, stream>>>(spec, adam_alpha, grad, state, params, n);
    THRESHER_CUDA_LAUNCHED(updater_kernel);
}

}  // namespace thresher::backend::cuda::kernels
