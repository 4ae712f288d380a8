// The compute interface of the engine. Layers describe their work once per shape ("plan once,
// execute many", as oneDNN's primitives do): a backend returns an op object for a descriptor,
// and the op is executed every iteration on pointers into backend memory.
//
// Memory: every float* passed to an op points into memory the backend allocated (host memory
// for the CPU backend, device memory for CUDA). Layout conventions, shared by all backends:
//   activations   NCHW, row-major; a dense layer's [batch x features] is NCHW with H = W = 1,
//                 so flattening from convolution to dense costs nothing.
//   dense weights [in x out] row-major; conv weights [out_c x in_c x kh x kw] (OIHW).
// Ops overwrite their outputs (gradients are not accumulated across calls).
// Exception, chosen by the network: an image tensor that only convolutions, batch norm, pooling
// and element-wise layers write and read may live in the backend's native layout (ImageLayout).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "vocab/activation.h"
#include "vocab/updater.h"

namespace thresher::dist {
class WorkerEncoder;  // codec/worker_encoder.h (the codec sits below the backends)
}  // namespace thresher::dist

namespace thresher::backend {

// The vocabulary a model config and a backend share (engine/vocab), named here as the interface
// always has: backend::ActivationSpec and the rest are the vocab types themselves.
using vocab::Activation;
using vocab::ActivationSpec;
using vocab::derivative_from_input;
using vocab::kSeluAlpha;
using vocab::kSeluLambda;
using vocab::UpdaterKind;
using vocab::UpdaterSpec;
using vocab::updater_state_per_param;

// How an image tensor [batch x c x h x w] (and its gradient) is laid out between layers. Plain:
// NCHW, the convention above. Native: the layout the backend computes convolutions in (CPU:
// oneDNN's channel-blocked nChw16c, or nChw8c below AVX-512), the same number of floats, so
// element-wise ops run on it unchanged. Only backends whose native_image_layout(c) says so are
// handed Native (the network decides, Network::choose_layouts); parameters are always plain.
enum class ImageLayout { Plain, Native };

struct DenseDesc {
    int batch = 0, in = 0, out = 0;
    ActivationSpec act;  // fused into forward where the backend can
};

struct ConvDesc {
    int batch = 0, in_c = 0, in_h = 0, in_w = 0;
    int out_c = 0, out_h = 0, out_w = 0;
    int kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;  // dilation 1 = dense kernel
    int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
    // Grouped convolution: in_c and out_c split into `groups` independent parts; weights are
    // [out_c x in_c/groups x kh x kw]. A depthwise convolution has groups = in_c.
    int groups = 1;
    // Transposed (the adjoint of the convolution from out to in): x is [batch x in_c x in_h x in_w],
    // y [batch x out_c x out_h x out_w], out = (in - 1) * stride - pads + span; weights
    // [in_c x out_c x kh x kw] (PyTorch's ConvTranspose2d). Backends say has_transposed_conv().
    bool transposed = false;
    ActivationSpec act;  // element-wise only (no softmax)
    ImageLayout src_layout = ImageLayout::Plain, dst_layout = ImageLayout::Plain;  // x/dx, y/dz
};

struct PoolDesc {
    int batch = 0, c = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
    int kh = 2, kw = 2, sh = 2, sw = 2;
    int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
    bool max = true;  // false: average (padding excluded from the divisor)
    ImageLayout src_layout = ImageLayout::Plain, dst_layout = ImageLayout::Plain;
};

struct BatchNormDesc {
    int batch = 0, c = 0, h = 1, w = 1;  // per-channel statistics over N*H*W
    float eps = 1e-5f;
    ImageLayout layout = ImageLayout::Plain;  // of x, y and their gradients
    // y = max(0, bn(x)), and backward takes dL/dy of that (Backend::has_batch_norm_relu).
    bool relu = false;
};

// A PReLU over an NCHW tensor: y = x for x > 0, alpha·x otherwise, with one alpha per
// (c, h, w) position except along the shared axes (alpha is [c' x h' x w'] row-major, where a
// shared axis has extent 1). Dense input is C x 1 x 1.
struct PReluDesc {
    int batch = 0, c = 0, h = 1, w = 1;
    bool shared_c = false, shared_h = false, shared_w = false;
};

// `planes` images of h x w inside larger images of hp x wp, at row `top` and column `left`: zero
// padding writes the small into the large (zeros around), cropping reads the small out of the
// large. Each is the other's backward. Planes are NCHW's N·C.
struct PadDesc {
    int planes = 0, h = 0, w = 0, top = 0, left = 0, hp = 0, wp = 0;
};

// Nearest-neighbour upsampling of `planes` h x w images by (sh, sw): y[r][q] = x[r / sh][q / sw];
// backward sums each sh x sw block of dy.
struct UpsampleDesc {
    int planes = 0, h = 0, w = 0, sh = 1, sw = 1;
};

enum class Mode { Training, Inference };

// A recurrent layer over all its steps (seq_spec.md). The cell's gates, in oneDNN's order:
// lstm i, f, g (cell candidate), o; gru u (update), r (reset), o (candidate); vanilla one gate.
// GruResetAfter applies the reset after the recurrent matmul (oneDNN's linear-before-reset,
// Keras reset_after, PyTorch's GRU) and has a 4th bias, the recurrent candidate's.
enum class RnnCell { Lstm, Gru, GruResetAfter, Vanilla };
// How two directions join (Keras's merge_mode); None: left to right only.
enum class RnnMerge { None, Concat, Sum, Mul, Average };
struct RnnDesc {
    RnnCell cell = RnnCell::Lstm;
    int batch = 0, steps = 0, in = 0, hidden = 0;
    // The cell/candidate activation (Vanilla: its only one) and the gates' (Lstm, Gru); any
    // element-wise activation. Where the backend's library lacks one the CPU backend runs a host
    // implementation (cpu/rnn_host.h); host_loop forces it (tests compare the two paths).
    ActivationSpec act{Activation::Tanh, 0.01f};
    ActivationSpec gate{Activation::Sigmoid, 0.01f};
    bool host_loop = false;
    bool peepholes = false;             // Lstm: P [3 x H] for i, f, o
    RnnMerge merge = RnnMerge::None;
    bool return_sequences = true;       // else the last valid step's output, [batch x out]
    // Training-time dropout inside the layer (LayerConfig::input_retain, recurrent_retain): each
    // direction keeps input feature f of sample n with probability input_retain, scaling it by
    // 1 / input_retain, at every step (one mask per sample), and the same for the units of h'
    // wherever the recurrence reads it (h' R; the state update h = u h' + ... of a gru reads h'
    // whole). 1: none. RnnOp::draw_dropout draws the masks.
    float input_retain = 1.f, recurrent_retain = 1.f;
    bool has_dropout() const { return input_retain < 1.f || recurrent_retain < 1.f; }
};
// Parameters, per direction (the forward one first): W [in x G*H], R [H x G*H] (gate-major
// columns: oneDNN's ldigo for one layer and direction), b [G*H] ([4H] for GruResetAfter), then
// P [3H] with peepholes. x is [batch x steps x in] (time-major per sample, oneDNN's ntc); y is
// [batch x steps x out] with zeros at padded steps, or [batch x out]; out = 2H for Concat, else H.
// `lengths` (host, one per sample, 1..steps) mask each sample: steps from its length on change
// nothing, and the reverse direction reads each sample backwards within its length.
class RnnOp {
public:
    virtual ~RnnOp() = default;
    virtual void forward(const float* x, const int* lengths, const float* params, float* y, Mode mode) = 0;
    // Before each Training forward of a desc with dropout (RnnDesc::has_dropout): this
    // iteration's masks, from `seed` alone (the same on every thread split and machine). A
    // backend that cannot drop inside a cell refuses such a desc in make_rnn.
    virtual void draw_dropout(std::uint64_t seed) { (void)seed; }
    // After a Training forward of the same x and lengths. dx may be null; grads (the layer's
    // parameter slice) is overwritten; dy is only read.
    virtual void backward(const float* x, const int* lengths, const float* params, const float* dy, float* dx,
                          float* grads) = 0;
};

// Rows of a table by index, the indices on the host (seq_spec.md): an embedding's lookup (the
// table its parameters [vocabulary x units], the indices token ids) and moving the steps of a
// sequence by each sample's length (go_backwards: the table the input [batch*steps x features]).
// Row r of y is row ids[r] of the table [table_rows x width]; `ids` hold one index per row,
// checked by the caller: each in [0, table_rows), or -1 for a row of zeros.
struct RowGatherDesc {
    int rows = 0, width = 0, table_rows = 0;  // rows: the most one forward is given
};
class RowGatherOp {
public:
    virtual ~RowGatherOp() = default;
    virtual void forward(const int* ids, std::size_t rows, const float* table, float* y) = 0;
    // After a forward: dtable (the whole table's gradient, overwritten) holds the sum of dy's rows
    // by their forward ids, each id's rows added in row order, so every backend and run gives the
    // same sums (no atomics); table rows no index named are zero.
    virtual void backward(const float* dy, float* dtable) = 0;
};

// Pooling along time within each sample's length (seq_spec.md): output step o of sample n pools
// input steps [max(o*stride - pad, 0), min(o*stride - pad + kernel, L_n)) of each channel, the
// maximum or the mean of the steps it sees; an empty window gives 0. Global pooling over time is
// t_out 1 with kernel = stride = t_in and pad 0. x [batch x t_in x channels], y [batch x t_out x
// channels].
struct TimePoolDesc {
    int batch = 0, t_in = 0, t_out = 0, channels = 0, kernel = 1, stride = 1, pad = 0;
    bool max = true;
};
class TimePoolOp {
public:
    virtual ~TimePoolOp() = default;
    // `lengths`: host, one per sample, 1..t_in. Keeps what backward needs (maxima's steps, lengths).
    virtual void forward(const float* x, const int* lengths, float* y) = 0;
    // dx (overwritten) for the last forward's windows.
    virtual void backward(const float* dy, float* dx) = 0;
};

class DenseOp {
public:
    virtual ~DenseOp() = default;
    // y = act(x W + b)
    virtual void forward(const float* x, const float* w, const float* b, float* y) = 0;
    // From dz = dL/d(xW+b): dw = x^T dz, db = column sums of dz, dx = dz W^T (skipped if null).
    virtual void backward(const float* x, const float* w, const float* dz, float* dx, float* dw,
                          float* db) = 0;
};

class ConvOp {
public:
    virtual ~ConvOp() = default;
    virtual void forward(const float* x, const float* w, const float* b, float* y) = 0;
    virtual void backward(const float* x, const float* w, const float* dz, float* dx, float* dw,
                          float* db) = 0;
};

class PoolOp {
public:
    virtual ~PoolOp() = default;
    // Training mode keeps what backward needs (max positions) inside the op.
    virtual void forward(const float* x, float* y, Mode mode) = 0;
    virtual void backward(const float* dy, float* dx) = 0;
};

// A fixed rearrangement of each sample's values (a reshape in channels-last order, a permute of
// axes): forward y[r][j] = x[r][map[j]]; backward dx[r][map[j]] = dy[r][j]. `map` is a
// permutation of 0..width-1, so the backward writes every dx value once.
class GatherOp {
public:
    virtual ~GatherOp() = default;
    virtual void forward(const float* x, float* y, std::size_t rows) = 0;
    virtual void backward(const float* dy, float* dx, std::size_t rows) = 0;
};

class BatchNormOp {
public:
    virtual ~BatchNormOp() = default;
    // Training: normalises with batch statistics, writes them to batch_mean/batch_var.
    virtual void forward_training(const float* x, const float* gamma, const float* beta, float* y,
                                  float* batch_mean, float* batch_var) = 0;
    virtual void forward_inference(const float* x, const float* gamma, const float* beta,
                                   const float* mean, const float* var, float* y) = 0;
    // Uses the batch statistics of the last forward_training.
    virtual void backward(const float* x, const float* dy, const float* gamma, const float* beta,
                          const float* batch_mean, const float* batch_var, float* dx,
                          float* dgamma, float* dbeta) = 0;
};

struct BackendInfo {
    std::string name;    // "cpu", "cuda:0"
    std::string detail;  // ISA, device name, memory
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual BackendInfo info() const = 0;

