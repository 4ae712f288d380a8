// Recurrent layers on oneDNN's RNN primitives (vanilla_rnn, lstm, gru, lbr_gru): one primitive
// runs all steps of one direction, planned once per batch size; backward reuses the training
// forward's workspace. Our tensors are [N, T, C] per sample, oneDNN's ntc, so x and the hidden
// states go in without transposes; our W [in x G*H] and R [H x G*H] are oneDNN's ldigo for one
// layer and one direction (Ports reorder them when the primitive prefers a packed layout).
//
// Masks (seq_spec.md): sequences are aligned at the start, so left to right a sample's steps
// before its length L never see the padding; the output is zeroed from L on and the gradient
// there dropped, which makes padded steps change nothing. The reverse direction runs left to
// right over each sample reversed within its length (x'[t] = x[L-1-t]), and its outputs are
// reversed back. return_sequences = false keeps each direction's state at its step L - 1 (for
// the reverse direction: after reading the whole sample backwards, Keras's go_backwards).
// Activations oneDNN has no primitive for (rnn_host.h) run each direction on RnnHostDirection
// instead; the reversal, merges and masking here are the same for both.
#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cpu/rnn_host.h"
#include "core/rng.h"

namespace thresher::backend::cpu {

namespace {

using dnnl::memory;
using dnnl::prop_kind;
using dnnl::rnn_direction;

int gates_of(RnnCell c) { return c == RnnCell::Lstm ? 4 : c == RnnCell::Vanilla ? 1 : 3; }
int biases_of(RnnCell c) { return c == RnnCell::GruResetAfter ? 4 : gates_of(c); }

dnnl::algorithm vanilla_algorithm(Activation a) {
    if (a == Activation::Relu) return dnnl::algorithm::eltwise_relu;
    if (a == Activation::Sigmoid) return dnnl::algorithm::eltwise_logistic;
    return dnnl::algorithm::eltwise_tanh;
}

// Everything one direction needs: its primitives, the weights' Ports, the workspace, and its
// own copies of what backward reads (its input for the reverse direction, its hidden states).
struct Direction {
    dnnl::primitive fwd_train, fwd_infer, bwd;
    Port w_train, r_train, w_infer, r_infer, w_bwd, r_bwd, dw, dr;
    memory workspace;
    std::vector<float> x_rev, h, dh, dx;
};

class RnnOpImpl final : public RnnOp {
public:
    RnnOpImpl(DnnlContext& ctx, const RnnDesc& d) : ctx_(ctx), d_(d) {
        const int g = gates_of(d.cell), gb = biases_of(d.cell);
        const memory::dim n = d.batch, t = d.steps, in = d.in, h = d.hidden;
        const auto src = f32_desc({t, n, in}, tag::ntc), dst = f32_desc({t, n, h}, tag::ntc);
        const auto w_user = f32_desc({1, 1, in, g, h}, tag::ldigo), r_user = f32_desc({1, 1, h, g, h}, tag::ldigo);
        const auto w_any = f32_desc({1, 1, in, g, h}, tag::any), r_any = f32_desc({1, 1, h, g, h}, tag::any);
        const auto bias = f32_desc({1, 1, gb, h}, tag::ldgo);
        const auto peep = d.peepholes ? f32_desc({1, 1, 3, h}, tag::ldgo) : memory::desc();
        const memory::desc none;
        const auto dir = rnn_direction::unidirectional_left2right;
        w_size_ = static_cast<std::size_t>(in * g * h);
        r_size_ = static_cast<std::size_t>(h * g * h);
        b_size_ = static_cast<std::size_t>(gb * h);
        p_size_ = d.peepholes ? static_cast<std::size_t>(3 * h) : 0;
        out_ = d.merge == RnnMerge::Concat ? 2 * d.hidden : d.hidden;
        const int directions = d.merge == RnnMerge::None ? 1 : 2;
        const auto values = static_cast<std::size_t>(n * t);
        dirs_.resize(static_cast<std::size_t>(directions));
        for (int k = 0; k < directions; ++k) {
            auto& dir_state = dirs_[static_cast<std::size_t>(k)];
            if (k == 1) dir_state.x_rev.assign(values * d.in, 0.f);
            dir_state.h.assign(values * d.hidden, 0.f);
            dir_state.dh.assign(values * d.hidden, 0.f);
            dir_state.dx.assign(values * d.in, 0.f);
        }
        if (d.host_loop || !rnn_has_primitive(d)) {
            for (int k = 0; k < directions; ++k) host_.emplace_back(d);
            return;
        }
        dnnl_call("planning a recurrent layer", [&] {
            // Typed primitive descriptors per cell; the backward one takes the training forward
            // as its hint (the workspace layout).
            dnnl::primitive_desc train, infer, back;
            const auto pt = prop_kind::forward_training, pi = prop_kind::forward_inference, pb = prop_kind::backward;
            // GRU and its linear-before-reset form take the same descriptors.
            auto plan_gru = [&](auto fwd, auto bwd) {
                using F = decltype(fwd);
                using B = decltype(bwd);
                typename F::primitive_desc tr(typename F::desc(pt, dir, src, none, w_any, r_any, bias, dst, none), ctx_.engine);
                typename F::primitive_desc inf(typename F::desc(pi, dir, src, none, w_any, r_any, bias, dst, none), ctx_.engine);
                typename B::primitive_desc bk(
                    typename B::desc(pb, dir, src, none, w_any, r_any, bias, dst, none, src, none, w_any, r_any, bias, dst, none),
                    ctx_.engine, tr);
                train = tr, infer = inf, back = bk;
            };
            switch (d.cell) {
                case RnnCell::Lstm: {
                    using F = dnnl::lstm_forward;
                    F::primitive_desc tr(F::desc(pt, dir, src, none, none, w_any, r_any, peep, bias, dst, none, none), ctx_.engine);
                    F::primitive_desc inf(F::desc(pi, dir, src, none, none, w_any, r_any, peep, bias, dst, none, none), ctx_.engine);
                    dnnl::lstm_backward::primitive_desc bk(
                        dnnl::lstm_backward::desc(pb, dir, src, none, none, w_any, r_any, peep, bias, dst, none, none, src, none, none,
                                                  w_any, r_any, peep, bias, dst, none, none),
                        ctx_.engine, tr);
                    train = tr, infer = inf, back = bk;
                    break;
                }
                case RnnCell::Gru: plan_gru(dnnl::gru_forward{}, dnnl::gru_backward{}); break;
                case RnnCell::GruResetAfter: plan_gru(dnnl::lbr_gru_forward{}, dnnl::lbr_gru_backward{}); break;
                case RnnCell::Vanilla: {
                    using F = dnnl::vanilla_rnn_forward;
                    const auto a = vanilla_algorithm(d.act.kind);
                    F::primitive_desc tr(F::desc(pt, a, dir, src, none, w_any, r_any, bias, dst, none), ctx_.engine);
                    F::primitive_desc inf(F::desc(pi, a, dir, src, none, w_any, r_any, bias, dst, none), ctx_.engine);
                    dnnl::vanilla_rnn_backward::primitive_desc bk(
                        dnnl::vanilla_rnn_backward::desc(pb, a, dir, src, none, w_any, r_any, bias, dst, none, src, none, w_any, r_any,
                                                         bias, dst, none),
                        ctx_.engine, tr);
                    train = tr, infer = inf, back = bk;
                    break;
                }
            }
            for (int k = 0; k < directions; ++k) {
                auto& dir_state = dirs_[static_cast<std::size_t>(k)];
                dir_state.fwd_train = dnnl::primitive(train);
                dir_state.fwd_infer = dnnl::primitive(infer);
                dir_state.bwd = dnnl::primitive(back);
                dir_state.w_train = Port(ctx_, w_user, train.weights_desc(0));
                dir_state.r_train = Port(ctx_, r_user, train.weights_desc(1));
                dir_state.w_infer = Port(ctx_, w_user, infer.weights_desc(0));
                dir_state.r_infer = Port(ctx_, r_user, infer.weights_desc(1));
                dir_state.w_bwd = Port(ctx_, w_user, back.weights_desc(0));
                dir_state.r_bwd = Port(ctx_, r_user, back.weights_desc(1));
                dir_state.dw = Port(ctx_, w_user, back.diff_weights_desc(0));
                dir_state.dr = Port(ctx_, r_user, back.diff_weights_desc(1));
                dir_state.workspace = memory(train.workspace_desc(), ctx_.engine);
            }
            src_ = memory(src, ctx_.engine, DNNL_MEMORY_NONE);
            dst_ = memory(dst, ctx_.engine, DNNL_MEMORY_NONE);
            diff_src_ = memory(src, ctx_.engine, DNNL_MEMORY_NONE);
            diff_dst_ = memory(dst, ctx_.engine, DNNL_MEMORY_NONE);
            bias_ = memory(bias, ctx_.engine, DNNL_MEMORY_NONE);
            diff_bias_ = memory(bias, ctx_.engine, DNNL_MEMORY_NONE);
            if (d.peepholes) {
                peep_ = memory(peep, ctx_.engine, DNNL_MEMORY_NONE);
                diff_peep_ = memory(peep, ctx_.engine, DNNL_MEMORY_NONE);
            }
            return 0;
        });
    }

