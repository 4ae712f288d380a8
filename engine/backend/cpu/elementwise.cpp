// Element-wise kernels of the CPU backend: activations and their derivatives (from the output,
// so no pre-activation copy is kept), softmax per row, bias sums. Plain loops: the compiler
// vectorises them and OpenMP splits them across the --threads cores once they are big enough to
// pay for it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cpu/ops.h"
#include "core/rng.h"

namespace thresher::backend::cpu {

namespace {
constexpr long kParallelThreshold = 1 << 15;
}

bool append_activation_post_op(dnnl::post_ops& po, ActivationSpec act) {
    using dnnl::algorithm;
    switch (act.kind) {
        case Activation::Relu: po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f); return true;
        case Activation::LeakyRelu:
            po.append_eltwise(1.f, algorithm::eltwise_relu, act.alpha, 0.f);
            return true;
        case Activation::Tanh: po.append_eltwise(1.f, algorithm::eltwise_tanh, 0.f, 0.f); return true;
        case Activation::Sigmoid:
            po.append_eltwise(1.f, algorithm::eltwise_logistic, 0.f, 0.f);
            return true;
        case Activation::Identity:
        case Activation::Softmax:
        // The activations imported files bring run as a pass of their own (apply_activation_after).
        case Activation::Elu:
        case Activation::Selu:
        case Activation::Relu6:
        case Activation::HardSigmoid:
        case Activation::Softplus:
        case Activation::Softsign:
        case Activation::ThresholdedRelu: return false;
    }
    return false;
}

bool apply_activation_after(ActivationSpec act) {
    dnnl::post_ops po;
    return act.kind != Activation::Identity && !append_activation_post_op(po, act);
}

void activation_forward(ActivationSpec act, const float* x, float* y, int rows, int cols) {
    const long n = static_cast<long>(rows) * cols;
    const float a = act.alpha;
    switch (act.kind) {
        case Activation::Identity:
            if (x != y) std::copy(x, x + n, y);
            return;
        case Activation::Relu:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
            return;
        case Activation::LeakyRelu:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : a * x[i];
            return;
        case Activation::Tanh:
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
            return;
        case Activation::Sigmoid:
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = 1.f / (1.f + std::exp(-x[i]));
            return;
        case Activation::Elu:
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : a * std::expm1(x[i]);
            return;
        case Activation::Selu:
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = kSeluLambda * (x[i] > 0.f ? x[i] : kSeluAlpha * std::expm1(x[i]));
            return;
        case Activation::Relu6:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = std::min(std::max(x[i], 0.f), 6.f);
            return;
        case Activation::HardSigmoid:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = std::min(std::max(a * x[i] + 0.5f, 0.f), 1.f);
            return;
        case Activation::Softplus:
            // log(1 + e^x) without overflow: x + log1p(e^-x) for x > 0.
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
            return;
        case Activation::Softsign:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = x[i] / (1.f + std::fabs(x[i]));
            return;
        case Activation::ThresholdedRelu:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = x[i] > a ? x[i] : 0.f;
            return;
        case Activation::Softmax:
#pragma omp parallel for if (n > kParallelThreshold)
            for (int r = 0; r < rows; ++r) {
                const float* xr = x + static_cast<long>(r) * cols;
                float* yr = y + static_cast<long>(r) * cols;
                const float m = *std::max_element(xr, xr + cols);
                float sum = 0.f;
                for (int c = 0; c < cols; ++c) sum += (yr[c] = std::exp(xr[c] - m));
                const float inv = 1.f / sum;
                for (int c = 0; c < cols; ++c) yr[c] *= inv;
            }
            return;
    }
}

void activation_backward(ActivationSpec act, const float* y, const float* dy, float* dz, int rows,
                         int cols) {
    const long n = static_cast<long>(rows) * cols;
    const float a = act.alpha;
    switch (act.kind) {
        case Activation::Identity:
            if (dy != dz) std::copy(dy, dy + n, dz);
            return;
        case Activation::Relu:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = y[i] > 0.f ? dy[i] : 0.f;
            return;
        case Activation::LeakyRelu:
            // y > 0 exactly where x > 0 (for alpha > 0), so the output decides the slope.
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = y[i] > 0.f ? dy[i] : a * dy[i];
            return;
        case Activation::Tanh:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = dy[i] * (1.f - y[i] * y[i]);
            return;
        case Activation::Sigmoid:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = dy[i] * y[i] * (1.f - y[i]);
            return;
        case Activation::Elu:
            // x <= 0: d/dx alpha(e^x - 1) = alpha·e^x = y + alpha.
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = y[i] > 0.f ? dy[i] : dy[i] * (y[i] + a);
            return;
        case Activation::Selu:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = y[i] > 0.f ? kSeluLambda * dy[i] : dy[i] * (y[i] + kSeluLambda * kSeluAlpha);
            return;
        case Activation::Relu6:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = y[i] > 0.f && y[i] < 6.f ? dy[i] : 0.f;
            return;
        case Activation::HardSigmoid:
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = y[i] > 0.f && y[i] < 1.f ? a * dy[i] : 0.f;
            return;
        case Activation::Softplus:
            // d/dx softplus = sigmoid(x) = 1 - e^-y.
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = -dy[i] * std::expm1(-y[i]);
            return;
        case Activation::Softsign:
            // 1 / (1 + |x|)^2 = (1 - |y|)^2.
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = dy[i] * (1.f - std::fabs(y[i])) * (1.f - std::fabs(y[i]));
            return;
        case Activation::ThresholdedRelu:
            // θ >= 0: y > 0 exactly where x > θ, where the slope is 1.
#pragma omp parallel for simd if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) dz[i] = y[i] > 0.f ? dy[i] : 0.f;
            return;
        case Activation::Softmax:
            // dz = y * (dy - <dy, y>) per row: the softmax Jacobian applied to dy.
#pragma omp parallel for if (n > kParallelThreshold)
            for (int r = 0; r < rows; ++r) {
                const long o = static_cast<long>(r) * cols;
                float dot = 0.f;
                for (int c = 0; c < cols; ++c) dot += dy[o + c] * y[o + c];
                for (int c = 0; c < cols; ++c) dz[o + c] = y[o + c] * (dy[o + c] - dot);
            }
            return;
    }
}

void column_sums(const float* m, float* out, int rows, int cols) {
    std::fill(out, out + cols, 0.f);
    for (int r = 0; r < rows; ++r) {
        const float* row = m + static_cast<long>(r) * cols;
#pragma omp simd
        for (int c = 0; c < cols; ++c) out[c] += row[c];
    }
}

void channel_sums(const float* m, float* out, int n, int c, int hw) {
#pragma omp parallel for if (static_cast<long>(n) * c * hw > kParallelThreshold)
    for (int ch = 0; ch < c; ++ch) {
        double sum = 0.0;
        for (int i = 0; i < n; ++i) {
            const float* p = m + (static_cast<long>(i) * c + ch) * hw;
            float s = 0.f;
#pragma omp simd reduction(+ : s)
            for (int k = 0; k < hw; ++k) s += p[k];
            sum += s;
        }
        out[ch] = static_cast<float>(sum);
    }
}

}  // namespace thresher::backend::cpu
