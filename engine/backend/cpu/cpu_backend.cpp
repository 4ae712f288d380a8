// The CPU backend: oneDNN primitives for the heavy ops, OpenMP loops for the element-wise rest.
// Memory is ordinary 64-byte-aligned host memory, so staging inputs costs nothing.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>

#include "backend/cpu/ops.h"
#include "backend/registry.h"
#include "codec/worker_encoder.h"
#include "core/rng.h"

namespace thresher::backend::cpu {

namespace {

std::string isa_name() {
    switch (dnnl::get_effective_cpu_isa()) {
        case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
        case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
        case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core: return "avx512_core";
        case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
        case dnnl::cpu_isa::avx2: return "avx2";
        case dnnl::cpu_isa::avx: return "avx";
        case dnnl::cpu_isa::sse41: return "sse41";
        default: return "other";
    }
}

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(const BackendOptions& options) {
        if (options.threads > 0) omp_set_num_threads(options.threads);
        threads_ = omp_get_max_threads();
    }

    BackendInfo info() const override {
        const auto v = dnnl::version();
        return {"cpu", "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                           std::to_string(v->patch) + ", " + isa_name() + ", " +
                           std::to_string(threads_) + " threads"};
    }

    float* allocate(std::size_t count) override {
        const std::size_t bytes = ((count * sizeof(float) + 63) / 64) * 64;
        void* p = std::aligned_alloc(64, bytes);
        if (!p) throw std::bad_alloc();
        std::memset(p, 0, bytes);
        return static_cast<float*>(p);
    }
    void release(float* p) override { std::free(p); }
    void upload(float* dst, const float* host, std::size_t n) override { copy(dst, host, n); }
    void download(float* host, const float* src, std::size_t n) override { copy(host, src, n); }
    void copy(float* dst, const float* src, std::size_t n) override {
        if (dst != src && n) std::memmove(dst, src, n * sizeof(float));
    }
    void fill(float* dst, float value, std::size_t n) override { std::fill(dst, dst + n, value); }
    bool host_memory() const override { return true; }
    std::unique_ptr<dist::WorkerEncoder> make_worker_encoder(std::size_t length) override {
        return std::make_unique<dist::HostWorkerEncoder>(length);
    }
    const float* stage_input(const float* host, std::size_t) override { return host; }

    std::unique_ptr<DenseOp> make_dense(const DenseDesc& d) override {
        return make_dense_op(ctx_, d);
    }
    std::unique_ptr<ConvOp> make_conv(const ConvDesc& d) override { return make_conv_op(ctx_, d); }
    std::unique_ptr<PoolOp> make_pool(const PoolDesc& d) override { return make_pool_op(ctx_, d); }
    std::unique_ptr<GatherOp> make_gather(const std::vector<std::uint32_t>& map) override { return make_gather_op(map); }
    std::unique_ptr<RowGatherOp> make_row_gather(const RowGatherDesc& d) override { return make_row_gather_op(d); }
    std::unique_ptr<TimePoolOp> make_time_pool(const TimePoolDesc& d) override { return make_time_pool_op(d); }
    bool has_rnn() const override { return true; }
    std::unique_ptr<RnnOp> make_rnn(const RnnDesc& d) override { return make_rnn_op(ctx_, d); }
    std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormDesc& d) override {
        return make_batch_norm_op(ctx_, d);
    }

    void activation_forward(ActivationSpec a, const float* x, float* y, int rows,
                            int cols) override {
        cpu::activation_forward(a, x, y, rows, cols);
    }
    void activation_backward(ActivationSpec a, const float* y, const float* dy, float* dz,
                             int rows, int cols) override {
        cpu::activation_backward(a, y, dy, dz, rows, cols);
    }

