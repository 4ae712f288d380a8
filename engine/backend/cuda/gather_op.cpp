// Reshape (channels-last order) and permute on the GPU: the index map lives on the device, copied
// once when the op is planned; the kernels are in resize_kernels.cu.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/ops.h"

namespace thresher::backend::cuda {

namespace {

class CudaGatherOp final : public GatherOp {
public:
    CudaGatherOp(CudaBackend& be, const std::vector<std::uint32_t>& map) : be_(be), width_(map.size()), map_(map.size()) {
        if (width_)
            THRESHER_CUDA_CHECK(cudaMemcpyAsync(map_.data(), map.data(), width_ * sizeof(std::uint32_t),
                                                cudaMemcpyHostToDevice, be.stream()));
        THRESHER_CUDA_CHECK(cudaStreamSynchronize(be.stream()));  // `map` may go away after this
    }
    void forward(const float* x, float* y, std::size_t rows) override {
        be_.activate();
        kernels::gather_forward(be_.stream(), map_.data(), width_, rows, x, y);
    }
    void backward(const float* dy, float* dx, std::size_t rows) override {
        be_.activate();
        kernels::gather_backward(be_.stream(), map_.data(), width_, rows, dy, dx);
    }

private:
    CudaBackend& be_;
    std::size_t width_;
    DeviceArray<std::uint32_t> map_;
};

}  // namespace

std::unique_ptr<GatherOp> make_gather_op(CudaBackend& be, const std::vector<std::uint32_t>& map) {
    return std::make_unique<CudaGatherOp>(be, map);
}

}  // namespace thresher::backend::cuda
