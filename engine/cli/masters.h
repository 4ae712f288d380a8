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
    dist::ThresholdSpec threshold_algorithm;  // --threshold-algorithm, parsed; --threshold goes in later
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

}  // namespace thresher::cli
