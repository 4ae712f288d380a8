// Max and average pooling on the backend's own kernels (pool_kernels.cu explains why not cuDNN's).
// Training-mode max pooling keeps where each maximum came from inside the op for the backward
// pass, as the CPU backend keeps oneDNN's workspace.
#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/ops.h"

namespace thresher::backend::cuda {

namespace {

class CudaPoolOp final : public PoolOp {
public:
    CudaPoolOp(CudaBackend& be, const PoolDesc& d) : be_(be), d_(d) {
        if (d.max) {
            const std::size_t outputs = static_cast<std::size_t>(d.batch) * d.c * d.out_h * d.out_w;
            argmax_ = DeviceArray<int>(outputs);
            // No forward yet: a backward now routes nothing anywhere (every position is -1).
            if (outputs)
                THRESHER_CUDA_CHECK(cudaMemsetAsync(argmax_.data(), 0xff, outputs * sizeof(int), be.stream()));
        }
    }

    void forward(const float* x, float* y, Mode mode) override {
        be_.activate();
        if (d_.max)
            kernels::max_pool_forward(be_.stream(), d_, x, y, mode == Mode::Training ? argmax_.data() : nullptr);
        else
            kernels::avg_pool_forward(be_.stream(), d_, x, y);
    }

    void backward(const float* dy, float* dx) override {
        be_.activate();
        if (d_.max)
            kernels::max_pool_backward(be_.stream(), d_, argmax_.data(), dy, dx);
        else
            kernels::avg_pool_backward(be_.stream(), d_, dy, dx);
    }

private:
    CudaBackend& be_;
    PoolDesc d_;
    DeviceArray<int> argmax_;
};

}  // namespace

std::unique_ptr<PoolOp> make_pool_op(CudaBackend& be, const PoolDesc& d) {
    return std::make_unique<CudaPoolOp>(be, d);
}

}  // namespace thresher::backend::cuda