    void forward(const float* x, const int* lengths, const float* params, float* y, Mode mode) override {
        check_lengths(lengths);
        for (std::size_t k = 0; k < dirs_.size(); ++k) {
            auto& dir = dirs_[k];
            const float* src = x;
            if (k == 1) {
                reverse_within(x, dir.x_rev.data(), d_.in, lengths);
                src = dir.x_rev.data();
            }
            const float* p = params + k * direction_size();
            if (!host_.empty()) {
                host_[k].forward(src, p, dir.h.data(), mode == Mode::Training);
                continue;
            }
            const bool train = mode == Mode::Training;
            src_.set_data_handle(const_cast<float*>(src));
            dst_.set_data_handle(dir.h.data());
            bias_.set_data_handle(const_cast<float*>(p + w_size_ + r_size_));
            std::unordered_map<int, memory> args{{DNNL_ARG_SRC_LAYER, src_},
                                                  {DNNL_ARG_WEIGHTS_LAYER, (train ? dir.w_train : dir.w_infer).input(p)},
                                                  {DNNL_ARG_WEIGHTS_ITER, (train ? dir.r_train : dir.r_infer).input(p + w_size_)},
                                                  {DNNL_ARG_BIAS, bias_},
                                                  {DNNL_ARG_DST_LAYER, dst_}};
            if (d_.peepholes) {
                peep_.set_data_handle(const_cast<float*>(p + w_size_ + r_size_ + b_size_));
                args[DNNL_ARG_WEIGHTS_PEEPHOLE] = peep_;
            }
            if (train) args[DNNL_ARG_WORKSPACE] = dir.workspace;
            dnnl_call("running a recurrent layer", [&] {
                (train ? dir.fwd_train : dir.fwd_infer).execute(ctx_.stream, args);
                ctx_.stream.wait();
                return 0;
            });
        }
        merge_forward(lengths, y);
    }

