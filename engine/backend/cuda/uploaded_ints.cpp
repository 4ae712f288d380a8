#include "backend/cuda/uploaded_ints.h"

#include <cstring>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace thresher::backend::cuda {

UploadedInts::UploadedInts(std::size_t capacity) : device_(capacity), host_(capacity) {
    cudaEvent_t copied = nullptr;
    THRESHER_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    copied_.reset(copied);
}

bool UploadedInts::upload(cudaStream_t stream, const int* values, std::size_t n) {
    if (n > device_.size())
        throw BackendError("CUDA: " + std::to_string(n) + " values for a device array of " + std::to_string(device_.size()));
    if (uploaded_ && n == count_ && (n == 0 || std::memcmp(host_.data(), values, n * sizeof(int)) == 0)) return false;
    // The previous copy must have left the pinned buffer before it is overwritten.
    THRESHER_CUDA_CHECK(cudaEventSynchronize(copied_.get()));
    if (n) {
        std::memcpy(host_.data(), values, n * sizeof(int));
        THRESHER_CUDA_CHECK(cudaMemcpyAsync(device_.data(), host_.data(), n * sizeof(int), cudaMemcpyHostToDevice, stream));
    }
    THRESHER_CUDA_CHECK(cudaEventRecord(copied_.get(), stream));
    count_ = n;
    uploaded_ = true;
    return true;
}

}  // namespace thresher::backend::cuda
