#include "cli/commands.h"

#include <algorithm>
#include <cmath>
#include <iostream>

#include "backend/registry.h"
#include "core/error.h"
#include "data/data_source.h"
#include "nn/model_file.h"
#include "nn/network.h"
#include "train/evaluation.h"

namespace thresher::cli {

namespace {

struct Loaded {
    nn::ModelFile file;
    std::unique_ptr<backend::Backend> backend;
    std::unique_ptr<nn::Network> net;
};

Loaded load(const std::string& model_file, int threads, const std::string& device) {
    Loaded l;
    l.file = nn::load_model_file(model_file);
    l.backend = backend::create_backend(device, {threads});
    l.net = std::make_unique<nn::Network>(l.file.config, *l.backend);
    l.net->set_params(l.file.params);
    return l;
}

// Evaluation and prediction use the test split when the source has one.
data::Dataset& pick(data::DataSplit& split) { return split.has_test ? split.test : split.train; }

}  // namespace

void evaluate_command(const std::string& model_file, const std::string& data_spec, std::size_t limit,
                      int threads, const std::string& device) {
    auto l = load(model_file, threads, device);
    auto split = data::load_data(data_spec);
    auto& ds = pick(split);
    train::check_compatible(l.net->config(), ds);
    l.file.normalization.apply(ds);  // the inputs the model was trained on
    const auto r = train::evaluate(*l.net, ds, 256, limit);
    nlohmann::json j = r.to_json();
    j["event"] = "evaluation";
    j["data"] = ds.name;
    j["count"] = limit ? std::min(limit, ds.count) : ds.count;
    std::cout << j.dump() << std::endl;
    if (r.classification) std::cerr << r.classification->confusion_table() << "\n";
    else std::cerr << r.regression->summary() << "\n";
}

void predict_command(const std::string& model_file, const std::string& data_spec, std::size_t limit,
                     int threads, const std::string& device) {
    auto l = load(model_file, threads, device);
    auto split = data::load_data(data_spec);
    auto& ds = pick(split);
    train::check_compatible(l.net->config(), ds);
    l.file.normalization.apply(ds);
    const std::size_t n = limit ? std::min(limit, ds.count) : ds.count;
    const int k = l.net->config().output_size();
    const bool classifier = l.net->config().is_classifier();
    constexpr int kBatch = 256;
    std::vector<float> out;
    for (std::size_t start = 0; start < n; start += kBatch) {
        const int count = static_cast<int>(std::min<std::size_t>(kBatch, n - start));
        out.resize(static_cast<std::size_t>(count) * k);
        l.net->predict(ds.sample(start), count, out.data());
        for (int i = 0; i < count; ++i) {
            const float* row = out.data() + static_cast<std::size_t>(i) * k;
            nlohmann::json j{{"index", start + i}};
            std::vector<float> values(row, row + k);
            if (classifier) {
                j["class"] = std::max_element(row, row + k) - row;
                j["probabilities"] = values;
            } else {
                j["outputs"] = values;
            }
            std::cout << j.dump() << '\n';
        }
    }
    std::cout.flush();
}

bool compare_command(const std::string& a, const std::string& b, double tolerance) {
    const auto fa = nn::load_model_file(a);
    const auto fb = nn::load_model_file(b);
    if (fa.params.size() != fb.params.size())
        throw Error("compare: " + a + " has " + std::to_string(fa.params.size()) + " parameters, " + b +
                    " has " + std::to_string(fb.params.size()));
    double max_diff = 0.0;
    std::size_t where = 0;
    for (std::size_t i = 0; i < fa.params.size(); ++i) {
        const double d = std::abs(static_cast<double>(fa.params[i]) - fb.params[i]);
        if (!(d <= max_diff)) {  // NaN counts as the largest difference
            max_diff = std::isnan(d) ? INFINITY : d;
            where = i;
        }
    }
    nlohmann::json j{{"max_abs_diff", max_diff}, {"params", fa.params.size()}, {"at", where}};
    std::cout << j.dump() << std::endl;
    return max_diff <= tolerance;
}

void devices_command() {
    for (const auto& d : backend::list_devices())
        std::cout << nlohmann::json{{"device", d.name}, {"description", d.description}}.dump() << '\n';
    std::cout.flush();
}

}  // namespace thresher::cli
