// dist::WorkerEncoder on the GPU: the residual is a device buffer of the worker's own backend,
// accumulated with the backend's axpy, encoded, clipped and applied by DeviceEncoder
// (device_encoder.h). Only message bodies cross the bus; residual() downloads r for accounting.
// Made by CudaBackend::make_worker_encoder; used from the worker's thread only, like its backend.
#pragma once

#include <cstddef>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/device_encoder.h"
#include "codec/worker_encoder.h"

namespace thresher::backend::cuda {

class CudaWorkerEncoder final : public dist::WorkerEncoder {
public:
    CudaWorkerEncoder(Backend& cuda_backend, std::size_t length);

    std::size_t length() const override { return residual_.size(); }
    void accumulate(float share, const float* update) override;
    void encode(float threshold, dist::EncodedUpdate& out) override;
    void post_process(dist::ResidualPostProcessor& processor, int iteration, float threshold) override;
    void apply(const dist::EncodedUpdate& message, float* target, float scale) override;
    std::vector<float> residual() const override;

private:
    Backend& backend_;
    Buffer residual_;  // zero-filled by allocate()
    DeviceEncoder encoder_;
};

}  // namespace thresher::backend::cuda
