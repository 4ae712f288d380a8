// Element-wise kernels of the CUDA backend: activations (from the output, as on the CPU), row-wise
// softmax, bias sums, dropout, and the small vector operations the Network and its layers use.
// Each mirrors engine/backend/cpu/elementwise.cpp or cpu_backend.cpp expression for expression.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/kernels.h"

namespace thresher::backend::cuda::kernels {

namespace {

__device__ float activate(Activation kind, float alpha, float x) {
    switch (kind) {
        case Activation::Relu: return x > 0.f ? x : 0.f;
        case Activation::LeakyRelu: return x > 0.f ? x : alpha * x;
        case Activation::Tanh: return tanhf(x);
        case Activation::Sigmoid: return 1.f / (1.f + expf(-x));
        case Activation::Elu: return x > 0.f ? x : alpha * expm1f(x);
        case Activation::Selu: return kSeluLambda * (x > 0.f ? x : kSeluAlpha * expm1f(x));
        case Activation::Relu6: return fminf(fmaxf(x, 0.f), 6.f);
        case Activation::HardSigmoid: return fminf(fmaxf(alpha * x + 0.5f, 0.f), 1.f);
        case Activation::Softplus: return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x));
        case Activation::Softsign: return x / (1.f + fabsf(x));
        case Activation::ThresholdedRelu: return x > alpha ? x : 0.f;
        case Activation::Swish: return x * (1.f / (1.f + expf(-x)));
        case Activation::Gelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
        case Activation::GeluTanh:
            return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
        case Activation::GeluSigmoid: return x * (1.f / (1.f + expf(-1.702f * x)));
        case Activation::Identity:
        case Activation::Softmax: return x;
    }
    return x;
}

// dL/dx from the output y and dL/dy; for Swish .. GeluSigmoid (derivative_from_input) `y` is the
// pre-activation x, as on the CPU.
__device__ float derivative(Activation kind, float alpha, float y, float dy) {
    switch (kind) {
        case Activation::Relu: return y > 0.f ? dy : 0.f;
        // y > 0 exactly where x > 0 (for alpha > 0), so the output decides the slope.
        case Activation::LeakyRelu: return y > 0.f ? dy : alpha * dy;
        case Activation::Tanh: return dy * (1.f - y * y);
        case Activation::Sigmoid: return dy * y * (1.f - y);
        case Activation::Elu: return y > 0.f ? dy : dy * (y + alpha);
        case Activation::Selu: return y > 0.f ? kSeluLambda * dy : dy * (y + kSeluLambda * kSeluAlpha);
        case Activation::Relu6: return y > 0.f && y < 6.f ? dy : 0.f;
        case Activation::HardSigmoid: return y > 0.f && y < 1.f ? alpha * dy : 0.f;
        case Activation::Softplus: return -dy * expm1f(-y);
        case Activation::Softsign: return dy * (1.f - fabsf(y)) * (1.f - fabsf(y));
        case Activation::ThresholdedRelu: return y > 0.f ? dy : 0.f;
        case Activation::Swish: {
            const float s = 1.f / (1.f + expf(-y));
            return dy * s * (1.f + y * (1.f - s));
        }
        case Activation::Gelu:
            return dy * (0.5f * (1.f + erff(y * 0.70710678118654752f)) + y * 0.39894228040143268f * expf(-0.5f * y * y));
        case Activation::GeluTanh: {
            const float t = tanhf(0.79788456080286536f * (y + 0.044715f * y * y * y));
            return dy * (0.5f * (1.f + t) + 0.5f * y * (1.f - t * t) * 0.79788456080286536f * (1.f + 3.f * 0.044715f * y * y));
        }
        case Activation::GeluSigmoid: {
            const float s = 1.f / (1.f + expf(-1.702f * y));
            return dy * s * (1.f + 1.702f * y * (1.f - s));
        }
        case Activation::Identity:
        case Activation::Softmax: return dy;
    }
    return dy;
}

__global__ void fill_kernel(float* p, float value, std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) p[i] = value;
}

__global__ void activation_forward_kernel(Activation kind, float alpha, const float* x, float* y,
                                          std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) y[i] = activate(kind, alpha, x[i]);
}

