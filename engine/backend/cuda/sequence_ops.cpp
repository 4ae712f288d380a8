// Rows by index (an embedding's lookup, go_backwards' reordering) and pooling along time on the
// GPU (backend.h RowGatherOp, TimePoolOp; kernels in sequence_kernels.cu).
//
// Rows by index: the indices come from the host (the caller checks them there), so the host
// also sorts each forward's rows by index: backward then sums each index's rows in row order
// with one thread per column, which gives the CPU backend's sums exactly, run after run
// (scattering with atomics would add in whatever order the threads arrive). One upload carries
// the indices, the sorted rows, each index's first position and the indices that occur.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/ops.h"
#include "backend/cuda/uploaded_ints.h"
#include "core/error.h"

namespace thresher::backend::cuda {

namespace {

class CudaRowGatherOp final : public RowGatherOp {
public:
    CudaRowGatherOp(CudaBackend& be, const RowGatherDesc& d)
        : be_(be), d_(d), ints_(4 * static_cast<std::size_t>(std::max(d.rows, 0)) + 1) {
        if (d.rows < 1 || d.width < 1 || d.table_rows < 1)
            throw BackendError("CUDA rows by index: rows, width and table rows must be positive, got " + std::to_string(d.rows) +
                               ", " + std::to_string(d.width) + ", " + std::to_string(d.table_rows));
    }
    void forward(const int* ids, std::size_t rows, const float* table, float* y) override {
        be_.activate();
        if (rows > static_cast<std::size_t>(d_.rows))
            throw BackendError("CUDA rows by index: " + std::to_string(rows) + " rows for an op planned for " + std::to_string(d_.rows));
        // [ids (rows) | rows sorted by id (m) | starts (u + 1) | ids that occur (u)]
        pairs_.clear();
        for (std::size_t r = 0; r < rows; ++r)
            if (ids[r] >= 0) pairs_.emplace_back(ids[r], static_cast<int>(r));
        std::sort(pairs_.begin(), pairs_.end());
        packed_.assign(ids, ids + rows);
        for (const auto& p : pairs_) packed_.push_back(p.second);
        unique_.clear();
        starts_at_ = packed_.size();
        for (std::size_t p = 0; p < pairs_.size(); ++p)
            if (p == 0 || pairs_[p].first != pairs_[p - 1].first) {
                packed_.push_back(static_cast<int>(p));
                unique_.push_back(pairs_[p].first);
            }
        packed_.push_back(static_cast<int>(pairs_.size()));
        unique_at_ = packed_.size();
        packed_.insert(packed_.end(), unique_.begin(), unique_.end());
        order_at_ = rows;
        count_ = unique_.size();
        ints_.upload(be_.stream(), packed_.data(), packed_.size());
        kernels::row_gather_forward(be_.stream(), ints_.data(), rows, table, d_.width, y);
    }
    void backward(const float* dy, float* dtable) override {
        be_.activate();
        be_.fill(dtable, 0.f, static_cast<std::size_t>(d_.table_rows) * d_.width);
        const int* base = ints_.data();
        kernels::row_gather_backward(be_.stream(), base + order_at_, base + starts_at_, base + unique_at_, count_, dy,
                                    d_.width, dtable);
    }

private:
    CudaBackend& be_;
    RowGatherDesc d_;
    UploadedInts ints_;
    std::vector<std::pair<int, int>> pairs_;  // (index, row) of the rows with an index
    std::vector<int> packed_, unique_;  // kept between forwards: no allocation per batch
    std::size_t order_at_ = 0, starts_at_ = 0, unique_at_ = 0, count_ = 0;
};

class CudaTimePoolOp final : public TimePoolOp {
public:
    CudaTimePoolOp(CudaBackend& be, const TimePoolDesc& d)
        : be_(be), d_(d), lengths_(static_cast<std::size_t>(std::max(d.batch, 0))),
          argmax_(static_cast<std::size_t>(std::max(d.batch, 0)) * std::max(d.t_out, 0) * std::max(d.channels, 0)) {
        if (d.batch < 1 || d.t_in < 1 || d.t_out < 1 || d.channels < 1 || d.kernel < 1 || d.stride < 1 || d.pad < 0)
            throw BackendError("CUDA pooling over time: sizes must be positive");
    }
    void forward(const float* x, const int* lengths, float* y) override {
        be_.activate();
        for (int n = 0; n < d_.batch; ++n)
            if (lengths[n] < 1 || lengths[n] > d_.t_in)
                throw BackendError("pooling over time: sample " + std::to_string(n) + " has length " +
                                   std::to_string(lengths[n]) + ", outside 1.." + std::to_string(d_.t_in));
        lengths_.upload(be_.stream(), lengths, static_cast<std::size_t>(d_.batch));
        kernels::time_pool_forward(be_.stream(), d_, lengths_.data(), x, y, argmax_.data());
    }
    void backward(const float* dy, float* dx) override {
        be_.activate();
        kernels::time_pool_backward(be_.stream(), d_, lengths_.data(), argmax_.data(), dy, dx);
    }

private:
    CudaBackend& be_;
    TimePoolDesc d_;
    UploadedInts lengths_;
    DeviceArray<int> argmax_;
};

}  // namespace

std::unique_ptr<RowGatherOp> make_row_gather_op(CudaBackend& be, const RowGatherDesc& d) {
    return std::make_unique<CudaRowGatherOp>(be, d);
}
std::unique_ptr<TimePoolOp> make_time_pool_op(CudaBackend& be, const TimePoolDesc& d) {
    return std::make_unique<CudaTimePoolOp>(be, d);
}

}  // namespace thresher::backend::cuda
