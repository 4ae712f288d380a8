// Nearest-neighbour upsampling of NCHW image planes, mirroring engine/backend/cpu/resize.cpp: one
// thread per output element forward; backward one thread per input element, summing its sh x sw
// block of dy rows first, then columns, as the CPU loop does (so the sums round the same way).
// Zero padding and cropping reuse elementwise.cu's pad and crop kernels. The gather kernels
// (reshape in channels-last order, permute) move each value once through an index map.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/kernels.h"

namespace thresher::backend::cuda::kernels {

namespace {

__global__ void upsample_forward_kernel(const float* x, float* y, std::size_t planes, int h, int w, int sh, int sw) {
    const int oh = h * sh, ow = w * sw;
    const std::size_t n = planes * oh * ow;
    THRESHER_GRID_STRIDE(i, n) {
        const int q = static_cast<int>(i % ow);
        const int r = static_cast<int>((i / ow) % oh);
        const std::size_t plane = i / (static_cast<std::size_t>(ow) * oh);
        y[i] = x[(plane * h + r / sh) * w + q / sw];
    }
}

__global__ void upsample_backward_kernel(const float* dy, float* dx, std::size_t planes, int h, int w, int sh, int sw) {
    const int ow = w * sw;
    const std::size_t n = planes * h * w;
    THRESHER_GRID_STRIDE(k, n) {
        const int q = static_cast<int>(k % w);
        const int r = static_cast<int>((k / w) % h);
        const std::size_t plane = k / (static_cast<std::size_t>(w) * h);
        const float* g = dy + plane * static_cast<std::size_t>(h) * sh * ow;
        float sum = 0.f;
        for (int i = 0; i < sh; ++i)
            for (int j = 0; j < sw; ++j) sum += g[static_cast<std::size_t>(r * sh + i) * ow + q * sw + j];
        dx[k] = sum;
    }
}

__global__ void gather_forward_kernel(const std::uint32_t* map, std::size_t width, std::size_t rows, const float* x, float* y) {
    THRESHER_GRID_STRIDE(i, width * rows) {
        const std::size_t r = i / width;
        y[i] = x[r * width + map[i % width]];
    }
}

__global__ void gather_backward_kernel(const std::uint32_t* map, std::size_t width, std::size_t rows, const float* dy, float* dx) {
    THRESHER_GRID_STRIDE(i, width * rows) {
        const std::size_t r = i / width;
        dx[r * width + map[i % width]] = dy[i];
    }
}

}  // namespace

void gather_forward(cudaStream_t s, const std::uint32_t* map, std::size_t width, std::size_t rows, const float* x, float* y) {
    const std::size_t n = width * rows;
    if (n == 0) return;
    gather_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(map, width, rows, x, y);
    THRESHER_CUDA_LAUNCHED(gather_forward_kernel);
}

void gather_backward(cudaStream_t s, const std::uint32_t* map, std::size_t width, std::size_t rows, const float* dy, float* dx) {
    const std::size_t n = width * rows;
    if (n == 0) return;
    gather_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(map, width, rows, dy, dx);
    THRESHER_CUDA_LAUNCHED(gather_backward_kernel);
}

void upsample_forward(cudaStream_t s, const UpsampleDesc& d, const float* x, float* y) {
    const std::size_t n = static_cast<std::size_t>(d.planes) * d.h * d.sh * d.w * d.sw;
    if (n == 0) return;
    upsample_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, d.planes, d.h, d.w, d.sh, d.sw);
    THRESHER_CUDA_LAUNCHED(upsample_forward_kernel);
}

void upsample_backward(cudaStream_t s, const UpsampleDesc& d, const float* dy, float* dx) {
    const std::size_t n = static_cast<std::size_t>(d.planes) * d.h * d.w;
    if (n == 0) return;
    upsample_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(dy, dx, d.planes, d.h, d.w, d.sh, d.sw);
    THRESHER_CUDA_LAUNCHED(upsample_backward_kernel);
}

}  // namespace thresher::backend::cuda::kernels
