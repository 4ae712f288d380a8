// 2-D convolution on cuDNN's convolution API (cudnn_cnn, still in cuDNN 9). Planned once per
// shape: descriptors, and for each of the three passes the fastest algorithm cudnnFind* measures
// on this GPU, chosen at construction and kept; the workspace they need is the backend's shared
// scratch. Bias and the activation follow the convolution in one element-wise kernel.
//
// Precision: the descriptor asks for FMA math, so cuDNN may not use TF32 tensor cores (which it
// otherwise does for FP32 on Ampere and later): results must agree with the CPU backend.
//
// Padding: cuDNN pads symmetrically. DL4J's Same mode can pad one more at the bottom or right;
// such shapes are convolved over an explicitly zero-padded copy of x with no cuDNN padding, and
// dx is computed for the padded shape and cropped back.
//
// A transposed convolution (ConvDesc::transposed) is the adjoint of the ordinary convolution from
// its output's shape to its input's, whose filter [K = in_c, C = out_c, kh, kw] is exactly the
// transposed weights [in_c x out_c x kh x kw]: its forward is that convolution's backward-data,
// its backward-data that convolution's forward, and its filter gradient that convolution's filter
// gradient with the roles of x and dy swapped. So one set of descriptors serves both; "a" below
// is the ordinary convolution's input side (x, or a transposed op's y) and "b" its output side.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/ops.h"
#include "core/error.h"

