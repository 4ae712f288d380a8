// Evaluates a network on a data set in inference mode, batch by batch, into DL4J-style metrics.
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/feature_transform.h"
#include "data/shard_format.h"
#include "data/shard_stream.h"
#include "eval/binary_scores.h"
#include "eval/classification.h"
#include "eval/regression.h"
#include "events/event_writer.h"
#include "nn/network.h"

namespace thresher::train {

// One output of a model with several: its own metrics, by the kind its loss says (a
// cross-entropy over classes: classification, its labels the argmax of its target columns; one
// sigmoid with binary cross-entropy: binary; otherwise regression over its columns).
struct OutputEvaluation {
    std::string name;
    std::optional<eval::ClassificationEvaluator> classification;
    std::optional<eval::RegressionEvaluator> regression;
    std::optional<eval::BinaryScores> binary;
    // {"name", the metrics as EvaluationResult writes them}; with `state` also what a sharded
    // merge adds up ("auc_hist", a regression's "state").
    nlohmann::json to_json(bool state = false) const;
};

struct EvaluationResult {
    std::optional<eval::ClassificationEvaluator> classification;
    std::optional<eval::RegressionEvaluator> regression;
    // A binary classifier (one sigmoid output): the threshold-0.5 predictions go into
    // `classification` (2 classes), the scores into this for the AUC.
    std::optional<eval::BinaryScores> binary;
    // A model with several outputs: each output's own evaluation, in the model's output order
    // (the main output first; the fields above are the main output's, as with one output).
    std::vector<OutputEvaluation> outputs;
    double loss = 0.0;      // mean over samples
    double loss_sum = 0.0;  // and what it came from, for merging shards
    std::size_t count = 0;
    // accuracy/precision/recall/f1/confusion (+ auc and the "auc_hist" counts for binary) or
    // mse/mae/r2 (+ its sums, "state", with `state`), + loss; with several outputs "outputs":
    // [OutputEvaluation::to_json(state)...].
    nlohmann::json to_json(bool state = false) const;
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
// A regression set's parts (each with its "state": to_json(true)) added up, for per-node shard
// placement, where each node evaluates only its own test files; nullopt for other parts. (With
// shared placement every node evaluates a regression set whole, so its parts are not merged.)
std::optional<EvaluationResult> merge_regression_parts(const std::vector<nlohmann::json>& parts);

// The one evaluation loop: every batch `batches` yields (empty ones skipped), scored as the set
// `layout` describes (shape, classes, targets, per-step labels; its rows are not read, so a
// streamed set passes ShardIndex::describe). `top_k` > 0 also counts top-k hits (multi-class only).
EvaluationResult evaluate(nn::Network&, const data::Dataset& layout, data::BatchSource& batches, int top_k = 0);

// An in-memory set through that loop (a BatchIterator, unshuffled): `limit` > 0 evaluates only the
// first `limit` samples. With `shards` > 1 only samples i ≡ shard (mod shards) are evaluated: each
// node takes one shard, and the merged counts are exactly the single-node evaluation.
EvaluationResult evaluate(nn::Network&, const data::Dataset&, int batch = 256, std::size_t limit = 0,
                          int shard = 0, int shards = 1, int top_k = 0);

// A shard set's `part` streamed through that loop block by block (data/shard_stream.h), so at most
// a block of it is resident: rank `shard` of `shards` takes blocks shard, shard + shards, ... of
// the part's exported order, which with the other ranks' merged is the whole part once. Each
// record goes through `transform` (null: none); `limit` > 0 keeps the part's first `limit` records.
// Per-node placement (`share`): rank `shard` is a node and reads only its own files' blocks.
EvaluationResult evaluate_shard_part(nn::Network&, const data::ShardIndex&, const data::ShardPart&,
                                     const data::FeatureTransform* transform, std::size_t limit = 0, int shard = 0,
                                     int shards = 1, int top_k = 0, const data::ShardShare& share = {});

// The k of top-k accuracy for a set of `classes`: the user's choice, or by default 5 when there
// are 20 classes or more (DL4J's top-5 on 200 Tiny ImageNet classes), else 0 (off). k at or above
// the class count would always hit: 0 then.
int resolve_top_k(std::optional<int> chosen, int classes);

// A data set's class names that differ from those a model was trained with: ConfigError naming
// both sources and the first difference (the labels would mean other classes).
void check_same_classes(const std::vector<std::string>& model_names, const std::string& model_source,
                        const std::vector<std::string>& data_names, const std::string& data_source);

// The data's skipped images (data::DataSplit::skipped_images), as a warning event and on `log`.
void report_skipped_images(const data::DataSplit&, events::EventWriter&, std::ostream& log);

// Checks that a data set fits a model's input and output; throws ConfigError naming both.
void check_compatible(const config::ModelConfig&, const data::Dataset&);

}  // namespace thresher::train
