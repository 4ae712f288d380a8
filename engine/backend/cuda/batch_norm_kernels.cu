// Batch normalisation over N*H*W per channel, as the CPU backend (oneDNN with use_scale |
// use_shift) defines it:
//   training   mean = E[x], var = E[(x - mean)^2] (biased: divided by M = N*H*W),
//              y = gamma * (x - mean) / sqrt(var + eps) + beta
//   backward   xhat = (x - mean) / sqrt(var + eps), dbeta = sum dy, dgamma = sum dy * xhat,
//              dx = gamma / sqrt(var + eps) * (dy - dbeta / M - xhat * dgamma / M)
// These are our own kernels rather than cuDNN's batch-norm calls because cuDNN reports the
// unbiased running variance and the saved inverse deviation, not the biased batch variance the
// backend interface hands to the layer (and divides by M - 1, which is 0 for a single sample).
// Statistics: one block per channel, summing in double (two passes, as oneDNN does).
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/kernels.h"

namespace thresher::backend::cuda::kernels {

namespace {

constexpr int kStatThreads = 512;

// Element j (0 <= j < M) of channel ch in an NCHW tensor.
__device__ std::size_t at(const BatchNormDesc& d, int ch, std::size_t j) {
    const std::size_t hw = static_cast<std::size_t>(d.h) * d.w;
    return (j / hw * d.c + ch) * hw + j % hw;
}

__global__ void statistics_kernel(BatchNormDesc d, const float* x, float* mean_out, float* var_out) {
    const int ch = blockIdx.x;
    const std::size_t m = static_cast<std::size_t>(d.batch) * d.h * d.w;
    double s = 0.0;
    for (std::size_t j = threadIdx.x; j < m; j += blockDim.x) s += x[at(d, ch, j)];
    const double mean = block_sum(s) / static_cast<double>(m);
    double q = 0.0;
    for (std::size_t j = threadIdx.x; j < m; j += blockDim.x) {
        const double v = x[at(d, ch, j)] - mean;
        q += v * v;
    }
    const double var = block_sum(q) / static_cast<double>(m);
    if (threadIdx.x == 0) {
        mean_out[ch] = static_cast<float>(mean);
        var_out[ch] = static_cast<float>(var);
    }
}

__global__ void normalize_kernel(BatchNormDesc d, const float* x, const float* gamma,
                                 const float* beta, const float* mean, const float* var, float* y) {
    const std::size_t hw = static_cast<std::size_t>(d.h) * d.w;
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * hw;
    THRESHER_GRID_STRIDE(i, n) {
        const int ch = static_cast<int>((i / hw) % d.c);
        const float inv = 1.f / sqrtf(var[ch] + d.eps);
        y[i] = gamma[ch] * (x[i] - mean[ch]) * inv + beta[ch];
    }
}

// One block per channel: the two sums, then dx for the channel's elements.
__global__ void backward_kernel(BatchNormDesc d, const float* x, const float* dy,
                                const float* gamma, const float* mean, const float* var,
                                float* dx, float* dgamma, float* dbeta) {
    const int ch = blockIdx.x;
    const std::size_t m = static_cast<std::size_t>(d.batch) * d.h * d.w;
    const float mu = mean[ch];
    const float inv = 1.f / sqrtf(var[ch] + d.eps);
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (std::size_t j = threadIdx.x; j < m; j += blockDim.x) {
        const std::size_t k = at(d, ch, j);
        const float xhat = (x[k] - mu) * inv;
        sum_dy += dy[k];
        sum_dy_xhat += static_cast<double>(dy[k]) * xhat;
    }
    sum_dy = block_sum(sum_dy);
    sum_dy_xhat = block_sum(sum_dy_xhat);
    const float db = static_cast<float>(sum_dy), dg = static_cast<float>(sum_dy_xhat);
    if (threadIdx.x == 0) {
        dbeta[ch] = db;
        dgamma[ch] = dg;
    }
    const float scale = gamma[ch] * inv;
    const float mean_dy = db / static_cast<float>(m), mean_dy_xhat = dg / static_cast<float>(m);
    for (std::size_t j = threadIdx.x; j < m; j += blockDim.x) {
        const std::size_t k = at(d, ch, j);
        const float xhat = (x[k] - mu) * inv;
        dx[k] = scale * (dy[k] - mean_dy - xhat * mean_dy_xhat);
    }
}

}  // namespace

void batch_norm_statistics(cudaStream_t s, const BatchNormDesc& d, const float* x, float* mean,
                           float* var) {
    if (d.c <= 0 || static_cast<std::size_t>(d.batch) * d.h * d.w == 0) return;
    statistics_kernel<<<static_cast<unsigned>(d.c), kStatThreads, 0, s>>>(d, x, mean, var);
    THRESHER_CUDA_LAUNCHED(statistics_kernel);
}

void batch_norm_normalize(cudaStream_t s, const BatchNormDesc& d, const float* x, const float* gamma,
                          const float* beta, const float* mean, const float* var, float* y) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.c * d.h * d.w;
    if (n == 0) return;
    normalize_kernel<<<blocks_for(n), kThreads, 0, s>>>(d, x, gamma, beta, mean, var, y);
    THRESHER_CUDA_LAUNCHED(normalize_kernel);
}

void batch_norm_backward(cudaStream_t s, const BatchNormDesc& d, const float* x, const float* dy,
                         const float* gamma, const float* mean, const float* var, float* dx,
                         float* dgamma, float* dbeta) {
    if (d.c <= 0 || static_cast<std::size_t>(d.batch) * d.h * d.w == 0) return;
    backward_kernel<<<static_cast<unsigned>(d.c), kStatThreads, 0, s>>>(d, x, dy, gamma, mean, var,
                                                                        dx, dgamma, dbeta);
    THRESHER_CUDA_LAUNCHED(backward_kernel);
}

}  // namespace thresher::backend::cuda::kernels