    // Dropout inside the cells runs on the host path only (rnn_has_primitive); each direction
    // draws its own masks, as Keras's Bidirectional holds two layers.
    void draw_dropout(std::uint64_t seed) override {
        for (std::size_t k = 0; k < host_.size(); ++k) host_[k].draw_dropout(derive_seed(seed, k));
    }

    void backward(const float* x, const int* lengths, const float* params, const float* dy, float* dx,
                  float* grads) override {
        check_lengths(lengths);
        split_gradient(lengths, dy);
        for (std::size_t k = 0; k < dirs_.size(); ++k) {
            auto& dir = dirs_[k];
            const float* src = k == 1 ? dir.x_rev.data() : x;
            const float* p = params + k * direction_size();
            float* g = grads + k * direction_size();
            if (!host_.empty()) {
                host_[k].backward(src, p, dir.dh.data(), dir.dx.data(), g);
                continue;
            }
            src_.set_data_handle(const_cast<float*>(src));
            dst_.set_data_handle(dir.h.data());
            diff_dst_.set_data_handle(dir.dh.data());
            diff_src_.set_data_handle(dir.dx.data());
            bias_.set_data_handle(const_cast<float*>(p + w_size_ + r_size_));
            // oneDNN adds into the weight gradients: start them at zero.
            auto& dw = dir.dw.output(g);
            auto& dr = dir.dr.output(g + w_size_);
            std::memset(dw.get_data_handle(), 0, dw.get_desc().get_size());
            std::memset(dr.get_data_handle(), 0, dr.get_desc().get_size());
            std::fill(g + w_size_ + r_size_, g + direction_size(), 0.f);
            diff_bias_.set_data_handle(g + w_size_ + r_size_);
            std::unordered_map<int, memory> args{{DNNL_ARG_SRC_LAYER, src_},
                                                  {DNNL_ARG_WEIGHTS_LAYER, dir.w_bwd.input(p)},
                                                  {DNNL_ARG_WEIGHTS_ITER, dir.r_bwd.input(p + w_size_)},
                                                  {DNNL_ARG_BIAS, bias_},
                                                  {DNNL_ARG_DST_LAYER, dst_},
                                                  {DNNL_ARG_DIFF_DST_LAYER, diff_dst_},
                                                  {DNNL_ARG_DIFF_SRC_LAYER, diff_src_},
                                                  {DNNL_ARG_DIFF_WEIGHTS_LAYER, dw},
                                                  {DNNL_ARG_DIFF_WEIGHTS_ITER, dr},
                                                  {DNNL_ARG_DIFF_BIAS, diff_bias_},
                                                  {DNNL_ARG_WORKSPACE, dir.workspace}};
            if (d_.peepholes) {
                peep_.set_data_handle(const_cast<float*>(p + w_size_ + r_size_ + b_size_));
                diff_peep_.set_data_handle(g + w_size_ + r_size_ + b_size_);
                args[DNNL_ARG_WEIGHTS_PEEPHOLE] = peep_;
                args[DNNL_ARG_DIFF_WEIGHTS_PEEPHOLE] = diff_peep_;
            }
            dnnl_call("the backward pass of a recurrent layer", [&] {
                dir.bwd.execute(ctx_.stream, args);
                ctx_.stream.wait();
                return 0;
            });
            dir.dw.finish_output();
            dir.dr.finish_output();
        }
        if (!dx) return;
        const std::size_t values = static_cast<std::size_t>(d_.batch) * d_.steps * d_.in;
        std::copy_n(dirs_[0].dx.data(), values, dx);
        if (dirs_.size() == 2) {
            // The reverse direction's dx is in reversed order: add it back where it belongs.
            for (int n = 0; n < d_.batch; ++n) {
                const int len = lengths[n];
                for (int t = 0; t < len; ++t) {
                    const float* from = dirs_[1].dx.data() + (static_cast<std::size_t>(n) * d_.steps + (len - 1 - t)) * d_.in;
                    float* to = dx + (static_cast<std::size_t>(n) * d_.steps + t) * d_.in;
                    for (int c = 0; c < d_.in; ++c) to[c] += from[c];
                }
            }
        }
        // Padded steps: zero (nothing downstream reads them, and they must change nothing).
        for (int n = 0; n < d_.batch; ++n)
            std::fill(dx + (static_cast<std::size_t>(n) * d_.steps + lengths[n]) * d_.in,
                      dx + static_cast<std::size_t>(n + 1) * d_.steps * d_.in, 0.f);
    }

private:
    std::size_t direction_size() const { return w_size_ + r_size_ + b_size_ + p_size_; }

