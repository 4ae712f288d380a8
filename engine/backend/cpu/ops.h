// Factories for the CPU backend's planned ops (one file each) and its element-wise kernels.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/cpu/dnnl_port.h"

namespace thresher::backend::cpu {

// The native image layout (backend.h ImageLayout): oneDNN's channel-blocked nChw16c where the
// convolutions run on AVX-512, nChw8c below; channel counts that are not a multiple of the block
// stay plain (a blocked tensor would be padded, larger than NCHW). THRESHER_CPU_LAYOUT=plain
// turns it off (for comparing).
int native_channel_block();
bool native_layout_for(int channels);
// [n x c x h x w] in `layout`.
dnnl::memory::desc image_desc(int n, int c, int h, int w, ImageLayout layout);

std::unique_ptr<DenseOp> make_dense_op(DnnlContext&, const DenseDesc&);
std::unique_ptr<ConvOp> make_conv_op(DnnlContext&, const ConvDesc&);
std::unique_ptr<PoolOp> make_pool_op(DnnlContext&, const PoolDesc&);
std::unique_ptr<BatchNormOp> make_batch_norm_op(DnnlContext&, const BatchNormDesc&);
std::unique_ptr<GatherOp> make_gather_op(const std::vector<std::uint32_t>& map);
std::unique_ptr<RnnOp> make_rnn_op(DnnlContext&, const RnnDesc&);
// Host loops (sequence_ops.cpp).
std::unique_ptr<RowGatherOp> make_row_gather_op(const RowGatherDesc&);
std::unique_ptr<TimePoolOp> make_time_pool_op(const TimePoolDesc&);

// Element-wise kernels (elementwise.cpp), OpenMP-parallel over large arrays.
void activation_forward(ActivationSpec, const float* x, float* y, int rows, int cols);
void activation_backward(ActivationSpec, const float* y, const float* dy, float* dz, int rows,
                         int cols);
// Softmax over channels at each pixel of NCHW [batch x channels x pixels] (backend.h).
void softmax_channels(const float* x, float* y, int batch, int channels, int pixels);
void prelu_forward(const PReluDesc&, const float* x, const float* alpha, float* y);
void prelu_backward(const PReluDesc&, const float* x, const float* alpha, const float* dy, float* dx,
                    float* dalpha);
void column_sums(const float* m, float* out, int rows, int cols);
// Inverted dropout's mask: mask[i] = (u < retain) / retain, u drawn from (seed, i / group) alone,
// so the mask is the same whatever the thread split (Backend::dropout_forward, recurrent cells).
void dropout_mask(float* mask, std::size_t n, float retain, std::uint64_t seed, std::size_t group = 1);
// Zero padding, cropping, nearest-neighbour upsampling of image planes (resize.cpp).
void pad_planes(const PadDesc&, const float* small, float* large);
void crop_planes(const PadDesc&, const float* large, float* small);
void upsample_forward(const UpsampleDesc&, const float* x, float* y);
void upsample_backward(const UpsampleDesc&, const float* dy, float* dx);
// Per-channel sums of an NCHW tensor.
void channel_sums(const float* m, float* out, int n, int c, int hw);

void updater_step(const UpdaterSpec&, float* grad, float* state, const float* params,
                  std::size_t count, long iteration);

// The oneDNN post-op that applies `act` in place, or false for identity / softmax.
bool append_activation_post_op(dnnl::post_ops&, ActivationSpec);
// True when the activation is not fused as a post-op and must run over the output afterwards
// (softmax, and the activations imported files bring).
bool apply_activation_after(ActivationSpec);

}  // namespace thresher::backend::cpu