    void softmax_channels(const float* x, float* y, int batch, int channels, int pixels) override {
        cpu::softmax_channels(x, y, batch, channels, pixels);
    }
    void dropout_forward(const float* x, float* y, float* mask, std::size_t n, float retain,
                         std::uint64_t seed, std::size_t group) override {
        cpu::dropout_mask(mask, n, retain, seed, group);
#pragma omp parallel for if (n > (1u << 15))
        for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * mask[i];
    }
    bool has_prelu() const override { return true; }
    bool has_transposed_conv() const override { return true; }
    bool has_batch_norm_relu() const override { return true; }
    bool native_image_layout(int channels) const override { return native_layout_for(channels); }
    void prelu_forward(const PReluDesc& d, const float* x, const float* alpha, float* y) override {
        cpu::prelu_forward(d, x, alpha, y);
    }
    void prelu_backward(const PReluDesc& d, const float* x, const float* alpha, const float* dy, float* dx,
                        float* dalpha) override {
        cpu::prelu_backward(d, x, alpha, dy, dx, dalpha);
    }
    void pad_planes(const PadDesc& d, const float* small, float* large) override { cpu::pad_planes(d, small, large); }
    void crop_planes(const PadDesc& d, const float* large, float* small) override { cpu::crop_planes(d, large, small); }
    void upsample_forward(const UpsampleDesc& d, const float* x, float* y) override { cpu::upsample_forward(d, x, y); }
    void upsample_backward(const UpsampleDesc& d, const float* dy, float* dx) override { cpu::upsample_backward(d, dy, dx); }
    void multiply(const float* a, const float* b, float* out, std::size_t n) override {
#pragma omp parallel for simd if (n > (1u << 15))
        for (std::size_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
    }
    void axpy(float alpha, const float* x, float* y, std::size_t n) override {
#pragma omp parallel for simd if (n > (1u << 15))
        for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
    }
    void add(const float* a, const float* b, float* y, std::size_t n) override {
#pragma omp parallel for simd if (n > (1u << 15))
        for (std::size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
    }
    void copy_rows(float* dst, std::size_t dst_pitch, const float* src, std::size_t src_pitch, std::size_t width,
                   std::size_t rows) override {
#pragma omp parallel for if (rows * width > (1u << 15))
        for (std::size_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_pitch, src + r * src_pitch, width * sizeof(float));
    }
    void maximum(const float* a, const float* b, float* y, std::size_t n) override {
#pragma omp parallel for simd if (n > (1u << 15))
        for (std::size_t i = 0; i < n; ++i) y[i] = a[i] < b[i] ? b[i] : a[i];
    }
    void max_route(const float* x, const float* y, const float* dy, float* dx, std::size_t n) override {
#pragma omp parallel for simd if (n > (1u << 15))
        for (std::size_t i = 0; i < n; ++i) dx[i] = x[i] == y[i] ? dy[i] : 0.f;
    }
    void blend(float* running, const float* batch, float momentum, std::size_t n) override {
        for (std::size_t i = 0; i < n; ++i)
            running[i] = momentum * running[i] + (1.f - momentum) * batch[i];
    }

    void updater_step(const UpdaterSpec& spec, float* grad, float* state, const float* params,
                      std::size_t n, long iteration) override {
        cpu::updater_step(spec, grad, state, params, n, iteration);
    }

private:
    DnnlContext ctx_;
    int threads_ = 1;
};

}  // namespace

int native_channel_block() {
    switch (dnnl::get_effective_cpu_isa()) {
        case dnnl::cpu_isa::avx512_core_amx:
        case dnnl::cpu_isa::avx512_core_bf16:
        case dnnl::cpu_isa::avx512_core_vnni:
        case dnnl::cpu_isa::avx512_core: return 16;
        default: return 8;
    }
}

bool native_layout_for(int channels) {
    static const bool off = [] {
        const char* v = std::getenv("THRESHER_CPU_LAYOUT");
        return v && std::string(v) == "plain";
    }();
    return !off && channels > 0 && channels % native_channel_block() == 0;
}

dnnl::memory::desc image_desc(int n, int c, int h, int w, ImageLayout layout) {
    const tag t = layout == ImageLayout::Plain ? tag::nchw : native_channel_block() == 16 ? tag::aBcd16b : tag::aBcd8b;
    return f32_desc({n, c, h, w}, t);
}

}  // namespace thresher::backend::cpu

namespace thresher::backend {

void register_cpu_backend() {
    register_backend(
        "cpu",
        [](int index, const BackendOptions& options) -> std::unique_ptr<Backend> {
            if (index != 0) throw Error("--device cpu:" + std::to_string(index) + ": only cpu:0 exists");
            return std::make_unique<cpu::CpuBackend>(options);
        },
        [] {
            return std::vector<DeviceListing>{
                {"cpu", std::to_string(std::thread::hardware_concurrency()) +
                            " hardware threads, oneDNN ISA " + cpu::isa_name()}};
        });
}

}  // namespace thresher::backend
