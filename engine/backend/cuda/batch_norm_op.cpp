// Batch normalisation on the backend's own kernels (batch_norm_kernels.cu explains why not
// cuDNN's). The op keeps no state: backward reads the batch statistics the layer passes back.
#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/ops.h"

namespace thresher::backend::cuda {

namespace {

class CudaBatchNormOp final : public BatchNormOp {
public:
    CudaBatchNormOp(CudaBackend& be, const BatchNormDesc& d) : be_(be), d_(d) {}

    void forward_training(const float* x, const float* gamma, const float* beta, float* y,
                          float* batch_mean, float* batch_var) override {
        be_.activate();
        kernels::batch_norm_statistics(be_.stream(), d_, x, batch_mean, batch_var);
        kernels::batch_norm_normalize(be_.stream(), d_, x, gamma, beta, batch_mean, batch_var, y);
    }

    void forward_inference(const float* x, const float* gamma, const float* beta,
                           const float* mean, const float* var, float* y) override {
        be_.activate();
        kernels::batch_norm_normalize(be_.stream(), d_, x, gamma, beta, mean, var, y);
    }

    void backward(const float* x, const float* dy, const float* gamma, const float*,
                  const float* batch_mean, const float* batch_var, float* dx, float* dgamma,
                  float* dbeta) override {
        be_.activate();
        kernels::batch_norm_backward(be_.stream(), d_, x, dy, gamma, batch_mean, batch_var, dx,
                                     dgamma, dbeta);
    }

private:
    CudaBackend& be_;
    BatchNormDesc d_;
};

}  // namespace

std::unique_ptr<BatchNormOp> make_batch_norm_op(CudaBackend& be, const BatchNormDesc& d) {
    return std::make_unique<CudaBatchNormOp>(be, d);
}

}  // namespace thresher::backend::cuda
