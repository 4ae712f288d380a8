// Recurrent layers on cuDNN's RNN API (cuDNN 9, the "v8" calls): one cudnnRNNForward runs all
// steps of both directions, cudnnRNNBackwardData_v8 and cudnnRNNBackwardWeights_v8 the backward
// pass from the training forward's reserve space. Planned once per shape: the RNN descriptor,
// cuDNN's weight space and the index map from Thresher's parameters into it (rnn_layout.h).
//
// Data. x [N x T x in] is cuDNN's CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED as it is; with
// CUDNN_RNN_PADDED_IO_ENABLED and each sample's length in the data descriptors, cuDNN runs
// sample n over its first L steps only and the reverse direction from step L-1 down to 0, which
// is the contract of backend.h (and of cpu/rnn_op.cpp, which reverses within lengths by hand).
// cuDNN's output Y [N x T x dirs*H] is the Concat of the directions at each original step, and
// hy [dirs x N x H] is each direction's final state: the forward one at step L-1, the reverse one
// after reading the sample back to step 0 (Keras's go_backwards), what return_sequences = false
// keeps. The op keeps Y and hy (backward and the Mul merge read them) and writes y from them:
// a copy (None, Concat), a join kernel (Sum, Mul, Average), then padded steps zeroed.
//
// Backward: dL/dY (return_sequences) or dL/dhy (the last step) from dy by the join's backward;
// backward-data gives dx and fills the reserve space that backward-weights reads, adding into a
// zeroed gradient weight space, which the index map gathers back into Thresher's order.
//
// Precision: CUDNN_FMA_MATH, no TF32 (as the convolutions), so results agree with the CPU backend.
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/ops.h"
#include "backend/cuda/rnn_layout.h"
#include "backend/cuda/uploaded_ints.h"
#include "core/error.h"

