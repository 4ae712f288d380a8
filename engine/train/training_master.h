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

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/network.h"

namespace thresher::train {

struct ClusterShape {
    int nodes = 1;
    int node_rank = 0;
    int workers_per_node = 1;
    int total_workers() const { return nodes * workers_per_node; }
    int global_worker(int local) const { return node_rank * workers_per_node + local; }
};

class TrainingMaster {
public:
    virtual ~TrainingMaster() = default;
    virtual std::string strategy() const = 0;
    // Called once per local worker, on its own thread, after its replica exists (with the run's
    // initial parameters) and before its first step.
    virtual void attach(int local, nn::Network& net) = 0;
    // After compute_gradients (had_batch) or in place of it when the worker's shard ran out at the
    // end of an epoch (!had_batch: every worker still takes part in synchronous steps). Returns
    // fields for the iteration event (encode_ms, threshold, density, ...).
    virtual nlohmann::json step(int local, long iteration, bool had_batch) = 0;
    // Called by each local worker when training ends; returns when its replica holds every
    // update the run made (gradient sharing drains, averaging does a last average).
    virtual void finish(int local) = 0;
    // A local worker failed: release whatever the others might wait on for it.
    virtual void abort(int local) {}
    // Cumulative traffic of this node (bytes_tx/bytes_rx, dropped, retransmitted) for events.
    nlohmann::json traffic() const {
        return traffic_source_ ? traffic_source_() : nlohmann::json{{"bytes_tx", 0}, {"bytes_rx", 0}};
    }
    // Where traffic() reads from: the node's link to other nodes, when there is one.
    void set_traffic_source(std::function<nlohmann::json()> source) { traffic_source_ = std::move(source); }

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

private:
    std::function<nlohmann::json()> traffic_source_;
    EvaluationMerger merger_;
};

// The `single` strategy: each replica applies its own updates (used with one worker).
class LocalMaster final : public TrainingMaster {
public:
    std::string strategy() const override { return "single"; }
    void attach(int, nn::Network& net) override { net_ = &net; }
    nlohmann::json step(int, long iteration, bool had_batch) override {
        if (had_batch) {
            net_->compute_update(iteration);
            net_->apply_update();
        }
        return nlohmann::json::object();
    }
    void finish(int) override {}

private:
    nn::Network* net_ = nullptr;
};

}  // namespace thresher::train
