// Gradient sharing (Strom 2015; DL4J's SharedTrainingMaster). Per worker and iteration:
//   update u (from the updater) -> residual r += u/N (N workers in all; see `average`) ->
//   threshold τ from the algorithm ->
//   encode r: entries with |r| >= τ leave as ±τ, r keeps the rest -> residual post-processing ->
//   apply the message to the own replica -> hand it to every other worker.
// Other workers' messages are applied just before each gradient (before_gradient): every message
// that has arrived by then, and -- with a staleness bound S -- after waiting, up to a deadline, for
// every other worker's message of iteration k−1−S (staleness_gate.h; S = 0 by default: each
// gradient sees every update up to the previous iteration). Every message reaches every replica
// exactly once, so once training stops and the messages drain, all replicas hold the same
// parameters (up to float addition order). engine/dist/README.md explains when messages are
// applied and why.
//
// Guards (a run fails or warns instead of training on garbage): τ never rises above
// kThresholdCeiling × RMS(θ); a density that stays above the threshold algorithm's band for
// kBandPatience messages is reported; the trainer stops at the first non-finite value.
//
// Workers of this node exchange messages in memory (shared, immutable messages in per-worker
// inboxes). Messages for other nodes go out through `Outbox` (one serialisation per message);
// messages from other nodes come in through deliver_remote().
#pragma once

#include <barrier>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codec/encoded_update.h"
#include "core/clock.h"
#include "codec/residual.h"
#include "codec/threshold_algorithm.h"
#include "codec/threshold_encoder.h"
#include "codec/threshold_spec.h"
#include "codec/worker_encoder.h"
#include "train/training_master.h"

namespace thresher::dist {

struct GradientSharingOptions {
    ThresholdSpec threshold_algorithm;             // resolved (threshold_spec.h); default adaptive
    std::string residual = "clip";                 // clip[:every:multiple] | none
    bool debug_stats = false;                      // residual statistics in iteration events
    bool track_sums = false;                       // keep Σupdates and Σsent per worker (tests)
    // Each worker contributes u / (total workers), so N workers on batch B take the step one
    // machine takes on the combined batch N·B (as parameter averaging and Horovod's averaging
    // all-reduce do). false: DL4J's sum, where the step grows with the worker count.
    bool average = true;
    // S of staleness_gate.h: gradient k waits (up to a deadline) for every other worker's message
    // of iteration k−1−S. nullopt: never wait (fully asynchronous).
    std::optional<int> max_staleness = 0;
    // Communication beside computation (--overlap-comm), on a communicator thread per worker:
    //   Send    the worker encodes step k and applies its own message as without overlap; handing
    //           the message to the local workers and serialising it for the other nodes runs
    //           beside gradient k+1. Which updates a gradient sees is unchanged (the staleness
    //           gate decides that), so any S, 0 included.
    //   Encode  the whole encoding half of step k (residual, τ, encoding, publishing) runs beside
    //           gradient k+1 and the worker applies its own message k at step k+1: gradient k+1
    //           lacks the worker's own update k. Needs S >= 1 (or off). Measured on the MLP over
    //           two nodes: every update then reaches every gradient a step late and one epoch ends
    //           ~9 points lower (bench/README.md), so Send is the one to use.
    enum class Overlap { Off, Send, Encode };
    Overlap overlap = Overlap::Off;
};

// "off" | "send" | "encode" (--overlap-comm); ConfigError naming the value otherwise.
GradientSharingOptions::Overlap parse_overlap(const std::string& text);

// τ ≤ kThresholdCeiling × RMS(θ). Healthy LeNet runs settle at τ ≈ 4e-3 with RMS(θ) ≈ 0.04
// (0.1×); a step of a quarter of a typical weight per message is already a runaway.
inline constexpr double kThresholdCeiling = 0.25;
// Messages above the density band in a row before a warning (and between repeats: 10×).
inline constexpr long kBandPatience = 200;
// Timeouts of a peer without a message from it before a warning (see report_silent).
inline constexpr long kWarnAfterTimeouts = 3;

class GradientSharing final : public train::TrainingMaster {
public:
    using Message = std::shared_ptr<const EncodedUpdate>;
    // Sends one worker's serialised message of `iteration` to the other nodes (empty on a single
    // node). Every worker sends one message per iteration, an empty one when it had no batch.
    using Outbox = std::function<void(int worker, long iteration, const std::vector<std::uint8_t>& bytes)>;