namespace thresher::backend::cuda {

namespace {

cudnnRNNMode_t cell_mode(const RnnDesc& d) {
    switch (d.cell) {
        case RnnCell::Lstm: return CUDNN_LSTM;
        case RnnCell::Gru:
        case RnnCell::GruResetAfter: return CUDNN_GRU;
        case RnnCell::Vanilla: break;
    }
    return d.act.kind == Activation::Relu ? CUDNN_RNN_RELU : CUDNN_RNN_TANH;
}

// Plan-time bounds: cuDNN takes int32 sizes, and the op's buffers are products of them.
void check_shape(const RnnDesc& d) {
    constexpr long long kLimit = 1LL << 30;
    const long long dirs = d.merge == RnnMerge::None ? 1 : 2;
    if (d.batch < 1 || d.steps < 1 || d.in < 1 || d.hidden < 1)
        throw BackendError("CUDA recurrent layer: batch, steps, inputs and units must be positive, got " +
                           std::to_string(d.batch) + ", " + std::to_string(d.steps) + ", " + std::to_string(d.in) +
                           ", " + std::to_string(d.hidden));
    const long long rows = static_cast<long long>(d.batch) * d.steps;
    if (rows * d.in > kLimit || rows * dirs * d.hidden > kLimit ||
        static_cast<long long>(d.hidden) * (d.in + d.hidden) * 4 * dirs > kLimit)
        throw BackendError("CUDA recurrent layer: " + std::to_string(d.batch) + " x " + std::to_string(d.steps) +
                           " steps of " + std::to_string(d.in) + " -> " + std::to_string(d.hidden) +
                           " units is more than 2^30 values in one tensor");
}

class CudaRnnOp final : public RnnOp {
public:
    CudaRnnOp(CudaBackend& be, const RnnDesc& d) : be_(be), lib_(libraries()), d_(d) {
        if (auto why = cuda_rnn_unsupported(d)) throw BackendError("CUDA recurrent layer: " + *why);
        check_shape(d);
        dirs_ = d.merge == RnnMerge::None ? 1 : 2;
        out_ = d.merge == RnnMerge::Concat ? 2 * d.hidden : d.hidden;
        const std::size_t rows = static_cast<std::size_t>(d.batch) * d.steps;
        y_all_ = DeviceArray<float>(rows * dirs_ * d.hidden);
        dy_all_ = DeviceArray<float>(rows * dirs_ * d.hidden);
        hy_ = DeviceArray<float>(static_cast<std::size_t>(dirs_) * d.batch * d.hidden);
        dhy_ = DeviceArray<float>(static_cast<std::size_t>(dirs_) * d.batch * d.hidden);
        dx_scratch_ = DeviceArray<float>(rows * d.in);

        cudnnDropoutDescriptor_t drop = nullptr;
        THRESHER_CUDA_CHECK(lib_.cudnnCreateDropoutDescriptor(&drop));
        dropout_.reset(drop);  // left unset: dropout 0 (one layer: cuDNN applies none anyway)
        cudnnRNNDescriptor_t rnn = nullptr;
        THRESHER_CUDA_CHECK(lib_.cudnnCreateRNNDescriptor(&rnn));
        rnn_.reset(rnn);
        THRESHER_CUDA_CHECK(lib_.cudnnSetRNNDescriptor_v8(
            rnn, CUDNN_RNN_ALGO_STANDARD, cell_mode(d), CUDNN_RNN_DOUBLE_BIAS,
            dirs_ == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT,
            CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, d.in, d.hidden, d.hidden, 1, drop, CUDNN_RNN_PADDED_IO_ENABLED));

        cudnnRNNDataDescriptor_t xd = nullptr, yd = nullptr;
        THRESHER_CUDA_CHECK(lib_.cudnnCreateRNNDataDescriptor(&xd));
        x_desc_.reset(xd);
        THRESHER_CUDA_CHECK(lib_.cudnnCreateRNNDataDescriptor(&yd));
        y_desc_.reset(yd);
        cudnnTensorDescriptor_t hd = nullptr;
        THRESHER_CUDA_CHECK(lib_.cudnnCreateTensorDescriptor(&hd));
        h_desc_.reset(hd);
        const int dims[3] = {dirs_, d.batch, d.hidden}, strides[3] = {d.batch * d.hidden, d.hidden, 1};
        THRESHER_CUDA_CHECK(lib_.cudnnSetTensorNdDescriptor(hd, CUDNN_DATA_FLOAT, 3, dims, strides));

        // Sizes for full-length samples (cuDNN sizes its scratch by the longest step count);
        // forward asks again for each batch's lengths and grows them if needed.
        const std::vector<int> full(static_cast<std::size_t>(d.batch), d.steps);
        describe_data(full.data());
        THRESHER_CUDA_CHECK(lib_.cudnnGetRNNTempSpaceSizes(be_.cudnn(), rnn, CUDNN_FWD_MODE_TRAINING, xd,
                                                           &workspace_bytes_, &reserve_bytes_));
        reserve_ = DeviceArray<unsigned char>(reserve_bytes_);
        be_.workspace(workspace_bytes_);  // allocate now, not in the first iteration

        THRESHER_CUDA_CHECK(lib_.cudnnGetRNNWeightSpaceSize(be_.cudnn(), rnn, &weight_bytes_));
        if (weight_bytes_ % sizeof(float) != 0)
            throw BackendError("cuDNN's RNN weight space is " + std::to_string(weight_bytes_) + " bytes, not whole floats");
        weights_ = DeviceArray<float>(weight_bytes_ / sizeof(float));
        dweights_ = DeviceArray<float>(weight_bytes_ / sizeof(float));
        // The recurrent biases Thresher has no parameter for stay zero: forward never writes them.
        THRESHER_CUDA_CHECK(cudaMemsetAsync(weights_.data(), 0, weight_bytes_, be_.stream()));
        plan_weight_map();
    }

