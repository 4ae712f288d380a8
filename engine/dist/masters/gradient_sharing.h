// Gradient sharing (Strom 2015; DL4J's SharedTrainingMaster). Per worker and iteration:
//   update u (from the updater) -> residual r += u/N (N workers in all; see `average`) ->
//   threshold τ from the algorithm ->
//   encode r: entries with |r| >= τ leave as ±τ, r keeps the rest -> residual post-processing ->
//   apply the message to the own replica -> hand it to every other worker.
// Other workers' messages are applied at the start of each step, as they arrive: asynchronous,
// no barrier. Every message reaches every replica exactly once, so once training stops and the
// messages drain, all replicas hold the same parameters (up to float addition order).
//
// Workers of this node exchange messages in memory (shared, immutable messages in per-worker
// inboxes). Messages for other nodes go out through `Outbox` (one serialisation per message);
// messages from other nodes come in through deliver_remote().
#pragma once

#include <barrier>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "dist/codec/encoded_update.h"
#include "dist/codec/residual.h"
#include "dist/codec/threshold_algorithm.h"
#include "dist/codec/threshold_encoder.h"
#include "train/training_master.h"

namespace thresher::dist {

struct GradientSharingOptions {
    std::string threshold_algorithm = "adaptive";  // fixed:τ | adaptive[:...] | target:density
    std::string residual = "clip";                 // clip[:every:multiple] | none
    bool debug_stats = false;                      // residual statistics in iteration events
    bool track_sums = false;                       // keep Σupdates and Σsent per worker (tests)
    // Each worker contributes u / (total workers), so N workers on batch B take the step one
    // machine takes on the combined batch N·B (as parameter averaging and Horovod's averaging
    // all-reduce do). false: DL4J's sum, where the step grows with the worker count.
    bool average = true;
};

class GradientSharing final : public train::TrainingMaster {
public:
    using Message = std::shared_ptr<const EncodedUpdate>;
    // Sends one worker's serialised message to the other nodes (empty on a single node).
    using Outbox = std::function<void(int worker, const std::vector<std::uint8_t>& bytes)>;

    GradientSharing(const train::ClusterShape&, std::size_t param_count, GradientSharingOptions,
                    Outbox outbox = {});
    ~GradientSharing() override;

    std::string strategy() const override { return "gradient-sharing"; }
    void attach(int local, nn::Network&) override;
    nlohmann::json step(int local, long iteration, bool had_batch) override;
    void finish(int local) override;
    void abort(int local) override;

    // A message from a worker on another node, for every local replica.
    void deliver_remote(Message);
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

private:
    struct Worker;
    void publish(int local, const Message& m);
    struct DrainStats {
        double ms = 0.0;    // applying other workers' messages
        long messages = 0;  // how many were applied
    };
    DrainStats drain(Worker& w);

    train::ClusterShape cluster_;
    std::size_t n_;
    GradientSharingOptions options_;
    Outbox outbox_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::function<void()> remote_drain_;
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
