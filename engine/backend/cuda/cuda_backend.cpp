// The CUDA backend's memory, element-wise work and registration (see cuda_backend.h).
#include "backend/cuda/cuda_backend.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>

#include "backend/cuda/cuda_worker_encoder.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/ops.h"
#include "backend/cuda/rnn_layout.h"
#include "core/error.h"
#include "core/rng.h"

namespace thresher::backend::cuda {

namespace {

std::string gib(std::size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

// "NVIDIA H100 80GB HBM3, 79.1 GiB, compute capability 9.0"
std::string describe(const cudaDeviceProp& p) {
    return std::string(p.name) + ", " + gib(p.totalGlobalMem) + ", compute capability " +
           std::to_string(p.major) + "." + std::to_string(p.minor);
}

// 91900 -> "9.19.0" (cuDNN and cuBLAS both encode major * 10000 + minor * 100 + patch).
std::string version(long v) {
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
}

bool overlap(const float* a, const float* b, std::size_t n) {
    const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
    const std::uintptr_t bytes = n * sizeof(float);
    return x < y + bytes && y < x + bytes;
}

}  // namespace

int device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();  // no driver or no device: not an error for a listing
        return 0;
    }
    return n;
}

CudaBackend::CudaBackend(int device, const BackendOptions&) : device_(device) {
    const auto& lib = libraries();  // cuBLAS and cuDNN: a clear error here when they are missing
    activate();
    cudaDeviceProp prop{};
    THRESHER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));

    cudaStream_t stream = nullptr;
    THRESHER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    stream_.reset(stream);

    cublasHandle_t blas = nullptr;
    THRESHER_CUDA_CHECK(lib.cublasCreate_v2(&blas));
    cublas_.reset(blas);
    THRESHER_CUDA_CHECK(lib.cublasSetStream_v2(blas, stream));
    // Plain FP32 (no TF32 tensor cores): results must agree with the CPU backend.
    THRESHER_CUDA_CHECK(lib.cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
    int blas_version = 0;
    THRESHER_CUDA_CHECK(lib.cublasGetVersion_v2(blas, &blas_version));

    cudnnHandle_t dnn = nullptr;
    THRESHER_CUDA_CHECK(lib.cudnnCreate(&dnn));
    cudnn_.reset(dnn);
    THRESHER_CUDA_CHECK(lib.cudnnSetStream(dnn, stream));

    cudaEvent_t event = nullptr;
    THRESHER_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    staged_.reset(event);

    info_ = {"cuda:" + std::to_string(device),
             describe(prop) + ", cuDNN " + version(static_cast<long>(lib.cudnnGetVersion())) +
                 ", cuBLAS " + version(blas_version)};
}

CudaBackend::~CudaBackend() {
    // Let enqueued work finish before its buffers and handles go; errors cannot be reported here.
    if (cudaSetDevice(device_) == cudaSuccess && stream_) (void)cudaStreamSynchronize(stream_.get());
}

void CudaBackend::activate() const { THRESHER_CUDA_CHECK(cudaSetDevice(device_)); }

void CudaBackend::synchronize() const {
    activate();
    THRESHER_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

void* CudaBackend::workspace(std::size_t bytes) {
    if (bytes > workspace_.size()) {
        workspace_ = DeviceArray<unsigned char>();  // cudaFree waits for work that may still use it
        workspace_ = DeviceArray<unsigned char>(bytes);
    }
    return workspace_.data();
}

// --- memory --------------------------------------------------------------------------------------

float* CudaBackend::allocate(std::size_t count) {
    if (count == 0) return nullptr;
    activate();
    void* p = nullptr;
    THRESHER_CUDA_CHECK(cudaMalloc(&p, count * sizeof(float)));
    // Zero-filled, like the CPU backend's memory; ordered before any later use on the stream.
    const cudaError_t zeroed = cudaMemsetAsync(p, 0, count * sizeof(float), stream_.get());
    if (zeroed != cudaSuccess) {
        (void)cudaFree(p);
        THRESHER_CUDA_CHECK(zeroed);
    }
    return static_cast<float*>(p);
}

void CudaBackend::release(float* p) {
    // Called from Buffer's destructor: must not throw. cudaFree waits for work still using p.
    if (!p) return;
    (void)cudaSetDevice(device_);
    (void)cudaFree(p);
}

void CudaBackend::upload(float* dst, const float* host, std::size_t n) {
    if (n == 0) return;
    activate();
    THRESHER_CUDA_CHECK(
        cudaMemcpyAsync(dst, host, n * sizeof(float), cudaMemcpyHostToDevice, stream_.get()));
    THRESHER_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));  // the caller may reuse `host` now
}

