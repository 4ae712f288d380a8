// Shared pieces of the .cu files: launch sizes for grid-stride loops and warp/block sums.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

namespace thresher::backend::cuda {

constexpr int kThreads = 256;  // threads per block for element-wise kernels
constexpr unsigned kFullMask = 0xffffffffu;

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, capped so the grid
// stays well inside its limits whatever n is (each thread then takes several elements).
inline unsigned blocks_for(std::size_t n) {
    const std::size_t blocks = (n + kThreads - 1) / kThreads;
    return static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(blocks, 1), 1u << 16));
}

// The element indices of a grid-stride loop.
#define THRESHER_GRID_STRIDE(i, n)                                                          \
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;   \
         i < (n); i += static_cast<std::size_t>(gridDim.x) * blockDim.x)

template <class T>
__device__ T warp_sum(T v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

__device__ inline float warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
    return v;
}

// Sum of v over the whole block, returned to every thread. blockDim.x must be a multiple of 32
// (at most 1024), and every thread of the block must call it. The closing barrier lets a kernel
// call it again straight away.
template <class T>
__device__ T block_sum(T v) {
    __shared__ T partial[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int warps = blockDim.x / 32;
    v = warp_sum(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        T total = lane < warps ? partial[lane] : T(0);
        total = warp_sum(total);
        if (lane == 0) partial[0] = total;
    }
    __syncthreads();
    const T total = partial[0];
    __syncthreads();
    return total;
}

}  // namespace thresher::backend::cuda
