// libFuzzer target for a node's evaluation part as the controller takes it: the Evaluation payload
// (dist/masters/evaluation_payload.h: i32 epoch, then JSON through the depth-limited parser) and
// the merge of that part into the controller's own (train::merge_evaluation_parts, and as a
// regression set's sums, train::merge_regression_parts). Any bytes
// either merge into counts or throw thresher::Error -- never a crash, a sanitizer report (an
// overflowing count), another exception or an allocation the payload does not bound.
// The first byte picks the controller's own part (a 3-class classifier's, or a binary
// classifier's with its score histogram); the rest is the payload.
#include <cstdint>
#include <span>
#include <vector>

#include "core/error.h"
#include "dist/masters/evaluation_payload.h"
#include "train/evaluation.h"

namespace {

nlohmann::json local_part(bool binary) {
    const std::vector<std::int32_t> predicted{0, 1, 1, 0, 1, 1}, labels{0, 1, 0, 0, 1, 1};
    thresher::eval::ClassificationEvaluator c(binary ? 2 : 3);
    c.add_predictions(predicted.data(), labels.data(), labels.size());
    nlohmann::json j = c.to_json();
    if (binary) {
        const std::vector<float> scores{0.1f, 0.9f, 0.6f, 0.2f, 0.8f, 0.7f};
        thresher::eval::BinaryScores s;
        s.add(scores.data(), labels.data(), labels.size());
        thresher::train::add_binary_fields(j, c, s);
        j["auc_hist"] = s.to_json();
    }
    j["loss"] = 0.5;
    j["loss_sum"] = 3.0;
    j["count"] = labels.size();
    return j;
}

// A regression set's part as a node sends it per node (shard placement per-node): its sums.
nlohmann::json regression_part() {
    thresher::eval::RegressionEvaluator r(2);
    const std::vector<float> out{0.1f, 0.5f, -0.3f, 0.9f, 0.4f, 0.0f}, targets{0.0f, 1.0f, -0.5f, 1.0f, 0.5f, 0.2f};
    r.add(out.data(), targets.data(), 3);
    return {{"state", r.state()}, {"loss_sum", 1.5}, {"count", 3}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const nlohmann::json locals[2] = {local_part(false), local_part(true)};
    if (size < 1) return 0;
    const nlohmann::json& local = locals[data[0] & 1];
    try {
        const auto part = thresher::dist::parse_evaluation(std::span<const std::uint8_t>(data + 1, size - 1), "fuzz");
        if (!part.counts.is_object()) __builtin_trap();
        const auto merged = thresher::train::merge_evaluation_parts({local, part.counts});
        if (!merged.is_object() || !merged.contains("confusion")) __builtin_trap();
    } catch (const thresher::Error&) {
    }
    // The same bytes as a regression part merged from its sums (train::merge_regression_parts).
    static const nlohmann::json regression = regression_part();
    try {
        const auto part = thresher::dist::parse_evaluation(std::span<const std::uint8_t>(data + 1, size - 1), "fuzz");
        const auto merged = thresher::train::merge_regression_parts({regression, part.counts});
        if (!merged || !merged->regression || merged->regression->columns() != 2) __builtin_trap();
    } catch (const thresher::Error&) {
    }
    return 0;
}
