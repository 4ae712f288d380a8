// Evaluates a network on a data set in inference mode, batch by batch, into DL4J-style metrics.
#pragma once

#include <cstddef>
#include <optional>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "eval/binary_scores.h"
#include "eval/classification.h"
#include "eval/regression.h"
#include "nn/network.h"

namespace thresher::train {

struct EvaluationResult {
    std::optional<eval::ClassificationEvaluator> classification;
    std::optional<eval::RegressionEvaluator> regression;
    // A binary classifier (one sigmoid output): the threshold-0.5 predictions go into
    // `classification` (2 classes), the scores into this for the AUC.
    std::optional<eval::BinaryScores> binary;
    double loss = 0.0;      // mean over samples
    double loss_sum = 0.0;  // and what it came from, for merging shards
    std::size_t count = 0;
    // accuracy/precision/recall/f1/confusion (+ auc and the "auc_hist" counts for binary) or
    // mse/mae/r2, + loss.
    nlohmann::json to_json() const;
};

// A binary classifier's fields: precision, recall and F1 of class 1 (DL4J's binary evaluation,
// replacing the macro averages), "auc", and "task": "binary".
void add_binary_fields(nlohmann::json& j, const eval::ClassificationEvaluator&, const eval::BinaryScores&);

// The controller's merge of a sharded evaluation (the distributed masters' EvaluationMerger):
// `parts` are EvaluationResult::to_json() plus "loss_sum" and "count", the controller's own
// first, the other nodes' as they sent them. Classification counts are added up (regression sets
// are not sharded: the controller's own result stands). Throws thresher::Error naming the part
// when one does not merge (another class count, missing or mistyped counts, an overflow).
nlohmann::json merge_evaluation_parts(const std::vector<nlohmann::json>& parts);
// The same merge, typed, for the epoch_end event; nullopt for a regression set's parts.
std::optional<EvaluationResult> merge_classification_parts(const std::vector<nlohmann::json>& parts);

// `limit` > 0 evaluates only the first `limit` samples. With `shards` > 1 only samples
// i ≡ shard (mod shards) are evaluated: each node takes one shard, and the merged counts are
// exactly the single-node evaluation.
EvaluationResult evaluate(nn::Network&, const data::Dataset&, int batch = 256, std::size_t limit = 0,
                          int shard = 0, int shards = 1);

// Checks that a data set fits a model's input and output; throws ConfigError naming both.
void check_compatible(const config::ModelConfig&, const data::Dataset&);

}  // namespace thresher::train
