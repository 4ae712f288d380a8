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
    const auto width = static_cast<std::size_t>(m.output_size());
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

data::DataSplit load_data_for(const std::string& spec, const config::ModelConfig& m, data::ImageFolderOptions images) {
    const Task task = task_of(m);
    data::DataOptions options;
    options.csv = csv_options_for(task);
    image_targets(options.csv, m);
    options.images = std::move(images);
    options.images.shape = {m.input.c, m.input.h, m.input.w};
    auto split = data::load_data(spec, options);
    if (task == Task::Binary) {
        fold_binary(split.train);
        if (split.has_test) fold_binary(split.test);
    }
    mark_binary_pixels(split.train, m);
    if (split.has_test) mark_binary_pixels(split.test, m);
    share_targets(split.train, m);
    if (split.has_test) share_targets(split.test, m);
    return split;
}

}  // namespace thresher::train
