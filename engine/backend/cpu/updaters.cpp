// DL4J's updaters on the CPU: the gradient becomes the update in place (DL4J's
// GradientUpdater.applyUpdater contract), so gradient sharing can take the update vector as is.
//   Sgd        u = lr g
//   Nesterovs  v' = mu v - lr g;  u = mu v - (1 + mu) v'        (PyTorch's nesterov=True, scaled)
//   AdaGrad    h += g^2;  u = lr g / (sqrt(h) + eps)
//   RmsProp    r = d r + (1 - d) g^2;  u = lr g / sqrt(r + eps)
//   Adam       m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//              u = lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps),  t = iteration + 1
// L1/L2 are added to the gradient first (DL4J's "before updater" regularisation).
#include <cmath>

#include "backend/cpu/ops.h"

namespace thresher::backend::cpu {

void updater_step(const UpdaterSpec& s, float* g, float* state, const float* w, std::size_t n,
                  long iteration) {
    const long count = static_cast<long>(n);
    const bool parallel = count > (1 << 15);
    if (s.l2 != 0.f || s.l1 != 0.f) {
        const float l1 = s.l1, l2 = s.l2;
#pragma omp parallel for simd if (parallel)
        for (long i = 0; i < count; ++i)
            g[i] += l2 * w[i] + l1 * static_cast<float>((w[i] > 0.f) - (w[i] < 0.f));
    }
    const float lr = s.learning_rate;
    switch (s.kind) {
        case UpdaterKind::Sgd:
#pragma omp parallel for simd if (parallel)
            for (long i = 0; i < count; ++i) g[i] *= lr;
            return;
        case UpdaterKind::Nesterovs: {
            const float mu = s.momentum;
            float* v = state;
#pragma omp parallel for simd if (parallel)
            for (long i = 0; i < count; ++i) {
                const float prev = v[i];
                const float next = mu * prev - lr * g[i];
                v[i] = next;
                g[i] = mu * prev - (1.f + mu) * next;
            }
            return;
        }
        case UpdaterKind::AdaGrad: {
            const float eps = s.epsilon;
            float* h = state;
#pragma omp parallel for simd if (parallel)
            for (long i = 0; i < count; ++i) {
                h[i] += g[i] * g[i];
                g[i] = lr * g[i] / (std::sqrt(h[i]) + eps);
            }
            return;
        }
        case UpdaterKind::RmsProp: {
            const float d = s.rms_decay, eps = s.epsilon;
            float* r = state;
#pragma omp parallel for simd if (parallel)
            for (long i = 0; i < count; ++i) {
                r[i] = d * r[i] + (1.f - d) * g[i] * g[i];
                g[i] = lr * g[i] / std::sqrt(r[i] + eps);
            }
            return;
        }
        case UpdaterKind::Adam: {
            const double t = static_cast<double>(iteration) + 1.0;
            const float b1 = s.beta1, b2 = s.beta2, eps = s.epsilon;
            const float alpha = static_cast<float>(lr * std::sqrt(1.0 - std::pow(b2, t)) /
                                                   (1.0 - std::pow(b1, t)));
            float* m = state;
            float* v = state + n;
#pragma omp parallel for simd if (parallel)
            for (long i = 0; i < count; ++i) {
                m[i] = b1 * m[i] + (1.f - b1) * g[i];
                v[i] = b2 * v[i] + (1.f - b2) * g[i] * g[i];
                g[i] = alpha * m[i] / (std::sqrt(v[i]) + eps);
            }
            return;
        }
    }
}

}  // namespace thresher::backend::cpu
