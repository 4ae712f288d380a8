// Turns the command line's strategy options into a training master (engine/dist/masters).
#pragma once

#include <optional>
#include <string>

#include "dist/masters/gradient_sharing.h"
#include "dist/masters/parameter_averaging.h"
#include "train/trainer.h"

namespace thresher::cli {

struct StrategyOptions {
    std::string strategy = "auto";  // auto: single with one worker, gradient-sharing otherwise
    std::optional<double> threshold;
    std::string threshold_algorithm = "adaptive";
    std::string residual = "clip";
    bool residual_stats = false;
    std::string max_staleness = "0";  // a count, or "off"
    std::string overlap_comm = "off"; // off | send | encode (dist::GradientSharingOptions::Overlap)
    int averaging_frequency = 5;
    bool save_updater = true;
};

// "auto" resolved: single for one worker in all, gradient-sharing otherwise. Throws ConfigError
// for an unknown name or a strategy that cannot run this many workers.
std::string resolve_strategy(const StrategyOptions&, const train::ClusterShape&);
dist::GradientSharingOptions gradient_sharing_options(const StrategyOptions&);
dist::ParameterAveragingOptions averaging_options(const StrategyOptions&);

// The factory run_training calls for a single node; throws ConfigError for inconsistent options.
train::MasterFactory make_master_factory(const StrategyOptions&, const train::ClusterShape&);

// "--max-staleness": "off" -> nullopt, "2" -> 2; ConfigError for anything else.
std::optional<int> parse_max_staleness(const std::string&);

// "adaptive" + --threshold 1e-3 -> "adaptive:0.001"; a full spec is taken as it is.
std::string threshold_spec(const std::string& algorithm, std::optional<double> threshold);

}  // namespace thresher::cli
