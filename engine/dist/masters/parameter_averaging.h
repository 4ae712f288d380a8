// Parameter averaging (DL4J's ParameterAveragingTrainingMaster): every worker trains on its own
// shard with its own updater; every `frequency` iterations all replicas are replaced by their
// average (and the updater state too with save_updater). Synchronous: the local workers meet at
// a barrier whose completion step averages them; with several nodes that step also exchanges
// the node's sum with the other nodes through `Reducer` (the controller on node 0).
//
// With plain SGD, frequency 1 and equal shards this equals one worker on the combined batch:
// mean_i(θ − lr·g_i) = θ − lr·mean_i(g_i), and mean_i(g_i) is the combined batch's gradient.
#pragma once

#include <barrier>

#include "core/clock.h"
#include <functional>
#include <memory>
#include <vector>

#include "train/training_master.h"

namespace thresher::dist {

struct ParameterAveragingOptions {
    int frequency = 5;          // iterations between averages (DL4J's averagingFrequency)
    bool save_updater = true;   // average updater state too (DL4J's saveUpdater)
};

class ParameterAveraging final : public train::TrainingMaster {
public:
    // Turns this node's sums (over its workers) into the cluster's sums and worker count; the
    // identity on a single node. Called on one thread at a time.
    using Reducer = std::function<void(std::vector<double>& params, std::vector<double>& state, int& workers)>;

    ParameterAveraging(const train::ClusterShape&, ParameterAveragingOptions, Reducer reducer = {});

    std::string strategy() const override { return "parameter-averaging"; }
    void attach(int local, nn::Network&) override;
    events::MasterPhases step(int local, long iteration, bool had_batch) override;
    void finish(int local) override;
    void abort(int local) override;

    long averages() const { return averages_; }
    // The clock its workers wait on at the averaging barrier (clock.h); before the first step.
    void set_clock(Clock& clock) { clock_ = &clock; }

private:
    void average();  // the barrier's completion step

    struct Completion {
        ParameterAveraging* self;
        void operator()() noexcept;
    };

    Clock* clock_ = &real_clock();
    train::ClusterShape cluster_;
    ParameterAveragingOptions options_;
    Reducer reducer_;
    std::vector<nn::Network*> nets_;
    std::vector<long> since_average_;  // per worker: steps since the last average
    std::barrier<Completion> barrier_;
    std::vector<double> sum_params_, sum_state_;
    long averages_ = 0;
    double local_ms_ = 0.0;  // the last round's own work, without the exchange (average())
    std::exception_ptr error_;  // a failure inside the completion step, rethrown by the workers
};

}  // namespace thresher::dist
