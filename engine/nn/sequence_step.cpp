// Steps of the sequence layers (seq_spec.md). Recurrent layers run on the backend's RnnOp
// (recurrent_step.cpp), convolution1d on its ConvOp (convolution1d_step.cpp); embedding,
// repeat_vector and pooling over time are gathers and sums on host memory (the CPU backend); a
// backend without them is refused here, at plan time, naming the layer. Padded steps (from a sample's length on) are
// written as zeros and give zero gradient; the network zeroes them around every layer as well.
#include "nn/sequence_step.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace thresher::nn {

namespace {

using config::LayerType;

// Rows of E by id: y[n][t] = E[id(n, t)] for t < L, zeros after. Backward adds dy's rows into
// dE in sample and step order (deterministic); ids have no gradient.
class EmbeddingStep final : public LayerStep {
public:
    EmbeddingStep(const config::LayerConfig& l, std::size_t index, int batch)
        : label_(l.label(index)), batch_(batch), steps_(l.in_shape.t), units_(l.units), vocabulary_(l.vocabulary) {}
    void forward(float* params, const float* x, float* y, const StepContext& ctx) override {
        lengths_ = ctx.lengths;
        const auto e = static_cast<std::size_t>(units_);
        for (int n = 0; n < batch_; ++n) {
            for (int t = 0; t < steps_; ++t) {
                float* row = y + (static_cast<std::size_t>(n) * steps_ + t) * e;
                if (t >= lengths_[n]) {
                    std::fill(row, row + e, 0.f);
                    continue;
                }
                const float v = x[static_cast<std::size_t>(n) * steps_ + t];
                const std::size_t id = checked_id(v, n, t);
                std::copy_n(params + id * e, e, row);
            }
        }
    }
    void backward(const float*, const float* x, const float*, float* dy, float* dx, float* grads) override {
        const auto e = static_cast<std::size_t>(units_);
        std::fill(grads, grads + static_cast<std::size_t>(vocabulary_) * e, 0.f);
        for (int n = 0; n < batch_; ++n)
            for (int t = 0; t < lengths_[n]; ++t) {
                const std::size_t id = checked_id(x[static_cast<std::size_t>(n) * steps_ + t], n, t);
                const float* g = dy + (static_cast<std::size_t>(n) * steps_ + t) * e;
                float* to = grads + id * e;
                for (std::size_t j = 0; j < e; ++j) to[j] += g[j];
            }
        if (dx) std::fill(dx, dx + static_cast<std::size_t>(batch_) * steps_, 0.f);
    }

private:
    std::size_t checked_id(float v, int n, int t) const {
        if (!(v >= 0.f) || v >= static_cast<float>(vocabulary_) || std::floor(v) != v)
            throw DataError(label_ + ": token id " + nlohmann::json(config::decimal(v)).dump() + " at step " + std::to_string(t) + " of sample " +
                            std::to_string(n) + " of the batch is not an integer in [0, " + std::to_string(vocabulary_) + ")");
        return static_cast<std::size_t>(v);
    }

    std::string label_;
    int batch_, steps_, units_, vocabulary_;
    const int* lengths_ = nullptr;
};

// Flat [C] -> `times` steps of it; backward sums the steps' gradients.
class RepeatVectorStep final : public LayerStep {
public:
    RepeatVectorStep(const config::LayerConfig& l, int batch) : batch_(batch), times_(l.repeat), c_(l.in_shape.c) {}
    void forward(float*, const float* x, float* y, const StepContext&) override {
        const auto c = static_cast<std::size_t>(c_);
        for (int n = 0; n < batch_; ++n)
            for (int t = 0; t < times_; ++t) std::copy_n(x + n * c, c, y + (static_cast<std::size_t>(n) * times_ + t) * c);
    }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (!dx) return;
        const auto c = static_cast<std::size_t>(c_);
        std::fill(dx, dx + static_cast<std::size_t>(batch_) * c, 0.f);
        for (int n = 0; n < batch_; ++n)
            for (int t = 0; t < times_; ++t) {
                const float* g = dy + (static_cast<std::size_t>(n) * times_ + t) * c;
                for (std::size_t j = 0; j < c; ++j) dx[n * c + j] += g[j];
            }
    }

private:
    int batch_, times_, c_;
};

// Global pooling over the valid steps (masked): the mean or the maximum of steps 0..L-1.
class TimePoolStep final : public LayerStep {
public:
    TimePoolStep(const config::LayerConfig& l, int batch)
        : batch_(batch), steps_(l.in_shape.t), c_(l.in_shape.c), max_(l.max_pool),
          argmax_(static_cast<std::size_t>(batch) * l.in_shape.c) {}
    void forward(float*, const float* x, float* y, const StepContext& ctx) override {
        lengths_ = ctx.lengths;
        const auto c = static_cast<std::size_t>(c_);
        for (int n = 0; n < batch_; ++n) {
            const float* xs = x + static_cast<std::size_t>(n) * steps_ * c;
            float* out = y + n * c;
            const int len = lengths_[n];
            for (std::size_t j = 0; j < c; ++j) {
                if (max_) {
                    int best = 0;
                    for (int t = 1; t < len; ++t)
                        if (xs[t * c + j] > xs[best * c + j]) best = t;
                    argmax_[n * c + j] = best;
                    out[j] = xs[best * c + j];
                } else {
                    double s = 0.0;
                    for (int t = 0; t < len; ++t) s += xs[t * c + j];
                    out[j] = static_cast<float>(s / len);
                }
            }
        }
    }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (!dx) return;
        const auto c = static_cast<std::size_t>(c_);
        std::fill(dx, dx + static_cast<std::size_t>(batch_) * steps_ * c, 0.f);
        for (int n = 0; n < batch_; ++n) {
            float* d = dx + static_cast<std::size_t>(n) * steps_ * c;
            const int len = lengths_[n];
            for (std::size_t j = 0; j < c; ++j) {
                if (max_) d[argmax_[n * c + j] * c + j] = dy[n * c + j];
                else
                    for (int t = 0; t < len; ++t) d[t * c + j] = dy[n * c + j] / static_cast<float>(len);
            }
        }
    }