    // Memory
    virtual float* allocate(std::size_t count) = 0;  // zero-filled
    virtual void release(float* p) = 0;
    virtual void upload(float* dst, const float* host, std::size_t count) = 0;
    virtual void download(float* host, const float* src, std::size_t count) = 0;
    virtual void copy(float* dst, const float* src, std::size_t count) = 0;
    virtual void fill(float* dst, float value, std::size_t count) = 0;
    // True when allocate() returns ordinary host memory that host code may read and write
    // directly (the CPU backend); false for device memory (CUDA).
    virtual bool host_memory() const = 0;
    // A device view of host data that lives until the next call (CPU: the host pointer itself).
    virtual const float* stage_input(const float* host, std::size_t count) = 0;

    // Planned ops
    virtual std::unique_ptr<DenseOp> make_dense(const DenseDesc&) = 0;
    virtual std::unique_ptr<ConvOp> make_conv(const ConvDesc&) = 0;
    virtual std::unique_ptr<PoolOp> make_pool(const PoolDesc&) = 0;
    virtual std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormDesc&) = 0;
    virtual std::unique_ptr<GatherOp> make_gather(const std::vector<std::uint32_t>& map) = 0;
    virtual std::unique_ptr<RowGatherOp> make_row_gather(const RowGatherDesc&) = 0;
    virtual std::unique_ptr<TimePoolOp> make_time_pool(const TimePoolDesc&) = 0;
    // Recurrent layers; backends without them say so in has_rnn() and throw here, so a model
    // with one is refused when the network is planned.
    virtual bool has_rnn() const { return false; }
    // Why this backend cannot plan `d` (a cell, activation or option its library lacks: the CUDA
    // backend's cuDNN has no peepholes, for one), or nothing when make_rnn(d) plans it. The
    // network asks before make_rnn and refuses the layer by name.
    virtual std::optional<std::string> rnn_refusal(const RnnDesc&) const {
        if (has_rnn()) return std::nullopt;
        return "the " + info().name + " backend has no recurrent layers yet";
    }
    virtual std::unique_ptr<RnnOp> make_rnn(const RnnDesc&) {
        throw std::runtime_error("the " + info().name + " backend has no recurrent layers yet (use the CPU backend)");
    }

