#include "backend/cuda/rnn_layout.h"

#include <limits>

#include "core/error.h"

namespace thresher::backend::cuda {

std::optional<std::string> cuda_rnn_unsupported(const RnnDesc& d) {
    const bool gated = d.cell != RnnCell::Vanilla;
    if (d.cell == RnnCell::Gru)
        return std::string("cuDNN computes only the reset-after GRU (Keras reset_after=true, PyTorch's GRU); "
                           "this GRU has reset_after=false");
    if (d.peepholes) return std::string("cuDNN's LSTM has no peephole connections");
    if (gated && d.gate.kind != Activation::Sigmoid)
        return std::string("cuDNN's LSTM and GRU gates are sigmoid; this layer's gate activation is another");
    if (gated && d.act.kind != Activation::Tanh)
        return std::string("cuDNN's LSTM and GRU cells are tanh; this layer's cell activation is another");
    if (!gated && d.act.kind != Activation::Tanh && d.act.kind != Activation::Relu)
        return std::string("cuDNN's simple RNN is tanh or relu; this layer's activation is another");
    return std::nullopt;
}

int rnn_gates(RnnCell c) { return c == RnnCell::Lstm ? 4 : c == RnnCell::Vanilla ? 1 : 3; }

std::size_t rnn_direction_size(const RnnDesc& d) {
    const std::size_t g = static_cast<std::size_t>(rnn_gates(d.cell)), h = static_cast<std::size_t>(d.hidden);
    const std::size_t biases = d.cell == RnnCell::GruResetAfter ? 4 : g;
    return static_cast<std::size_t>(d.in) * g * h + h * g * h + biases * h + (d.peepholes ? 3 * h : 0);
}

int cudnn_lin_layer(RnnCell c, int gate) {
    // GRU: Thresher u, r, o -> cuDNN r = 0, update = 1, candidate = 2.
    if (c == RnnCell::Gru || c == RnnCell::GruResetAfter) return gate == 0 ? 1 : gate == 1 ? 0 : 2;
    return gate;  // lstm i, f, g, o and vanilla: the same order
}

namespace {

const CudnnBlock& checked(const std::vector<CudnnBlock>& blocks, int id, int rows, int cols, const char* what,
                          std::size_t direction) {
    const std::string where = std::string("cuDNN's RNN weight space, direction ") + std::to_string(direction) + ", " +
                              what + " " + std::to_string(id);
    if (id < 0 || static_cast<std::size_t>(id) >= blocks.size()) throw BackendError(where + ": not reported");
    const CudnnBlock& b = blocks[static_cast<std::size_t>(id)];
    if (b.rows != rows || b.cols != cols || (rows > 1 && b.row_stride != cols))
        throw BackendError(where + " is " + std::to_string(b.rows) + "x" + std::to_string(b.cols) + " (row stride " +
                           std::to_string(b.row_stride) + "), expected a dense " + std::to_string(rows) + "x" +
                           std::to_string(cols));
    return b;
}

}  // namespace

std::vector<std::uint32_t> cudnn_weight_map(const RnnDesc& d, const std::vector<CudnnDirection>& dirs,
                                            std::size_t weight_floats) {
    if (cuda_rnn_unsupported(d)) throw BackendError("cudnn_weight_map: a layer cuDNN cannot compute");
    if (weight_floats > std::numeric_limits<std::uint32_t>::max())
        throw BackendError("cuDNN's RNN weight space has " + std::to_string(weight_floats) +
                           " floats, more than a 32-bit index map addresses");
    const int g = rnn_gates(d.cell), h = d.hidden, in = d.in;
    const std::size_t gh = static_cast<std::size_t>(g) * h;
    const std::size_t w_size = static_cast<std::size_t>(in) * gh, r_size = static_cast<std::size_t>(h) * gh;
    const std::size_t per_dir = rnn_direction_size(d);
    std::vector<std::uint32_t> map(per_dir * dirs.size());
    std::vector<bool> taken(weight_floats, false);  // blocks must not overlap: each float has one source
    auto put = [&](std::size_t i, std::size_t target) {
        if (target >= weight_floats)
            throw BackendError("cuDNN's RNN weight space: a block reaches float " + std::to_string(target) +
                               " of " + std::to_string(weight_floats));
        if (taken[target])
            throw BackendError("cuDNN's RNN weight space: two blocks share float " + std::to_string(target));
        taken[target] = true;
        map[i] = static_cast<std::uint32_t>(target);
    };
    for (std::size_t k = 0; k < dirs.size(); ++k) {
        const std::size_t base = k * per_dir;
        for (int gate = 0; gate < g; ++gate) {
            const int id = cudnn_lin_layer(d.cell, gate);
            const CudnnBlock& wm = checked(dirs[k].matrices, id, h, in, "input matrix", k);
            const CudnnBlock& rm = checked(dirs[k].matrices, id + g, h, h, "recurrent matrix", k);
            const CudnnBlock& wb = checked(dirs[k].biases, id, h, 1, "input bias", k);
            const std::size_t col = static_cast<std::size_t>(gate) * h;
            for (int j = 0; j < h; ++j) {
                // W[c][gate*H + j] -> cuDNN (j, c); R[q][gate*H + j] -> cuDNN (j, q); b[gate*H + j] -> bias j.
                for (int c = 0; c < in; ++c)
                    put(base + static_cast<std::size_t>(c) * gh + col + j, wm.offset + static_cast<std::size_t>(j) * in + c);
                for (int q = 0; q < h; ++q)
                    put(base + w_size + static_cast<std::size_t>(q) * gh + col + j,
                        rm.offset + static_cast<std::size_t>(j) * h + q);
                put(base + w_size + r_size + col + j, wb.offset + j);
            }
        }
        if (d.cell == RnnCell::GruResetAfter) {
            // The 4th bias block: the recurrent candidate's, cuDNN's recurrent bias of gate 2.
            const CudnnBlock& rb = checked(dirs[k].biases, cudnn_lin_layer(d.cell, 2) + g, h, 1, "recurrent bias", k);
            for (int j = 0; j < h; ++j) put(base + w_size + r_size + gh + j, rb.offset + j);
        }
    }
    return map;
}

}  // namespace thresher::backend::cuda
