#include "train/evaluation.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "data/batch_iterator.h"
#include "data/shard_stream.h"

namespace thresher::train {

void add_binary_fields(nlohmann::json& j, const eval::ClassificationEvaluator& c, const eval::BinaryScores& scores) {
    // As DL4J's Evaluation with binaryPositiveClass 1: precision, recall and F1 of class 1.
    j["precision"] = c.precision(1);
    j["recall"] = c.recall(1);
    j["f1"] = c.f1(1);
    const double auc = scores.auc();
    j["auc"] = std::isnan(auc) ? nlohmann::json() : nlohmann::json(auc);
    j["task"] = "binary";
}

nlohmann::json OutputEvaluation::to_json(bool state) const {
    nlohmann::json j = classification ? classification->to_json()
                                      : regression ? regression->to_json() : nlohmann::json::object();
    if (binary) {
        add_binary_fields(j, *classification, *binary);
        if (state) j["auc_hist"] = binary->to_json();
    }
    if (regression && state) j["state"] = regression->state();
    j["name"] = name;
    return j;
}

nlohmann::json EvaluationResult::to_json(bool state) const {
    nlohmann::json j = classification ? classification->to_json()
                                      : regression ? regression->to_json() : nlohmann::json::object();
    if (binary) {
        add_binary_fields(j, *classification, *binary);
        j["auc_hist"] = binary->to_json();
    }
    if (regression && state) j["state"] = regression->state();  // merged per node (merge_regression_parts)
    j["loss"] = loss;
    if (!outputs.empty()) {
        auto& list = j["outputs"] = nlohmann::json::array();
        for (const auto& o : outputs) list.push_back(o.to_json(state));
    }
    return j;
}

void check_compatible(const config::ModelConfig& model, const data::Dataset& ds) {
    const std::size_t in = model.input_size();
    std::string expects = model.input.str();
    for (const auto& e : model.extra_inputs) expects += " + " + e.shape.str();
    if (!model.extra_inputs.empty()) expects += " (its " + std::to_string(model.input_count()) + " inputs side by side)";
    if (ds.shape.size() != in)
        throw ConfigError("data " + ds.name + " has " + std::to_string(ds.shape.size()) +
                          " features per sample, model \"" + model.name + "\" expects " +
                          (expects == std::to_string(in) ? expects : expects + " = " + std::to_string(in)));
    // A per-step output (seq_spec.md) takes steps x units targets per sample, an image output
    // C x H x W.
    const auto out = model.target_size();
    const auto& main = model.main_output();
    if (ds.target_size != out && main.image_output())
        throw ConfigError("data " + ds.name + " has " + std::to_string(ds.target_size) +
                          (ds.is_classification() ? " classes" : " target columns") + " per sample, but model \"" + model.name +
                          "\" has an image output (" + main.out_shape.str() + " = " + std::to_string(main.out_shape.size()) +
                          " values per sample" + (model.output_layers.size() > 1 ? ", " + std::to_string(out) + " with the other outputs" : "") +
                          "): its targets are that many values per sample (one-hot over the channels at each pixel for "
                          "segmentation): a CSV's last columns give them (a class index per pixel for mcxent, the values otherwise), "
                          "IDX files and image folders do not");
    if (ds.target_size != out)
        throw ConfigError("data " + ds.name + " has " + std::to_string(ds.target_size) +
                          (ds.is_classification() ? " classes" : " target columns") + ", model \"" +
                          model.name + "\" outputs " + std::to_string(out));
    if (ds.is_classification() != model.is_classifier())
        throw ConfigError("data " + ds.name + " is a " +
                          (ds.is_classification() ? "classification" : "regression") +
                          " set, model \"" + model.name + "\" has loss " +
                          std::string(config::to_string(model.main_output().loss)));
}

int resolve_top_k(std::optional<int> chosen, int classes) {
    const int k = chosen.value_or(classes >= 20 ? 5 : 0);
    return k > 0 && k < classes ? k : 0;
}

void check_same_classes(const std::vector<std::string>& model_names, const std::string& model_source,
                        const std::vector<std::string>& data_names, const std::string& data_source) {
    if (model_names == data_names) return;
    std::string diff;
    const std::size_t n = std::min(model_names.size(), data_names.size());
    for (std::size_t i = 0; i < n && diff.empty(); ++i)
        if (model_names[i] != data_names[i])
            diff = "class " + std::to_string(i) + " is \"" + model_names[i] + "\" in the model, \"" + data_names[i] +
                   "\" in the data";
    if (diff.empty())
        diff = std::to_string(model_names.size()) + " classes in the model, " + std::to_string(data_names.size()) +
               " in the data";
    throw ConfigError("data " + data_source + " names other classes than model " + model_source + " was trained on: " +
                      diff);
}

void report_skipped_images(const data::DataSplit& split, events::EventWriter& ev, std::ostream& log) {
    if (split.skipped_images == 0) return;
    std::string text = "skipped " + std::to_string(split.skipped_images) + " image(s) that could not be decoded";
    for (std::size_t i = 0; i < split.skipped_examples.size(); ++i) text += (i ? "; " : ": ") + split.skipped_examples[i];
    if (split.skipped_images > split.skipped_examples.size()) text += "; ...";
    ev.warning(text);
    log << text << "\n";
}

namespace {

// An image output is scored pixel by pixel, as DL4J's evaluations reshape a CNN output to
// [batch x height x width, channels] rows: each pixel of each sample is one example.
//   regression (mse, mae):  C columns (one per channel) over all pixels
//   mcxent (a softmax over the channels): the argmax channel against the target's one-hot
//     channel, so the confusion matrix counts pixels and its accuracy is the pixel accuracy
//   xent (sigmoid):  every value a binary decision at 0.5 against its 0/1 target (2 classes)
class PixelRows {
public:
    explicit PixelRows(const config::LayerConfig& out)
        : channels_(static_cast<std::size_t>(out.out_shape.c)),
          pixels_(static_cast<std::size_t>(out.out_shape.h) * static_cast<std::size_t>(out.out_shape.w)),
          binary_(out.loss == config::LossKind::BinaryCrossEntropy) {}
    int classes() const { return binary_ ? 2 : static_cast<int>(channels_); }
    int columns() const { return static_cast<int>(channels_); }
    // `out` and `targets`: `count` rows, `out_pitch` and `target_pitch` apart, whose first
    // C x H x W values (NCHW) are this output's.
    void add(eval::ClassificationEvaluator& e, const float* out, std::size_t out_pitch, const float* targets,
             std::size_t target_pitch, int count) {
        transpose(out, out_pitch, targets, target_pitch, count);
        const std::size_t rows = static_cast<std::size_t>(count) * pixels_;
        labels_.clear();
        if (binary_) {
            predicted_.clear();
            for (std::size_t i = 0; i < rows * channels_; ++i) {
                predicted_.push_back(out_rows_[i] >= 0.5f ? 1 : 0);
                labels_.push_back(target_rows_[i] >= 0.5f ? 1 : 0);
            }
            return e.add_predictions(predicted_.data(), labels_.data(), predicted_.size());
        }
        for (std::size_t r = 0; r < rows; ++r) {
            const float* t = target_rows_.data() + r * channels_;
            labels_.push_back(static_cast<std::int32_t>(std::max_element(t, t + channels_) - t));
        }
        e.add(out_rows_.data(), labels_.data(), rows);
    }
    void add(eval::RegressionEvaluator& e, const float* out, std::size_t out_pitch, const float* targets,
             std::size_t target_pitch, int count) {
        transpose(out, out_pitch, targets, target_pitch, count);
        e.add(out_rows_.data(), target_rows_.data(), static_cast<std::size_t>(count) * pixels_);
    }

private:
    // NCHW samples into [sample x pixel, channel] rows.
    void transpose(const float* out, std::size_t out_pitch, const float* targets, std::size_t target_pitch, int count) {
        const std::size_t n = static_cast<std::size_t>(count) * pixels_ * channels_;
        out_rows_.resize(n);
        target_rows_.resize(n);
        for (std::size_t j = 0; j < static_cast<std::size_t>(count); ++j)
            for (std::size_t c = 0; c < channels_; ++c)
                for (std::size_t p = 0; p < pixels_; ++p) {
                    const std::size_t row = (j * pixels_ + p) * channels_ + c;
                    out_rows_[row] = out[j * out_pitch + c * pixels_ + p];
                    target_rows_[row] = targets[j * target_pitch + c * pixels_ + p];
                }
    }