    // Element-wise work. rows x cols matters only for softmax (row-wise).
    virtual void activation_forward(ActivationSpec, const float* x, float* y, int rows,
                                    int cols) = 0;
    // dz = dL/dx of y = act(x), computed from y (the output) and dy; for the kinds where
    // derivative_from_input() holds, the first argument is the pre-activation x instead.
    virtual void activation_backward(ActivationSpec, const float* y, const float* dy, float* dz,
                                     int rows, int cols) = 0;
    // Softmax over the channels of each pixel of an NCHW [batch x channels x pixels] tensor (a
    // segmentation output: one class distribution per pixel); pixels = 1 is the row softmax. y
    // may be x.
    virtual void softmax_channels(const float* x, float* y, int batch, int channels, int pixels) = 0;
    // Inverted dropout: mask[i] = (u < retain) / retain with u from (seed); y = x * mask. With
    // group > 1 the elements i of one group (i / group: a channel of a sample for spatial
    // dropout, group = height x width) share one draw, the one element i / group would get.
    virtual void dropout_forward(const float* x, float* y, float* mask, std::size_t count,
                                 float retain, std::uint64_t seed, std::size_t group = 1) = 0;
    virtual void multiply(const float* a, const float* b, float* out, std::size_t count) = 0;
    // y += alpha * x
    virtual void axpy(float alpha, const float* x, float* y, std::size_t count) = 0;
    // y = a + b; y may be a but not b.
    virtual void add(const float* a, const float* b, float* y, std::size_t count) {
        copy(y, a, count);
        axpy(1.f, b, y, count);
    }
    // Graph vertices. Strided copy: `rows` runs of `width` floats, read `src_pitch` apart and
    // written `dst_pitch` apart (concatenating or taking a subset of NCHW channels: one run per
    // sample). Regions must not overlap.
    virtual void copy_rows(float* dst, std::size_t dst_pitch, const float* src, std::size_t src_pitch,
                           std::size_t width, std::size_t rows) = 0;
    // y = max(a, b) element-wise.
    virtual void maximum(const float* a, const float* b, float* y, std::size_t count) = 0;
    // The maximum's backward for one input x: dx = dy where x equals the maximum y, 0 elsewhere.
    virtual void max_route(const float* x, const float* y, const float* dy, float* dx, std::size_t count) = 0;
    // running = momentum * running + (1 - momentum) * batch
    virtual void blend(float* running, const float* batch, float momentum, std::size_t count) = 0;

