// What a training master decides: how a worker's gradient becomes parameter changes, and how
// replicas stay in step. The runner (trainer.cpp) owns the epoch loop and the W worker threads
// of this node; after each compute_gradients it hands the worker to the master.
//
//   single              the updater's update is applied to the one replica (no exchange)
//   gradient-sharing    update -> residual -> threshold encoding -> applied everywhere (dist/)
//   parameter-averaging local steps, then every K iterations the replicas are averaged (dist/)
//
// Workers are numbered globally: node n's local worker w is n * W + w (2 nodes x 4 workers ->
// 8 workers, node 1 holds 4..7), which is also the data shard a worker reads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "events/events.h"
#include "nn/network.h"

namespace thresher::train {

struct ClusterShape {
    int nodes = 1;
    int node_rank = 0;
    int workers_per_node = 1;
    int total_workers() const { return nodes * workers_per_node; }
    int global_worker(int local) const { return node_rank * workers_per_node + local; }
};

// Where a run stands between two steps: what a node that joins mid-run continues from.
struct RunPosition {
    int epoch = 0;             // the epoch in progress
    long iteration = 0;        // iterations done since the run began (the updater's step count)
    long epoch_iteration = 0;  // of those, in `epoch` (the joiner skips that many of its batches)
};

// A running cluster's current state, as the controller hands it to a node that joins.
struct JoinState {
    std::vector<float> params, updater_state;
    RunPosition position;
};

class TrainingMaster {
public:
    virtual ~TrainingMaster() = default;
    virtual std::string strategy() const = 0;
    // Called once per local worker, on its own thread, after its replica exists (with the run's
    // initial parameters) and before its first step.
    virtual void attach(int local, nn::Network& net) = 0;
    // Just before compute_gradients of `iteration` (also when the worker has no batch): where
    // gradient sharing applies the messages that have arrived, and waits for those its staleness
    // bound says the gradient must see. Returns fields for the iteration event.
    virtual events::MasterPhases before_gradient(int local, long iteration) { return {}; }
    // After compute_gradients (had_batch) or in place of it when the worker's shard ran out at the
    // end of an epoch (!had_batch: every worker still takes part in synchronous steps). Returns
    // fields for the iteration event (encode_ms, threshold, density, ...).
    virtual events::MasterPhases step(int local, long iteration, bool had_batch) = 0;
    // Called by each local worker when training ends; returns when its replica holds every
    // update the run made (gradient sharing drains, averaging does a last average).
    virtual void finish(int local) = 0;
    // A local worker failed: release whatever the others might wait on for it.
    virtual void abort(int local) {}
    // The worker's replica and backend are about to be destroyed (every local worker has finished
    // or aborted): drop what the master keeps of them, such as a residual in the GPU's memory,
    // which must go before the backend that allocated it.
    virtual void release(int local) {}
    // Cumulative traffic of this node (bytes_tx/bytes_rx, dropped, retransmitted) for events.
    events::Traffic traffic() const { return traffic_source_ ? traffic_source_() : events::Traffic{}; }
    // Where traffic() reads from: the node's link to other nodes, when there is one.
    void set_traffic_source(std::function<events::Traffic()> source) { traffic_source_ = std::move(source); }
    // What the run_finished event adds once training is over: the final reconcile's report, if
    // there was one.
    std::optional<events::ReconcileReport> reconcile_report() const {
        return finish_source_ ? finish_source_() : std::nullopt;
    }
    void set_finish_source(std::function<std::optional<events::ReconcileReport>()> source) {
        finish_source_ = std::move(source);
    }
    // Training ended well ("ok"): the trainer calls this once, before the master goes. A node's link
    // then tells the other nodes that its process ends, so its silence is taken for no loss.
    void finished() const {
        if (on_finished_) on_finished_();
    }
    void set_on_finished(std::function<void()> hook) { on_finished_ = std::move(hook); }
    // The cluster topology the run_started event names (multi-node runs).
    void set_topology(std::string name) { topology_ = std::move(name); }
    const std::optional<std::string>& topology() const { return topology_; }
    // Where a master's warnings go (the run's `warning` events); unset: nowhere.
    void set_warning_sink(std::function<void(const std::string&)> sink) { warning_sink_ = std::move(sink); }

    // Distributed evaluation: this node evaluates shard `shard` of `shards` of the evaluation
    // set, and `gather` collects every node's result (EvaluationResult::to_json plus loss_sum and
    // count) on the controller — all parts there, nullopt on the other nodes. Unset: one node
    // evaluates everything.
    struct EvaluationMerger {
        int shard = 0, shards = 1;
        std::function<std::optional<std::vector<nlohmann::json>>(int epoch, const nlohmann::json& local)> gather;
    };
    void set_evaluation_merger(EvaluationMerger m) { merger_ = std::move(m); }
    const EvaluationMerger& evaluation_merger() const { return merger_; }

    // Joining a multi-node run (dist/masters/node_link.h). `join` runs once, before the workers
    // start: it returns the state to start from when the cluster is already training (nullopt:
    // start from the run's initial parameters, with everyone; also when `stop` is set while it
    // waits, so the run stops as usual). `after_step` runs on local worker
    // 0 after each of its steps, its replica at rest: where the controller copies its current
    // parameters for a joiner, and where a node learns it must stop (it throws). Unset: a
    // single node.
    struct Membership {
        std::function<std::optional<JoinState>(const std::atomic<bool>* stop)> join;
        std::function<void(const nn::Network&, const RunPosition&)> after_step;
    };
    void set_membership(Membership m) { membership_ = std::move(m); }
    const Membership& membership() const { return membership_; }

protected:
    void warn(const std::string& message) const {
        if (warning_sink_) warning_sink_(message);
    }

private:
    std::function<void(const std::string&)> warning_sink_;
    std::function<events::Traffic()> traffic_source_;
    std::function<std::optional<events::ReconcileReport>()> finish_source_;
    std::function<void()> on_finished_;
    std::optional<std::string> topology_;
    EvaluationMerger merger_;
    Membership membership_;
};

// The `single` strategy: each replica applies its own updates (used with one worker).
class LocalMaster final : public TrainingMaster {
public:
    std::string strategy() const override { return "single"; }
    void attach(int, nn::Network& net) override { net_ = &net; }
    events::MasterPhases step(int, long iteration, bool had_batch) override {
        if (had_batch) {
            net_->compute_update(iteration);
            net_->apply_update();
        }
        return {};
    }
    void finish(int) override {}

private:
    nn::Network* net_ = nullptr;
};

}  // namespace thresher::train