    std::size_t channels_, pixels_;
    bool binary_;
    std::vector<float> out_rows_, target_rows_;
    std::vector<std::int32_t> predicted_, labels_;
};

// The evaluators of each output of a model with several, and how a batch feeds them.
class OutputEvaluators {
public:
    OutputEvaluators(const config::ModelConfig& m, const data::Dataset& ds, int top_k) : m_(m) {
        // Several outputs read the targets side by side (train/task.cpp shares one target among
        // them first); anything else has no per-output columns to score. Per-step outputs are
        // scored only as the single output.
        if (m.output_layers.size() < 2 || ds.target_size != m.target_size()) return;
        for (std::size_t o : m.output_layers)
            if (m.layers[o].out_shape.sequence()) return;
        int offset = 0;
        for (std::size_t o : m.output_layers) {
            const auto& l = m.layers[o];
            OutputEvaluation e;
            e.name = l.name.empty() ? "layers[" + std::to_string(o) + "]" : l.name;
            const bool cross_entropy = l.loss == config::LossKind::MultiClassCrossEntropy ||
                                       l.loss == config::LossKind::NegativeLogLikelihood;
            pixels_.emplace_back();
            if (l.image_output()) {
                // Pixel by pixel, as the main output's evaluation (PixelRows).
                auto& px = pixels_.back().emplace(l);
                if (cross_entropy || l.loss == config::LossKind::BinaryCrossEntropy) e.classification.emplace(px.classes());
                else e.regression.emplace(static_cast<std::size_t>(px.columns()));
            } else if (cross_entropy && l.units >= 2) {
                e.classification.emplace(l.units, top_k > 0 && top_k < l.units ? top_k : 0);
            } else if (l.loss == config::LossKind::BinaryCrossEntropy && l.units == 1) {
                e.classification.emplace(2);
                e.binary.emplace();
            } else {
                e.regression.emplace(static_cast<std::size_t>(l.units));
            }
            offsets_.push_back(offset);
            offset += l.output_width();
            outputs_.push_back(std::move(e));
        }
    }