    // PReLU (PReluDesc). dx may be null; dalpha is overwritten with the sum over the batch and
    // the shared axes of dy·x where x <= 0. Backends without these kernels say so in has_prelu()
    // and throw here, so a model with a PReLU layer is refused when the network is planned.
    virtual bool has_prelu() const { return false; }
    // Whether this backend takes ImageLayout::Native for images of `channels` channels in
    // ConvDesc (non-transposed), BatchNormDesc and PoolDesc.
    virtual bool native_image_layout(int channels) const { return false; }
    // Whether make_batch_norm() plans BatchNormDesc::relu.
    virtual bool has_batch_norm_relu() const { return false; }
    // Whether make_conv() plans transposed convolutions (ConvDesc::transposed).
    virtual bool has_transposed_conv() const { return false; }
    virtual void prelu_forward(const PReluDesc&, const float* x, const float* alpha, float* y);
    virtual void prelu_backward(const PReluDesc&, const float* x, const float* alpha, const float* dy,
                                float* dx, float* dalpha);

    // Zero padding and cropping of image planes (PadDesc): `large` is fully written by pad,
    // `small` by crop.
    virtual void pad_planes(const PadDesc&, const float* small, float* large) = 0;
    virtual void crop_planes(const PadDesc&, const float* large, float* small) = 0;
    // Nearest-neighbour upsampling (UpsampleDesc); backward overwrites dx.
    virtual void upsample_forward(const UpsampleDesc&, const float* x, float* y) = 0;
    virtual void upsample_backward(const UpsampleDesc&, const float* dy, float* dx) = 0;