__global__ void activation_backward_kernel(Activation kind, float alpha, const float* y,
                                           const float* dy, float* dz, std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) dz[i] = derivative(kind, alpha, y[i], dy[i]);
}

// One warp per row. `row` is the same for all lanes of a warp, so a warp past the last row leaves
// as a whole and the shuffles below always see 32 live lanes. Each lane reads and writes only its
// own columns, which makes x == y (in place) safe.
constexpr int kRowsPerBlock = kThreads / 32;

__global__ void softmax_forward_kernel(const float* x, float* y, int rows, int cols) {
    const long row = static_cast<long>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    m = warp_max(m);
    float sum = 0.f;
    for (int c = lane; c < cols; c += 32) {
        const float e = expf(xr[c] - m);
        yr[c] = e;
        sum += e;
    }
    sum = warp_sum(sum);
    const float inv = 1.f / sum;
    for (int c = lane; c < cols; c += 32) yr[c] *= inv;
}

// dz = y * (dy - <dy, y>) per row: the softmax Jacobian applied to dy.
__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dz, int rows,
                                        int cols) {
    const long row = static_cast<long>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const long o = row * cols;
    float dot = 0.f;
    for (int c = lane; c < cols; c += 32) dot += dy[o + c] * y[o + c];
    dot = warp_sum(dot);
    for (int c = lane; c < cols; c += 32) dz[o + c] = y[o + c] * (dy[o + c] - dot);
}

// One thread per pixel of a sample, walking its channels `pixels` apart: the CPU loop's order.
__global__ void softmax_channels_kernel(const float* x, float* y, int batch, int channels, int pixels) {
    const long total = static_cast<long>(batch) * pixels;
    for (long q = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; q < total;
         q += static_cast<long>(gridDim.x) * blockDim.x) {
        const long n = q / pixels, p = q % pixels;
        const float* xp = x + n * channels * pixels + p;
        float* yp = y + n * channels * pixels + p;
        float m = xp[0];
        for (int c = 1; c < channels; ++c) m = fmaxf(m, xp[static_cast<long>(c) * pixels]);
        float sum = 0.f;
        for (int c = 0; c < channels; ++c) {
            const float e = expf(xp[static_cast<long>(c) * pixels] - m);
            yp[static_cast<long>(c) * pixels] = e;
            sum += e;
        }
        const float inv = 1.f / sum;
        for (int c = 0; c < channels; ++c) yp[static_cast<long>(c) * pixels] *= inv;
    }
}

__global__ void bias_activation_kernel(float* y, const float* bias, std::size_t n, int channels,
                                       std::size_t inner, Activation kind, float alpha) {
    THRESHER_GRID_STRIDE(i, n) {
        const std::size_t c = (i / inner) % static_cast<std::size_t>(channels);
        y[i] = activate(kind, alpha, y[i] + bias[c]);
    }
}

// One thread per column, adding the rows in order (as the CPU loop does).
__global__ void column_sums_kernel(const float* m, float* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.f;
    for (int r = 0; r < rows; ++r) s += m[static_cast<long>(r) * cols + c];
    out[c] = s;
}

// One block per channel; double partial sums, like the CPU's per-channel double accumulator.
__global__ void channel_sums_kernel(const float* m, float* out, int n, int c, std::size_t hw) {
    const int ch = blockIdx.x;
    const std::size_t count = static_cast<std::size_t>(n) * hw;
    double s = 0.0;
    for (std::size_t j = threadIdx.x; j < count; j += blockDim.x) {
        const std::size_t img = j / hw, k = j % hw;
        s += m[(img * c + ch) * hw + k];
    }
    s = block_sum(s);
    if (threadIdx.x == 0) out[ch] = static_cast<float>(s);
}