    // `out` and `targets`: [count x output_size], the outputs side by side.
    void add(const float* out, const float* targets, int count) {
        if (outputs_.empty()) return;
        const auto width = m_.target_size();
        for (std::size_t k = 0; k < outputs_.size(); ++k) {
            auto& e = outputs_[k];
            if (auto& px = pixels_[k]) {
                const auto at = static_cast<std::size_t>(offsets_[k]);
                if (e.classification) px->add(*e.classification, out + at, width, targets + at, width, count);
                else px->add(*e.regression, out + at, width, targets + at, width, count);
                continue;
            }
            const auto units = static_cast<std::size_t>(m_.layers[m_.output_layers[k]].output_width());
            y_.resize(static_cast<std::size_t>(count) * units);
            t_.resize(y_.size());
            for (int j = 0; j < count; ++j) {
                const std::size_t row = static_cast<std::size_t>(j) * width + static_cast<std::size_t>(offsets_[k]);
                std::copy_n(out + row, units, y_.data() + static_cast<std::size_t>(j) * units);
                std::copy_n(targets + row, units, t_.data() + static_cast<std::size_t>(j) * units);
            }
            if (e.regression) {
                e.regression->add(y_.data(), t_.data(), static_cast<std::size_t>(count));
                continue;
            }
            labels_.resize(static_cast<std::size_t>(count));
            if (e.binary) {
                predicted_.resize(static_cast<std::size_t>(count));
                for (int j = 0; j < count; ++j) {
                    labels_[static_cast<std::size_t>(j)] = t_[static_cast<std::size_t>(j)] >= 0.5f ? 1 : 0;
                    predicted_[static_cast<std::size_t>(j)] = y_[static_cast<std::size_t>(j)] >= 0.5f ? 1 : 0;
                }
                e.classification->add_predictions(predicted_.data(), labels_.data(), count);
                e.binary->add(y_.data(), labels_.data(), count);
                continue;
            }
            // Labels: where the one-hot target row has its 1 (its largest value).
            for (int j = 0; j < count; ++j) {
                const float* t = t_.data() + static_cast<std::size_t>(j) * units;
                labels_[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(std::max_element(t, t + units) - t);
            }
            e.classification->add(y_.data(), labels_.data(), count);
        }
    }

    std::vector<OutputEvaluation> take() { return std::move(outputs_); }

private:
    const config::ModelConfig& m_;
    std::vector<OutputEvaluation> outputs_;
    std::vector<int> offsets_;
    std::vector<std::optional<PixelRows>> pixels_;  // an image output's pixel rows
    std::vector<float> y_, t_;
    std::vector<std::int32_t> labels_, predicted_;
};

}  // namespace

EvaluationResult evaluate(nn::Network& net, const data::Dataset& ds, data::BatchSource& batches, int top_k) {
    EvaluationResult r;
    OutputEvaluators per_output(net.config(), ds, top_k);
    const int k = static_cast<int>(net.config().target_size());
    // Scores are the main output's (the first of several: its columns come first in each row).
    const auto& main = net.config().main_output();
    // A per-step output's units are one step's classes; otherwise every value of a sample.
    const int main_k = main.out_shape.sequence() ? main.units : main.output_width();
    // A per-step classifier (seq_spec.md): every valid step is scored as one prediction, its
    // label the target's largest value. One output only, and not a binary sigmoid.
    const bool per_step = main.out_shape.sequence();
    if (per_step && (net.config().output_layers.size() > 1 || !ds.is_classification() || main_k < 2))
        throw ConfigError("model \"" + net.config().name + "\": evaluating a per-step output is supported for a single "
                          "softmax classifier only (this one: " + std::to_string(net.config().output_layers.size()) +
                          " outputs, " + std::to_string(main_k) + " units per step)");
    std::vector<float> step_scores;
    std::vector<std::int32_t> step_labels;
    std::optional<PixelRows> pixels;
    if (main.image_output()) pixels.emplace(main);
    const bool binary = !pixels && ds.is_classification() && ds.num_classes == 2 && main_k == 1;
    std::vector<std::int32_t> predicted;
    if (binary) r.binary.emplace();
    if (pixels && ds.is_classification())
        r.classification.emplace(pixels->classes());
    else if (ds.is_classification())
        r.classification.emplace(ds.num_classes, binary ? 0 : top_k);
    else
        r.regression.emplace(pixels ? static_cast<std::size_t>(pixels->columns()) : ds.target_size);
    std::vector<float> out;
    // The network writes every output's targets' worth per sample: T x units for a per-step one.
    const std::size_t out_width = net.config().target_size();
    // A per-step classifier (data with per-step labels, seq_spec.md) scores each labelled valid
    // step as one prediction; padded steps and steps without a label (-1) are not counted.
    const auto label_steps = static_cast<std::size_t>(std::max(0, ds.target_steps));
    double loss_sum = 0.0;
    std::size_t evaluated = 0;
    data::Batch b;
    while (batches.next(b)) {
        if (b.count == 0) continue;  // a rank whose share ran out before the last step
        const int count = static_cast<int>(b.count);
        const float* xs = b.features.data();
        const float* ts = b.targets.data();
        const std::int32_t* ls = r.classification && !pixels ? b.labels.data() : nullptr;
        // Labels are read per sample, or per step by a per-step classifier (none without them).
        const std::size_t labels_read = !ls ? 0 : per_step ? b.count * label_steps : b.count;
        if (b.labels.size() < labels_read)
            throw DataError(ds.name + ": a batch of " + std::to_string(b.count) + " samples came with " +
                            std::to_string(b.labels.size()) + " labels");
        out.resize(static_cast<std::size_t>(count) * out_width);
        loss_sum += net.loss(xs, ts, count, 0, backend::Mode::Inference, out.data()) * count;
        evaluated += static_cast<std::size_t>(count);
        per_output.add(out.data(), ts, count);  // before the main output's columns are moved down
        if (per_step && label_steps > 0 && r.classification && !binary &&
            out_width >= label_steps * static_cast<std::size_t>(main_k)) {
            // The data's own per-step labels: padded steps and steps without a label are -1.
            step_scores.clear();
            step_labels.clear();
            for (int j = 0; j < count; ++j) {
                for (std::size_t s = 0; s < label_steps; ++s) {
                    const std::int32_t label = ls[static_cast<std::size_t>(j) * label_steps + s];
                    if (label < 0) continue;
                    const float* row = out.data() + static_cast<std::size_t>(j) * out_width + s * static_cast<std::size_t>(main_k);
                    step_scores.insert(step_scores.end(), row, row + main_k);
                    step_labels.push_back(label);
                }
            }
            r.classification->add(step_scores.data(), step_labels.data(), step_labels.size());
            continue;
        }
        if (per_step) {
            // No per-step labels (a data set built in code): the valid steps, labelled where
            // their one-hot target has its 1.
            const auto& lengths = net.lengths_of(net.config().output_layers.front());
            const auto kk = static_cast<std::size_t>(main_k);
            step_scores.clear();
            step_labels.clear();
            for (int j = 0; j < count; ++j)
                for (int s = 0; s < lengths.at(static_cast<std::size_t>(j)); ++s) {
                    const std::size_t at = static_cast<std::size_t>(j) * static_cast<std::size_t>(k) + static_cast<std::size_t>(s) * kk;
                    step_scores.insert(step_scores.end(), out.begin() + static_cast<std::ptrdiff_t>(at),
                                       out.begin() + static_cast<std::ptrdiff_t>(at + kk));
                    const float* target = ts + at;
                    step_labels.push_back(static_cast<std::int32_t>(std::max_element(target, target + kk) - target));
                }
            r.classification->add(step_scores.data(), step_labels.data(), step_labels.size());
            continue;
        }
        if (pixels) {
            if (r.classification) pixels->add(*r.classification, out.data(), static_cast<std::size_t>(k), ts, ds.target_size, count);
            else pixels->add(*r.regression, out.data(), static_cast<std::size_t>(k), ts, ds.target_size, count);
            continue;
        }
        if (main_k != k && r.classification)
            for (int j = 0; j < count; ++j)
                std::copy_n(out.data() + static_cast<std::size_t>(j) * k, main_k, out.data() + static_cast<std::size_t>(j) * main_k);
        if (binary) {
            predicted.resize(static_cast<std::size_t>(count));
            for (int j = 0; j < count; ++j) predicted[static_cast<std::size_t>(j)] = out[static_cast<std::size_t>(j)] >= 0.5f ? 1 : 0;
            r.classification->add_predictions(predicted.data(), ls, count);
            r.binary->add(out.data(), ls, count);
        } else if (r.classification)
            r.classification->add(out.data(), ls, count);
        else
            r.regression->add(out.data(), ts, count);
    }
    r.outputs = per_output.take();
    r.loss_sum = loss_sum;
    r.count = evaluated;
    r.loss = evaluated ? loss_sum / static_cast<double>(evaluated) : 0.0;
    return r;
}

EvaluationResult evaluate(nn::Network& net, const data::Dataset& ds, int batch, std::size_t limit, int shard,
                          int shards, int top_k) {
    // Unshuffled, rank `shard` of `shards`: samples shard, shard + shards, ... in batches of `batch`.
    data::BatchPlan plan;
    plan.batch_size = static_cast<std::size_t>(std::max(1, batch));
    plan.shuffle = false;
    plan.rank = shard;
    plan.world = std::max(1, shards);
    plan.limit = limit;
    data::BatchIterator batches(ds, plan);
    return evaluate(net, ds, batches, top_k);
}

EvaluationResult evaluate_shard_part(nn::Network& net, const data::ShardIndex& index, const data::ShardPart& part,
                                     const data::FeatureTransform* transform, std::size_t limit, int shard, int shards,
                                     int top_k, const data::ShardShare& share) {
    // The blocks are the batches; epoch 0 unshuffled is the part's order as exported.
    data::BatchPlan plan;
    plan.batch_size = index.batch;
    plan.seed = index.seed;
    plan.shuffle = false;
    plan.rank = shard;
    plan.world = std::max(1, shards);
    plan.limit = limit;
    data::ShardStream batches(index, part, plan, transform, share);
    return evaluate(net, index.describe(part), batches, top_k);
}

namespace {

// The other nodes' parts come over the network (authenticated, but a node's bug must still be an
// error naming the part, not an exception of the JSON library's).
[[noreturn]] void bad_part(std::size_t i, std::size_t n, const std::string& what) {
    throw Error("evaluation part " + std::to_string(i) + " of " + std::to_string(n) + " (0: this node's): " + what);
}

double loss_sum_of(const nlohmann::json& part, std::size_t i, std::size_t n) {
    const auto it = part.find("loss_sum");
    if (it == part.end()) return 0.0;
    if (!it->is_number()) bad_part(i, n, "\"loss_sum\" must be a number, got " + it->dump());
    return it->get<double>();
}

std::size_t count_of(const nlohmann::json& part, std::size_t i, std::size_t n) {
    const auto it = part.find("count");
    if (it == part.end()) return 0;
    if (!it->is_number_unsigned()) bad_part(i, n, "\"count\" must be a non-negative integer, got " + it->dump());
    return it->get<std::size_t>();
}

// Each output's evaluation of a model with several (OutputEvaluation::to_json(true) in every
// part): confusion matrices, score histograms and regression sums added up, output by output.
void merge_outputs(const std::vector<nlohmann::json>& parts, EvaluationResult& merged) {
    const std::size_t n = parts.size();
    const auto first = parts.front().find("outputs");
    if (first == parts.front().end()) return;
    if (!first->is_array()) bad_part(0, n, "\"outputs\" must be an array");
    const std::size_t outputs = first->size();
    for (std::size_t i = 0; i < n; ++i) {
        const auto it = parts[i].find("outputs");
        if (it == parts[i].end() || !it->is_array() || it->size() != outputs)
            bad_part(i, n, "\"outputs\" must list the " + std::to_string(outputs) + " outputs the first part lists");
    }
    for (std::size_t k = 0; k < outputs; ++k) {
        OutputEvaluation total;
        for (std::size_t i = 0; i < n; ++i) {
            const auto& o = parts[i]["outputs"][k];
            const std::string where = "outputs[" + std::to_string(k) + "]: ";
            if (!o.is_object()) bad_part(i, n, where + "expected an object");
            try {
                if (i == 0 && o.contains("name") && o["name"].is_string()) total.name = o["name"].get<std::string>();
                if (o.contains("confusion")) {
                    auto c = eval::ClassificationEvaluator::from_json(o);
                    if (i == 0) total.classification.emplace(std::move(c));
                    else if (total.classification) total.classification->merge(c);
                    else bad_part(i, n, where + "a classification where the first part has none");
                    if (o.contains("auc_hist")) {
                        auto b = eval::BinaryScores::from_json(o["auc_hist"]);
                        if (i == 0) total.binary.emplace(std::move(b));
                        else if (total.binary) total.binary->merge(b);
                    } else if (total.binary) {
                        bad_part(i, n, where + "no \"auc_hist\" (a binary output's score histogram)");
                    }
                } else if (o.contains("state")) {
                    auto g = eval::RegressionEvaluator::from_state(o["state"]);
                    if (i == 0) total.regression.emplace(std::move(g));
                    else if (total.regression) total.regression->merge(g);
                    else bad_part(i, n, where + "a regression where the first part has none");
                } else {
                    bad_part(i, n, where + "neither a \"confusion\" matrix nor a regression \"state\"");
                }
            } catch (const Error& e) {
                if (std::string(e.what()).rfind("evaluation part", 0) == 0) throw;
                bad_part(i, n, where + e.what());
            }
        }
        merged.outputs.push_back(std::move(total));
    }
}

// Every part's "loss_sum" and "count" added up into `merged`, and the mean loss they give.
void add_losses(const std::vector<nlohmann::json>& parts, EvaluationResult& merged) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
        merged.loss_sum += loss_sum_of(parts[i], i, parts.size());
        merged.count += count_of(parts[i], i, parts.size());
    }
    merged.loss = merged.count ? merged.loss_sum / static_cast<double>(merged.count) : 0.0;
}

}  // namespace

