#include "codec/worker_encoder.h"

namespace thresher::dist {

HostWorkerEncoder::HostWorkerEncoder(std::size_t length) : residual_(length, 0.f), encoder_(length) {}

void HostWorkerEncoder::accumulate(float share, const float* update) {
    float* r = residual_.data();
    const std::size_t n = residual_.size();
    for (std::size_t i = 0; i < n; ++i) r[i] += share * update[i];
}

void HostWorkerEncoder::encode(float threshold, EncodedUpdate& out) { encoder_.encode(residual_.data(), threshold, out); }

void HostWorkerEncoder::post_process(ResidualPostProcessor& processor, int iteration, float threshold) {
    processor.process(iteration, threshold, residual_.data(), residual_.size());
}

void HostWorkerEncoder::apply(const EncodedUpdate& message, float* target, float scale) {
    dist::apply(message, target, scale);
}

}  // namespace thresher::dist