__device__ std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Element i draws thresher::derive_seed(key, i) = splitmix(splitmix(splitmix(key) ^ i) ^ 0)
// (engine/core/rng.cpp); u is its top 53 bits as a double in [0, 1), compared in double as on the
// CPU, so both backends draw the same mask bit for bit.
__global__ void dropout_kernel(const float* x, float* y, float* mask, std::size_t n, float retain,
                               float scale, std::uint64_t key, std::size_t group) {
    const std::uint64_t mixed = splitmix(key);
    THRESHER_GRID_STRIDE(i, n) {
        const std::uint64_t h = splitmix(splitmix(mixed ^ static_cast<std::uint64_t>(i / group)) ^ 0u);
        const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
        const float m = u < static_cast<double>(retain) ? scale : 0.f;
        mask[i] = m;
        y[i] = x[i] * m;
    }
}

__global__ void multiply_kernel(const float* a, const float* b, float* out, std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) out[i] = a[i] * b[i];
}

__global__ void axpy_kernel(float alpha, const float* x, float* y, std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) y[i] += alpha * x[i];
}

__global__ void maximum_kernel(const float* a, const float* b, float* y, std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) y[i] = a[i] < b[i] ? b[i] : a[i];
}

__global__ void max_route_kernel(const float* x, const float* y, const float* dy, float* dx, std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) dx[i] = x[i] == y[i] ? dy[i] : 0.f;
}

// PReLU (PReluDesc), as engine/backend/cpu/elementwise.cpp: alpha index of (c, h, w) with the
// shared axes collapsed.
__device__ long prelu_alpha_index(const PReluDesc& d, int c, int yy, int xx) {
    const int ah = d.shared_h ? 1 : d.h, aw = d.shared_w ? 1 : d.w;
    return (static_cast<long>(d.shared_c ? 0 : c) * ah + (d.shared_h ? 0 : yy)) * aw + (d.shared_w ? 0 : xx);
}

__global__ void prelu_forward_kernel(PReluDesc d, const float* x, const float* alpha, float* y) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.h * d.w;
    THRESHER_GRID_STRIDE(i, n) {
        const int xx = static_cast<int>(i % d.w), yy = static_cast<int>(i / d.w % d.h),
                  c = static_cast<int>(i / (static_cast<std::size_t>(d.w) * d.h) % d.c);
        y[i] = x[i] > 0.f ? x[i] : alpha[prelu_alpha_index(d, c, yy, xx)] * x[i];
    }
}

__global__ void prelu_dx_kernel(PReluDesc d, const float* x, const float* alpha, const float* dy, float* dx) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.h * d.w;
    THRESHER_GRID_STRIDE(i, n) {
        const int xx = static_cast<int>(i % d.w), yy = static_cast<int>(i / d.w % d.h),
                  c = static_cast<int>(i / (static_cast<std::size_t>(d.w) * d.h) % d.c);
        dx[i] = x[i] > 0.f ? dy[i] : alpha[prelu_alpha_index(d, c, yy, xx)] * dy[i];
    }
}

// One thread per alpha, adding its positions in the CPU loop's order (n, c, h, w), so the sums
// are the CPU's bit for bit.
__global__ void prelu_dalpha_kernel(PReluDesc d, const float* x, const float* dy, float* dalpha) {
    const int ac = d.shared_c ? 1 : d.c, ah = d.shared_h ? 1 : d.h, aw = d.shared_w ? 1 : d.w;
    const std::size_t alphas = static_cast<std::size_t>(ac) * ah * aw;
    THRESHER_GRID_STRIDE(a, alphas) {
        const int a_x = static_cast<int>(a % aw), a_y = static_cast<int>(a / aw % ah),
                  a_c = static_cast<int>(a / (static_cast<std::size_t>(aw) * ah));
        float sum = 0.f;
        const std::size_t image = static_cast<std::size_t>(d.c) * d.h * d.w;
        for (int n = 0; n < d.batch; ++n)
            for (int c = d.shared_c ? 0 : a_c; c < (d.shared_c ? d.c : a_c + 1); ++c)
                for (int yy = d.shared_h ? 0 : a_y; yy < (d.shared_h ? d.h : a_y + 1); ++yy)
                    for (int xx = d.shared_w ? 0 : a_x; xx < (d.shared_w ? d.w : a_x + 1); ++xx) {
                        const std::size_t i = n * image + (static_cast<std::size_t>(c) * d.h + yy) * d.w + xx;
                        if (!(x[i] > 0.f)) sum += dy[i] * x[i];
                    }
        dalpha[a] = sum;
    }
}

