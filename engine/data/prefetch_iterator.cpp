// Producer/consumer over a fixed pool of Batch buffers. A slot is owned by exactly one side at
// a time: by the producer between leaving free_ and entering ready_, by the consumer between
// leaving ready_ and returning to free_. Only the queues and flags are shared, under mutex_.
#include "data/prefetch_iterator.h"

#include <chrono>
#include <utility>

namespace thresher::data {

PrefetchIterator::PrefetchIterator(const Dataset& ds, BatchPlan plan, std::size_t depth)
    : PrefetchIterator(std::make_unique<BatchIterator>(ds, plan), depth) {}

PrefetchIterator::PrefetchIterator(std::unique_ptr<BatchSource> source, std::size_t depth)
    : source_(std::move(source)), batches_(source_->batches()), slots_(depth == 0 ? 1 : depth) {
    for (std::size_t i = 0; i < slots_.size(); ++i) free_.push_back(i);
    thread_ = std::thread([this] { produce(); });
}

PrefetchIterator::~PrefetchIterator() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

void PrefetchIterator::produce() {
    try {
        while (true) {
            std::size_t slot = 0;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                changed_.wait(lock, [this] { return stop_ || !free_.empty(); });
                if (stop_) return;
                slot = free_.front();
                free_.pop_front();
            }
            const bool more = source_->next(slots_[slot]);  // the slot is ours: no lock needed
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (more) {
                    ready_.push_back(slot);
                } else {
                    free_.push_back(slot);
                    finished_ = true;
                }
            }
            changed_.notify_all();
            if (!more) return;
        }
    } catch (...) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            error_ = std::current_exception();
            finished_ = true;
        }
        changed_.notify_all();
    }
}

bool PrefetchIterator::next(Batch& out) {
    const auto start = std::chrono::steady_clock::now();
    std::size_t slot = 0;
    {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return !ready_.empty() || finished_; });
        last_wait_ms_ =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        if (ready_.empty()) {
            if (error_) std::rethrow_exception(error_);
            return false;
        }
        slot = ready_.front();
        ready_.pop_front();
    }
    // The caller's old vectors go back to the pool, so their capacity is reused.
    std::swap(out, slots_[slot]);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        free_.push_back(slot);
    }
    changed_.notify_all();
    return true;
}

}  // namespace thresher::data
