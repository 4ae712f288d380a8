#include "backend/cuda/cuda_worker_encoder.h"

namespace thresher::backend::cuda {

CudaWorkerEncoder::CudaWorkerEncoder(Backend& cuda_backend, std::size_t length)
    : backend_(cuda_backend), residual_(cuda_backend, length), encoder_(cuda_backend, length) {}

void CudaWorkerEncoder::accumulate(float share, const float* update) {
    backend_.axpy(share, update, residual_.data(), residual_.size());
}

void CudaWorkerEncoder::encode(float threshold, dist::EncodedUpdate& out) {
    encoder_.encode(residual_.data(), threshold, out);
}

void CudaWorkerEncoder::post_process(dist::ResidualPostProcessor& processor, int iteration, float threshold) {
    encoder_.post_process(processor, iteration, threshold, residual_.data());
}

void CudaWorkerEncoder::apply(const dist::EncodedUpdate& message, float* target, float scale) {
    encoder_.apply(message, target, scale);
}

std::vector<float> CudaWorkerEncoder::residual() const {
    std::vector<float> host(residual_.size());
    backend_.download(host.data(), residual_.data(), host.size());
    return host;
}

}  // namespace thresher::backend::cuda
