// Kernels of the device threshold encoder (device_encoder.h tells the whole story).
// The residual update is the CPU encoder's: r - t for r >= t, r + t for r <= -t (the CPU writes
// r - (t + 0) and r - (0 + (-t)), the same values exactly), entries that do not cross are not
// written at all. NaN never crosses.
#include <cub/device/device_scan.cuh>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/encoder_kernels.h"

namespace thresher::backend::cuda::encoder_kernels {

namespace {

// Spreads the 16 low bits of x to the even bits of the result: bit j -> bit 2j.
__device__ std::uint32_t spread(std::uint32_t x) {
    x &= 0xffffu;
    x = (x | (x << 8)) & 0x00ff00ffu;
    x = (x | (x << 4)) & 0x0f0f0f0fu;
    x = (x | (x << 2)) & 0x33333333u;
    x = (x | (x << 1)) & 0x55555555u;
    return x;
}

// One thread per parameter, one warp per 32 parameters = two words. The warp index is the same
// for all its lanes, so a warp past the end leaves whole and the ballots see every lane.
__global__ void encode_kernel(float* r, std::size_t n, float t, std::uint32_t* words,
                              std::uint32_t* counts, std::size_t nwords) {
    const std::size_t warp = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    const unsigned lane = threadIdx.x % 32;
    const std::size_t first = warp * 32;
    if (first >= n) return;
    const std::size_t i = first + lane;
    const float v = i < n ? r[i] : 0.f;
    const bool plus = i < n && v >= t;
    const bool minus = i < n && v <= -t;
    if (plus) r[i] = v - t;
    if (minus) r[i] = v + t;
    const std::uint32_t p = __ballot_sync(kFullMask, plus);
    const std::uint32_t m = __ballot_sync(kFullMask, minus);
    if (lane == 0 || lane == 16) {
        const std::size_t k = warp * 2 + lane / 16;
        if (k < nwords) {
            const unsigned shift = lane;  // 0 or 16: this word's half of the ballots
            const std::uint32_t word = spread(p >> shift) | (spread(m >> shift) << 1);
            words[k] = word;
            counts[k] = static_cast<std::uint32_t>(__popc(word));
        }
    }
}

__global__ void write_sparse_kernel(const std::uint32_t* words, const std::uint32_t* offsets,
                                    std::size_t nwords, std::int32_t* out) {
    THRESHER_GRID_STRIDE(k, nwords) {
        std::uint32_t word = words[k];
        std::uint32_t at = offsets[k];
        while (word) {
            const int bit = __ffs(static_cast<int>(word)) - 1;  // lowest set bit: ascending index
            const auto entry = static_cast<std::int32_t>(k * 16 + static_cast<std::size_t>(bit >> 1) + 1);
            out[at++] = (bit & 1) ? -entry : entry;
            word &= word - 1;
        }
    }
}

// Indices are distinct in a well-formed message, so no two threads add to the same parameter.
__global__ void apply_sparse_kernel(const std::int32_t* entries, std::size_t count, float plus,
                                    float* target) {
    const float minus = -plus;
    THRESHER_GRID_STRIDE(k, count) {
        const std::int32_t v = entries[k];
        if (v > 0)
            target[v - 1] += plus;
        else
            target[-static_cast<std::int64_t>(v) - 1] += minus;
    }
}

__global__ void apply_bitmap_kernel(const std::uint32_t* words, std::size_t n, float plus,
                                    float* target) {
    const float minus = -plus;
    THRESHER_GRID_STRIDE(i, n) {
        const std::uint32_t code = (words[i / 16] >> (2 * (i % 16))) & 3u;
        if (code == 1u) target[i] += plus;
        if (code == 2u) target[i] += minus;
    }
}

__global__ void clip_kernel(float* r, std::size_t n, float c) {
    THRESHER_GRID_STRIDE(i, n) {
        const float v = r[i];
        r[i] = v > c ? c : (v < -c ? -c : v);
    }
}

}  // namespace

void encode(cudaStream_t s, float* r, std::size_t n, float t, std::uint32_t* words,
            std::uint32_t* counts) {
    if (n == 0) return;
    const std::size_t threads = (n + 31) / 32 * 32;
    const std::size_t blocks = (threads + kThreads - 1) / kThreads;
    encode_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(r, n, t, words, counts,
                                                                     (n + 15) / 16);
    THRESHER_CUDA_LAUNCHED(encode_kernel);
}

std::size_t scan_temp_bytes(std::size_t words) {
    std::size_t bytes = 0;
    THRESHER_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const std::uint32_t*>(nullptr),
                                                      static_cast<std::uint32_t*>(nullptr),
                                                      static_cast<int>(words)));
    return bytes;
}

void exclusive_sum(cudaStream_t s, const std::uint32_t* counts, std::uint32_t* offsets,
                   std::size_t words, void* temp, std::size_t temp_bytes) {
    if (words == 0) return;
    THRESHER_CUDA_CHECK(
        cub::DeviceScan::ExclusiveSum(temp, temp_bytes, counts, offsets, static_cast<int>(words), s));
}

void write_sparse(cudaStream_t s, const std::uint32_t* words, const std::uint32_t* offsets,
                  std::size_t nwords, std::int32_t* out) {
    if (nwords == 0) return;
    write_sparse_kernel<<<blocks_for(nwords), kThreads, 0, s>>>(words, offsets, nwords, out);
    THRESHER_CUDA_LAUNCHED(write_sparse_kernel);
}

void apply_sparse(cudaStream_t s, const std::int32_t* entries, std::size_t count, float plus,
                  float* target) {
    if (count == 0) return;
    apply_sparse_kernel<<<blocks_for(count), kThreads, 0, s>>>(entries, count, plus, target);
    THRESHER_CUDA_LAUNCHED(apply_sparse_kernel);
}

void apply_bitmap(cudaStream_t s, const std::uint32_t* words, std::size_t n, float plus,
                  float* target) {
    if (n == 0) return;
    apply_bitmap_kernel<<<blocks_for(n), kThreads, 0, s>>>(words, n, plus, target);
    THRESHER_CUDA_LAUNCHED(apply_bitmap_kernel);
}

void clip(cudaStream_t s, float* r, std::size_t n, float c) {
    if (n == 0) return;
    clip_kernel<<<blocks_for(n), kThreads, 0, s>>>(r, n, c);
    THRESHER_CUDA_LAUNCHED(clip_kernel);
}

}  // namespace thresher::backend::cuda::encoder_kernels
