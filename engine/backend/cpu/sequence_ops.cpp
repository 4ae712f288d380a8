// Rows by index (an embedding's lookup, go_backwards' reordering) and pooling along time on the CPU (backend.h RowGatherOp, TimePoolOp):
// plain loops over host memory, in the orders backend.h fixes (each id's rows added in row
// order; each input step's window contributions in output-step order), which the CUDA kernels
// follow too, so both give the same sums.
#include <algorithm>
#include <utility>
#include <vector>

#include "backend/cpu/ops.h"

namespace thresher::backend::cpu {

namespace {

class CpuRowGatherOp final : public RowGatherOp {
public:
    explicit CpuRowGatherOp(const RowGatherDesc& d) : d_(d) {}
    void forward(const int* ids, std::size_t rows, const float* table, float* y) override {
        const auto e = static_cast<std::size_t>(d_.width);
        ids_.assign(ids, ids + rows);
        for (std::size_t r = 0; r < rows; ++r) {
            float* row = y + r * e;
            if (ids[r] < 0) std::fill(row, row + e, 0.f);
            else std::copy_n(table + static_cast<std::size_t>(ids[r]) * e, e, row);
        }
    }
    void backward(const float* dy, float* dtable) override {
        const auto e = static_cast<std::size_t>(d_.width);
        std::fill(dtable, dtable + static_cast<std::size_t>(d_.table_rows) * e, 0.f);
        for (std::size_t r = 0; r < ids_.size(); ++r) {
            if (ids_[r] < 0) continue;
            const float* g = dy + r * e;
            float* to = dtable + static_cast<std::size_t>(ids_[r]) * e;
            for (std::size_t j = 0; j < e; ++j) to[j] += g[j];
        }
    }

private:
    RowGatherDesc d_;
    std::vector<int> ids_;  // the last forward's
};

class CpuTimePoolOp final : public TimePoolOp {
public:
    explicit CpuTimePoolOp(const TimePoolDesc& d)
        : d_(d), lengths_(static_cast<std::size_t>(d.batch)),
          argmax_(static_cast<std::size_t>(d.batch) * d.t_out * d.channels, -1) {}
    void forward(const float* x, const int* lengths, float* y) override {
        std::copy_n(lengths, d_.batch, lengths_.begin());
        const auto c = static_cast<std::size_t>(d_.channels);
        for (int n = 0; n < d_.batch; ++n) {
            const float* xs = x + static_cast<std::size_t>(n) * d_.t_in * c;
            for (int o = 0; o < d_.t_out; ++o) {
                const auto [from, to] = window(n, o);
                const std::size_t at = (static_cast<std::size_t>(n) * d_.t_out + o) * c;
                for (std::size_t j = 0; j < c; ++j) {
                    if (from >= to) {
                        y[at + j] = 0.f, argmax_[at + j] = -1;
                    } else if (d_.max) {
                        int best = from;
                        for (int t = from + 1; t < to; ++t)
                            if (xs[t * c + j] > xs[best * c + j]) best = t;
                        y[at + j] = xs[best * c + j], argmax_[at + j] = best;
                    } else {
                        double sum = 0.0;
                        for (int t = from; t < to; ++t) sum += xs[t * c + j];
                        y[at + j] = static_cast<float>(sum / (to - from));
                    }
                }
            }
        }
    }
    void backward(const float* dy, float* dx) override {
        const auto c = static_cast<std::size_t>(d_.channels);
        std::fill(dx, dx + static_cast<std::size_t>(d_.batch) * d_.t_in * c, 0.f);
        for (int n = 0; n < d_.batch; ++n) {
            float* d = dx + static_cast<std::size_t>(n) * d_.t_in * c;
            for (int o = 0; o < d_.t_out; ++o) {
                const auto [from, to] = window(n, o);
                if (from >= to) continue;
                const std::size_t at = (static_cast<std::size_t>(n) * d_.t_out + o) * c;
                for (std::size_t j = 0; j < c; ++j) {
                    if (d_.max) d[argmax_[at + j] * c + j] += dy[at + j];
                    else
                        for (int t = from; t < to; ++t) d[t * c + j] += dy[at + j] / static_cast<float>(to - from);
                }
            }
        }
    }

private:
    // Output step o's input steps [from, to), cut to the sample's valid steps.
    std::pair<int, int> window(int n, int o) const {
        const int start = o * d_.stride - d_.pad;
        return {std::max(start, 0), std::min(start + d_.kernel, lengths_[static_cast<std::size_t>(n)])};
    }

    TimePoolDesc d_;
    std::vector<int> lengths_, argmax_;
};

}  // namespace

std::unique_ptr<RowGatherOp> make_row_gather_op(const RowGatherDesc& d) { return std::make_unique<CpuRowGatherOp>(d); }
std::unique_ptr<TimePoolOp> make_time_pool_op(const TimePoolDesc& d) { return std::make_unique<CpuTimePoolOp>(d); }

}  // namespace thresher::backend::cpu