    GradientSharing(const train::ClusterShape&, std::size_t param_count, GradientSharingOptions,
                    Outbox outbox = {});
    ~GradientSharing() override;
    // The clock of its waits (staleness bound, communicator hand-overs); before attach().
    void set_clock(Clock& clock) { clock_ = &clock; }

    std::string strategy() const override { return "gradient-sharing"; }
    void attach(int local, nn::Network&) override;
    events::MasterPhases before_gradient(int local, long iteration) override;
    events::MasterPhases step(int local, long iteration, bool had_batch) override;
    void finish(int local) override;
    void abort(int local) override;

    // A message of worker `worker` (global numbering) on another node, made at `iteration`, for
    // every local replica.
    void deliver_remote(int worker, long iteration, Message);
    // Whether this node's workers wait for node `node`'s messages (staleness bound): the node link
    // says no for a node that is gone, left or still joining, and yes again when it (re)joins.
    void set_node_waited(int node, bool waited);
    // Schedule tests: called on a worker's thread right after before_gradient took its inbox the
    // first time for `iteration`, before it checks the staleness bound.
    void set_drain_observer(std::function<void(int local, long iteration)> f) { drain_observer_ = std::move(f); }
    // Runs once, after every local worker stopped producing and before they drain: the node
    // link waits there for the other nodes' last messages.
    void set_remote_drain(std::function<void()> drain) { remote_drain_ = std::move(drain); }
    // Runs once, after every local worker has drained: the node link makes the nodes' replicas
    // agree even when a node died mid-broadcast and the survivors got different parts of its
    // last messages (one averaging round among the survivors).
    void set_reconcile(std::function<void(const std::vector<nn::Network*>&)> reconcile) {
        reconcile_ = std::move(reconcile);
    }

    // Accounting of one local worker (tests): Σ of its updates, Σ of its sent messages, residual.
    struct Accounting {
        std::vector<double> sum_updates, sum_sent;
        std::vector<float> residual;
        long messages = 0;
    };
    Accounting accounting(int local) const;
    // Drops the worker's residual and encoder (made by its backend, possibly in the GPU's memory)
    // and its replica; accounting() then reports the residual as it was. Once per worker, after
    // finish() or abort(), before its backend is destroyed.
    void release(int local) override;

private:
    Clock* clock_ = &real_clock();
    struct Worker;
    struct Inbound;
    void publish(int local, long iteration, const Message& m);
    struct DrainStats {
        double ms = 0.0;    // applying other workers' messages
        long messages = 0;  // how many were applied
        long lag_max = 0;   // in the receiver's steps (staleness_gate.h)
        double lag_sum = 0.0;
        void add(const DrainStats& o);
    };
    // Applies what is in the inbox; lags are counted against gradient `next`.
    DrainStats drain(Worker& w, long next);
    float threshold_for(Worker& w, long iteration);
    void report_silent(Worker& w, int local, long iteration, const std::vector<int>& silent, double waited_ms);
    // The encoding half of a step (residual → message, published), on whichever thread runs it.
    struct Encoded {
        Message message;
        events::MasterPhases fields;
    };
    Encoded encode_and_publish(Worker& w, int local, long iteration, const float* u, bool publish_now);
    void update_ceiling(Worker& w, long iteration);
    // Overlap: waits for the worker's communicator to finish its job, applies that job's message
    // to the replica and returns its fields (nothing pending: empty); the time waited goes in
    // `waited_ms`.
    events::MasterPhases settle(Worker& w, double& waited_ms);
    void stop_communicators();
    void stop_communicator(Worker&);

    train::ClusterShape cluster_;
    std::size_t n_;
    GradientSharingOptions options_;
    Outbox outbox_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::function<void()> remote_drain_;
    std::function<void(int, long)> drain_observer_;
    std::function<void(const std::vector<nn::Network*>&)> reconcile_;
    std::exception_ptr drain_error_;
    struct AllDone {
        GradientSharing* self;
        void operator()() noexcept;
    };
    struct AllDrained {
        GradientSharing* self;
        void operator()() noexcept;
    };
    std::barrier<AllDone> done_;
    std::barrier<AllDrained> drained_;
};

}  // namespace thresher::dist
