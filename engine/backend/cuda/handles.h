// Owners for the C handles of the CUDA runtime, cuBLAS and cuDNN (STYLE.md item 5, after ggml's
// ggml-cpp.h): each is a unique_ptr with a deleter, so no code path frees anything by hand.
// Deleters ignore the status they get back: they run in destructors, where a failure (typically
// a device that already faulted) cannot be reported and must not throw.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <type_traits>

#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/library_check.h"

namespace thresher::backend::cuda {

// unique_ptr over an opaque handle type such as cudaStream_t (a pointer to an incomplete struct).
template <class Handle, class Deleter>
using UniqueHandle = std::unique_ptr<std::remove_pointer_t<Handle>, Deleter>;

// cuBLAS and cuDNN are reached through the loaded table (cuda_libraries.h); a handle of theirs
// exists only once it is loaded.
#define THRESHER_HANDLE_DELETER(Name, Handle, destroy)                       \
    struct Name {                                                            \
        void operator()(Handle h) const noexcept { (void)destroy(h); }       \
    };
THRESHER_HANDLE_DELETER(StreamDeleter, cudaStream_t, cudaStreamDestroy)
THRESHER_HANDLE_DELETER(EventDeleter, cudaEvent_t, cudaEventDestroy)
THRESHER_HANDLE_DELETER(CublasDeleter, cublasHandle_t, libraries().cublasDestroy_v2)
THRESHER_HANDLE_DELETER(CudnnDeleter, cudnnHandle_t, libraries().cudnnDestroy)
THRESHER_HANDLE_DELETER(TensorDescDeleter, cudnnTensorDescriptor_t, libraries().cudnnDestroyTensorDescriptor)
THRESHER_HANDLE_DELETER(FilterDescDeleter, cudnnFilterDescriptor_t, libraries().cudnnDestroyFilterDescriptor)
THRESHER_HANDLE_DELETER(ConvolutionDescDeleter, cudnnConvolutionDescriptor_t,
                        libraries().cudnnDestroyConvolutionDescriptor)
THRESHER_HANDLE_DELETER(DropoutDescDeleter, cudnnDropoutDescriptor_t, libraries().cudnnDestroyDropoutDescriptor)
THRESHER_HANDLE_DELETER(RnnDescDeleter, cudnnRNNDescriptor_t, libraries().cudnnDestroyRNNDescriptor)
THRESHER_HANDLE_DELETER(RnnDataDescDeleter, cudnnRNNDataDescriptor_t, libraries().cudnnDestroyRNNDataDescriptor)
#undef THRESHER_HANDLE_DELETER

using Stream = UniqueHandle<cudaStream_t, StreamDeleter>;
using Event = UniqueHandle<cudaEvent_t, EventDeleter>;
using CublasHandle = UniqueHandle<cublasHandle_t, CublasDeleter>;
using CudnnHandle = UniqueHandle<cudnnHandle_t, CudnnDeleter>;
using TensorDesc = UniqueHandle<cudnnTensorDescriptor_t, TensorDescDeleter>;
using FilterDesc = UniqueHandle<cudnnFilterDescriptor_t, FilterDescDeleter>;
using ConvolutionDesc = UniqueHandle<cudnnConvolutionDescriptor_t, ConvolutionDescDeleter>;
using DropoutDesc = UniqueHandle<cudnnDropoutDescriptor_t, DropoutDescDeleter>;
using CudnnRnnDesc = UniqueHandle<cudnnRNNDescriptor_t, RnnDescDeleter>;
using CudnnRnnDataDesc = UniqueHandle<cudnnRNNDataDescriptor_t, RnnDataDescDeleter>;

inline TensorDesc make_tensor_desc(int n, int c, int h, int w) {
    const auto& lib = libraries();
    cudnnTensorDescriptor_t d = nullptr;
    THRESHER_CUDA_CHECK(lib.cudnnCreateTensorDescriptor(&d));
    TensorDesc owned(d);
    THRESHER_CUDA_CHECK(
        lib.cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
    return owned;
}

inline FilterDesc make_filter_desc(int out_c, int in_c, int kh, int kw) {
    const auto& lib = libraries();
    cudnnFilterDescriptor_t d = nullptr;
    THRESHER_CUDA_CHECK(lib.cudnnCreateFilterDescriptor(&d));
    FilterDesc owned(d);
    THRESHER_CUDA_CHECK(
        lib.cudnnSetFilter4dDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, out_c, in_c, kh, kw));
    return owned;
}

// Device memory of `count` elements of T. Contents are undefined until written.
template <class T>
class DeviceArray {
public:
    DeviceArray() = default;
    explicit DeviceArray(std::size_t count) : size_(count) {
        if (count == 0) return;
        void* p = nullptr;
        THRESHER_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
        data_.reset(static_cast<T*>(p));
    }
    T* data() const { return data_.get(); }
    std::size_t size() const { return size_; }

private:
    struct Free {
        void operator()(T* p) const noexcept { (void)cudaFree(p); }
    };
    std::unique_ptr<T, Free> data_;
    std::size_t size_ = 0;
};

// Page-locked host memory, which the GPU can copy from asynchronously.
template <class T>
class PinnedArray {
public:
    PinnedArray() = default;
    explicit PinnedArray(std::size_t count) : size_(count) {
        if (count == 0) return;
        void* p = nullptr;
        THRESHER_CUDA_CHECK(cudaMallocHost(&p, count * sizeof(T)));
        data_.reset(static_cast<T*>(p));
    }
    T* data() const { return data_.get(); }
    std::size_t size() const { return size_; }

private:
    struct Free {
        void operator()(T* p) const noexcept { (void)cudaFreeHost(p); }
    };
    std::unique_ptr<T, Free> data_;
    std::size_t size_ = 0;
};

}  // namespace thresher::backend::cuda
