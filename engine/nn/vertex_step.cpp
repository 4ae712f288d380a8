// The vertices' forward and backward passes. Element-wise vertices work on batch x size floats
// at once; concatenation and subsets move one run of C*H*W floats per sample (NCHW keeps a
// sample's channels together), so both directions are one strided copy per input.
#include "nn/vertex_step.h"

#include <algorithm>
#include <array>

#include "core/error.h"

namespace thresher::nn {

namespace {

using config::LayerType;

class ElementwiseStep final : public VertexStep {
public:
    ElementwiseStep(backend::Backend& be, LayerType type, std::size_t count) : be_(be), type_(type), n_(count) {}

    void forward(const std::vector<const float*>& xs, float* y) override {
        const std::size_t k = xs.size();
        switch (type_) {
            case LayerType::Add:
                if (k == 1) be_.copy(y, xs[0], n_);
                else be_.add(xs[0], xs[1], y, n_);  // one pass for the common two inputs
                for (std::size_t i = 2; i < k; ++i) be_.axpy(1.f, xs[i], y, n_);
                break;
            case LayerType::Subtract:
                be_.copy(y, xs[0], n_);
                for (std::size_t i = 1; i < k; ++i) be_.axpy(type_ == LayerType::Subtract ? -1.f : 1.f, xs[i], y, n_);
                break;
            case LayerType::Average:
                be_.fill(y, 0.f, n_);
                for (std::size_t i = 0; i < k; ++i) be_.axpy(1.f / static_cast<float>(k), xs[i], y, n_);
                break;
            case LayerType::Multiply:
                if (k == 1) be_.copy(y, xs[0], n_);
                else be_.multiply(xs[0], xs[1], y, n_);
                for (std::size_t i = 2; i < k; ++i) be_.multiply(y, xs[i], y, n_);
                break;
            case LayerType::Maximum:
                if (k == 1) be_.copy(y, xs[0], n_);
                else be_.maximum(xs[0], xs[1], y, n_);
                for (std::size_t i = 2; i < k; ++i) be_.maximum(y, xs[i], y, n_);
                break;
            default: throw Error("not an element-wise vertex");
        }
    }

