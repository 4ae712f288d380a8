// Reshape (channels-last order) and permute on the CPU: a gather through a precomputed index map.
// The tensors are small (one layer's activations), and a map handles every axis order alike.
#include "backend/cpu/ops.h"

namespace thresher::backend::cpu {

namespace {

class CpuGatherOp final : public GatherOp {
public:
    explicit CpuGatherOp(std::vector<std::uint32_t> map) : map_(std::move(map)) {}
    void forward(const float* x, float* y, std::size_t rows) override {
        const std::size_t w = map_.size();
        for (std::size_t r = 0; r < rows; ++r, x += w, y += w)
            for (std::size_t j = 0; j < w; ++j) y[j] = x[map_[j]];
    }
    void backward(const float* dy, float* dx, std::size_t rows) override {
        const std::size_t w = map_.size();
        for (std::size_t r = 0; r < rows; ++r, dy += w, dx += w)
            for (std::size_t j = 0; j < w; ++j) dx[map_[j]] = dy[j];
    }

private:
    std::vector<std::uint32_t> map_;
};

}  // namespace

std::unique_ptr<GatherOp> make_gather_op(const std::vector<std::uint32_t>& map) {
    return std::make_unique<CpuGatherOp>(map);
}

}  // namespace thresher::backend::cpu
