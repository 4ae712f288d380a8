#include "cli/masters.h"

#include <sstream>

#include "core/error.h"
#include "dist/masters/gradient_sharing.h"
#include "dist/masters/parameter_averaging.h"

namespace thresher::cli {

std::string threshold_spec(const std::string& algorithm, std::optional<double> threshold) {
    if (!threshold) return algorithm;
    if (algorithm.find(':') != std::string::npos)
        throw ConfigError("--threshold " + std::to_string(*threshold) + " conflicts with --threshold-algorithm " +
                          algorithm + " (which already sets its numbers)");
    std::ostringstream t;
    t << *threshold;
    if (algorithm == "fixed" || algorithm == "adaptive") return algorithm + ":" + t.str();
    if (algorithm == "target") return "target:1e-3:" + t.str();
    return algorithm;  // unknown names are reported by the parser, with the list of known ones
}

train::MasterFactory make_master_factory(const StrategyOptions& o, const train::ClusterShape& cluster) {
    std::string strategy = o.strategy;
    if (strategy == "auto") strategy = cluster.total_workers() > 1 ? "gradient-sharing" : "single";
    if (strategy == "single") {
        if (cluster.total_workers() > 1)
            throw ConfigError("--strategy single trains one worker; " + std::to_string(cluster.total_workers()) +
                              " workers need gradient-sharing or parameter-averaging");
        return {};
    }
    if (strategy == "gradient-sharing") {
        dist::GradientSharingOptions g;
        g.threshold_algorithm = threshold_spec(o.threshold_algorithm, o.threshold);
        g.residual = o.residual;
        g.debug_stats = o.residual_stats;
        return [g, cluster](const nn::ModelConfig& config) -> std::unique_ptr<train::TrainingMaster> {
            return std::make_unique<dist::GradientSharing>(cluster, config.param_count(), g);
        };
    }
    if (strategy == "parameter-averaging") {
        dist::ParameterAveragingOptions a{o.averaging_frequency, o.save_updater};
        if (a.frequency < 1)
            throw ConfigError("--averaging-frequency must be at least 1, got " + std::to_string(a.frequency));
        return [a, cluster](const nn::ModelConfig&) -> std::unique_ptr<train::TrainingMaster> {
            return std::make_unique<dist::ParameterAveraging>(cluster, a);
        };
    }
    throw ConfigError("--strategy " + strategy + ": expected single, gradient-sharing or parameter-averaging");
}

}  // namespace thresher::cli
