// The recurrent layer's own kernels around cuDNN's RNN calls (rnn_op.cpp): joining the two
// directions (Sum, Mul, Average: cuDNN's bidirectional output is the Concat of the two) with
// the backward of each join, and zeroing padded steps. The expressions are the CPU backend's
// (cpu/rnn_op.cpp merge_forward, split_gradient), rounded the same way (--fmad=false).
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/kernels.h"

namespace thresher::backend::cuda::kernels {

namespace {

__global__ void rnn_merge_forward_kernel(RnnMerge merge, const float* a, const float* b, std::size_t ab_pitch, float* out,
                                         std::size_t out_pitch, std::size_t rows, int h) {
    THRESHER_GRID_STRIDE(i, rows * h) {
        const std::size_t r = i / h, j = i % h;
        const float x = a[r * ab_pitch + j], y = b[r * ab_pitch + j];
        float v = x + y;                                  // Sum
        if (merge == RnnMerge::Mul) v = x * y;
        else if (merge == RnnMerge::Average) v = 0.5f * (x + y);
        out[r * out_pitch + j] = v;
    }
}

__global__ void rnn_merge_backward_kernel(RnnMerge merge, const float* dy, std::size_t dy_pitch, const float* a,
                                          const float* b, std::size_t ab_pitch, float* da, float* db,
                                          std::size_t d_pitch, std::size_t rows, int h) {
    THRESHER_GRID_STRIDE(i, rows * h) {
        const std::size_t r = i / h, j = i % h;
        const float g = dy[r * dy_pitch + j];
        float ga = g, gb = g;                             // Sum
        if (merge == RnnMerge::Average) ga = gb = 0.5f * g;
        else if (merge == RnnMerge::Mul) ga = g * b[r * ab_pitch + j], gb = g * a[r * ab_pitch + j];
        da[r * d_pitch + j] = ga;
        db[r * d_pitch + j] = gb;
    }
}

__global__ void rnn_zero_padding_kernel(const int* lengths, float* p, int steps, int width, std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) {
        const std::size_t row = i / width;  // sample * steps + step
        const int t = static_cast<int>(row % steps);
        if (t >= lengths[row / steps]) p[i] = 0.f;
    }
}

}  // namespace

void rnn_merge_forward(cudaStream_t s, RnnMerge merge, const float* a, const float* b, std::size_t ab_pitch, float* out,
                       std::size_t out_pitch, std::size_t rows, int h) {
    const std::size_t n = rows * static_cast<std::size_t>(h);
    if (n == 0) return;
    rnn_merge_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(merge, a, b, ab_pitch, out, out_pitch, rows, h);
    THRESHER_CUDA_LAUNCHED(rnn_merge_forward_kernel);
}

void rnn_merge_backward(cudaStream_t s, RnnMerge merge, const float* dy, std::size_t dy_pitch, const float* a, const float* b,
                        std::size_t ab_pitch, float* da, float* db, std::size_t d_pitch, std::size_t rows, int h) {
    const std::size_t n = rows * static_cast<std::size_t>(h);
    if (n == 0) return;
    rnn_merge_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(merge, dy, dy_pitch, a, b, ab_pitch, da, db, d_pitch,
                                                                  rows, h);
    THRESHER_CUDA_LAUNCHED(rnn_merge_backward_kernel);
}

void rnn_zero_padding(cudaStream_t s, const int* lengths, float* p, int batch, int steps, int width) {
    const std::size_t n = static_cast<std::size_t>(batch) * steps * width;
    if (n == 0) return;
    rnn_zero_padding_kernel<<<blocks_for(n), kThreads, 0, s>>>(lengths, p, steps, width, n);
    THRESHER_CUDA_LAUNCHED(rnn_zero_padding_kernel);
}

}  // namespace thresher::backend::cuda::kernels
