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

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }
constexpr float kSqrtHalf = 0.70710678118654752f;      // 1/√2
constexpr float kInvSqrt2Pi = 0.39894228040143268f;    // 1/√(2π)
constexpr float kSqrt2OverPi = 0.79788456080286536f;   // √(2/π)
constexpr float kGeluCubic = 0.044715f;
constexpr float kGeluSigmoidScale = 1.702f;

float gelu_tanh_inner(float x) { return kSqrt2OverPi * (x + kGeluCubic * x * x * x); }
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
        case Activation::ThresholdedRelu:
        // Not fused either: their derivative needs the pre-activation, which the layer keeps.
        case Activation::Swish:
        case Activation::Gelu:
        case Activation::GeluTanh:
        case Activation::GeluSigmoid: return false;
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
        case Activation::Swish:
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = x[i] * sigmoid(x[i]);
            return;
        case Activation::Gelu:
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + std::erf(x[i] * kSqrtHalf));
            return;
        case Activation::GeluTanh:
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + std::tanh(gelu_tanh_inner(x[i])));
            return;
        case Activation::GeluSigmoid:
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) y[i] = x[i] * sigmoid(kGeluSigmoidScale * x[i]);
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

void softmax_channels(const float* x, float* y, int batch, int channels, int pixels) {
    // The channels of one pixel lie `pixels` apart. Shifted by their maximum so exp() cannot
    // overflow; y may be x (each value is read before it is written).
    const long planes = pixels;
    const long total = static_cast<long>(batch) * pixels;
#pragma omp parallel for if (total * channels > kParallelThreshold)
    for (long q = 0; q < total; ++q) {
        const long n = q / planes, p = q % planes;
        const float* xp = x + n * channels * planes + p;
        float* yp = y + n * channels * planes + p;
        float m = xp[0];
        for (int c = 1; c < channels; ++c) m = std::max(m, xp[c * planes]);
        float sum = 0.f;
        for (int c = 0; c < channels; ++c) sum += (yp[c * planes] = std::exp(xp[c * planes] - m));
        const float inv = 1.f / sum;
        for (int c = 0; c < channels; ++c) yp[c * planes] *= inv;
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
        // From the pre-activation: `y` holds x here (derivative_from_input).
        case Activation::Swish:
            // d/dx x·s(x) = s(x)·(1 + x·(1 - s(x))).
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) {
                const float s = sigmoid(y[i]);
                dz[i] = dy[i] * s * (1.f + y[i] * (1.f - s));
            }
            return;
        case Activation::Gelu:
            // Φ(x) + x·φ(x).
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) {
                const float x = y[i];
                dz[i] = dy[i] * (0.5f * (1.f + std::erf(x * kSqrtHalf)) + x * kInvSqrt2Pi * std::exp(-0.5f * x * x));
            }
            return;
        case Activation::GeluTanh:
            // 1/2(1 + t) + x/2·(1 - t²)·√(2/π)(1 + 3·0.044715x²), t = tanh(inner).
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) {
                const float x = y[i];
                const float t = std::tanh(gelu_tanh_inner(x));
                dz[i] = dy[i] * (0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * kSqrt2OverPi * (1.f + 3.f * kGeluCubic * x * x));
            }
            return;
        case Activation::GeluSigmoid:
            // s(kx) + kx·s(kx)(1 - s(kx)).
#pragma omp parallel for if (n > kParallelThreshold)
            for (long i = 0; i < n; ++i) {
                const float s = sigmoid(kGeluSigmoidScale * y[i]);
                dz[i] = dy[i] * s * (1.f + kGeluSigmoidScale * y[i] * (1.f - s));
            }
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

namespace {
// The alpha index of element (c, y, x) of one image.
struct PReluIndex {
    int ah, aw;          // alpha's extents along h and w
    bool sc, sh, sw;
    long at(int c, int y, int x) const {
        return (static_cast<long>(sc ? 0 : c) * ah + (sh ? 0 : y)) * aw + (sw ? 0 : x);
    }
};
PReluIndex prelu_index(const PReluDesc& d) {
    return {d.shared_h ? 1 : d.h, d.shared_w ? 1 : d.w, d.shared_c, d.shared_h, d.shared_w};
}
}  // namespace

void prelu_forward(const PReluDesc& d, const float* x, const float* alpha, float* y) {
    const auto ix = prelu_index(d);
    const long image = static_cast<long>(d.c) * d.h * d.w;
#pragma omp parallel for if (image * d.batch > kParallelThreshold)
    for (int n = 0; n < d.batch; ++n)
        for (int c = 0; c < d.c; ++c)
            for (int yy = 0; yy < d.h; ++yy)
                for (int xx = 0; xx < d.w; ++xx) {
                    const long i = n * image + (static_cast<long>(c) * d.h + yy) * d.w + xx;
                    y[i] = x[i] > 0.f ? x[i] : alpha[ix.at(c, yy, xx)] * x[i];
                }
}

// Serial over the batch so the alpha sums add in one fixed order (reproducible across --threads).
void prelu_backward(const PReluDesc& d, const float* x, const float* alpha, const float* dy, float* dx,
                    float* dalpha) {
    const auto ix = prelu_index(d);
    const long image = static_cast<long>(d.c) * d.h * d.w;
    const long alphas = static_cast<long>(d.shared_c ? 1 : d.c) * ix.ah * ix.aw;
    std::fill(dalpha, dalpha + alphas, 0.f);
    for (int n = 0; n < d.batch; ++n)
        for (int c = 0; c < d.c; ++c)
            for (int yy = 0; yy < d.h; ++yy)
                for (int xx = 0; xx < d.w; ++xx) {
                    const long i = n * image + (static_cast<long>(c) * d.h + yy) * d.w + xx;
                    const long a = ix.at(c, yy, xx);
                    if (x[i] > 0.f) {
                        if (dx) dx[i] = dy[i];
                    } else {
                        dalpha[a] += dy[i] * x[i];
                        if (dx) dx[i] = alpha[a] * dy[i];
                    }
                }
}

void dropout_mask(float* mask, std::size_t n, float retain, std::uint64_t seed, std::size_t group) {
    // Counter-based: element i's draw depends only on (seed, i / group), whatever the thread split.
    const float scale = 1.f / retain;
    const std::uint64_t key = derive_seed(seed, 0x44524f50 /* "DROP" */);
    const std::size_t g = std::max<std::size_t>(group, 1);
#pragma omp parallel for if (n > (1u << 15))
    for (std::size_t i = 0; i < n; ++i) {
        const double u = static_cast<double>(derive_seed(key, i / g) >> 11) * 0x1.0p-53;
        mask[i] = u < retain ? scale : 0.f;
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