    void check_lengths(const int* lengths) const {
        for (int n = 0; n < d_.batch; ++n)
            if (lengths[n] < 1 || lengths[n] > d_.steps)
                throw BackendError("recurrent layer: sample " + std::to_string(n) + " has length " + std::to_string(lengths[n]) +
                                   ", outside 1.." + std::to_string(d_.steps));
    }

    // out[n][t] = in[n][L-1-t] for t < L, zeros after.
    void reverse_within(const float* in, float* out, int width, const int* lengths) const {
        for (int n = 0; n < d_.batch; ++n) {
            const int len = lengths[n];
            const std::size_t base = static_cast<std::size_t>(n) * d_.steps * width;
            for (int t = 0; t < len; ++t)
                std::copy_n(in + base + static_cast<std::size_t>(len - 1 - t) * width, width, out + base + static_cast<std::size_t>(t) * width);
            std::fill(out + base + static_cast<std::size_t>(len) * width, out + base + static_cast<std::size_t>(d_.steps) * width, 0.f);
        }
    }

    // The forward direction's state at step t of sample n, and the reverse direction's state for
    // the same original step (its run's step L-1-t).
    const float* state(std::size_t k, int n, int t) const {
        return dirs_[k].h.data() + (static_cast<std::size_t>(n) * d_.steps + t) * d_.hidden;
    }
    float* dstate(std::size_t k, int n, int t) { return dirs_[k].dh.data() + (static_cast<std::size_t>(n) * d_.steps + t) * d_.hidden; }

