// Host integers the sequence kernels read on the device (a batch's lengths, the row indices of
// a RowGatherOp and their order), copied through pinned memory so that the host does not wait for the stream
// (a pageable copy would). Values equal to the last ones copied (a backward after its forward, a
// batch with the same lengths) are not copied again.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "backend/cuda/handles.h"

namespace thresher::backend::cuda {

class UploadedInts {
public:
    explicit UploadedInts(std::size_t capacity);
    // Enqueues the copy of values[0..n) (n <= capacity) on `stream`; false when they are the last
    // values copied, which are already there.
    bool upload(cudaStream_t stream, const int* values, std::size_t n);
    const int* data() const { return device_.data(); }
    std::size_t capacity() const { return device_.size(); }

private:
    DeviceArray<int> device_;
    PinnedArray<int> host_;  // the values last copied
    Event copied_;           // when that copy has left host_
    std::size_t count_ = 0;
    bool uploaded_ = false;
};

}  // namespace thresher::backend::cuda
