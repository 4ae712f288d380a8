// What cuDNN's RNN API can compute of an RnnDesc, and where Thresher's flat recurrent parameters
// go in cuDNN's weight space. Plain host code (no CUDA call), so both are tested on machines
// without a GPU (tests/engine/backend/test_cuda_rnn_layout.cpp); rnn_op.cpp feeds the layout
// cudnnGetRNNWeightParams reports and moves the values with the gather kernels.
//
// Gate orders. Thresher (oneDNN's ldigo): lstm i, f, g, o; gru u (update), r (reset), o
// (candidate); vanilla one. cuDNN's linLayerID, input matrices first then recurrent ones:
// lstm 0..3 = i, f, g, o (recurrent 4..7); gru 0..2 = r, u (cuDNN's "update gate" z), candidate
// (recurrent 3..5); vanilla 0 (recurrent 1). So lstm and vanilla keep their order and gru swaps
// its first two gates.
//
// Layouts. Thresher, per direction: W [in x G*H], R [H x G*H] row-major with gate-major columns,
// then b [G*H] ([4H] for GruResetAfter). cuDNN, per gate: a matrix [H x in] (or [H x H]) row-major,
// the transpose of Thresher's gate block, and two bias vectors [H], the input GEMM's and the
// recurrent GEMM's (CUDNN_RNN_DOUBLE_BIAS). Thresher's bias goes into the input bias; the recurrent
// ones stay zero, except GruResetAfter's 4th block, the recurrent candidate's bias, which is
// exactly cuDNN's recurrent bias of the candidate (cuDNN's GRU applies the reset after the
// recurrent GEMM: h' = tanh(W x + b_W + r * (R h + b_R))). A bias that stays zero is a constant,
// not a parameter, so its gradient is dropped: Thresher's db is the gradient of the bias it went to.
//
// Worked example, lstm in = 2, H = 3, gate f (Thresher gate 1, cuDNN id 1 and 5): Thresher's
// W[c][1*3 + j] goes to matrix 1's element (j, c), floats offset(1) + j*2 + c; R[k][1*3 + j] to
// matrix 5's (j, k); b[1*3 + j] to bias 1's element j.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace thresher::backend::cuda {

// Why cuDNN cannot compute this layer as the desc asks (its GRU is only the reset-after form, it
// has no peepholes, its gates are sigmoid and its cells tanh, its simple RNN tanh or relu), or
// nothing when it can. Every merge is supported (Concat is cuDNN's bidirectional output; Sum, Mul
// and Average are own kernels).
std::optional<std::string> cuda_rnn_unsupported(const RnnDesc&);

// Gates per cell (lstm 4, gru 3, vanilla 1) and Thresher's parameters per direction.
int rnn_gates(RnnCell);
std::size_t rnn_direction_size(const RnnDesc&);

// cuDNN's linLayerID of the input matrix (and input bias) of Thresher's gate g; the recurrent
// matrix and bias are id + rnn_gates(cell).
int cudnn_lin_layer(RnnCell, int gate);

// One matrix or bias of cuDNN's weight space as cudnnGetRNNWeightParams describes it: where it
// starts (floats from the weight space's start), its rows and columns (a bias is rows x 1) and
// its row stride in floats.
struct CudnnBlock {
    std::size_t offset = 0;
    int rows = 0, cols = 0, row_stride = 0;
};
// Per direction (pseudo-layer), indexed by linLayerID: 2 * rnn_gates matrices and biases.
struct CudnnDirection {
    std::vector<CudnnBlock> matrices, biases;
};

// map[i] = the weight-space float that Thresher's parameter i (all directions, forward first)
// lives in. Checks every block's shape against the desc (a cuDNN that lays out its weights
// otherwise is refused, naming the block) and that every target lies inside `weight_floats`.
std::vector<std::uint32_t> cudnn_weight_map(const RnnDesc&, const std::vector<CudnnDirection>&,
                                            std::size_t weight_floats);

}  // namespace thresher::backend::cuda
