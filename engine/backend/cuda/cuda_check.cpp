#include "backend/cuda/cuda_check.h"

#include <string>

#include "core/error.h"

namespace thresher::backend::cuda {

void throw_cuda_error(const char* library, const char* code_name, const char* text,
                      const char* call, const char* file, int line) {
    throw BackendError(std::string(library) + ": " + call + " failed: " + code_name + " (" +
                       (text ? text : "no description") + ") at " + file + ":" +
                       std::to_string(line));
}

void check_launch(const char* kernel, const char* file, int line) {
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess)
        throw_cuda_error("CUDA", cudaGetErrorName(status), cudaGetErrorString(status),
                         (std::string("launching ") + kernel).c_str(), file, line);
}

}  // namespace thresher::backend::cuda