    void merge_forward(const int* lengths, float* y) const {
        const int h = d_.hidden;
        auto join = [&](const float* a, const float* b, float* o) {
            switch (d_.merge) {
                case RnnMerge::None: std::copy_n(a, h, o); break;
                case RnnMerge::Concat: std::copy_n(a, h, o), std::copy_n(b, h, o + h); break;
                case RnnMerge::Sum: for (int j = 0; j < h; ++j) o[j] = a[j] + b[j]; break;
                case RnnMerge::Mul: for (int j = 0; j < h; ++j) o[j] = a[j] * b[j]; break;
                case RnnMerge::Average: for (int j = 0; j < h; ++j) o[j] = 0.5f * (a[j] + b[j]); break;
            }
        };
        const bool two = dirs_.size() == 2;
        for (int n = 0; n < d_.batch; ++n) {
            const int len = lengths[n];
            if (!d_.return_sequences) {
                join(state(0, n, len - 1), two ? state(1, n, len - 1) : nullptr, y + static_cast<std::size_t>(n) * out_);
                continue;
            }
            float* row = y + static_cast<std::size_t>(n) * d_.steps * out_;
            for (int t = 0; t < len; ++t) join(state(0, n, t), two ? state(1, n, len - 1 - t) : nullptr, row + static_cast<std::size_t>(t) * out_);
            std::fill(row + static_cast<std::size_t>(len) * out_, row + static_cast<std::size_t>(d_.steps) * out_, 0.f);
        }
    }

    // dL/d(each direction's states) from dL/dy: zero except at the steps y read.
    void split_gradient(const int* lengths, const float* dy) {
        const int h = d_.hidden;
        const bool two = dirs_.size() == 2;
        for (auto& dir : dirs_) std::fill(dir.dh.begin(), dir.dh.end(), 0.f);
        auto split = [&](const float* g, int n, int t0, int t1) {
            float* a = dstate(0, n, t0);
            float* b = two ? dstate(1, n, t1) : nullptr;
            switch (d_.merge) {
                case RnnMerge::None: std::copy_n(g, h, a); break;
                case RnnMerge::Concat: std::copy_n(g, h, a), std::copy_n(g + h, h, b); break;
                case RnnMerge::Sum: std::copy_n(g, h, a), std::copy_n(g, h, b); break;
                case RnnMerge::Average:
                    for (int j = 0; j < h; ++j) a[j] = b[j] = 0.5f * g[j];
                    break;
                case RnnMerge::Mul:
                    for (int j = 0; j < h; ++j) {
                        a[j] = g[j] * state(1, n, t1)[j];
                        b[j] = g[j] * state(0, n, t0)[j];
                    }
                    break;
            }
        };
        for (int n = 0; n < d_.batch; ++n) {
            const int len = lengths[n];
            if (!d_.return_sequences) {
                split(dy + static_cast<std::size_t>(n) * out_, n, len - 1, len - 1);
                continue;
            }
            for (int t = 0; t < len; ++t) split(dy + (static_cast<std::size_t>(n) * d_.steps + t) * out_, n, t, len - 1 - t);
        }
    }

    DnnlContext& ctx_;
    RnnDesc d_;
    int out_ = 0;
    std::size_t w_size_ = 0, r_size_ = 0, b_size_ = 0, p_size_ = 0;
    std::vector<Direction> dirs_;
    std::vector<RnnHostDirection> host_;  // one per direction where oneDNN has no primitive
    memory src_, dst_, diff_src_, diff_dst_, bias_, diff_bias_, peep_, diff_peep_;
};

}  // namespace

std::unique_ptr<RnnOp> make_rnn_op(DnnlContext& ctx, const RnnDesc& d) { return std::make_unique<RnnOpImpl>(ctx, d); }

}  // namespace thresher::backend::cpu
