// The CUDA backend: one GPU, one stream. Every operation is enqueued on the backend's stream in
// call order, so the device sees the same sequence the CPU backend executes and no operation
// needs its own synchronisation; the host waits only where it must see results (download) or
// hand memory back (upload returns once the host array may be reused).
//
// A backend object belongs to one device and may be used from any thread, one thread at a time
// (each worker has its own backend): every entry point makes its device current first, because
// the current device is per host thread in CUDA.
//
// Internal to engine/backend/cuda: the engine sees only backend.h, and the device encoder
// (device_encoder.h) reaches the stream through this class.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "backend/registry.h"
#include "backend/cuda/handles.h"

namespace thresher::backend::cuda {

class CudaBackend final : public Backend {
public:
    CudaBackend(int device, const BackendOptions& options);
    ~CudaBackend() override;

    BackendInfo info() const override { return info_; }

    float* allocate(std::size_t count) override;
    void release(float* p) override;
    void upload(float* dst, const float* host, std::size_t count) override;
    void download(float* host, const float* src, std::size_t count) override;
    void copy(float* dst, const float* src, std::size_t count) override;
    void fill(float* dst, float value, std::size_t count) override;
    bool host_memory() const override { return false; }
    bool has_transposed_conv() const override { return true; }
    bool has_prelu() const override { return true; }
    void prelu_forward(const PReluDesc&, const float* x, const float* alpha, float* y) override;
    void prelu_backward(const PReluDesc&, const float* x, const float* alpha, const float* dy, float* dx,
                        float* dalpha) override;
    const float* stage_input(const float* host, std::size_t count) override;

    std::unique_ptr<DenseOp> make_dense(const DenseDesc&) override;
    std::unique_ptr<ConvOp> make_conv(const ConvDesc&) override;
    std::unique_ptr<PoolOp> make_pool(const PoolDesc&) override;
    std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormDesc&) override;
    std::unique_ptr<GatherOp> make_gather(const std::vector<std::uint32_t>& map) override;
    std::unique_ptr<RowGatherOp> make_row_gather(const RowGatherDesc&) override;
    std::unique_ptr<TimePoolOp> make_time_pool(const TimePoolDesc&) override;
    // Recurrent layers on cuDNN's RNN API, for what it computes (rnn_layout.h cuda_rnn_unsupported).
    bool has_rnn() const override { return true; }
    std::optional<std::string> rnn_refusal(const RnnDesc&) const override;
    std::unique_ptr<RnnOp> make_rnn(const RnnDesc&) override;

    void activation_forward(ActivationSpec, const float* x, float* y, int rows, int cols) override;
    void activation_backward(ActivationSpec, const float* y, const float* dy, float* dz, int rows,
                             int cols) override;
    void softmax_channels(const float* x, float* y, int batch, int channels, int pixels) override;
    void dropout_forward(const float* x, float* y, float* mask, std::size_t count, float retain,
                         std::uint64_t seed, std::size_t group) override;
    void pad_planes(const PadDesc&, const float* small, float* large) override;
    void crop_planes(const PadDesc&, const float* large, float* small) override;
    void upsample_forward(const UpsampleDesc&, const float* x, float* y) override;
    void upsample_backward(const UpsampleDesc&, const float* dy, float* dx) override;
    void multiply(const float* a, const float* b, float* out, std::size_t count) override;
    void axpy(float alpha, const float* x, float* y, std::size_t count) override;
    void copy_rows(float* dst, std::size_t dst_pitch, const float* src, std::size_t src_pitch, std::size_t width,
                   std::size_t rows) override;
    void maximum(const float* a, const float* b, float* y, std::size_t n) override;
    void max_route(const float* x, const float* y, const float* dy, float* dx, std::size_t n) override;
    void blend(float* running, const float* batch, float momentum, std::size_t count) override;
    void updater_step(const UpdaterSpec&, float* grad, float* state, const float* params,
                      std::size_t count, long iteration) override;
    // Gradient sharing on this GPU: CudaWorkerEncoder (cuda_worker_encoder.h).
    std::unique_ptr<dist::WorkerEncoder> make_worker_encoder(std::size_t length) override;

    // For the ops and the device encoder.
    int device() const { return device_; }
    cudaStream_t stream() const { return stream_.get(); }
    cublasHandle_t cublas() const { return cublas_.get(); }
    cudnnHandle_t cudnn() const { return cudnn_.get(); }
    // Makes this backend's GPU current on the calling thread.
    void activate() const;
    // Waits until everything enqueued so far has run (and reports a fault in it).
    void synchronize() const;
    // Scratch memory for cuDNN, shared by all ops: they run one after another on the one stream.
    // Grows as needed; the pointer stays valid until the next call that asks for more.
    void* workspace(std::size_t bytes);

private:
    int device_;
    BackendInfo info_;
    Stream stream_;
    CublasHandle cublas_;
    CudnnHandle cudnn_;
    DeviceArray<unsigned char> workspace_;
    // stage_input: host data goes through pinned memory into a device buffer, asynchronously;
    // `staged_` marks when the pinned buffer may be overwritten again.
    PinnedArray<float> staging_host_;
    DeviceArray<float> staging_device_;
    Event staged_;
};

// Devices this process can see: cudaGetDeviceCount, or 0 when there is no driver or device.
int device_count();

}  // namespace thresher::backend::cuda
