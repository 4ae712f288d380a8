// cuBLAS and cuDNN, opened with dlopen when the first CUDA backend is made instead of linked.
// thresher-engine is copied to bare cluster nodes (DESIGN.md), and the SSH launcher ships every
// shared library it links: linked, cuBLAS alone would add 600 MB to every bundle and a node
// without CUDA could not even start the engine for a CPU run. Loaded, the engine needs only the
// CUDA runtime (linked statically; it opens the driver itself), and a machine without the
// libraries gets a clear error for --device cuda and a CPU-only `devices` list.
//
// The table holds exactly the functions the backend calls, typed from the libraries' own headers
// (decltype), so a call through it is checked like a direct call.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

namespace thresher::backend::cuda {

#define THRESHER_CUDA_FUNCTION(name) decltype(&::name) name = nullptr;
#define THRESHER_CUBLAS_FUNCTIONS(X)                                                              \
    X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasSetMathMode)             \
    X(cublasGetVersion_v2) X(cublasSgemm_v2) X(cublasGetStatusName) X(cublasGetStatusString)
#define THRESHER_CUDNN_FUNCTIONS(X)                                                               \
    X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream)   \
    X(cudnnCreateTensorDescriptor) X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptor) \
    X(cudnnCreateFilterDescriptor) X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor) \
    X(cudnnCreateConvolutionDescriptor) X(cudnnDestroyConvolutionDescriptor)                     \
    X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionMathType) X(cudnnSetConvolutionGroupCount)                            \
    X(cudnnGetConvolution2dForwardOutputDim)                                                      \
    X(cudnnGetConvolutionForwardAlgorithmMaxCount) X(cudnnFindConvolutionForwardAlgorithm)       \
    X(cudnnGetConvolutionBackwardDataAlgorithmMaxCount)                                           \
    X(cudnnFindConvolutionBackwardDataAlgorithm)                                                  \
    X(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount)                                         \
    X(cudnnFindConvolutionBackwardFilterAlgorithm) X(cudnnGetConvolutionForwardWorkspaceSize)    \
    X(cudnnGetConvolutionBackwardDataWorkspaceSize)                                               \
    X(cudnnGetConvolutionBackwardFilterWorkspaceSize) X(cudnnConvolutionForward)                 \
    X(cudnnConvolutionBackwardData) X(cudnnConvolutionBackwardFilter)                             \
    X(cudnnSetTensorNdDescriptor) X(cudnnGetTensorNdDescriptor)                                   \
    X(cudnnCreateDropoutDescriptor) X(cudnnDestroyDropoutDescriptor)                              \
    X(cudnnCreateRNNDescriptor) X(cudnnDestroyRNNDescriptor) X(cudnnSetRNNDescriptor_v8)          \
    X(cudnnCreateRNNDataDescriptor) X(cudnnDestroyRNNDataDescriptor) X(cudnnSetRNNDataDescriptor) \
    X(cudnnGetRNNWeightSpaceSize) X(cudnnGetRNNTempSpaceSizes) X(cudnnGetRNNWeightParams)         \
    X(cudnnRNNForward) X(cudnnRNNBackwardData_v8) X(cudnnRNNBackwardWeights_v8)

struct CudaLibraries {
    THRESHER_CUBLAS_FUNCTIONS(THRESHER_CUDA_FUNCTION)
    THRESHER_CUDNN_FUNCTIONS(THRESHER_CUDA_FUNCTION)
};
#undef THRESHER_CUDA_FUNCTION

// Opens libcublas.so.<major> and libcudnn.so.<major> (the majors this build was compiled against)
// the first time, through the loader's search path and then the folders CMake found them in.
// Throws thresher::BackendError naming the library and the loader's reason; a later call tries
// again. Thread-safe.
const CudaLibraries& libraries();

}  // namespace thresher::backend::cuda