    // Turns a gradient into the update to subtract from the parameters, in place. `state` holds
    // updater_state_per_param(kind) * count floats ([m..., v...] for Adam); `iteration` counts
    // from 0. Regularisation reads `params`.
    virtual void updater_step(const UpdaterSpec&, float* grad, float* state, const float* params,
                              std::size_t count, long iteration) = 0;

    // Gradient sharing's residual and threshold encoder for a replica of `length` parameters in
    // this backend's memory (the CPU backend: dist::HostWorkerEncoder; CUDA: on the GPU).
    virtual std::unique_ptr<dist::WorkerEncoder> make_worker_encoder(std::size_t length) = 0;
};

inline void Backend::prelu_forward(const PReluDesc&, const float*, const float*, float*) {
    throw std::runtime_error("the " + info().name + " backend has no PReLU kernels yet (use the CPU backend)");
}
inline void Backend::prelu_backward(const PReluDesc&, const float*, const float*, const float*, float*, float*) {
    throw std::runtime_error("the " + info().name + " backend has no PReLU kernels yet (use the CPU backend)");
}

// Owns one allocation of a backend; the backend must outlive it.
class Buffer {
public:
    Buffer() = default;
    Buffer(Backend& backend, std::size_t count)
        : backend_(&backend), data_(count ? backend.allocate(count) : nullptr), size_(count) {}
    ~Buffer() { reset(); }
    Buffer(Buffer&& other) noexcept
        : backend_(std::exchange(other.backend_, nullptr)),
          data_(std::exchange(other.data_, nullptr)),
          size_(std::exchange(other.size_, 0)) {}
    Buffer& operator=(Buffer&& other) noexcept {
        if (this != &other) {
            reset();
            backend_ = std::exchange(other.backend_, nullptr);
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    float* data() { return data_; }
    const float* data() const { return data_; }
    std::size_t size() const { return size_; }
    void reset() {
        if (backend_ && data_) backend_->release(data_);
        data_ = nullptr;
        size_ = 0;
    }

private:
    Backend* backend_ = nullptr;
    float* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace thresher::backend
