// The CUDA backend's own kernels, behind plain C++ launchers so that only the .cu files go through
// nvcc. Every launcher enqueues on `stream`, checks the launch and returns without waiting.
// Each kernel mirrors a loop of the CPU backend (engine/backend/cpu) operation for operation,
// in the same order, so results agree to rounding of exp/tanh (and, for sums, of the order in
// which the GPU adds). The CUDA target is compiled with --fmad=false for the same reason: a
// fused multiply-add rounds once where the CPU code rounds twice.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/backend.h"

namespace thresher::backend::cuda::kernels {

// --- element-wise (elementwise.cu) ------------------------------------------------------------
void fill(cudaStream_t, float* p, float value, std::size_t n);
// Identity, Relu, LeakyRelu, Tanh, Sigmoid (softmax is row-wise: see below).
void activation_forward(cudaStream_t, ActivationSpec, const float* x, float* y, std::size_t n);
// dz from the output y and dy (dz may alias dy).
void activation_backward(cudaStream_t, ActivationSpec, const float* y, const float* dy, float* dz,
                         std::size_t n);
void softmax_forward(cudaStream_t, const float* x, float* y, int rows, int cols);
void softmax_backward(cudaStream_t, const float* y, const float* dy, float* dz, int rows, int cols);
// Softmax over the channels of each pixel of NCHW [batch x channels x pixels]; y may be x.
void softmax_channels(cudaStream_t, const float* x, float* y, int batch, int channels, int pixels);
// y[i] = act(y[i] + bias[c]) for an NCHW-shaped y where c = (i / inner) % channels. Dense layers
// pass inner = 1 (channels = outputs); softmax is not applied here.
void bias_activation(cudaStream_t, float* y, const float* bias, std::size_t n, int channels,
                     std::size_t inner, ActivationSpec);
// out[c] = sum over rows of m[r][c] ([rows x cols] row-major).
void column_sums(cudaStream_t, const float* m, float* out, int rows, int cols);
// out[c] = sum over n and hw of an NCHW tensor.
void channel_sums(cudaStream_t, const float* m, float* out, int n, int c, std::size_t hw);
// The CPU backend's counter-based inverted dropout: element i draws derive_seed(key, i / group),
// with key = derive_seed(seed, "DROP") from the host; scale = 1 / retain; group > 1 for spatial
// dropout (one draw per channel of a sample).
void dropout(cudaStream_t, const float* x, float* y, float* mask, std::size_t n, float retain,
             float scale, std::uint64_t key, std::size_t group = 1);
void multiply(cudaStream_t, const float* a, const float* b, float* out, std::size_t n);
void axpy(cudaStream_t, float alpha, const float* x, float* y, std::size_t n);
void blend(cudaStream_t, float* running, const float* batch, float momentum, std::size_t n);
// Graph vertices: y = max(a, b); dx = dy where x == y, else 0 (the CPU backend's loops).
void maximum(cudaStream_t, const float* a, const float* b, float* y, std::size_t n);
void max_route(cudaStream_t, const float* x, const float* y, const float* dy, float* dx, std::size_t n);
// PReLU (PReluDesc): dalpha is overwritten, each alpha's sum added in the CPU loop's order; dx may be null.
void prelu_forward(cudaStream_t, const PReluDesc&, const float* x, const float* alpha, float* y);
void prelu_backward(cudaStream_t, const PReluDesc&, const float* x, const float* alpha, const float* dy,
                    float* dx, float* dalpha);
// Copies `planes` h x w images into zero-filled hp x wp ones at offset (pad_t, pad_l), and back.
void pad(cudaStream_t, const float* x, float* padded, std::size_t planes, int h, int w, int pad_t,
         int pad_l, int hp, int wp);
void crop(cudaStream_t, const float* padded, float* x, std::size_t planes, int h, int w, int pad_t,
          int pad_l, int hp, int wp);

// --- upsampling (resize_kernels.cu) ---------------------------------------------------------------
// Per-sample gather through a device index map (GatherOp): y[r][j] = x[r][map[j]], and its scatter.
void gather_forward(cudaStream_t, const std::uint32_t* map, std::size_t width, std::size_t rows, const float* x, float* y);
void gather_backward(cudaStream_t, const std::uint32_t* map, std::size_t width, std::size_t rows, const float* dy, float* dx);
void upsample_forward(cudaStream_t, const UpsampleDesc&, const float* x, float* y);
void upsample_backward(cudaStream_t, const UpsampleDesc&, const float* dy, float* dx);

// --- updaters (updaters.cu) --------------------------------------------------------------------
// `adam_alpha` is lr * sqrt(1 - b2^t) / (1 - b1^t), computed in double on the host as the CPU
// backend does; other kinds ignore it.
void updater_step(cudaStream_t, const UpdaterSpec&, float adam_alpha, float* grad, float* state,
                  const float* params, std::size_t n);

// --- pooling (pool_kernels.cu) -----------------------------------------------------------------
// Max pooling records, per output, the position of its maximum inside the input plane
// (h * in_w + w; -1 for a window with no input) when `argmax` is not null.
void max_pool_forward(cudaStream_t, const PoolDesc&, const float* x, float* y, int* argmax);
void max_pool_backward(cudaStream_t, const PoolDesc&, const int* argmax, const float* dy, float* dx);
void avg_pool_forward(cudaStream_t, const PoolDesc&, const float* x, float* y);
void avg_pool_backward(cudaStream_t, const PoolDesc&, const float* dy, float* dx);

// --- batch normalisation (batch_norm_kernels.cu) -----------------------------------------------
// Per-channel mean and biased variance (divided by N*H*W) of an NCHW tensor.
void batch_norm_statistics(cudaStream_t, const BatchNormDesc&, const float* x, float* mean,
                           float* var);
void batch_norm_normalize(cudaStream_t, const BatchNormDesc&, const float* x, const float* gamma,
                          const float* beta, const float* mean, const float* var, float* y);
void batch_norm_backward(cudaStream_t, const BatchNormDesc&, const float* x, const float* dy,
                         const float* gamma, const float* mean, const float* var, float* dx,
                         float* dgamma, float* dbeta);

// --- rows by index and pooling along time (sequence_kernels.cu) ----------------------------------
// y[r] = table[ids[r]] (width values), zeros where ids[r] is -1.
void row_gather_forward(cudaStream_t, const int* ids, std::size_t rows, const float* table, int width, float* y);
// For each k < count: dtable[unique[k]] = the sum of dy[order[p]] for p in [starts[k], starts[k+1]),
// in that order (rows of other ids are left as they are).
void row_gather_backward(cudaStream_t, const int* order, const int* starts, const int* unique, std::size_t count,
                        const float* dy, int width, float* dtable);
// TimePoolDesc's windows within each sample's length (device lengths); argmax: the maximum's step
// per output value (-1 for an empty window), written by forward for backward.
void time_pool_forward(cudaStream_t, const TimePoolDesc&, const int* lengths, const float* x, float* y, int* argmax);
void time_pool_backward(cudaStream_t, const TimePoolDesc&, const int* lengths, const int* argmax, const float* dy,
                        float* dx);

// --- recurrent layers (rnn_kernels.cu) ------------------------------------------------------------
// The two directions' states joined as RnnMerge Sum, Mul or Average asks (the CPU's expressions:
// a + b, a * b, 0.5f * (a + b)): out[r][j] = join(a[r][j], b[r][j]) for `rows` rows of h values,
// a and b read `ab_pitch` floats apart (b is a second pointer into the same layout), out
// `out_pitch` apart.
void rnn_merge_forward(cudaStream_t, RnnMerge, const float* a, const float* b, std::size_t ab_pitch, float* out,
                       std::size_t out_pitch, std::size_t rows, int h);
// Its backward: da, db (`d_pitch` apart) from dy (`dy_pitch` apart) and the forward's a and b
// (Mul reads them): Sum da = db = dy; Average 0.5f * dy; Mul da = dy * b, db = dy * a.
void rnn_merge_backward(cudaStream_t, RnnMerge, const float* dy, std::size_t dy_pitch, const float* a, const float* b,
                        std::size_t ab_pitch, float* da, float* db, std::size_t d_pitch, std::size_t rows, int h);
// Zeroes the padded steps of a [batch x steps x width] tensor: p[n][t][:] for t >= lengths[n]
// (lengths in device memory).
void rnn_zero_padding(cudaStream_t, const int* lengths, float* p, int batch, int steps, int width);

}  // namespace thresher::backend::cuda::kernels