namespace thresher::backend::cuda {

namespace {

// Algorithms needing more scratch than this are passed over (cuDNN's fastest FFT variants can ask
// for gigabytes on big layers).
constexpr std::size_t kWorkspaceLimit = std::size_t(1) << 30;

// The first (fastest) result cuDNN could run within the limit, without tensor-core math.
template <class Perf>
const Perf* pick(const std::vector<Perf>& results, int returned) {
    for (int i = 0; i < returned; ++i) {
        const Perf& p = results[static_cast<std::size_t>(i)];
        if (p.status == CUDNN_STATUS_SUCCESS && p.memory <= kWorkspaceLimit &&
            p.mathType != CUDNN_TENSOR_OP_MATH && p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
            return &p;
    }
    return nullptr;
}

class CudaConvOp final : public ConvOp {
public:
    CudaConvOp(CudaBackend& be, const ConvDesc& d) : be_(be), lib_(libraries()), d_(d) {
        const int a_c = d.transposed ? d.out_c : d.in_c, a_h = d.transposed ? d.out_h : d.in_h,
                  a_w = d.transposed ? d.out_w : d.in_w;
        const int b_c = d.transposed ? d.in_c : d.out_c, b_h = d.transposed ? d.in_h : d.out_h,
                  b_w = d.transposed ? d.in_w : d.out_w;
        if (d.transposed && d.groups != 1)
            throw BackendError("CUDA convolution " + describe() + ": a transposed convolution has one group");
        a_c_ = a_c;
        a_h_ = a_h;
        a_w_ = a_w;
        symmetric_ = d.pad_t == d.pad_b && d.pad_l == d.pad_r;
        x_h_ = symmetric_ ? a_h : a_h + d.pad_t + d.pad_b;
        x_w_ = symmetric_ ? a_w : a_w + d.pad_l + d.pad_r;
        x_desc_ = make_tensor_desc(d.batch, a_c, x_h_, x_w_);
        w_desc_ = make_filter_desc(b_c, a_c / d.groups, d.kh, d.kw);
        y_desc_ = make_tensor_desc(d.batch, b_c, b_h, b_w);
        cudnnConvolutionDescriptor_t conv = nullptr;
        THRESHER_CUDA_CHECK(lib_.cudnnCreateConvolutionDescriptor(&conv));
        conv_.reset(conv);
        THRESHER_CUDA_CHECK(lib_.cudnnSetConvolution2dDescriptor(
            conv, symmetric_ ? d.pad_t : 0, symmetric_ ? d.pad_l : 0, d.sh, d.sw, d.dh, d.dw,
            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        THRESHER_CUDA_CHECK(lib_.cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH));
        if (d.groups > 1) THRESHER_CUDA_CHECK(lib_.cudnnSetConvolutionGroupCount(conv, d.groups));

        int n = 0, c = 0, h = 0, w = 0;
        THRESHER_CUDA_CHECK(
            lib_.cudnnGetConvolution2dForwardOutputDim(conv, x_desc_.get(), w_desc_.get(), &n, &c, &h, &w));
        if (n != d.batch || c != b_c || h != b_h || w != b_w)
            throw BackendError("CUDA convolution " + describe() + ": cuDNN computes " +
                               std::string(d.transposed ? "an input of " : "an output of ") +
                               std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w) +
                               " for this " + (d.transposed ? "output" : "input") +
                               ", kernel, stride and padding");
        if (!symmetric_)
            padded_ = DeviceArray<float>(static_cast<std::size_t>(d.batch) * a_c * x_h_ * x_w_);
        choose_algorithms();
    }

    void forward(const float* x, const float* w, const float* b, float* y) override {
        be_.activate();
        const float one = 1.f, zero = 0.f;
        void* ws = be_.workspace(workspace_bytes_);
        if (d_.transposed) {
            // y = the ordinary convolution's backward-data of x, padded and cropped back when the
            // padding is asymmetric.
            float* target = symmetric_ ? y : padded_.data();
            THRESHER_CUDA_CHECK(lib_.cudnnConvolutionBackwardData(
                be_.cudnn(), &one, w_desc_.get(), w, y_desc_.get(), x, conv_.get(), bwd_data_algo_, ws,
                workspace_bytes_, &zero, x_desc_.get(), target));
            if (!symmetric_) crop_into(y);
        } else {
            THRESHER_CUDA_CHECK(lib_.cudnnConvolutionForward(be_.cudnn(), &one, x_desc_.get(), input(x),
                                                        w_desc_.get(), w, conv_.get(), fwd_algo_, ws,
                                                        workspace_bytes_, &zero, y_desc_.get(), y));
        }
        // Softmax is not an element-wise activation; like the CPU backend's convolution, leave it out.
        ActivationSpec act = d_.act;
        if (act.kind == Activation::Softmax) act.kind = Activation::Identity;
        const std::size_t hw = static_cast<std::size_t>(d_.out_h) * d_.out_w;
        kernels::bias_activation(be_.stream(), y, b, static_cast<std::size_t>(d_.batch) * d_.out_c * hw,
                                 d_.out_c, hw, act);
    }

    void backward(const float* x, const float* w, const float* dz, float* dx, float* dw,
                  float* db) override {
        be_.activate();
        const float one = 1.f, zero = 0.f;
        void* ws = be_.workspace(workspace_bytes_);
        kernels::channel_sums(be_.stream(), dz, db, d_.batch, d_.out_c,
                              static_cast<std::size_t>(d_.out_h) * d_.out_w);
        if (d_.transposed) {
            // dz sits on the ordinary convolution's input side and x on its output side.
            const float* a = input(dz);
            THRESHER_CUDA_CHECK(lib_.cudnnConvolutionBackwardFilter(
                be_.cudnn(), &one, x_desc_.get(), a, y_desc_.get(), x, conv_.get(), bwd_filter_algo_, ws,
                workspace_bytes_, &zero, w_desc_.get(), dw));
            if (dx)
                THRESHER_CUDA_CHECK(lib_.cudnnConvolutionForward(be_.cudnn(), &one, x_desc_.get(), a,
                                                            w_desc_.get(), w, conv_.get(), fwd_algo_, ws,
                                                            workspace_bytes_, &zero, y_desc_.get(), dx));
            return;
        }
        THRESHER_CUDA_CHECK(lib_.cudnnConvolutionBackwardFilter(
            be_.cudnn(), &one, x_desc_.get(), input(x), y_desc_.get(), dz, conv_.get(),
            bwd_filter_algo_, ws, workspace_bytes_, &zero, w_desc_.get(), dw));
        if (!dx) return;
        // Asymmetric padding: dL/d(padded x) into the scratch copy (the filter gradient above was
        // enqueued first, so it has read it), then the interior back into dx.
        float* target = symmetric_ ? dx : padded_.data();
        THRESHER_CUDA_CHECK(lib_.cudnnConvolutionBackwardData(
            be_.cudnn(), &one, w_desc_.get(), w, y_desc_.get(), dz, conv_.get(), bwd_data_algo_, ws,
            workspace_bytes_, &zero, x_desc_.get(), target));
        if (!symmetric_) crop_into(dx);
    }

private:
    // The input side's tensor as cuDNN should read it: itself, or its zero-padded copy.
    const float* input(const float* a) {
        if (symmetric_) return a;
        kernels::pad(be_.stream(), a, padded_.data(), static_cast<std::size_t>(d_.batch) * a_c_,
                     a_h_, a_w_, d_.pad_t, d_.pad_l, x_h_, x_w_);
        return padded_.data();
    }
    // The interior of the padded input-side scratch into `a`.
    void crop_into(float* a) {
        kernels::crop(be_.stream(), padded_.data(), a, static_cast<std::size_t>(d_.batch) * a_c_, a_h_,
                      a_w_, d_.pad_t, d_.pad_l, x_h_, x_w_);
    }

    void choose_algorithms() {
        cudnnHandle_t h = be_.cudnn();
        int max_count = 0, returned = 0;

        THRESHER_CUDA_CHECK(lib_.cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
        std::vector<cudnnConvolutionFwdAlgoPerf_t> fwd(static_cast<std::size_t>(std::max(max_count, 1)));
        THRESHER_CUDA_CHECK(lib_.cudnnFindConvolutionForwardAlgorithm(
            h, x_desc_.get(), w_desc_.get(), conv_.get(), y_desc_.get(), max_count, &returned, fwd.data()));
        const auto* f = pick(fwd, returned);
        if (!f) no_algorithm("forward");
        fwd_algo_ = f->algo;

        THRESHER_CUDA_CHECK(lib_.cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
        std::vector<cudnnConvolutionBwdDataAlgoPerf_t> data(static_cast<std::size_t>(std::max(max_count, 1)));
        THRESHER_CUDA_CHECK(lib_.cudnnFindConvolutionBackwardDataAlgorithm(
            h, w_desc_.get(), y_desc_.get(), conv_.get(), x_desc_.get(), max_count, &returned, data.data()));
        const auto* bd = pick(data, returned);
        if (!bd) no_algorithm("backward data");
        bwd_data_algo_ = bd->algo;

        THRESHER_CUDA_CHECK(lib_.cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
        std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> filter(static_cast<std::size_t>(std::max(max_count, 1)));
        THRESHER_CUDA_CHECK(lib_.cudnnFindConvolutionBackwardFilterAlgorithm(
            h, x_desc_.get(), y_desc_.get(), conv_.get(), w_desc_.get(), max_count, &returned, filter.data()));
        const auto* bf = pick(filter, returned);
        if (!bf) no_algorithm("backward filter");
        bwd_filter_algo_ = bf->algo;

        // cuDNN's own figure for the chosen algorithms, not the Find results' (which can differ).
        std::size_t a = 0, b = 0, c = 0;
        THRESHER_CUDA_CHECK(lib_.cudnnGetConvolutionForwardWorkspaceSize(
            h, x_desc_.get(), w_desc_.get(), conv_.get(), y_desc_.get(), fwd_algo_, &a));
        THRESHER_CUDA_CHECK(lib_.cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, w_desc_.get(), y_desc_.get(), conv_.get(), x_desc_.get(), bwd_data_algo_, &b));
        THRESHER_CUDA_CHECK(lib_.cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, x_desc_.get(), y_desc_.get(), conv_.get(), w_desc_.get(), bwd_filter_algo_, &c));
        workspace_bytes_ = std::max({a, b, c});
        be_.workspace(workspace_bytes_);  // allocate now, not in the first iteration
    }

    [[noreturn]] void no_algorithm(const char* pass) const {
        throw BackendError("CUDA convolution " + describe() + ": cuDNN found no " + pass +
                           " algorithm that runs in FP32 within " +
                           std::to_string(kWorkspaceLimit >> 20) + " MiB of workspace");
    }

    std::string describe() const {
        auto s = [](int v) { return std::to_string(v); };
        return s(d_.batch) + "x" + s(d_.in_c) + "x" + s(d_.in_h) + "x" + s(d_.in_w) + " -> " +
               s(d_.out_c) + "x" + s(d_.out_h) + "x" + s(d_.out_w) + " kernel " + s(d_.kh) + "x" +
               s(d_.kw);
    }

    CudaBackend& be_;
    const CudaLibraries& lib_;
    ConvDesc d_;
    bool symmetric_ = true;
    int a_c_ = 0, a_h_ = 0, a_w_ = 0;  // the ordinary convolution's input side (x, or a transposed op's y)
    int x_h_ = 0, x_w_ = 0;            // that side as cuDNN sees it (padded when asymmetric)
    TensorDesc x_desc_, y_desc_;
    FilterDesc w_desc_;
    ConvolutionDesc conv_;
    cudnnConvolutionFwdAlgo_t fwd_algo_{};
    cudnnConvolutionBwdDataAlgo_t bwd_data_algo_{};
    cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo_{};
    std::size_t workspace_bytes_ = 0;
    DeviceArray<float> padded_;
};

}  // namespace

std::unique_ptr<ConvOp> make_conv_op(CudaBackend& be, const ConvDesc& d) {
    return std::make_unique<CudaConvOp>(be, d);
}

}  // namespace thresher::backend::cuda
