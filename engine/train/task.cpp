#include "train/task.h"

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

}  // namespace

Task task_of(const config::ModelConfig& m) {
    if (m.layers.empty()) return Task::Classification;
    const auto& out = m.layers.back();
    if (out.loss == config::LossKind::BinaryCrossEntropy && out.units == 1) return Task::Binary;
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

data::DataSplit load_data_for(const std::string& spec, const config::ModelConfig& m, data::ImageFolderOptions images) {
    const Task task = task_of(m);
    data::DataOptions options;
    options.csv = csv_options_for(task);
    options.images = std::move(images);
    options.images.shape = {m.input.c, m.input.h, m.input.w};
    auto split = data::load_data(spec, options);
    if (task == Task::Binary) {
        fold_binary(split.train);
        if (split.has_test) fold_binary(split.test);
    }
    return split;
}

}  // namespace thresher::train