std::optional<EvaluationResult> merge_classification_parts(const std::vector<nlohmann::json>& parts) {
    if (!parts.front().contains("confusion")) return std::nullopt;
    const std::size_t n = parts.size();
    EvaluationResult merged;
    auto& total = merged.classification.emplace(eval::ClassificationEvaluator::from_json(parts.front()));
    for (std::size_t i = 1; i < n; ++i) {
        try {
            total.merge(eval::ClassificationEvaluator::from_json(parts[i]));
        } catch (const Error& e) {
            bad_part(i, n, e.what());
        }
    }
    if (parts.front().contains("auc_hist")) {
        auto& scores = merged.binary.emplace(eval::BinaryScores::from_json(parts.front()["auc_hist"]));
        for (std::size_t i = 1; i < n; ++i) {
            const auto it = parts[i].find("auc_hist");
            if (it == parts[i].end()) bad_part(i, n, "no \"auc_hist\" (a binary classifier's score histogram)");
            try {
                scores.merge(eval::BinaryScores::from_json(*it));
            } catch (const Error& e) {
                bad_part(i, n, e.what());
            }
        }
    }
    merge_outputs(parts, merged);
    add_losses(parts, merged);
    return merged;
}

std::optional<EvaluationResult> merge_regression_parts(const std::vector<nlohmann::json>& parts) {
    if (parts.front().contains("confusion") || !parts.front().contains("state")) return std::nullopt;
    const std::size_t n = parts.size();
    EvaluationResult merged;
    for (std::size_t i = 0; i < n; ++i) {
        const auto it = parts[i].find("state");
        if (it == parts[i].end()) bad_part(i, n, "no \"state\" (a regression's sums)");
        try {
            auto sums = eval::RegressionEvaluator::from_state(*it);
            if (i == 0) merged.regression.emplace(std::move(sums));
            else merged.regression->merge(sums);
        } catch (const Error& e) {
            bad_part(i, n, e.what());
        }
    }
    merge_outputs(parts, merged);
    add_losses(parts, merged);
    return merged;
}

nlohmann::json merge_evaluation_parts(const std::vector<nlohmann::json>& parts) {
    const auto merged = merge_classification_parts(parts);
    if (!merged) return parts.front();
    nlohmann::json j = merged->to_json();
    j.erase("auc_hist");  // the merged AUC is what a reader wants, not the histogram
    j["loss_sum"] = merged->loss_sum;
    j["count"] = merged->count;
    return j;
}

}  // namespace thresher::train