    void forward(const float* x, const int* lengths, const float* params, float* y, Mode mode) override {
        be_.activate();
        upload_lengths(lengths);
        const bool train = mode == Mode::Training;
        std::size_t ws = 0, reserve = 0;
        THRESHER_CUDA_CHECK(lib_.cudnnGetRNNTempSpaceSizes(be_.cudnn(), rnn_.get(),
                                                           train ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
                                                           x_desc_.get(), &ws, &reserve));
        if (train && reserve > reserve_.size()) {
            reserve_ = DeviceArray<unsigned char>();  // cudaFree waits for work still using it
            reserve_ = DeviceArray<unsigned char>(reserve);
        }
        if (train) workspace_bytes_ = ws, reserve_bytes_ = reserve;  // backward uses the same
        // Thresher's parameters into cuDNN's weight space: weights[map[i]] = params[i].
        kernels::gather_backward(be_.stream(), map_.data(), map_.size(), 1, params, weights_.data());
        THRESHER_CUDA_CHECK(lib_.cudnnRNNForward(
            be_.cudnn(), rnn_.get(), train ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE, lengths_.data(),
            x_desc_.get(), x, y_desc_.get(), y_all_.data(), h_desc_.get(), nullptr, hy_.data(), h_desc_.get(), nullptr,
            nullptr, weight_bytes_, weights_.data(), ws, be_.workspace(ws), train ? reserve : 0,
            train ? reserve_.data() : nullptr));
        write_output(y);
    }

    void backward(const float* x, const int* lengths, const float* params, const float* dy, float* dx,
                  float* grads) override {
        be_.activate();
        upload_lengths(lengths);
        const bool last = !d_.return_sequences;
        split_gradient(dy);
        float* dx_target = dx ? dx : dx_scratch_.data();
        void* ws = be_.workspace(workspace_bytes_);
        // Backward reads the weights it is given, not what forward left in the weight space.
        kernels::gather_backward(be_.stream(), map_.data(), map_.size(), 1, params, weights_.data());
        THRESHER_CUDA_CHECK(lib_.cudnnRNNBackwardData_v8(
            be_.cudnn(), rnn_.get(), lengths_.data(), y_desc_.get(), y_all_.data(), dy_all_.data(), x_desc_.get(),
            dx_target, h_desc_.get(), nullptr, last ? dhy_.data() : nullptr, nullptr, h_desc_.get(), nullptr, nullptr,
            nullptr, weight_bytes_, weights_.data(), workspace_bytes_, ws, reserve_bytes_, reserve_.data()));
        // Padded steps of dx: zero (nothing downstream reads them, and they must change nothing).
        if (dx) kernels::rnn_zero_padding(be_.stream(), lengths_.data(), dx, d_.batch, d_.steps, d_.in);
        THRESHER_CUDA_CHECK(cudaMemsetAsync(dweights_.data(), 0, weight_bytes_, be_.stream()));
        THRESHER_CUDA_CHECK(lib_.cudnnRNNBackwardWeights_v8(
            be_.cudnn(), rnn_.get(), CUDNN_WGRAD_MODE_ADD, lengths_.data(), x_desc_.get(), x, h_desc_.get(), nullptr,
            y_desc_.get(), y_all_.data(), weight_bytes_, dweights_.data(), workspace_bytes_, ws, reserve_bytes_,
            reserve_.data()));
        // Back into Thresher's order: grads[i] = dweights[map[i]] (the zero biases' gradients stay behind).
        kernels::gather_forward(be_.stream(), map_.data(), map_.size(), 1, dweights_.data(), grads);
    }

private:
    // The data descriptors for this batch's lengths (host values; cuDNN copies them).
    void describe_data(const int* lengths) {
        THRESHER_CUDA_CHECK(lib_.cudnnSetRNNDataDescriptor(x_desc_.get(), CUDNN_DATA_FLOAT,
                                                           CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, d_.steps,
                                                           d_.batch, d_.in, lengths, &padding_fill_));
        THRESHER_CUDA_CHECK(lib_.cudnnSetRNNDataDescriptor(y_desc_.get(), CUDNN_DATA_FLOAT,
                                                           CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, d_.steps,
                                                           d_.batch, dirs_ * d_.hidden, lengths, &padding_fill_));
    }

