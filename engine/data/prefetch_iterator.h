// A BatchSource (an in-memory BatchIterator or a streamed ShardStream) on a background thread:
// while the trainer runs step b, batch b+1 (up to `depth` batches ahead) is being gathered or
// read, so copying samples and reading shards leave the critical path.
//
// Buffers circulate instead of being copied: the producer fills a free buffer, next() swaps
// it with the caller's Batch and returns the caller's old vectors to the free list.
#pragma once

#include "data/batch.h"
#include "data/batch_iterator.h"
#include "data/batch_source.h"
#include "data/dataset.h"

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace thresher::data {

class PrefetchIterator {
public:
    // The plan is validated here (thresher::ConfigError) before the thread starts.
    // `ds` must outlive the iterator. next() and last_wait_ms() belong to one consumer thread.
    PrefetchIterator(const Dataset& ds, BatchPlan plan, std::size_t depth = 2);
    // Any source, e.g. a ShardStream: at most `depth` batches are read ahead of the consumer.
    explicit PrefetchIterator(std::unique_ptr<BatchSource> source, std::size_t depth = 2);
    ~PrefetchIterator();  // stops and joins the producer, even mid-epoch

    PrefetchIterator(const PrefetchIterator&) = delete;
    PrefetchIterator& operator=(const PrefetchIterator&) = delete;

    // Swaps the next batch into `out`; false once the epoch is done. An exception thrown while
    // producing is rethrown here, after the batches produced before it.
    bool next(Batch& out);

    // How long the last next() blocked waiting for the producer: ~0 when prefetch keeps up.
    double last_wait_ms() const { return last_wait_ms_; }
    std::size_t batches() const { return batches_; }

private:
    void produce();

    std::unique_ptr<BatchSource> source_;  // touched only by the producer thread after construction
    std::size_t batches_;
    std::vector<Batch> slots_;

    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<std::size_t> free_;   // slots the producer may fill
    std::deque<std::size_t> ready_;  // filled slots, in epoch order
    bool finished_ = false;          // producer has no more batches
    bool stop_ = false;              // consumer is going away
    std::exception_ptr error_;

    double last_wait_ms_ = 0;
    std::thread thread_;  // last: starts after every member above exists
};

}  // namespace thresher::data
