// Threshold encoding with the residual on the GPU: the device half of gradient sharing. It makes
// the very messages dist::ThresholdEncoder makes on the CPU (same entries, same Sparse/Bitmap
// choice with the same hysteresis, so serialize() gives the same bytes) and leaves the residual
// bit for bit as the CPU encoder leaves it; only the message body crosses to the host.
//
// One worker's iteration with it (r, u and θ in the CUDA backend's memory):
//     backend.axpy(share, u, r, n);                    r += share · u
//     encoder.encode(r, τ, message);                   message on the host, r keeps the remainder
//     encoder.post_process(clipping, iteration, τ, r); DL4J's residual clipping, on the device
//     encoder.apply(message, θ, -1.f);                 θ -= message (and every other worker's)
//
// How it runs (encoder_kernels.cu): one thread per parameter; a warp builds two bitmap words with
// two ballots (the 16 lanes of a word vote "+τ" and "−τ") and moves ±τ out of the entries that
// cross; a prefix sum over the words' entry counts gives the total, which decides the format
// exactly as the CPU encoder decides it, and each word's offset in a sparse message. A Bitmap
// message is the word array as is; a Sparse one is written by one thread per word in ascending
// index order. Either way the host receives 16 + 4·count or 16 + N/4 bytes' worth.
//
// Qt-free and free of CUDA headers, so any engine code may hold one; it needs a backend that
// create_backend("cuda:N") made (thresher::Error otherwise).
#pragma once

#include <cstddef>
#include <memory>

#include "backend/backend.h"
#include "codec/encoded_update.h"
#include "codec/residual.h"
#include "codec/threshold_encoder.h"

namespace thresher::backend::cuda {

class DeviceEncoder {
public:
    using Format = dist::EncodedUpdate::Format;
    using FormatPolicy = dist::ThresholdEncoder::FormatPolicy;

    // `length` is N (at most dist::kMaxEncodedLength). The backend must outlive the encoder.
    DeviceEncoder(Backend& cuda_backend, std::size_t length, FormatPolicy policy = FormatPolicy::Auto);
    ~DeviceEncoder();
    DeviceEncoder(const DeviceEncoder&) = delete;
    DeviceEncoder& operator=(const DeviceEncoder&) = delete;

    // dist::ThresholdEncoder::encode with `residual` in device memory (length() floats). Throws
    // thresher::Error for a threshold that is not finite and positive. Returns when `out` is
    // complete; the residual update is enqueued before it and visible to later backend work.
    void encode(float* residual, float threshold, dist::EncodedUpdate& out);
    dist::EncodedUpdate encode(float* residual, float threshold);

    // dist::apply on device memory: target[i] += scale·(±τ) for every entry of `u` (scale −1
    // applies a message to parameters, +1 decodes into a zeroed vector). Bit for bit what the CPU
    // apply() computes. `u` must be well formed for length() parameters (made by an encoder or
    // dist::deserialize). Returns once `u` may be destroyed; the additions are enqueued.
    void apply(const dist::EncodedUpdate& u, float* target, float scale);

    // The residual post-processing of dist::ResidualPostProcessor::process, on device memory:
    // ResidualClipping (clamps to ±multiple·τ on its iterations) and NoResidualProcessing are
    // supported; any other processor is a thresher::Error.
    void post_process(const dist::ResidualPostProcessor&, int iteration, float threshold,
                      float* residual);

    std::size_t length() const;
    FormatPolicy policy() const;
    // The mode the next encode() starts in.
    Format mode() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace thresher::backend::cuda
