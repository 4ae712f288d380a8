// StalenessGate: how long one gradient-sharing worker may run ahead of the others' messages
// (bounded staleness, Ho et al. 2013's "stale synchronous parallel"). One gate per worker.
//
// Every message carries its origin worker and the iteration it was made at. Before computing
// gradient k, a worker applies every message that has arrived and asks the gate whether that is
// enough: with a bound S, every other worker's message of iteration k−1−S must be in the replica.
//   S = 0   the gradient of iteration k sees every update up to k−1 of every worker: the replicas
//           step exactly like one machine on the combined batch (synchronous).
//   S = 1   each other worker's latest update may still be on its way (one step late), and so on.
//   off     never wait (DL4J's fully asynchronous sharing).
// Worked example, S = 0, two workers A and B in lockstep: A has published its message of
// iteration 6 and is about to compute gradient 7; B's message of iteration 6 is still in flight.
// The gate is not satisfied (B needs 6, has 5), so A waits until B's message lands, applies it and
// computes gradient 7 on the same parameters B computes it on.
//
// The wait is bounded, because a peer may be slow (evaluating at the end of an epoch), paused, or
// dead before the node link has noticed. The deadline adapts to the run: four times this worker's
// recent period (an EMA of the time from one gradient to the next, waits included, so the pace of
// a slow peer counts; periods that ended in a timeout are left out), never less than kMinWait (a
// loaded 2-core machine deschedules a process for tens of milliseconds) nor more than kMaxWait. When it passes, the
// worker proceeds without the missing messages; that step counts as a timeout and the caller
// reports it. The next step waits again: a slow peer slows the others (that is the bound), a dead
// one stops being waited for once the node link declares it gone (set_waited).
//
// The gate counts a worker's highest iteration seen, not a gap-free prefix: a message overtaken by
// a later one (reordered, or relayed on a longer path) is applied when it lands, a step or two
// late. A hole (messages a dead relay took with it) costs at most one wait: a later message of
// that worker that is already here but held for a later gradient shows the worker is past the
// hole, so once a wait for it times out the hole is skipped (skip_to). Not before the deadline:
// with S = 0 a message merely overtaken must still be waited for, or a reordering schedule would
// compute other gradients than synchronous training. Before this, a worker waited out the
// deadline at every step until its own iterations reached the held message (18 s at an epoch
// boundary with a dead relay, tests/engine/cli/test_cluster_faults.cpp).
//
// Lag of an applied message: how many of the receiver's steps late it is, (k−1) − j for the
// message of iteration j applied before gradient k; 0 is as fresh as synchronous training. A
// message from a worker that is ahead (j ≥ k) has lag 0.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace thresher::dist {

class StalenessGate {
public:
    static constexpr std::chrono::milliseconds kMinWait{100};
    static constexpr std::chrono::milliseconds kMaxWait{2000};

    // `workers`: all workers of the run (global numbering); `self`: this gate's worker;
    // `bound`: S, or nullopt for no waiting at all.
    StalenessGate(int workers, int self, std::optional<int> bound);

    // A message of worker `from`, made at `iteration`, is now in the replica; returns its lag
    // before gradient `next` (see above). Messages of a worker may arrive out of order.
    long applied(int from, long iteration, long next);
    // Whether gradient `next` may be computed now.
    bool satisfied(long next) const;
    // The workers whose message of iteration next−1−S has not been applied (and are waited for).
    std::vector<int> missing(long next) const;
    // Workers of a node that left, died or has not joined yet are not waited for.
    void set_waited(int worker, bool waited);
    // The wait for these workers timed out.
    void timed_out(const std::vector<int>& workers);
    // A message of `worker` made at `iteration` is here, held for a later gradient, after a wait
    // for that worker timed out: it is not waited for again before gradient iteration + 1 + S.
    void skip_to(int worker, long iteration);
    // Waited-for workers with at least `timeouts` timeouts and no message since.
    std::vector<int> silent(int timeouts) const;
    // The period of this worker's last step (see above) feeds the deadline.
    void record_step(std::chrono::duration<double, std::milli> step);
    std::chrono::milliseconds deadline() const;
    std::optional<int> bound() const { return bound_; }
    // The highest iteration applied from `worker` (−1: none yet).
    long latest(int worker) const { return latest_[static_cast<std::size_t>(worker)]; }

private:
    int self_;
    std::optional<int> bound_;
    std::vector<long> latest_;  // by worker: highest iteration whose message is applied here
    std::vector<long> skipped_;  // by worker: waited for as if its messages up to this were applied
    std::vector<bool> waited_;
    std::vector<int> silent_;  // by worker: timeouts since its last applied message
    double step_ms_ = 0.0;  // EMA of the step time; 0 before the first
};

}  // namespace thresher::dist