private:
    int batch_, steps_, c_;
    bool max_;
    std::vector<int> argmax_;
    const int* lengths_ = nullptr;
};

// Pooling along time with a window (kernel k, stride s, the padding shape inference chose): each
// output step pools the input steps of its window that are valid (inside 0..L-1), so neither the
// padding nor a sample's padded steps count (an average divides by the valid steps it saw).
class TimeWindowPoolStep final : public LayerStep {
public:
    TimeWindowPoolStep(const config::LayerConfig& l, int batch)
        : batch_(batch), t_in_(l.in_shape.t), t_out_(l.out_shape.t), c_(l.in_shape.c), k_(l.kernel[0]), s_(l.stride[0]),
          pad_(l.pads[0]), max_(l.max_pool), argmax_(static_cast<std::size_t>(batch) * l.out_shape.t * l.in_shape.c, -1) {}
    void forward(float*, const float* x, float* y, const StepContext& ctx) override {
        lengths_ = ctx.lengths;
        const auto c = static_cast<std::size_t>(c_);
        for (int n = 0; n < batch_; ++n) {
            const float* xs = x + static_cast<std::size_t>(n) * t_in_ * c;
            for (int o = 0; o < t_out_; ++o) {
                const auto [from, to] = window(n, o);
                float* out = y + (static_cast<std::size_t>(n) * t_out_ + o) * c;
                int* arg = argmax_.data() + (static_cast<std::size_t>(n) * t_out_ + o) * c;
                for (std::size_t j = 0; j < c; ++j) {
                    if (from >= to) {
                        out[j] = 0.f, arg[j] = -1;
                    } else if (max_) {
                        int best = from;
                        for (int t = from + 1; t < to; ++t)
                            if (xs[t * c + j] > xs[best * c + j]) best = t;
                        out[j] = xs[best * c + j], arg[j] = best;
                    } else {
                        double sum = 0.0;
                        for (int t = from; t < to; ++t) sum += xs[t * c + j];
                        out[j] = static_cast<float>(sum / (to - from));
                    }
                }
            }
        }
    }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (!dx) return;
        const auto c = static_cast<std::size_t>(c_);
        std::fill(dx, dx + static_cast<std::size_t>(batch_) * t_in_ * c, 0.f);
        for (int n = 0; n < batch_; ++n) {
            float* d = dx + static_cast<std::size_t>(n) * t_in_ * c;
            for (int o = 0; o < t_out_; ++o) {
                const auto [from, to] = window(n, o);
                const float* g = dy + (static_cast<std::size_t>(n) * t_out_ + o) * c;
                const int* arg = argmax_.data() + (static_cast<std::size_t>(n) * t_out_ + o) * c;
                for (std::size_t j = 0; j < c; ++j) {
                    if (from >= to) continue;
                    if (max_) d[arg[j] * c + j] += g[j];
                    else
                        for (int t = from; t < to; ++t) d[t * c + j] += g[j] / static_cast<float>(to - from);
                }
            }
        }
    }

private:
    // Output step o's input steps [from, to), cut to the sample's valid steps.
    std::pair<int, int> window(int n, int o) const {
        const int start = o * s_ - pad_;
        return {std::max(start, 0), std::min(start + k_, lengths_[n])};
    }

    int batch_, t_in_, t_out_, c_, k_, s_, pad_;
    bool max_;
    std::vector<int> argmax_;
    const int* lengths_ = nullptr;
};

}  // namespace

std::unique_ptr<LayerStep> plan_sequence_layer(backend::Backend& be, const config::LayerConfig& l, std::size_t index, int batch) {
    const std::string label = l.label(index);
    if (config::is_recurrent(l.type)) {
        if (!be.has_rnn())
            throw ConfigError(label + ": the " + be.info().name + " backend has no recurrent layers yet (use the CPU backend)");
        return plan_recurrent(be, l, label, batch);
    }
    if (!be.host_memory())
        throw ConfigError(label + ": the " + be.info().name + " backend cannot run " + std::string(config::to_string(l.type)) +
                          " on sequences yet (use the CPU backend)");
    switch (l.type) {
        case LayerType::Embedding: return std::make_unique<EmbeddingStep>(l, index, batch);
        case LayerType::RepeatVector: return std::make_unique<RepeatVectorStep>(l, batch);
        case LayerType::Convolution1d: return plan_convolution1d(be, l, batch);
        case LayerType::Subsampling:
            if (l.global) return std::make_unique<TimePoolStep>(l, batch);
            return std::make_unique<TimeWindowPoolStep>(l, batch);
        default: break;
    }
    throw ConfigError(label + ": " + std::string(config::to_string(l.type)) + " cannot run on a sequence");
}

}  // namespace thresher::nn