void CudaBackend::download(float* host, const float* src, std::size_t n) {
    if (n == 0) return;
    activate();
    THRESHER_CUDA_CHECK(
        cudaMemcpyAsync(host, src, n * sizeof(float), cudaMemcpyDeviceToHost, stream_.get()));
    THRESHER_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

void CudaBackend::copy(float* dst, const float* src, std::size_t n) {
    if (dst == src || n == 0) return;
    activate();
    const std::size_t bytes = n * sizeof(float);
    if (!overlap(dst, src, n)) {
        THRESHER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
        return;
    }
    // memmove semantics (the CPU backend's): cudaMemcpy leaves overlapping copies undefined.
    DeviceArray<float> tmp(n);
    THRESHER_CUDA_CHECK(cudaMemcpyAsync(tmp.data(), src, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
    THRESHER_CUDA_CHECK(cudaMemcpyAsync(dst, tmp.data(), bytes, cudaMemcpyDeviceToDevice, stream_.get()));
    THRESHER_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

void CudaBackend::fill(float* dst, float value, std::size_t n) {
    if (n == 0) return;
    activate();
    kernels::fill(stream_.get(), dst, value, n);
}

const float* CudaBackend::stage_input(const float* host, std::size_t n) {
    if (n == 0) return staging_device_.data();
    activate();
    if (n > staging_host_.size()) {
        synchronize();  // enqueued work may still read the old buffers
        staging_host_ = PinnedArray<float>();
        staging_device_ = DeviceArray<float>();
        staging_host_ = PinnedArray<float>(n);
        staging_device_ = DeviceArray<float>(n);
    } else {
        // The previous batch's copy must have left the pinned buffer before it is overwritten.
        THRESHER_CUDA_CHECK(cudaEventSynchronize(staged_.get()));
    }
    std::memcpy(staging_host_.data(), host, n * sizeof(float));
    THRESHER_CUDA_CHECK(cudaMemcpyAsync(staging_device_.data(), staging_host_.data(),
                                        n * sizeof(float), cudaMemcpyHostToDevice, stream_.get()));
    THRESHER_CUDA_CHECK(cudaEventRecord(staged_.get(), stream_.get()));
    return staging_device_.data();
}

// --- planned ops ---------------------------------------------------------------------------------

std::unique_ptr<DenseOp> CudaBackend::make_dense(const DenseDesc& d) {
    activate();
    return make_dense_op(*this, d);
}
std::unique_ptr<ConvOp> CudaBackend::make_conv(const ConvDesc& d) {
    activate();
    return make_conv_op(*this, d);
}
std::unique_ptr<PoolOp> CudaBackend::make_pool(const PoolDesc& d) {
    activate();
    return make_pool_op(*this, d);
}
std::unique_ptr<GatherOp> CudaBackend::make_gather(const std::vector<std::uint32_t>& map) {
    activate();
    return make_gather_op(*this, map);
}
std::unique_ptr<RowGatherOp> CudaBackend::make_row_gather(const RowGatherDesc& d) {
    activate();
    return make_row_gather_op(*this, d);
}
std::unique_ptr<TimePoolOp> CudaBackend::make_time_pool(const TimePoolDesc& d) {
    activate();
    return make_time_pool_op(*this, d);
}
std::unique_ptr<BatchNormOp> CudaBackend::make_batch_norm(const BatchNormDesc& d) {
    activate();
    return make_batch_norm_op(*this, d);
}
std::optional<std::string> CudaBackend::rnn_refusal(const RnnDesc& d) const { return cuda_rnn_unsupported(d); }
std::unique_ptr<RnnOp> CudaBackend::make_rnn(const RnnDesc& d) {
    activate();
    return make_rnn_op(*this, d);
}

// --- element-wise ----------------------------------------------------------------------------------

void CudaBackend::activation_forward(ActivationSpec a, const float* x, float* y, int rows, int cols) {
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    activate();
    switch (a.kind) {
        case Activation::Identity: copy(y, x, n); return;
        case Activation::Softmax: kernels::softmax_forward(stream_.get(), x, y, rows, cols); return;
        default: kernels::activation_forward(stream_.get(), a, x, y, n); return;
    }
}

void CudaBackend::activation_backward(ActivationSpec a, const float* y, const float* dy, float* dz,
                                      int rows, int cols) {
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    activate();
    switch (a.kind) {
        case Activation::Identity: copy(dz, dy, n); return;
        case Activation::Softmax:
            kernels::softmax_backward(stream_.get(), y, dy, dz, rows, cols);
            return;
        default: kernels::activation_backward(stream_.get(), a, y, dy, dz, n); return;
    }
}

void CudaBackend::softmax_channels(const float* x, float* y, int batch, int channels, int pixels) {
    activate();
    kernels::softmax_channels(stream_.get(), x, y, batch, channels, pixels);
}

void CudaBackend::dropout_forward(const float* x, float* y, float* mask, std::size_t n, float retain,
                                  std::uint64_t seed, std::size_t group) {
    activate();
    kernels::dropout(stream_.get(), x, y, mask, n, retain, 1.f / retain,
                     derive_seed(seed, 0x44524f50 /* "DROP", as the CPU backend */), group < 1 ? 1 : group);
}

void CudaBackend::pad_planes(const PadDesc& d, const float* small, float* large) {
    activate();
    kernels::pad(stream_.get(), small, large, static_cast<std::size_t>(d.planes), d.h, d.w, d.top, d.left, d.hp, d.wp);
}

void CudaBackend::crop_planes(const PadDesc& d, const float* large, float* small) {
    activate();
    kernels::crop(stream_.get(), large, small, static_cast<std::size_t>(d.planes), d.h, d.w, d.top, d.left, d.hp, d.wp);
}

void CudaBackend::upsample_forward(const UpsampleDesc& d, const float* x, float* y) {
    activate();
    kernels::upsample_forward(stream_.get(), d, x, y);
}

void CudaBackend::upsample_backward(const UpsampleDesc& d, const float* dy, float* dx) {
    activate();
    kernels::upsample_backward(stream_.get(), d, dy, dx);
}

void CudaBackend::copy_rows(float* dst, std::size_t dst_pitch, const float* src, std::size_t src_pitch,
                            std::size_t width, std::size_t rows) {
    if (width == 0 || rows == 0) return;
    activate();
    THRESHER_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch * sizeof(float), src, src_pitch * sizeof(float),
                                          width * sizeof(float), rows, cudaMemcpyDeviceToDevice, stream_.get()));
}

void CudaBackend::maximum(const float* a, const float* b, float* y, std::size_t n) {
    if (n == 0) return;
    activate();
    kernels::maximum(stream_.get(), a, b, y, n);
}

void CudaBackend::max_route(const float* x, const float* y, const float* dy, float* dx, std::size_t n) {
    if (n == 0) return;
    activate();
    kernels::max_route(stream_.get(), x, y, dy, dx, n);
}

void CudaBackend::prelu_forward(const PReluDesc& d, const float* x, const float* alpha, float* y) {
    activate();
    kernels::prelu_forward(stream_.get(), d, x, alpha, y);
}

void CudaBackend::prelu_backward(const PReluDesc& d, const float* x, const float* alpha, const float* dy,
                                 float* dx, float* dalpha) {
    activate();
    kernels::prelu_backward(stream_.get(), d, x, alpha, dy, dx, dalpha);
}

void CudaBackend::multiply(const float* a, const float* b, float* out, std::size_t n) {
    activate();
    kernels::multiply(stream_.get(), a, b, out, n);
}

void CudaBackend::axpy(float alpha, const float* x, float* y, std::size_t n) {
    activate();
    kernels::axpy(stream_.get(), alpha, x, y, n);
}

void CudaBackend::blend(float* running, const float* batch, float momentum, std::size_t n) {
    activate();
    kernels::blend(stream_.get(), running, batch, momentum, n);
}

void CudaBackend::updater_step(const UpdaterSpec& s, float* grad, float* state, const float* params,
                               std::size_t n, long iteration) {
    activate();
    float adam_alpha = 0.f;
    if (s.kind == UpdaterKind::Adam) {
        // The CPU backend's expression, in double, rounded once to float.
        const double t = static_cast<double>(iteration) + 1.0;
        const float lr = s.learning_rate, b1 = s.beta1, b2 = s.beta2;
        adam_alpha = static_cast<float>(lr * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t)));
    }
    kernels::updater_step(stream_.get(), s, adam_alpha, grad, state, params, n);
}