    // Checks the lengths (1..steps, as the CPU backend), copies them to the device, where cuDNN's
    // kernels (and the padding kernel) read them, and describes new ones to cuDNN. The same
    // lengths as last time (backward after its forward) are already there.
    void upload_lengths(const int* lengths) {
        for (int n = 0; n < d_.batch; ++n)
            if (lengths[n] < 1 || lengths[n] > d_.steps)
                throw BackendError("recurrent layer: sample " + std::to_string(n) + " has length " +
                                   std::to_string(lengths[n]) + ", outside 1.." + std::to_string(d_.steps));
        if (lengths_.upload(be_.stream(), lengths, static_cast<std::size_t>(d_.batch))) describe_data(lengths);
    }

    // Where cuDNN keeps each gate's matrices and biases, read once, as the index map.
    void plan_weight_map() {
        const int ids = 2 * rnn_gates(d_.cell);
        TensorDesc m_desc = make_tensor_desc(1, 1, 1, 1), b_desc = make_tensor_desc(1, 1, 1, 1);
        const auto* base = reinterpret_cast<const unsigned char*>(weights_.data());
        auto block = [&](cudnnTensorDescriptor_t desc, const void* addr, int id, const char* what) {
            if (!addr)
                throw BackendError(std::string("cuDNN reports no ") + what + " for linLayerID " + std::to_string(id));
            cudnnDataType_t type{};
            int nd = 0, dims[3] = {}, strides[3] = {};
            THRESHER_CUDA_CHECK(lib_.cudnnGetTensorNdDescriptor(desc, 3, &type, &nd, dims, strides));
            const std::ptrdiff_t bytes = static_cast<const unsigned char*>(addr) - base;
            if (nd != 3 || type != CUDNN_DATA_FLOAT || bytes < 0 || bytes % static_cast<std::ptrdiff_t>(sizeof(float)) != 0 ||
                strides[2] != 1)
                throw BackendError(std::string("cuDNN's RNN ") + what + " " + std::to_string(id) +
                                   " is not a float block of the weight space");
            return CudnnBlock{static_cast<std::size_t>(bytes) / sizeof(float), dims[1], dims[2], strides[1]};
        };
        std::vector<CudnnDirection> layout(static_cast<std::size_t>(dirs_));
        for (int k = 0; k < dirs_; ++k) {
            for (int id = 0; id < ids; ++id) {
                void *m = nullptr, *b = nullptr;
                THRESHER_CUDA_CHECK(lib_.cudnnGetRNNWeightParams(be_.cudnn(), rnn_.get(), k, weight_bytes_,
                                                                 weights_.data(), id, m_desc.get(), &m, b_desc.get(), &b));
                layout[static_cast<std::size_t>(k)].matrices.push_back(block(m_desc.get(), m, id, "matrix"));
                layout[static_cast<std::size_t>(k)].biases.push_back(block(b_desc.get(), b, id, "bias"));
            }
        }
        const auto map = cudnn_weight_map(d_, layout, weight_bytes_ / sizeof(float));
        map_ = DeviceArray<std::uint32_t>(map.size());
        THRESHER_CUDA_CHECK(cudaMemcpyAsync(map_.data(), map.data(), map.size() * sizeof(std::uint32_t),
                                            cudaMemcpyHostToDevice, be_.stream()));
        THRESHER_CUDA_CHECK(cudaStreamSynchronize(be_.stream()));  // `map` goes away after this
    }

    std::size_t state_values() const { return static_cast<std::size_t>(d_.batch) * d_.hidden; }

