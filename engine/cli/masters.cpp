#include "cli/masters.h"

#include <charconv>

#include "core/error.h"

namespace thresher::cli {

std::string resolve_strategy(const StrategyOptions& o, const train::ClusterShape& cluster) {
    const std::string s = o.strategy == "auto" ? (cluster.total_workers() > 1 ? "gradient-sharing" : "single") : o.strategy;
    if (s == "single" && cluster.total_workers() > 1)
        throw ConfigError("--strategy single trains one worker; " + std::to_string(cluster.total_workers()) +
                          " workers need gradient-sharing or parameter-averaging");
    if (s != "single" && s != "gradient-sharing" && s != "parameter-averaging")
        throw ConfigError("--strategy " + s + ": expected single, gradient-sharing or parameter-averaging");
    return s;
}

std::optional<int> parse_max_staleness(const std::string& text) {
    if (text == "off") return std::nullopt;
    int v = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0 || v > 1000)
        throw ConfigError("--max-staleness " + text + ": expected a whole number of iterations from 0 to 1000, or off");
    return v;
}

dist::GradientSharingOptions gradient_sharing_options(const StrategyOptions& o) {
    dist::GradientSharingOptions g;
    g.threshold_algorithm = dist::resolve_threshold(o.threshold_algorithm, o.threshold);
    g.residual = o.residual;
    g.debug_stats = o.residual_stats;
    g.max_staleness = parse_max_staleness(o.max_staleness);
    g.overlap = dist::parse_overlap(o.overlap_comm);
    return g;
}

dist::ParameterAveragingOptions averaging_options(const StrategyOptions& o) {
    if (o.averaging_frequency < 1)
        throw ConfigError("--averaging-frequency must be at least 1, got " + std::to_string(o.averaging_frequency));
    return {o.averaging_frequency, o.save_updater};
}

train::MasterFactory make_master_factory(const StrategyOptions& o, const train::ClusterShape& cluster) {
    const std::string strategy = resolve_strategy(o, cluster);
    if (strategy == "gradient-sharing")
        return [g = gradient_sharing_options(o), cluster](const config::ModelConfig& config) -> std::unique_ptr<train::TrainingMaster> {
            return std::make_unique<dist::GradientSharing>(cluster, config.param_count(), g);
        };
    if (strategy == "parameter-averaging")
        return [a = averaging_options(o), cluster](const config::ModelConfig&) -> std::unique_ptr<train::TrainingMaster> {
            return std::make_unique<dist::ParameterAveraging>(cluster, a);
        };
    return {};
}

}  // namespace thresher::cli
