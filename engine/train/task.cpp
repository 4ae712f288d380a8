#include "train/task.h"

#include <algorithm>

#include "core/error.h"

namespace thresher::train {

namespace {

// Binary: read as two classes (labels must be 0 or 1, located errors otherwise), then the one-hot
// pair becomes the single target the sigmoid output is compared with.
void fold_binary(data::Dataset& ds) {
    if (ds.num_classes != 2 || ds.target_size != 2) return;
    std::vector<float> t(ds.count);
    for (std::size_t i = 0; i < ds.count; ++i) t[i] = static_cast<float>(ds.labels[i]);
    ds.targets = std::move(t);
    ds.target_size = 1;
}

// Several outputs read the target row side by side. Data with one target per sample (class
// labels, or as many columns as each output has) trains every output toward it: auxiliary heads
// (GoogLeNet's, Inception's) learn the main output's classes.
void share_targets(data::Dataset& ds, const config::ModelConfig& m) {
    if (m.output_layers.size() < 2) return;
    const auto width = m.target_size();
    if (ds.target_size == width) return;
    for (auto o : m.output_layers)
        if (static_cast<std::size_t>(m.layers[o].output_width()) != ds.target_size)
            throw ConfigError("data " + ds.name + " has " + std::to_string(ds.target_size) +
                              (ds.is_classification() ? " classes" : " target columns") + " per sample; model \"" + m.name +
                              "\" has " + std::to_string(m.output_layers.size()) + " outputs of " + std::to_string(width) +
                              " values together: give " + std::to_string(width) +
                              " target columns (the outputs' side by side), or outputs that each predict the data's " +
                              std::to_string(ds.target_size));
    std::vector<float> t(ds.count * width);
    for (std::size_t i = 0; i < ds.count; ++i)
        for (std::size_t k = 0; k < m.output_layers.size(); ++k)
            std::copy_n(ds.targets.data() + i * ds.target_size, ds.target_size, t.data() + i * width + k * ds.target_size);
    ds.targets = std::move(t);
    ds.target_size = width;
}

// The model's first embedding layer's vocabulary (the ids a token CSV may hold), or 0.
int embedding_vocabulary(const config::ModelConfig& m) {
    for (const auto& l : m.layers)
        if (l.vocabulary > 0) return l.vocabulary;
    return 0;
}

// The model's input decides T (padding) and one-hot vs ids; its main output decides whether
// labels are per step.
void set_sequence_options(data::DataOptions& o, const config::ModelConfig& m, Task task, std::vector<std::string> vocabulary,
                          const data::SequenceReadOptions& user) {
    const int T = m.input.t, C = m.input.c;
    const bool per_step = m.main_output().out_shape.sequence();
    const bool classification = task != Task::Regression;
    // The output's units are the classes: a label past them is refused by file and line, and
    // train and test agree on the one-hot width even when the data never uses the last class.
    const int classes = task == Task::Binary ? 2 : task == Task::Classification ? m.main_output().units : 0;
    o.sequences.max_steps = T;
    o.sequences.align = user.align;
    o.sequences.truncate = user.truncate;
    o.tokens.truncate = user.truncate;
    o.text.stride = user.text_stride;
    o.sequences.labels = per_step ? data::SequenceLabels::per_step : data::SequenceLabels::per_sequence;
    o.sequences.classification = classification;
    o.sequences.num_classes = classes;
    o.text.steps = T;
    o.text.one_hot = C != 1;
    o.text.classes = m.main_output().units;  // the output may predict more characters than the text has
    o.text.vocabulary = std::move(vocabulary);
    o.csv_as_tokens = C == 1;
    o.tokens.max_steps = T;
    o.tokens.vocabulary = embedding_vocabulary(m);
    o.tokens.classification = classification;
    o.tokens.num_classes = classes;
}

// Sequence data must meet a sequence input of its steps and features, and the other way round;
// the messages say which number to change.
void check_sequences(const data::Dataset& ds, const config::ModelConfig& m) {
    if (ds.steps == 0) {
        if (m.input.sequence())
            throw ConfigError("data " + ds.name + " is not a sequence, but model \"" + m.name + "\" takes a sequence (" +
                              m.input.str() + "): use sequence CSVs, a token CSV or a .txt corpus");
        return;
    }
    if (!m.input.sequence())
        throw ConfigError("data " + ds.name + " holds sequences (" + std::to_string(ds.step_features) +
                          " features per step); model \"" + m.name + "\" takes " + m.input.str() +
                          ": declare \"input\": {\"steps\": " + std::to_string(ds.steps) + ", \"features\": " +
                          std::to_string(ds.step_features) + "}");
    if (ds.step_features != m.input.c)
        throw ConfigError("data " + ds.name + " has " + std::to_string(ds.step_features) +
                          " features per step (a character corpus: its vocabulary size, or 1 for ids); model \"" + m.name +
                          "\" takes " + std::to_string(m.input.c));
    const bool per_step = m.main_output().out_shape.sequence();
    if (per_step && ds.target_steps == 0)
        throw ConfigError("data " + ds.name + " has one label per sequence; model \"" + m.name +
                          "\"'s output is per step: give per-step labels or an output after return_sequences false");
    if (ds.target_size != m.target_size() && m.output_layers.size() < 2)
        throw ConfigError("data " + ds.name + " has " + std::to_string(ds.target_size) + " targets per sample (" +
                          (ds.target_steps > 0 ? std::to_string(ds.target_steps) + " steps x " +
                                                     std::to_string(ds.target_size / static_cast<std::size_t>(ds.target_steps))
                                               : std::to_string(ds.target_size)) +
                          (ds.is_classification() ? " classes" : " values") + "); model \"" + m.name + "\"'s output takes " +
                          std::to_string(m.target_size()));
}

}  // namespace

Task task_of(const config::ModelConfig& m) {
    if (m.layers.empty()) return Task::Classification;
    const auto& out = m.main_output();
    if (out.loss == config::LossKind::BinaryCrossEntropy && out.output_width() == 1) return Task::Binary;
    if (m.is_classifier()) return Task::Classification;
    return Task::Regression;
}

std::string_view to_string(Task t) {
    switch (t) {
        case Task::Classification: return "classification";
        case Task::Binary: return "binary classification";
        case Task::Regression: return "regression";
    }
    return "";
}

data::CsvOptions csv_options_for(Task t) {
    data::CsvOptions o;
    o.classification = t != Task::Regression;
    if (t == Task::Binary) o.num_classes = 2;
    return o;
}

namespace {

// A model with one image output reads a CSV's last columns as its targets (CsvOptions::
// target_columns): a class index per pixel for mcxent, the C x H x W values otherwise (xent: 0/1
// values, a per-pixel classification with 2 classes).
void image_targets(data::CsvOptions& csv, const config::ModelConfig& m) {
    const auto& out = m.main_output();
    if (!out.image_output() || m.output_layers.size() != 1) return;
    const auto pixels = static_cast<std::size_t>(out.out_shape.h) * static_cast<std::size_t>(out.out_shape.w);
    const bool classes = out.loss == config::LossKind::MultiClassCrossEntropy || out.loss == config::LossKind::NegativeLogLikelihood;
    csv.classification = classes;
    csv.num_classes = classes ? out.out_shape.c : 0;
    csv.target_columns = classes ? pixels : out.out_shape.size();
    csv.label_column = -1;
}

void mark_binary_pixels(data::Dataset& ds, const config::ModelConfig& m) {
    const auto& out = m.main_output();
    if (out.image_output() && out.loss == config::LossKind::BinaryCrossEntropy && !ds.is_classification() &&
        ds.target_size == out.out_shape.size())
        ds.num_classes = 2;  // each value a binary decision (train/evaluation.cpp PixelRows)
}

}  // namespace

void check_data_for_model(const data::Dataset& ds, const config::ModelConfig& m) { check_sequences(ds, m); }

data::DataSplit load_data_for(const std::string& spec, const config::ModelConfig& m, data::ImageFolderOptions images,
                              std::vector<std::string> vocabulary, const data::SequenceReadOptions& sequences) {
    const Task task = task_of(m);
    data::DataOptions options;
    options.csv = csv_options_for(task);
    image_targets(options.csv, m);
    options.images = std::move(images);
    options.images.shape = {m.input.c, m.input.h, m.input.w};
    if (m.input.sequence()) set_sequence_options(options, m, task, std::move(vocabulary), sequences);
    auto split = data::load_data(spec, options);
    if (task == Task::Binary) {
        fold_binary(split.train);
        if (split.has_test) fold_binary(split.test);
    }
    mark_binary_pixels(split.train, m);
    if (split.has_test) mark_binary_pixels(split.test, m);
    share_targets(split.train, m);
    if (split.has_test) share_targets(split.test, m);
    check_sequences(split.train, m);
    if (split.has_test) check_sequences(split.test, m);
    return split;
}

}  // namespace thresher::train