__global__ void blend_kernel(float* running, const float* batch, float momentum, std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) running[i] = momentum * running[i] + (1.f - momentum) * batch[i];
}

__global__ void pad_kernel(const float* x, float* padded, std::size_t planes, int h, int w,
                           int pad_t, int pad_l, int hp, int wp) {
    const std::size_t n = planes * hp * wp;
    THRESHER_GRID_STRIDE(i, n) {
        const int col = static_cast<int>(i % wp);
        const int row = static_cast<int>((i / wp) % hp);
        const std::size_t plane = i / (static_cast<std::size_t>(wp) * hp);
        const int r = row - pad_t, q = col - pad_l;
        padded[i] = (r >= 0 && r < h && q >= 0 && q < w)
                        ? x[(plane * h + r) * w + q]
                        : 0.f;
    }
}

__global__ void crop_kernel(const float* padded, float* x, std::size_t planes, int h, int w,
                            int pad_t, int pad_l, int hp, int wp) {
    const std::size_t n = planes * h * w;
    THRESHER_GRID_STRIDE(i, n) {
        const int q = static_cast<int>(i % w);
        const int r = static_cast<int>((i / w) % h);
        const std::size_t plane = i / (static_cast<std::size_t>(w) * h);
        x[i] = padded[(plane * hp + r + pad_t) * wp + q + pad_l];
    }
}

}  // namespace

void fill(cudaStream_t s, float* p, float value, std::size_t n) {
    if (n == 0) return;
    fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, value, n);
    THRESHER_CUDA_LAUNCHED(fill_kernel);
}

void activation_forward(cudaStream_t s, ActivationSpec a, const float* x, float* y, std::size_t n) {
    if (n == 0) return;
    activation_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(a.kind, a.alpha, x, y, n);
    THRESHER_CUDA_LAUNCHED(activation_forward_kernel);
}

void activation_backward(cudaStream_t s, ActivationSpec a, const float* y, const float* dy, float* dz,
                         std::size_t n) {
    if (n == 0) return;
    activation_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(a.kind, a.alpha, y, dy, dz, n);
    THRESHER_CUDA_LAUNCHED(activation_backward_kernel);
}

void softmax_forward(cudaStream_t s, const float* x, float* y, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    softmax_forward_kernel<<<blocks, kThreads, 0, s>>>(x, y, rows, cols);
    THRESHER_CUDA_LAUNCHED(softmax_forward_kernel);
}

void softmax_channels(cudaStream_t s, const float* x, float* y, int batch, int channels, int pixels) {
    const std::size_t total = static_cast<std::size_t>(batch) * static_cast<std::size_t>(pixels);
    if (total == 0 || channels <= 0) return;
    softmax_channels_kernel<<<blocks_for(total), kThreads, 0, s>>>(x, y, batch, channels, pixels);
    THRESHER_CUDA_LAUNCHED(softmax_channels_kernel);
}

void softmax_backward(cudaStream_t s, const float* y, const float* dy, float* dz, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    softmax_backward_kernel<<<blocks, kThreads, 0, s>>>(y, dy, dz, rows, cols);
    THRESHER_CUDA_LAUNCHED(softmax_backward_kernel);
}

void bias_activation(cudaStream_t s, float* y, const float* bias, std::size_t n, int channels,
                     std::size_t inner, ActivationSpec a) {
    if (n == 0) return;
    bias_activation_kernel<<<blocks_for(n), kThreads, 0, s>>>(y, bias, n, channels, inner, a.kind,
                                                              a.alpha);
    THRESHER_CUDA_LAUNCHED(bias_activation_kernel);
}

void column_sums(cudaStream_t s, const float* m, float* out, int rows, int cols) {
    if (cols <= 0) return;
    column_sums_kernel<<<static_cast<unsigned>((cols + kThreads - 1) / kThreads), kThreads, 0, s>>>(
        m, out, rows, cols);
    THRESHER_CUDA_LAUNCHED(column_sums_kernel);
}