std::unique_ptr<dist::WorkerEncoder> CudaBackend::make_worker_encoder(std::size_t length) {
    return std::make_unique<CudaWorkerEncoder>(*this, length);
}

}  // namespace thresher::backend::cuda

namespace thresher::backend {

void register_cuda_backend() {
    register_backend(
        "cuda",
        [](int index, const BackendOptions& options) -> std::unique_ptr<Backend> {
            const std::string name = "--device cuda:" + std::to_string(index);
            int count = 0;
            const cudaError_t status = cudaGetDeviceCount(&count);
            if (status != cudaSuccess) {
                (void)cudaGetLastError();
                throw Error(name + ": no usable CUDA device (" + cudaGetErrorName(status) + ": " +
                            cudaGetErrorString(status) + ")");
            }
            if (count == 0) throw Error(name + ": this machine has no CUDA device");
            if (index >= count)
                throw Error(name + ": this machine has " + std::to_string(count) +
                            " CUDA device(s), cuda:0" +
                            (count > 1 ? " to cuda:" + std::to_string(count - 1) : std::string()));
            return std::make_unique<cuda::CudaBackend>(index, options);
        },
        [] {
            // Built, but possibly nothing to run on: say so and why (no driver, no device, a
            // driver older than this build's runtime), rather than listing nothing.
            const std::string built = "CUDA backend (runtime " + std::to_string(CUDART_VERSION / 1000) + "." +
                                      std::to_string(CUDART_VERSION % 1000 / 10) + ")";
            std::vector<DeviceListing> list;
            int count = 0;
            const cudaError_t status = cudaGetDeviceCount(&count);
            if (status != cudaSuccess) {
                (void)cudaGetLastError();
                return std::vector<DeviceListing>{{"cuda", built, false,
                                                   std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status)}};
            }
            if (count == 0) return std::vector<DeviceListing>{{"cuda", built, false, "the CUDA driver reports no device"}};
            std::string last_error;
            for (int i = 0; i < count; ++i) {
                cudaDeviceProp prop{};
                if (const cudaError_t e = cudaGetDeviceProperties(&prop, i); e != cudaSuccess) {
                    (void)cudaGetLastError();
                    last_error = "cuda:" + std::to_string(i) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
                    continue;
                }
                list.push_back({"cuda:" + std::to_string(i), cuda::describe(prop)});
            }
            if (list.empty()) list.push_back({"cuda", built, false, last_error});
            return list;
        });
}

}  // namespace thresher::backend
