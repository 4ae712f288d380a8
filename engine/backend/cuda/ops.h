// Factories for the CUDA backend's planned ops, one file each: dense on cuBLAS, convolution and
// recurrent layers on cuDNN, pooling and batch normalisation on the backend's own kernels.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace thresher::backend::cuda {

class CudaBackend;

std::unique_ptr<DenseOp> make_dense_op(CudaBackend&, const DenseDesc&);
std::unique_ptr<ConvOp> make_conv_op(CudaBackend&, const ConvDesc&);
std::unique_ptr<PoolOp> make_pool_op(CudaBackend&, const PoolDesc&);
std::unique_ptr<BatchNormOp> make_batch_norm_op(CudaBackend&, const BatchNormDesc&);
std::unique_ptr<GatherOp> make_gather_op(CudaBackend&, const std::vector<std::uint32_t>& map);
// Recurrent layers on cuDNN's RNN API (rnn_op.cpp); throws for what rnn_refusal() names.
std::unique_ptr<RnnOp> make_rnn_op(CudaBackend&, const RnnDesc&);
// Rows by index and pooling along time (sequence_ops.cpp).
std::unique_ptr<RowGatherOp> make_row_gather_op(CudaBackend&, const RowGatherDesc&);
std::unique_ptr<TimePoolOp> make_time_pool_op(CudaBackend&, const TimePoolDesc&);

}  // namespace thresher::backend::cuda