void channel_sums(cudaStream_t s, const float* m, float* out, int n, int c, std::size_t hw) {
    if (c <= 0) return;
    channel_sums_kernel<<<static_cast<unsigned>(c), kThreads, 0, s>>>(m, out, n, c, hw);
    THRESHER_CUDA_LAUNCHED(channel_sums_kernel);
}

void dropout(cudaStream_t s, const float* x, float* y, float* mask, std::size_t n, float retain,
             float scale, std::uint64_t key, std::size_t group) {
    if (n == 0) return;
    dropout_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, mask, n, retain, scale, key, group);
    THRESHER_CUDA_LAUNCHED(dropout_kernel);
}

void multiply(cudaStream_t s, const float* a, const float* b, float* out, std::size_t n) {
    if (n == 0) return;
    multiply_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, b, out, n);
    THRESHER_CUDA_LAUNCHED(multiply_kernel);
}

void axpy(cudaStream_t s, float alpha, const float* x, float* y, std::size_t n) {
    if (n == 0) return;
    axpy_kernel<<<blocks_for(n), kThreads, 0, s>>>(alpha, x, y, n);
    THRESHER_CUDA_LAUNCHED(axpy_kernel);
}

void maximum(cudaStream_t s, const float* a, const float* b, float* y, std::size_t n) {
    if (n == 0) return;
    maximum_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, b, y, n);
    THRESHER_CUDA_LAUNCHED(maximum_kernel);
}

void max_route(cudaStream_t s, const float* x, const float* y, const float* dy, float* dx, std::size_t n) {
    if (n == 0) return;
    max_route_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, dy, dx, n);
    THRESHER_CUDA_LAUNCHED(max_route_kernel);
}

void prelu_forward(cudaStream_t s, const PReluDesc& d, const float* x, const float* alpha, float* y) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.h * d.w;
    if (n == 0) return;
    prelu_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(d, x, alpha, y);
    THRESHER_CUDA_LAUNCHED(prelu_forward_kernel);
}

void prelu_backward(cudaStream_t s, const PReluDesc& d, const float* x, const float* alpha, const float* dy,
                    float* dx, float* dalpha) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.h * d.w;
    const std::size_t alphas = static_cast<std::size_t>(d.shared_c ? 1 : d.c) * (d.shared_h ? 1 : d.h) *
                               (d.shared_w ? 1 : d.w);
    if (n == 0 || alphas == 0) return;
    prelu_dalpha_kernel<<<blocks_for(alphas), kThreads, 0, s>>>(d, x, dy, dalpha);
    THRESHER_CUDA_LAUNCHED(prelu_dalpha_kernel);
    if (!dx) return;
    prelu_dx_kernel<<<blocks_for(n), kThreads, 0, s>>>(d, x, alpha, dy, dx);
    THRESHER_CUDA_LAUNCHED(prelu_dx_kernel);
}

void blend(cudaStream_t s, float* running, const float* batch, float momentum, std::size_t n) {
    if (n == 0) return;
    blend_kernel<<<blocks_for(n), kThreads, 0, s>>>(running, batch, momentum, n);
    THRESHER_CUDA_LAUNCHED(blend_kernel);
}

void pad(cudaStream_t s, const float* x, float* padded, std::size_t planes, int h, int w, int pad_t,
         int pad_l, int hp, int wp) {
    const std::size_t n = planes * hp * wp;
    if (n == 0) return;
    pad_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, padded, planes, h, w, pad_t, pad_l, hp, wp);
    THRESHER_CUDA_LAUNCHED(pad_kernel);
}

void crop(cudaStream_t s, const float* padded, float* x, std::size_t planes, int h, int w, int pad_t,
          int pad_l, int hp, int wp) {
    const std::size_t n = planes * h * w;
    if (n == 0) return;
    crop_kernel<<<blocks_for(n), kThreads, 0, s>>>(padded, x, planes, h, w, pad_t, pad_l, hp, wp);
    THRESHER_CUDA_LAUNCHED(crop_kernel);
}

}  // namespace thresher::backend::cuda::kernels
