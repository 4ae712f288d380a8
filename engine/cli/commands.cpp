#include "cli/commands.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <cmath>
#include <fstream>
#include <iostream>

#include "backend/registry.h"
#include "core/error.h"
#include "dist/masters/predictions_wire.h"
#include "data/data_source.h"
#include "data/shard_format.h"
#include "data/shard_stream.h"
#include "config/model_format.h"
#include "nn/model_file.h"
#include "nn/network.h"
#include "train/evaluation.h"
#include "train/task.h"
#include "train/text_sampling.h"

namespace thresher::cli {

namespace {

struct Loaded {
    nn::ModelFile file;
    std::unique_ptr<backend::Backend> backend;
    std::unique_ptr<nn::Network> net;
};

}  // namespace

nn::ModelFile model_file_any(const std::string& path, const config::ImportOptions& import) {
    std::ifstream in(path, std::ios::binary);
    char magic[8] = {};
    in.read(magic, sizeof magic);
    if (in.gcount() == 8 && std::memcmp(magic, "THRMODL", 8) == 0) {
        auto f = nn::load_model_file(path);
        config::check_steps_given(f.config, import, path);
        return f;
    }
    in.close();
    auto imported = config::import_model_file(path, import);
    if (imported.params.empty())
        throw ModelFileError(path + ": holds an architecture without weights (" + std::string(config::to_string(imported.format)) +
                             "): train it first, or give a Thresher model file, a DL4J model zip or a Keras .h5 / .keras file");
    for (const auto& note : imported.notes) std::cerr << path << ": " << note << "\n";
    nn::ModelFile f;
    f.config = std::move(imported.model);
    f.params = std::move(imported.params);
    // A DL4J zip's normalizer.bin: the features go through it as through a saved --normalize.
    f.normalization = {imported.normalization.kind, imported.normalization.shift, imported.normalization.scale};
    return f;
}

namespace {

Loaded load(const std::string& model_file, int threads, const std::string& device, const config::ImportOptions& import) {
    Loaded l;
    l.file = model_file_any(model_file, import);
    l.backend = backend::create_backend(device, {threads});
    l.net = std::make_unique<nn::Network>(l.file.config, *l.backend);
    l.net->set_params(l.file.params);
    return l;
}

// The data for a loaded model; an image folder's classes must be the ones the model learned.
data::DataSplit load_for_model(const Loaded& l, const std::string& model_file, const std::string& data_spec,
                               const data::ImageFolderOptions& images, const data::SequenceReadOptions& sequences) {
    auto split = train::load_data_for(data_spec, l.net->config(), images, l.file.vocabulary, sequences);  // a CSV read for the model's task
    if (!l.file.class_names.empty() && !split.class_names.empty())
        train::check_same_classes(l.file.class_names, model_file, split.class_names, data_spec);
    if (split.skipped_images > 0) {
        std::cerr << "skipped " << split.skipped_images << " image(s) that could not be decoded";
        for (const auto& e : split.skipped_examples) std::cerr << "\n  " << e;
        std::cerr << "\n";
    }
    return split;
}

// Evaluation and prediction use the test split when the source has one.
data::Dataset& pick(data::DataSplit& split) { return split.has_test ? split.test : split.train; }

// One sigmoid unit: P(class 1) decides; else the most probable class.
std::size_t predicted_class(const float* p, std::size_t units) {
    return units == 1 ? (p[0] >= 0.5f ? 1 : 0) : static_cast<std::size_t>(std::max_element(p, p + units) - p);
}

// A per-step output's predictions for one sample's `steps` valid steps (`units` values each):
// a classifier's class per step (and a character model's characters as text), else the values.
nlohmann::json per_step_json(const float* values, std::size_t steps, std::size_t units, bool classifier,
                             const std::vector<std::string>& class_names, const std::vector<std::string>& vocabulary) {
    nlohmann::json j{{"steps", steps}};
    if (!classifier) {
        j["outputs"] = std::vector<float>(values, values + steps * units);
        return j;
    }
    std::vector<std::size_t> classes;
    std::vector<std::vector<float>> probabilities;
    for (std::size_t s = 0; s < steps; ++s) {
        const float* p = values + s * units;
        classes.push_back(predicted_class(p, units));
        probabilities.emplace_back(p, p + units);
    }
    j["classes"] = classes;
    if (!class_names.empty()) {
        auto& names = j["class_names"] = nlohmann::json::array();
        for (auto c : classes) names.push_back(c < class_names.size() ? class_names[c] : std::to_string(c));
    }
    if (!vocabulary.empty()) {
        // A character model predicts the next character at each step: the text it expects.
        std::string text;
        for (auto c : classes) text += c < vocabulary.size() ? vocabulary[c] : "?";
        j["text"] = text;
    }
    j["probabilities"] = probabilities;
    return j;
}

// One sample's prediction line: `all` holds every output's values (the model's target width),
// `row` the sample's feature row.
void print_prediction(const Loaded& l, std::size_t i, const float* all, const float* row) {
    const auto& cfg = l.net->config();
    // A per-step output's valid steps: the sample's length, the first float of its row when the
    // first input is a sequence (seq_spec.md); a sequence made inside the model (repeat_vector)
    // has every step.
    const auto steps = cfg.input_shape(0).sequence() ? static_cast<std::size_t>(row[0])
                                                     : static_cast<std::size_t>(cfg.main_output().out_shape.t);
    const bool classifier = cfg.is_classifier();
    const auto main_k = static_cast<std::size_t>(cfg.main_output().output_width());
    nlohmann::json j{{"index", i}};
    if (cfg.main_output().out_shape.sequence()) {
        j.update(per_step_json(all, steps, static_cast<std::size_t>(cfg.main_output().out_shape.c), classifier, l.file.class_names,
                               l.file.vocabulary));
    } else {
        const std::vector<float> v(all, all + main_k);
        if (classifier && !cfg.main_output().image_output()) {
            const auto c = predicted_class(v.data(), main_k);
            j["class"] = c;
            if (!l.file.class_names.empty()) j["class_name"] = l.file.class_names[c];
            j["probabilities"] = v;
        } else {
            j["outputs"] = v;
        }
    }
    // Several outputs: the main one (the first) as for any model, and each by name.
    if (cfg.output_layers.size() > 1) {
        auto& by_name = j["output_values"] = nlohmann::json::object();
        std::size_t column = 0;
        for (std::size_t o = 0; o < cfg.output_layers.size(); ++o) {
            const auto& out = cfg.layers[cfg.output_layers[o]];
            const auto units = static_cast<std::size_t>(out.output_width());  // a per-step output: all its steps
            by_name[out.name.empty() ? "output" + std::to_string(o) : out.name] = std::vector<float>(all + column, all + column + units);
            column += units;
        }
    }
    std::cout << j.dump() << '\n';
}

// A shard set for evaluate and predict: its test part (or, without one, its train part), checked
// against the loaded model (classes, input, the normalisation applied to each record as read).
struct ShardPartFor {
    data::ShardIndex index;
    data::Dataset ds;  // the part's description (no records)
    const data::ShardPart& part() const { return index.has_test ? index.test : index.train; }
};

ShardPartFor open_shard_part(const Loaded& l, const std::string& model_file, const std::string& data_spec) {
    ShardPartFor s{data::read_shard_index(data_spec), {}};
    s.ds = s.index.describe(s.part());
    if (!l.file.class_names.empty() && !s.index.class_names.empty())
        train::check_same_classes(l.file.class_names, model_file, s.index.class_names, data_spec);
    train::check_compatible(l.net->config(), s.ds);
    l.file.normalization.check_width(s.ds);
    return s;
}

// predict on one node from a shard set: its test part (or, without one, its train part) streams
// block by block through the model, each line printed as its block is done, so the set never
// sits in memory whole (evaluate streams it the same way).
void predict_streamed(const Loaded& l, const std::string& model_file, const std::string& data_spec, std::size_t limit) {
    const auto set = open_shard_part(l, model_file, data_spec);
    data::BatchPlan plan;
    plan.batch_size = set.index.batch;
    plan.seed = set.index.seed;
    plan.shuffle = false;  // epoch 0 unshuffled: the part's order as exported
    plan.limit = limit;
    data::ShardStream stream(set.index, set.part(), plan, &l.file.normalization);
    const auto k = l.net->config().target_size();
    const std::size_t width = set.ds.shape.size();
    data::Batch b;
    std::vector<float> values;
    while (stream.next(b)) {
        if (b.count == 0) continue;
        values.resize(b.count * k);
        l.net->predict(b.features.data(), static_cast<int>(b.count), values.data());
        for (std::size_t j = 0; j < b.count; ++j) print_prediction(l, b.indices[j], values.data() + j * k, b.features.data() + j * width);
    }
    std::cout.flush();
}

}  // namespace

void evaluate_command(const std::string& model_file, const std::string& data_spec, std::size_t limit,
                      int threads, const std::string& device, const data::ImageFolderOptions& images,
                      std::optional<int> top_k, const data::SequenceReadOptions& sequences, const config::ImportOptions& import) {
    auto l = load(model_file, threads, device, import);
    train::EvaluationResult r;
    std::string data_name;
    if (data::is_shard_folder(data_spec)) {
        // A shard set streams its test part (or, without one, its train part) block by block.
        const auto set = open_shard_part(l, model_file, data_spec);
        r = train::evaluate_shard_part(*l.net, set.index, set.part(), &l.file.normalization, limit, 0, 1,
                                       train::resolve_top_k(top_k, set.ds.num_classes));
        data_name = set.ds.name;
    } else {
        auto split = load_for_model(l, model_file, data_spec, images, sequences);
        auto& ds = pick(split);
        train::check_compatible(l.net->config(), ds);
        l.file.normalization.apply(ds);  // the inputs the model was trained on
        r = train::evaluate(*l.net, ds, 256, limit, 0, 1, train::resolve_top_k(top_k, ds.num_classes));
        data_name = ds.name;
    }
    nlohmann::json j = r.to_json();
    j["event"] = "evaluation";
    j["data"] = data_name;
    j["count"] = r.count;  // the samples evaluated: all, or the first --limit
    std::cout << j.dump() << std::endl;
    const auto& names = l.file.class_names;
    if (r.classification)
        std::cerr << r.classification->confusion_table(
                         names.size() == static_cast<std::size_t>(r.classification->num_classes()) ? names
                                                                                                     : std::vector<std::string>{})
                  << "\n";
    else std::cerr << r.regression->summary() << "\n";
}

void predict_command(const std::string& model_file, const std::string& data_spec, std::size_t limit,
                     int threads, const std::string& device, const data::ImageFolderOptions& images,
                     ClusterSession* cluster, const data::SequenceReadOptions& sequences, const config::ImportOptions& import) {
    auto l = load(model_file, threads, device, import);
    dist::Transport* transport = cluster ? cluster->transport() : nullptr;
    if (!transport && data::is_shard_folder(data_spec)) return predict_streamed(l, model_file, data_spec, limit);
    // In memory: a file, or a shard set shared among several nodes (each takes every n-th sample).
    auto split = load_for_model(l, model_file, data_spec, images, sequences);
    auto& ds = pick(split);
    train::check_compatible(l.net->config(), ds);
    l.file.normalization.apply(ds);
    const std::size_t n = limit ? std::min(limit, ds.count) : ds.count;
    // Floats per sample: each output's units, a per-step output's for every step.
    const auto k = static_cast<int>(l.net->config().target_size());
    const int nodes = transport ? transport->world() : 1;
    const int rank = transport ? transport->rank() : 0;

    // This node's shard, gathered into contiguous batches.
    constexpr std::size_t kBatch = 256;
    const std::size_t width = ds.shape.size();
    std::vector<std::size_t> index;
    for (std::size_t i = static_cast<std::size_t>(rank); i < n; i += static_cast<std::size_t>(nodes)) index.push_back(i);
    std::vector<float> values(index.size() * static_cast<std::size_t>(k)), x;
    for (std::size_t start = 0; start < index.size(); start += kBatch) {
        const std::size_t count = std::min(kBatch, index.size() - start);
        x.resize(count * width);
        for (std::size_t j = 0; j < count; ++j) std::copy_n(ds.sample(index[start + j]), width, x.data() + j * width);
        l.net->predict(x.data(), static_cast<int>(count), values.data() + start * static_cast<std::size_t>(k));
    }

    if (rank != 0) {
        transport->send(0, dist::MessageType::Predictions, dist::pack_predictions(index, values, static_cast<std::uint32_t>(k)));
        if (!transport->flush(std::chrono::seconds(60)))
            throw Error("predict: node 0 did not acknowledge this node's " + std::to_string(index.size()) + " predictions");
        std::cerr << "predict: node " << rank << " sent " << index.size() << " predictions to node 0\n";
        return;
    }
    std::map<std::size_t, std::vector<float>> rows;
    for (std::size_t j = 0; j < index.size(); ++j)
        rows[index[j]] = std::vector<float>(values.begin() + static_cast<long>(j * k), values.begin() + static_cast<long>((j + 1) * k));
    std::vector<bool> heard(static_cast<std::size_t>(nodes), false);
    heard[0] = true;
    for (int waiting = nodes - 1; waiting > 0;) {
        auto m = transport->receive(std::chrono::milliseconds(200));
        if (m && m->type == dist::MessageType::Predictions && m->sender > 0 && m->sender < nodes &&
            !heard[static_cast<std::size_t>(m->sender)]) {
            const auto part = dist::parse_predictions(m->payload, static_cast<std::uint32_t>(k), n);
            if (!part) throw Error("predict: malformed predictions from node " + std::to_string(m->sender));
            const auto width = static_cast<std::size_t>(k);
            for (std::size_t r = 0; r < part->index.size(); ++r)
                rows[part->index[r]] = std::vector<float>(part->values.begin() + static_cast<long>(r * width),
                                                          part->values.begin() + static_cast<long>((r + 1) * width));
            heard[static_cast<std::size_t>(m->sender)] = true;
            --waiting;
        }
        for (int p : transport->unreachable_peers())
            if (!heard[static_cast<std::size_t>(p)])
                throw Error("predict: node " + std::to_string(p) + " stopped answering; its predictions are missing");
    }
    if (rows.size() != n)
        throw Error("predict: " + std::to_string(n - rows.size()) + " of " + std::to_string(n) + " predictions are missing");
    for (const auto& [i, all] : rows) print_prediction(l, i, all.data(), ds.sample(i));
    std::cout.flush();
}

void sample_text_command(const std::string& model_file, const train::TextSampleOptions& options, int threads,
                         const std::string& device, const config::ImportOptions& import) {
    auto l = load(model_file, threads, device, import);
    const auto sample = train::sample_text(*l.net, l.file.vocabulary, options);
    nlohmann::json j{{"event", "sample"},        {"model", model_file},         {"prime", sample.prime},
                     {"text", sample.text},      {"length", options.length},    {"temperature", options.temperature},
                     {"seed", options.seed}};
    std::cout << j.dump() << std::endl;
}

bool compare_command(const std::string& a, const std::string& b, double tolerance) {
    const auto fa = model_file_any(a);
    const auto fb = model_file_any(b);
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
    for (const auto& d : backend::list_devices()) {
        nlohmann::json line{{"device", d.name}, {"description", d.description}};
        if (!d.usable) {
            line["usable"] = false;
            line["reason"] = d.reason;
            std::cerr << "thresher-engine: " << d.description << " is built, but no device is usable: " << d.reason << "\n";
        }
        std::cout << line.dump() << '\n';
    }
    std::cout.flush();
}

}  // namespace thresher::cli
