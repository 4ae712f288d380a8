// cuBLAS and cuDNN overloads of check() (see cuda_check.h): the same macro turns their status
// codes into thresher::BackendError naming the library's code, the call and the place. (A status
// exists only once the libraries are loaded, so looking up their messages cannot fail.)
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_libraries.h"

namespace thresher::backend::cuda {

inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw_cuda_error("cuBLAS", libraries().cublasGetStatusName(status),
                         libraries().cublasGetStatusString(status), call, file, line);
}

inline void check(cudnnStatus_t status, const char* call, const char* file, int line) {
    if (status != CUDNN_STATUS_SUCCESS)
        throw_cuda_error("cuDNN", "cudnnStatus_t", libraries().cudnnGetErrorString(status), call,
                         file, line);
}

}  // namespace thresher::backend::cuda
