// Status codes of the CUDA runtime, cuBLAS and cuDNN become thresher::BackendError at one place,
// keeping the library's own name for the code, the statement that failed and where it was (as
// ggml's CUDA_CHECK does). THRESHER_CUDA_CHECK(cudaMalloc(&p, n)) throws
//   "CUDA: cudaMalloc(&p, n) failed: cudaErrorMemoryAllocation (out of memory) at file:line".
// Kernel launches report through cudaGetLastError(), checked right after each launch.
// The macro only captures the text and place; control flow stays visible (it throws, never
// returns). Library-specific overloads live in library_check.h so that .cu files, which need
// only the runtime, do not parse the cuBLAS and cuDNN headers.
#pragma once

#include <cuda_runtime_api.h>

namespace thresher::backend::cuda {

[[noreturn]] void throw_cuda_error(const char* library, const char* code_name, const char* text,
                                   const char* call, const char* file, int line);

inline void check(cudaError_t status, const char* call, const char* file, int line) {
    if (status != cudaSuccess)
        throw_cuda_error("CUDA", cudaGetErrorName(status), cudaGetErrorString(status), call, file,
                         line);
}

// After a kernel launch: a bad configuration shows here, a fault in the kernel at the next
// synchronising call.
void check_launch(const char* kernel, const char* file, int line);

}  // namespace thresher::backend::cuda

#define THRESHER_CUDA_CHECK(call) ::thresher::backend::cuda::check((call), #call, __FILE__, __LINE__)
#define THRESHER_CUDA_LAUNCHED(kernel) \
    ::thresher::backend::cuda::check_launch(#kernel, __FILE__, __LINE__)
