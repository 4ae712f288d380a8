#include "train/evaluation.h"

#include <algorithm>

#include "core/error.h"

namespace thresher::train {

nlohmann::json EvaluationResult::to_json() const {
    nlohmann::json j = classification ? classification->to_json()
                                      : regression ? regression->to_json() : nlohmann::json::object();
    j["loss"] = loss;
    return j;
}

void check_compatible(const nn::ModelConfig& model, const data::Dataset& ds) {
    const std::size_t in = model.input.size();
    if (ds.shape.size() != in)
        throw ConfigError("data " + ds.name + " has " + std::to_string(ds.shape.size()) +
                          " features per sample, model \"" + model.name + "\" expects " +
                          model.input.str() + " = " + std::to_string(in));
    const auto out = static_cast<std::size_t>(model.output_size());
    if (ds.target_size != out)
        throw ConfigError("data " + ds.name + " has " + std::to_string(ds.target_size) +
                          (ds.is_classification() ? " classes" : " target columns") + ", model \"" +
                          model.name + "\" outputs " + std::to_string(out));
    if (ds.is_classification() != model.is_classifier())
        throw ConfigError("data " + ds.name + " is a " +
                          (ds.is_classification() ? "classification" : "regression") +
                          " set, model \"" + model.name + "\" has loss " +
                          std::string(nn::to_string(model.layers.back().loss)));
}

EvaluationResult evaluate(nn::Network& net, const data::Dataset& ds, int batch, std::size_t limit) {
    EvaluationResult r;
    const std::size_t n = limit ? std::min(limit, ds.count) : ds.count;
    const int k = net.config().output_size();
    if (ds.is_classification())
        r.classification.emplace(ds.num_classes);
    else
        r.regression.emplace(ds.target_size);
    std::vector<float> out;
    double loss_sum = 0.0;
    const std::size_t width = ds.shape.size();
    for (std::size_t start = 0; start < n; start += static_cast<std::size_t>(batch)) {
        const int count = static_cast<int>(std::min<std::size_t>(batch, n - start));
        out.resize(static_cast<std::size_t>(count) * k);
        const float* x = ds.features.data() + start * width;
        const float* t = ds.targets.data() + start * ds.target_size;
        loss_sum += net.loss(x, t, count, 0, backend::Mode::Inference, out.data()) * count;
        if (r.classification)
            r.classification->add(out.data(), ds.labels.data() + start, count);
        else
            r.regression->add(out.data(), t, count);
    }
    r.loss = n ? loss_sum / static_cast<double>(n) : 0.0;
    return r;
}

}  // namespace thresher::train
