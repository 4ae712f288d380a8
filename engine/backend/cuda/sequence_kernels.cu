// Rows by index (an embedding's lookup, go_backwards' reordering) and pooling along time on the GPU
// (sequence_ops.cpp). Each kernel follows
// the CPU backend's loops (cpu/sequence_ops.cpp) in the order backend.h fixes, without atomics:
// an index's gradient row is summed by one thread per column over that index's rows in row order, and
// an input step's gradient by one thread over the output steps whose windows hold it, in order.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_util.cuh"
#include "backend/cuda/kernels.h"

namespace thresher::backend::cuda::kernels {

namespace {

__global__ void row_gather_forward_kernel(const int* ids, std::size_t rows, const float* table, int units, float* y) {
    THRESHER_GRID_STRIDE(i, rows * units) {
        const int id = ids[i / units];
        y[i] = id < 0 ? 0.f : table[static_cast<std::size_t>(id) * units + i % units];
    }
}

__global__ void row_gather_backward_kernel(const int* order, const int* starts, const int* unique, std::size_t count,
                                          const float* dy, int units, float* dtable) {
    THRESHER_GRID_STRIDE(i, count * units) {
        const std::size_t k = i / units, j = i % units;
        float sum = 0.f;
        for (int p = starts[k]; p < starts[k + 1]; ++p) sum += dy[static_cast<std::size_t>(order[p]) * units + j];
        dtable[static_cast<std::size_t>(unique[k]) * units + j] = sum;
    }
}

// Output step o's input steps [from, to) for a sample of length len.
__device__ inline void time_window(const TimePoolDesc& d, int o, int len, int& from, int& to) {
    const int start = o * d.stride - d.pad;
    from = max(start, 0);
    to = min(start + d.kernel, len);
}

__global__ void time_pool_forward_kernel(TimePoolDesc d, const int* lengths, const float* x, float* y, int* argmax,
                                         std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) {
        const int c = d.channels;
        const std::size_t j = i % c, row = i / c;  // row = sample * t_out + o
        const int o = static_cast<int>(row % d.t_out), s = static_cast<int>(row / d.t_out);
        int from = 0, to = 0;
        time_window(d, o, lengths[s], from, to);
        const float* xs = x + static_cast<std::size_t>(s) * d.t_in * c + j;
        if (from >= to) {
            y[i] = 0.f;
            argmax[i] = -1;
        } else if (d.max) {
            int best = from;
            for (int t = from + 1; t < to; ++t)
                if (xs[static_cast<std::size_t>(t) * c] > xs[static_cast<std::size_t>(best) * c]) best = t;
            y[i] = xs[static_cast<std::size_t>(best) * c];
            argmax[i] = best;
        } else {
            double sum = 0.0;
            for (int t = from; t < to; ++t) sum += xs[static_cast<std::size_t>(t) * c];
            y[i] = static_cast<float>(sum / (to - from));
        }
    }
}

__global__ void time_pool_backward_kernel(TimePoolDesc d, const int* lengths, const int* argmax, const float* dy,
                                          float* dx, std::size_t n) {
    THRESHER_GRID_STRIDE(i, n) {
        const int c = d.channels;
        const std::size_t j = i % c, row = i / c;  // row = sample * t_in + t
        const int t = static_cast<int>(row % d.t_in), s = static_cast<int>(row / d.t_in);
        float acc = 0.f;
        if (t < lengths[s]) {
            // The output steps whose (unclipped) windows [o*stride - pad, ... + kernel) hold t.
            const int low = t + d.pad - d.kernel + 1;
            const int first = low <= 0 ? 0 : (low + d.stride - 1) / d.stride;
            const int last = min((t + d.pad) / d.stride, d.t_out - 1);
            for (int o = first; o <= last; ++o) {
                int from = 0, to = 0;
                time_window(d, o, lengths[s], from, to);
                if (from >= to) continue;
                const std::size_t at = (static_cast<std::size_t>(s) * d.t_out + o) * c + j;
                if (d.max) {
                    if (argmax[at] == t) acc += dy[at];
                } else {
                    acc += dy[at] / static_cast<float>(to - from);
                }
            }
        }
        dx[i] = acc;
    }
}

}  // namespace

void row_gather_forward(cudaStream_t s, const int* ids, std::size_t rows, const float* table, int units, float* y) {
    const std::size_t n = rows * static_cast<std::size_t>(units);
    if (n == 0) return;
    row_gather_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(ids, rows, table, units, y);
    THRESHER_CUDA_LAUNCHED(row_gather_forward_kernel);
}

void row_gather_backward(cudaStream_t s, const int* order, const int* starts, const int* unique, std::size_t count,
                        const float* dy, int units, float* dtable) {
    const std::size_t n = count * static_cast<std::size_t>(units);
    if (n == 0) return;
    row_gather_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(order, starts, unique, count, dy, units, dtable);
    THRESHER_CUDA_LAUNCHED(row_gather_backward_kernel);
}

void time_pool_forward(cudaStream_t s, const TimePoolDesc& d, const int* lengths, const float* x, float* y, int* argmax) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.t_out * d.channels;
    if (n == 0) return;
    time_pool_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(d, lengths, x, y, argmax, n);
    THRESHER_CUDA_LAUNCHED(time_pool_forward_kernel);
}

void time_pool_backward(cudaStream_t s, const TimePoolDesc& d, const int* lengths, const int* argmax, const float* dy,
                        float* dx) {
    const std::size_t n = static_cast<std::size_t>(d.batch) * d.t_in * d.channels;
    if (n == 0) return;
    time_pool_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(d, lengths, argmax, dy, dx, n);
    THRESHER_CUDA_LAUNCHED(time_pool_backward_kernel);
}

}  // namespace thresher::backend::cuda::kernels
