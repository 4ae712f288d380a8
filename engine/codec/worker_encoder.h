// One gradient-sharing worker's residual and threshold encoder, kept in the memory its replica
// lives in: host memory for the CPU backend (HostWorkerEncoder, below), the GPU's for CUDA
// (backend/cuda/cuda_worker_encoder.cpp, made by Backend::make_worker_encoder). The master
// (dist/masters/gradient_sharing) speaks only this interface, so it holds no CUDA code and the
// GPU path moves only message bodies across the bus.
//
// Every pointer argument is in the backend's memory: the update the updater left in the
// network's gradient buffer, the parameters a message is applied to. Calls come from the worker's
// own thread, one at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "codec/encoded_update.h"
#include "codec/residual.h"
#include "codec/threshold_encoder.h"

namespace thresher::dist {

class WorkerEncoder {
public:
    virtual ~WorkerEncoder() = default;

    virtual std::size_t length() const = 0;
    // r += share · u.
    virtual void accumulate(float share, const float* update) = 0;
    // Entries of r with |r| ≥ τ leave as ±τ in `out`; r keeps the rest (ThresholdEncoder::encode).
    virtual void encode(float threshold, EncodedUpdate& out) = 0;
    // The residual post-processing (ResidualPostProcessor::process) on r. A device encoder may
    // support only some processors and throws thresher::Error naming the others.
    virtual void post_process(ResidualPostProcessor& processor, int iteration, float threshold) = 0;
    // target += scale · message (dist::apply): −1 applies a message to parameters.
    virtual void apply(const EncodedUpdate& message, float* target, float scale) = 0;
    // A host copy of r (accounting, residual statistics).
    virtual std::vector<float> residual() const = 0;
};

// The CPU backend's: r is a host vector and the work is dist::ThresholdEncoder and dist::apply.
class HostWorkerEncoder final : public WorkerEncoder {
public:
    explicit HostWorkerEncoder(std::size_t length);

    std::size_t length() const override { return residual_.size(); }
    void accumulate(float share, const float* update) override;
    void encode(float threshold, EncodedUpdate& out) override;
    void post_process(ResidualPostProcessor& processor, int iteration, float threshold) override;
    void apply(const EncodedUpdate& message, float* target, float scale) override;
    std::vector<float> residual() const override { return residual_; }

private:
    std::vector<float> residual_;
    ThresholdEncoder encoder_;
};

}  // namespace thresher::dist
