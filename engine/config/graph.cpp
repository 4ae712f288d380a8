// The model as a graph: resolving each layer's "inputs" (names) into the indices of the layers
// it reads, and the checks that make the layer list a valid execution order. A layer stack names
// no inputs: each layer reads the one before it, so it resolves to a chain and runs as before.
//
// The layer list is the execution order (and the order of the flat parameter buffer): every
// input comes before its reader. Importers whose files list layers in another order (DL4J's
// vertex map) put them in this order with sort_topologically() before building the model.
#include "config/graph.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "core/error.h"

namespace thresher::config {

namespace {

constexpr int kAmbiguous = -2;

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

bool is_vertex(LayerType t) {
    switch (t) {
        case LayerType::Add:
        case LayerType::Subtract:
        case LayerType::Multiply:
        case LayerType::Average:
        case LayerType::Maximum:
        case LayerType::Concatenate:
        case LayerType::Subset:
        case LayerType::Reshape:
        case LayerType::Permute: return true;
        default: return false;
    }
}

bool is_convolution(LayerType t) {
    return t == LayerType::Convolution || t == LayerType::DepthwiseConvolution || t == LayerType::SeparableConvolution ||
           t == LayerType::TransposedConvolution;
}

bool joins_inputs(LayerType t) {
    return is_vertex(t) && t != LayerType::Subset && t != LayerType::Reshape && t != LayerType::Permute;
}

bool ModelConfig::is_graph() const {
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const auto& l = layers[i];
        if (l.inputs.empty()) continue;
        const int previous = i == 0 ? LayerConfig::kModelInput : static_cast<int>(i) - 1;
        if (l.sources.size() != 1 || l.sources[0] != previous) return true;
    }
    return !extra_inputs.empty() || output_layers.size() > 1;
}

namespace {

// An output layer, an activation layer (DL4J's LossLayer), or a layer that declares a "loss":
// an image output (a convolution, transposed convolution, upsampling ... ending an autoencoder
// or a segmentation head; shape inference checks that it is an image).
bool can_be_output(const LayerConfig& l) {
    return l.type == LayerType::Output || l.type == LayerType::Activation || l.declares_loss;
}

}  // namespace

void ModelConfig::resolve_graph(const std::string& source) {
    auto fail = [&](std::size_t i, const std::string& problem) {
        throw ConfigError(source + ": " + layers[i].label(i) + ": " + problem);
    };
    std::map<std::string, int> index;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        if (layers[i].name.empty()) continue;
        auto [it, fresh] = index.emplace(layers[i].name, static_cast<int>(i));
        if (!fresh) it->second = kAmbiguous;
    }
    std::vector<bool> read(layers.size(), false);
    for (std::size_t i = 0; i < layers.size(); ++i) {
        auto& l = layers[i];
        l.sources.clear();
        if (l.inputs.empty()) {
            if (joins_inputs(l.type))
                fail(i, "a " + std::string(to_string(l.type)) + " vertex joins branches: list them in \"inputs\"");
            l.sources.push_back(i == 0 ? LayerConfig::kModelInput : static_cast<int>(i) - 1);
        }
        for (const auto& name : l.inputs) {
            const auto it = index.find(name);
            std::optional<std::size_t> model_input;
            for (std::size_t k = 0; k < input_count() && !model_input; ++k)
                if (name == input_name_of(k)) model_input = k;
            if (model_input) {
                if (it != index.end())
                    fail(i, "input " + in_quotes(name) + " is ambiguous: it names both a model input and a layer");
                l.sources.push_back(LayerConfig::model_input(*model_input));
                continue;
            }
            if (it == index.end()) {
                std::string inputs_named = in_quotes(input_name);
                for (const auto& e : extra_inputs) inputs_named += ", " + in_quotes(e.name);
                fail(i, "input " + in_quotes(name) + " names no layer (and the model's input" +
                            (extra_inputs.empty() ? " is " : "s are ") + inputs_named + ")");
            }
            if (it->second == kAmbiguous)
                fail(i, "input " + in_quotes(name) + " is ambiguous: more than one layer has that name");
            if (it->second >= static_cast<int>(i))
                fail(i, "input " + in_quotes(name) + (it->second == static_cast<int>(i) ? " is the layer itself" : " comes after it") +
                            ": every layer must come after the layers it reads");
            l.sources.push_back(it->second);
        }
        if (!joins_inputs(l.type) && l.sources.size() != 1)
            fail(i, "reads " + std::to_string(l.sources.size()) +
                        " inputs; only vertices (add, subtract, multiply, average, maximum, concatenate) join branches");
        if (l.type == LayerType::Subtract && l.sources.size() != 2)
            fail(i, "subtract takes exactly two inputs (the first minus the second), got " + std::to_string(l.sources.size()));
        for (int s : l.sources)
            if (s >= 0) read[static_cast<std::size_t>(s)] = true;
        l.shares_index = -1;
        if (!l.shares.empty()) {
            const auto it = index.find(l.shares);
            if (it == index.end()) fail(i, "\"shares\": " + in_quotes(l.shares) + " names no layer");
            if (it->second == kAmbiguous) fail(i, "\"shares\": " + in_quotes(l.shares) + " names more than one layer");
            if (it->second >= static_cast<int>(i))
                fail(i, "\"shares\": " + in_quotes(l.shares) + (it->second == static_cast<int>(i) ? " is the layer itself" : " comes after it") +
                            ": a layer shares the parameters of an earlier layer");
            const auto& owner = layers[static_cast<std::size_t>(it->second)];
            // A chain (c shares b, b shares a) is one set of parameters: a's.
            l.shares_index = owner.shares_index >= 0 ? owner.shares_index : it->second;
            if (owner.type != l.type)
                fail(i, "\"shares\": " + in_quotes(l.shares) + " is a " + std::string(to_string(owner.type)) + " layer, this one a " +
                            std::string(to_string(l.type)) + ": a shared layer has its owner's type");
        }
    }
    // The outputs: the layers no one reads (the last one always), each an output layer or an
    // activation layer with a loss; listed in "outputs" when their order matters.
    output_layers.clear();
    for (std::size_t i = 0; i < layers.size(); ++i) {
        layers[i].is_output = !read[i];
        if (read[i]) {
            if (layers[i].declares_loss)
                fail(i, "\"loss\": only an output (a layer no other layer reads) has a loss");
            if (layers[i].type == LayerType::Output)
                fail(i, "an output layer ends the model: no layer may read it (the layer after a loss has no gradient)");
            continue;
        }
        if (i + 1 < layers.size() && !can_be_output(layers[i]))
            fail(i, "no layer reads its output, and a " + std::string(to_string(layers[i].type)) +
                        " layer cannot be a model output without a \"loss\" (end that branch with an output layer, give an image "
                        "output its loss, or feed it to another layer)");
        if (outputs.empty()) output_layers.push_back(i);
    }
    if (!outputs.empty()) {
        for (const auto& name : outputs) {
            const auto it = index.find(name);
            if (it == index.end() || it->second == kAmbiguous)
                throw ConfigError(source + ": outputs: " + in_quotes(name) +
                                  (it == index.end() ? " names no layer" : " names more than one layer"));
            const auto o = static_cast<std::size_t>(it->second);
            if (read[o]) throw ConfigError(source + ": outputs: " + in_quotes(name) + " is read by another layer: an output ends the model");
            if (std::find(output_layers.begin(), output_layers.end(), o) != output_layers.end())
                throw ConfigError(source + ": outputs: " + in_quotes(name) + " is listed twice");
            output_layers.push_back(o);
        }
        for (std::size_t i = 0; i < layers.size(); ++i)
            if (!read[i] && std::find(output_layers.begin(), output_layers.end(), i) == output_layers.end())
                fail(i, "no layer reads its output and \"outputs\" does not list it");
    }
}

std::vector<std::size_t> topological_order(const std::vector<std::vector<std::size_t>>& inputs,
                                           const std::vector<std::string>& names, const std::string& source) {
    const std::size_t n = inputs.size();
    std::vector<bool> placed(n, false);
    std::vector<std::size_t> order;
    order.reserve(n);
    // Stable: each round places the earliest listed node whose inputs are placed, so a file that
    // is already in order keeps its order (and its parameter layout).
    while (order.size() < n) {
        bool progress = false;
        for (std::size_t i = 0; i < n; ++i) {
            if (placed[i]) continue;
            bool ready = true;
            for (auto j : inputs[i]) ready = ready && placed[j];
            if (!ready) continue;
            placed[i] = true;
            order.push_back(i);
            progress = true;
            break;
        }
        if (!progress) {
            std::string cycle;
            for (std::size_t i = 0; i < n; ++i)
                if (!placed[i]) cycle += (cycle.empty() ? "" : ", ") + in_quotes(names[i]);
            throw ConfigError(source + ": the graph has a cycle through " + cycle + ": a model must be acyclic");
        }
    }
    return order;
}

}  // namespace thresher::config
