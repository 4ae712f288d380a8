#include "dist/masters/parameter_averaging.h"

#include <chrono>
#include <algorithm>

#include "core/error.h"

namespace thresher::dist {

ParameterAveraging::ParameterAveraging(const train::ClusterShape& cluster, ParameterAveragingOptions options,
                                       Reducer reducer)
    : cluster_(cluster), options_(options), reducer_(std::move(reducer)),
      nets_(static_cast<std::size_t>(cluster.workers_per_node), nullptr),
      since_average_(static_cast<std::size_t>(cluster.workers_per_node), 0),
      barrier_(cluster.workers_per_node, Completion{this}) {
    if (options_.frequency < 1)
        throw ConfigError("--averaging-frequency must be at least 1, got " + std::to_string(options_.frequency));
}

void ParameterAveraging::attach(int local, nn::Network& net) { nets_.at(static_cast<std::size_t>(local)) = &net; }

void ParameterAveraging::Completion::operator()() noexcept {
    try {
        self->clock_->busy_while([this] { self->average(); });
    } catch (...) {
        self->error_ = std::current_exception();
    }
}

void ParameterAveraging::average() {
    // A worker that failed before attaching has no replica; the run is failing (its error is
    // what the node reports) and the survivors leave at their next step: nothing to average.
    if (std::find(nets_.begin(), nets_.end(), nullptr) != nets_.end()) return;
    // A round failed (its error is on its way out of step()): the worker's abort completes the
    // barrier again, and a second try at the same round would wait out its whole deadline once
    // more before the node could report the failure (10 minutes by default).
    if (error_) return;
    const auto began = std::chrono::steady_clock::now();
    double exchange_ms = 0.0;
    const std::size_t p = nets_.front()->param_count();
    const std::size_t s = nets_.front()->updater_state_size();
    sum_params_.assign(p, 0.0);
    sum_state_.assign(options_.save_updater ? s : 0, 0.0);
    for (auto* net : nets_) {
        const auto params = net->get_params();
        for (std::size_t i = 0; i < p; ++i) sum_params_[i] += params[i];
        if (options_.save_updater) {
            const auto state = net->get_updater_state();
            for (std::size_t i = 0; i < s; ++i) sum_state_[i] += state[i];
        }
    }
    int workers = static_cast<int>(nets_.size());
    if (reducer_ && cluster_.nodes > 1) {
        const auto t = std::chrono::steady_clock::now();
        reducer_(sum_params_, sum_state_, workers);
        exchange_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    }
    std::vector<float> mean(p);
    for (std::size_t i = 0; i < p; ++i) mean[i] = static_cast<float>(sum_params_[i] / workers);
    std::vector<float> mean_state;
    if (options_.save_updater) {
        mean_state.resize(s);
        for (std::size_t i = 0; i < s; ++i) mean_state[i] = static_cast<float>(sum_state_[i] / workers);
    }
    for (auto* net : nets_) {
        net->set_params(mean);
        if (options_.save_updater) net->set_updater_state(mean_state);
    }
    ++averages_;
    // The round's own work (summing, the mean, setting every replica) apart from the exchange with
    // the other nodes: the same at any node count, so a scaling model can tell it from the network.
    local_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count() - exchange_ms;
}

events::MasterPhases ParameterAveraging::step(int local, long iteration, bool had_batch) {
    nn::Network& net = *nets_.at(static_cast<std::size_t>(local));
    const auto tu = std::chrono::steady_clock::now();
    if (had_batch) {
        net.compute_update(iteration);
        net.apply_update();
    }
    long& since = since_average_[static_cast<std::size_t>(local)];
    events::MasterPhases fields;
    fields.updater_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tu).count();
    if (++since >= options_.frequency) {
        const auto t0 = std::chrono::steady_clock::now();
        clock_->idle_while([&] { barrier_.arrive_and_wait(); });
        if (error_) std::rethrow_exception(error_);
        since = 0;
        fields.average_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        fields.average_local_ms = local_ms_;  // written by the completion step, before the barrier released us
    }
    return fields;
}

void ParameterAveraging::finish(int local) {
    // A last average when the run did not end on one, so every replica leaves equal. Every worker
    // took the same number of steps, so they agree on whether one is due.
    if (since_average_[static_cast<std::size_t>(local)] > 0) {
        clock_->idle_while([&] { barrier_.arrive_and_wait(); });
        if (error_) std::rethrow_exception(error_);
        since_average_[static_cast<std::size_t>(local)] = 0;
    }
}

void ParameterAveraging::abort(int) { barrier_.arrive_and_drop(); }

}  // namespace thresher::dist