    void backward(const std::vector<const float*>& xs, const float* y, const float* dy,
                  const std::vector<float*>& dxs) override {
        const std::size_t k = xs.size();
        for (std::size_t i = 0; i < k; ++i) {
            float* dx = dxs[i];
            if (!dx) continue;
            switch (type_) {
                case LayerType::Add: be_.copy(dx, dy, n_); break;
                case LayerType::Subtract:
                    if (i == 0) {
                        be_.copy(dx, dy, n_);
                    } else {
                        be_.fill(dx, 0.f, n_);
                        be_.axpy(-1.f, dy, dx, n_);
                    }
                    break;
                case LayerType::Average:
                    be_.fill(dx, 0.f, n_);
                    be_.axpy(1.f / static_cast<float>(k), dy, dx, n_);
                    break;
                case LayerType::Multiply:
                    // d(x0 x1 ... )/dx_i: the product of the other inputs.
                    be_.copy(dx, dy, n_);
                    for (std::size_t j = 0; j < k; ++j)
                        if (j != i) be_.multiply(dx, xs[j], dx, n_);
                    break;
                case LayerType::Maximum:
                    // To the input that is the maximum (every tied one: ties have measure zero).
                    be_.max_route(xs[i], y, dy, dx, n_);
                    break;
                default: throw Error("not an element-wise vertex");
            }
        }
    }

private:
    backend::Backend& be_;
    LayerType type_;
    std::size_t n_;
};

// Concatenation along channels: input k's C_k*H*W floats of each sample sit at offset_k inside
// the output's sum-of-C*H*W run.
class ConcatStep final : public VertexStep {
public:
    // A sequence's sample is T rows of its features (time-major): the rows to join are its steps.
    ConcatStep(backend::Backend& be, const std::vector<config::Shape>& inputs, int batch)
        : be_(be), rows_(static_cast<std::size_t>(batch) * static_cast<std::size_t>(std::max(inputs.front().t, 1))) {
        for (const auto& s : inputs) {
            const std::size_t per_row = s.sequence() ? static_cast<std::size_t>(s.c) : s.size();
            offsets_.push_back(total_);
            sizes_.push_back(per_row);
            total_ += per_row;
        }
    }
    void forward(const std::vector<const float*>& xs, float* y) override {
        for (std::size_t k = 0; k < xs.size(); ++k)
            be_.copy_rows(y + offsets_[k], total_, xs[k], sizes_[k], sizes_[k], rows_);
    }
    void backward(const std::vector<const float*>&, const float*, const float* dy, const std::vector<float*>& dxs) override {
        for (std::size_t k = 0; k < dxs.size(); ++k)
            if (dxs[k]) be_.copy_rows(dxs[k], sizes_[k], dy + offsets_[k], total_, sizes_[k], rows_);
    }

private:
    backend::Backend& be_;
    std::size_t rows_;
    std::vector<std::size_t> offsets_, sizes_;
    std::size_t total_ = 0;
};

// Channels [first, last] of each sample: one run of (last - first + 1)*H*W floats.
class SubsetStep final : public VertexStep {
public:
    SubsetStep(backend::Backend& be, const config::LayerConfig& l, const config::Shape& in, int batch)
        : be_(be), rows_(batch), in_size_(in.size()),
          offset_(static_cast<std::size_t>(l.subset[0]) * in.h * in.w), width_(l.out_shape.size()) {}
    void forward(const std::vector<const float*>& xs, float* y) override {
        be_.copy_rows(y, width_, xs[0] + offset_, in_size_, width_, rows_);
    }
    void backward(const std::vector<const float*>&, const float*, const float* dy, const std::vector<float*>& dxs) override {
        if (!dxs[0]) return;
        be_.fill(dxs[0], 0.f, rows_ * in_size_);  // channels outside the subset do not reach the loss
        be_.copy_rows(dxs[0] + offset_, in_size_, dy, width_, width_, rows_);
    }

private:
    backend::Backend& be_;
    std::size_t rows_, in_size_, offset_, width_;
};

// Reshape and permute: each sample's values rearranged through an index map (GatherOp), or for a
// reshape in Thresher's own order the same values under a new shape (a copy).
class RearrangeStep final : public VertexStep {
public:
    RearrangeStep(backend::Backend& be, const config::LayerConfig& l, const config::Shape& in, int batch)
        : be_(be), rows_(static_cast<std::size_t>(batch)), width_(in.size()) {
        if (l.type == LayerType::Reshape && !l.channels_last_order) return;  // a view: copy
        std::vector<std::uint32_t> map(width_);
        const auto& out = l.out_shape;
        for (int c = 0; c < out.c; ++c)
            for (int y = 0; y < out.h; ++y)
                for (int x = 0; x < out.w; ++x) {
                    const std::size_t j = (static_cast<std::size_t>(c) * out.h + y) * out.w + x;
                    std::size_t from = 0;
                    if (l.type == LayerType::Reshape) {
                        // The value counted L-th channels last in the output is the L-th channels
                        // last in the input.
                        const std::size_t cl = (static_cast<std::size_t>(y) * out.w + x) * out.c + c;
                        const std::size_t ic = cl % in.c, rest = cl / in.c;
                        const std::size_t ix = rest % in.w, iy = rest / in.w;
                        from = (ic * in.h + iy) * in.w + ix;
                    } else {
                        std::array<int, 3> at{};  // input (channel, row, column)
                        const std::array<int, 3> o{c, y, x};
                        for (std::size_t k = 0; k < 3; ++k) at[static_cast<std::size_t>(l.permute_axes[k])] = o[k];
                        from = (static_cast<std::size_t>(at[0]) * in.h + at[1]) * in.w + at[2];
                    }
                    map[j] = static_cast<std::uint32_t>(from);
                }
        op_ = be.make_gather(map);
    }
    void forward(const std::vector<const float*>& xs, float* y) override {
        if (op_) op_->forward(xs[0], y, rows_);
        else be_.copy(y, xs[0], rows_ * width_);
    }
    void backward(const std::vector<const float*>&, const float*, const float* dy, const std::vector<float*>& dxs) override {
        if (!dxs[0]) return;
        if (op_) op_->backward(dy, dxs[0], rows_);
        else be_.copy(dxs[0], dy, rows_ * width_);
    }

private:
    backend::Backend& be_;
    std::size_t rows_, width_;
    std::unique_ptr<backend::GatherOp> op_;
};

}  // namespace

std::unique_ptr<VertexStep> plan_vertex(backend::Backend& be, const config::LayerConfig& l,
                                        const std::vector<config::Shape>& inputs, int batch) {
    switch (l.type) {
        case LayerType::Concatenate: return std::make_unique<ConcatStep>(be, inputs, batch);
        case LayerType::Subset: return std::make_unique<SubsetStep>(be, l, inputs.at(0), batch);
        case LayerType::Reshape:
        case LayerType::Permute: return std::make_unique<RearrangeStep>(be, l, inputs.at(0), batch);
        default:
            return std::make_unique<ElementwiseStep>(be, l.type, static_cast<std::size_t>(batch) * l.out_shape.size());
    }
}

}  // namespace thresher::nn
