// Dense layer on cuBLAS. cuBLAS is column-major; a row-major [r x c] matrix is the same memory as
// a column-major [c x r] one, i.e. its transpose. So with row-major x [b x in], W [in x out],
// y [b x out] and dz [b x out], each product is computed as its transpose:
//   y  = x W     ->  y^T  = W^T x^T      gemm(N, N, m=out, n=b,   k=in,  A=W,  B=x)
//   dW = x^T dz  ->  dW^T = dz^T x       gemm(N, T, m=out, n=in,  k=b,   A=dz, B=x)
//   dx = dz W^T  ->  dx^T = W dz^T       gemm(T, N, m=in,  n=b,   k=out, A=W,  B=dz)
// where every "X^T" on the right is simply X's memory read column-major (leading dimension = its
// row-major row length). Bias and activation follow in one kernel, softmax in a row kernel.
#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/ops.h"

namespace thresher::backend::cuda {

namespace {

class CudaDenseOp final : public DenseOp {
public:
    CudaDenseOp(CudaBackend& be, const DenseDesc& d) : be_(be), lib_(libraries()), d_(d) {}

    void forward(const float* x, const float* w, const float* b, float* y) override {
        be_.activate();
        const float one = 1.f, zero = 0.f;
        THRESHER_CUDA_CHECK(lib_.cublasSgemm_v2(be_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, d_.out, d_.batch,
                                        d_.in, &one, w, d_.out, x, d_.in, &zero, y, d_.out));
        const std::size_t n = static_cast<std::size_t>(d_.batch) * static_cast<std::size_t>(d_.out);
        // Softmax is row-wise: the bias goes in first (identity), then the rows are normalised.
        kernels::bias_activation(be_.stream(), y, b, n, d_.out, 1, d_.act);
        if (d_.act.kind == Activation::Softmax)
            kernels::softmax_forward(be_.stream(), y, y, d_.batch, d_.out);
    }

    void backward(const float* x, const float* w, const float* dz, float* dx, float* dw,
                  float* db) override {
        be_.activate();
        const float one = 1.f, zero = 0.f;
        THRESHER_CUDA_CHECK(lib_.cublasSgemm_v2(be_.cublas(), CUBLAS_OP_N, CUBLAS_OP_T, d_.out, d_.in,
                                        d_.batch, &one, dz, d_.out, x, d_.in, &zero, dw, d_.out));
        if (dx)
            THRESHER_CUDA_CHECK(lib_.cublasSgemm_v2(be_.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, d_.in, d_.batch,
                                            d_.out, &one, w, d_.out, dz, d_.out, &zero, dx, d_.in));
        kernels::column_sums(be_.stream(), dz, db, d_.batch, d_.out);
    }

private:
    CudaBackend& be_;
    const CudaLibraries& lib_;
    DenseDesc d_;
};

}  // namespace

std::unique_ptr<DenseOp> make_dense_op(CudaBackend& be, const DenseDesc& d) {
    return std::make_unique<CudaDenseOp>(be, d);
}

}  // namespace thresher::backend::cuda
