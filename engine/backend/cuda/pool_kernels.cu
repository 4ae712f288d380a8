// Max and average pooling with the CPU backend's (oneDNN's) semantics, including asymmetric
// padding (DL4J's Same mode puts the odd pixel at the end), which cuDNN's pooling descriptor cannot
// express. Windows are clipped to the input: padding never wins a maximum and never counts in an
// average's divisor. The maximum is the first largest value in row-major window order.
// Backward passes gather: each input element sums the outputs whose window holds it, so no two
// threads write the same element and the result does not depend on scheduling.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/kernels.h"

namespace thresher::backend::cuda::kernels {

namespace {

// Window of output (oh, ow), clipped to the input.
struct Window {
    int h0, h1, w0, w1;  // [h0, h1) x [w0, w1)
};

__device__ Window window(const PoolDesc& d, int oh, int ow) {
    const int hs = oh * d.sh - d.pad_t, ws = ow * d.sw - d.pad_l;
    return {max(hs, 0), min(hs + d.kh, d.in_h), max(ws, 0), min(ws + d.kw, d.in_w)};
}

// The outputs whose windows contain input row (or column) i: o*s - pad <= i < o*s - pad + k.
__device__ void covering(int i, int pad, int k, int s, int out, int& lo, int& hi) {
    const int first = i + pad - k + 1;  // o*s >= first
    lo = first <= 0 ? 0 : (first + s - 1) / s;
    hi = min((i + pad) / s, out - 1);  // inclusive; i + pad >= 0 always
}

__global__ void max_forward_kernel(PoolDesc d, const float* x, float* y, int* argmax) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.out_h * d.out_w;
    THRESHER_GRID_STRIDE(o, n) {
        const int ow = static_cast<int>(o % d.out_w);
        const int oh = static_cast<int>((o / d.out_w) % d.out_h);
        const std::size_t plane = o / (static_cast<std::size_t>(d.out_w) * d.out_h);
        const float* xp = x + plane * d.in_h * d.in_w;
        const Window win = window(d, oh, ow);
        int best_at = -1;
        float best = 0.f;
        for (int h = win.h0; h < win.h1; ++h)
            for (int w = win.w0; w < win.w1; ++w) {
                const float v = xp[h * d.in_w + w];
                if (best_at < 0 || v > best) best = v, best_at = h * d.in_w + w;
            }
        y[o] = best;
        if (argmax) argmax[o] = best_at;
    }
}

__global__ void max_backward_kernel(PoolDesc d, const int* argmax, const float* dy, float* dx) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.in_h * d.in_w;
    THRESHER_GRID_STRIDE(i, n) {
        const int iw = static_cast<int>(i % d.in_w);
        const int ih = static_cast<int>((i / d.in_w) % d.in_h);
        const std::size_t plane = i / (static_cast<std::size_t>(d.in_w) * d.in_h);
        int oh0, oh1, ow0, ow1;
        covering(ih, d.pad_t, d.kh, d.sh, d.out_h, oh0, oh1);
        covering(iw, d.pad_l, d.kw, d.sw, d.out_w, ow0, ow1);
        const int here = ih * d.in_w + iw;
        const std::size_t base = plane * d.out_h * d.out_w;
        float sum = 0.f;
        for (int oh = oh0; oh <= oh1; ++oh)
            for (int ow = ow0; ow <= ow1; ++ow) {
                const std::size_t o = base + static_cast<std::size_t>(oh) * d.out_w + ow;
                if (argmax[o] == here) sum += dy[o];
            }
        dx[i] = sum;
    }
}

__global__ void avg_forward_kernel(PoolDesc d, const float* x, float* y) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.out_h * d.out_w;
    THRESHER_GRID_STRIDE(o, n) {
        const int ow = static_cast<int>(o % d.out_w);
        const int oh = static_cast<int>((o / d.out_w) % d.out_h);
        const std::size_t plane = o / (static_cast<std::size_t>(d.out_w) * d.out_h);
        const float* xp = x + plane * d.in_h * d.in_w;
        const Window win = window(d, oh, ow);
        const int count = (win.h1 - win.h0) * (win.w1 - win.w0);
        float sum = 0.f;
        for (int h = win.h0; h < win.h1; ++h)
            for (int w = win.w0; w < win.w1; ++w) sum += xp[h * d.in_w + w];
        y[o] = count > 0 ? sum / static_cast<float>(count) : 0.f;
    }
}

__global__ void avg_backward_kernel(PoolDesc d, const float* dy, float* dx) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.in_h * d.in_w;
    THRESHER_GRID_STRIDE(i, n) {
        const int iw = static_cast<int>(i % d.in_w);
        const int ih = static_cast<int>((i / d.in_w) % d.in_h);
        const std::size_t plane = i / (static_cast<std::size_t>(d.in_w) * d.in_h);
        int oh0, oh1, ow0, ow1;
        covering(ih, d.pad_t, d.kh, d.sh, d.out_h, oh0, oh1);
        covering(iw, d.pad_l, d.kw, d.sw, d.out_w, ow0, ow1);
        const std::size_t base = plane * d.out_h * d.out_w;
        float sum = 0.f;
        for (int oh = oh0; oh <= oh1; ++oh)
            for (int ow = ow0; ow <= ow1; ++ow) {
                const Window win = window(d, oh, ow);
                const int count = (win.h1 - win.h0) * (win.w1 - win.w0);  // >= 1: holds (ih, iw)
                sum += dy[base + static_cast<std::size_t>(oh) * d.out_w + ow] / static_cast<float>(count);
            }
        dx[i] = sum;
    }
}

}  // namespace

void max_pool_forward(cudaStream_t s, const PoolDesc& d, const float* x, float* y, int* argmax) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.out_h * d.out_w;
    if (n == 0) return;
    max_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(d, x, y, argmax);
    THRESHER_CUDA_LAUNCHED(max_forward_kernel);
}

void max_pool_backward(cudaStream_t s, const PoolDesc& d, const int* argmax, const float* dy, float* dx) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.in_h * d.in_w;
    if (n == 0) return;
    max_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(d, argmax, dy, dx);
    THRESHER_CUDA_LAUNCHED(max_backward_kernel);
}

void avg_pool_forward(cudaStream_t s, const PoolDesc& d, const float* x, float* y) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.out_h * d.out_w;
    if (n == 0) return;
    avg_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(d, x, y);
    THRESHER_CUDA_LAUNCHED(avg_forward_kernel);
}

void avg_pool_backward(cudaStream_t s, const PoolDesc& d, const float* dy, float* dx) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.in_h * d.in_w;
    if (n == 0) return;
    avg_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(d, dy, dx);
    THRESHER_CUDA_LAUNCHED(avg_backward_kernel);
}

}  // namespace thresher::backend::cuda::kernels