    // y from Y (return_sequences) or hy (the last valid step), as the merge joins the directions.
    void write_output(float* y) {
        const std::size_t n = static_cast<std::size_t>(d_.batch), h = static_cast<std::size_t>(d_.hidden);
        const std::size_t rows = n * d_.steps, width = static_cast<std::size_t>(dirs_) * h;
        const float* fwd = d_.return_sequences ? y_all_.data() : hy_.data();
        const float* rev = d_.return_sequences ? y_all_.data() + h : hy_.data() + state_values();
        const std::size_t pitch = d_.return_sequences ? width : h;
        const std::size_t out_rows = d_.return_sequences ? rows : n;
        switch (d_.merge) {
            case RnnMerge::None: be_.copy(y, fwd, out_rows * h); break;
            case RnnMerge::Concat:
                if (d_.return_sequences) {
                    be_.copy(y, y_all_.data(), rows * width);
                } else {
                    be_.copy_rows(y, 2 * h, fwd, h, h, n);
                    be_.copy_rows(y + h, 2 * h, rev, h, h, n);
                }
                break;
            case RnnMerge::Sum:
            case RnnMerge::Mul:
            case RnnMerge::Average:
                kernels::rnn_merge_forward(be_.stream(), d_.merge, fwd, rev, pitch, y, h, out_rows, d_.hidden);
                break;
        }
        if (d_.return_sequences) kernels::rnn_zero_padding(be_.stream(), lengths_.data(), y, d_.batch, d_.steps, out_);
    }

    // dL/dY and dL/dhy from dy: the merge's backward into the one the output was read from,
    // zeros in the other; dL/dY zero at padded steps.
    void split_gradient(const float* dy) {
        const std::size_t n = static_cast<std::size_t>(d_.batch), h = static_cast<std::size_t>(d_.hidden);
        const std::size_t rows = n * d_.steps, width = static_cast<std::size_t>(dirs_) * h;
        if (!d_.return_sequences) THRESHER_CUDA_CHECK(cudaMemsetAsync(dy_all_.data(), 0, rows * width * sizeof(float), be_.stream()));
        float* target = d_.return_sequences ? dy_all_.data() : dhy_.data();
        float* target_rev = d_.return_sequences ? dy_all_.data() + h : dhy_.data() + state_values();
        const float* fwd = d_.return_sequences ? y_all_.data() : hy_.data();
        const float* rev = d_.return_sequences ? y_all_.data() + h : hy_.data() + state_values();
        const std::size_t pitch = d_.return_sequences ? width : h;
        const std::size_t out_rows = d_.return_sequences ? rows : n;
        switch (d_.merge) {
            case RnnMerge::None: be_.copy(target, dy, out_rows * h); break;
            case RnnMerge::Concat:
                if (d_.return_sequences) {
                    be_.copy(target, dy, rows * width);
                } else {
                    be_.copy_rows(target, h, dy, 2 * h, h, n);
                    be_.copy_rows(target_rev, h, dy + h, 2 * h, h, n);
                }
                break;
            case RnnMerge::Sum:
            case RnnMerge::Mul:
            case RnnMerge::Average:
                kernels::rnn_merge_backward(be_.stream(), d_.merge, dy, h, fwd, rev, pitch, target, target_rev, pitch,
                                            out_rows, d_.hidden);
                break;
        }
        if (d_.return_sequences)
            kernels::rnn_zero_padding(be_.stream(), lengths_.data(), dy_all_.data(), d_.batch, d_.steps,
                                      static_cast<int>(width));
    }

    CudaBackend& be_;
    const CudaLibraries& lib_;
    RnnDesc d_;
    int dirs_ = 1, out_ = 0;
    float padding_fill_ = 0.f;  // cuDNN writes it at padded steps of its outputs
    DropoutDesc dropout_;
    CudnnRnnDesc rnn_;
    CudnnRnnDataDesc x_desc_, y_desc_;
    TensorDesc h_desc_;
    std::size_t workspace_bytes_ = 0, reserve_bytes_ = 0, weight_bytes_ = 0;
    DeviceArray<unsigned char> reserve_;
    DeviceArray<float> weights_, dweights_, y_all_, dy_all_, hy_, dhy_, dx_scratch_;
    UploadedInts lengths_{static_cast<std::size_t>(d_.batch)};
    DeviceArray<std::uint32_t> map_;
};

}  // namespace

std::unique_ptr<RnnOp> make_rnn_op(CudaBackend& be, const RnnDesc& d) { return std::make_unique<CudaRnnOp>(be, d); }

}  // namespace thresher::backend::cuda
