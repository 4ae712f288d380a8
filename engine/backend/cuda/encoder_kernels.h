// Launchers of the device encoder's kernels (encoder_kernels.cu); device_encoder.cpp drives them.
// All enqueue on `stream` and return without waiting.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace thresher::backend::cuda::encoder_kernels {

// Bitmap words of the message for residual r[0, n) and threshold t: words[k] gets the 2-bit
// codes of parameters 16k..16k+15 (01 +τ, 10 −τ), counts[k] their number; every entry that
// crosses has ±t moved out of r. words and counts hold ceil(n/16) values.
void encode(cudaStream_t, float* r, std::size_t n, float t, std::uint32_t* words,
            std::uint32_t* counts);

// Exclusive prefix sum of `words` counts (CUB); scan_temp_bytes() says how much scratch it needs.
std::size_t scan_temp_bytes(std::size_t words);
void exclusive_sum(cudaStream_t, const std::uint32_t* counts, std::uint32_t* offsets,
                   std::size_t words, void* temp, std::size_t temp_bytes);

// The sparse message: entry ±(i+1) for each set code, word k's entries from offsets[k] on.
void write_sparse(cudaStream_t, const std::uint32_t* words, const std::uint32_t* offsets,
                  std::size_t nwords, std::int32_t* out);

// target[i] += plus for +τ entries, += -plus for −τ entries.
void apply_sparse(cudaStream_t, const std::int32_t* entries, std::size_t count, float plus,
                  float* target);
void apply_bitmap(cudaStream_t, const std::uint32_t* words, std::size_t n, float plus,
                  float* target);

// r[i] = clamp(r[i], -c, c), NaN unchanged (ResidualClipping's expression).
void clip(cudaStream_t, float* r, std::size_t n, float c);

}  // namespace thresher::backend::cuda::encoder_kernels
