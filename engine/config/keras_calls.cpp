#include "config/keras_calls.h"

#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include "core/error.h"

namespace thresher::config {

namespace {

using nlohmann::json;

// One tensor a call reads: output `tensor` of call `node` of layer `layer`.
struct Ref {
    std::string layer;
    long long node = 0, tensor = 0;
};

std::string name_of(const json& layer) {
    if (layer.is_object() && layer.contains("config") && layer["config"].is_object() && layer["config"].contains("name") &&
        layer["config"]["name"].is_string())
        return layer["config"]["name"].get<std::string>();
    return layer.is_object() && layer.contains("name") && layer["name"].is_string() ? layer["name"].get<std::string>() : "";
}

std::string class_of(const json& layer) {
    return layer.is_object() && layer.contains("class_name") && layer["class_name"].is_string() ? layer["class_name"].get<std::string>() : "";
}

// The tensors one inbound node passes to its call:
//   Keras 1/2, TF.js  [["conv_1", 0, 0, {}], ["conv_2", 1, 0, {}]]
//   Keras 3           {"args": [[{"class_name": "__keras_tensor__", "config": {"keras_history": ["conv_1", 0, 0]}}]], "kwargs": {}}
std::vector<Ref> node_refs(const json& node, const std::function<void(const std::string&)>& fail) {
    std::vector<Ref> refs;
    auto history = [&](const json& r) {
        if (!r.is_array() || r.empty() || !r[0].is_string()) fail("an input reference must be [layer name, node, tensor], got " + r.dump());
        if ((r.size() >= 2 && !r[1].is_number_integer()) || (r.size() >= 3 && !r[2].is_number_integer()))
            fail("an input reference must be [layer name, node, tensor] with whole numbers, got " + r.dump());
        Ref ref{r[0].get<std::string>()};
        if (r.size() >= 2) ref.node = r[1].get<long long>();
        if (r.size() >= 3) ref.tensor = r[2].get<long long>();
        if (ref.node < 0 || ref.tensor < 0) fail("an input reference has a negative node or tensor index: " + r.dump());
        refs.push_back(ref);
    };
    if (node.is_object()) {
        for_each_keras_history(node, history);
    } else if (node.is_array()) {
        for (const auto& r : node) history(r);
    } else {
        fail("an inbound node must list the call's inputs, got " + node.dump());
    }
    return refs;
}

// "input_layers" / "output_layers": [["name", node, tensor], ...] or one ["name", node, tensor].
std::vector<Ref> endpoints(const json& cfg, const char* key) {
    std::vector<Ref> out;
    if (!cfg.contains(key) || !cfg[key].is_array()) return out;
    const auto& v = cfg[key];
    auto one = [&](const json& e) {
        if (!e.is_array() || e.empty() || !e[0].is_string()) return;
        Ref r{e[0].get<std::string>()};
        if (e.size() >= 2 && e[1].is_number_integer()) r.node = e[1].get<long long>();
        if (e.size() >= 3 && e[2].is_number_integer()) r.tensor = e[2].get<long long>();
        out.push_back(r);
    };
    if (!v.empty() && v[0].is_string()) one(v);
    else
        for (const auto& e : v) one(e);
    return out;
}

constexpr std::size_t kMaxLayers = 1 << 16;

class Inliner {
public:
    explicit Inliner(const std::string& source) : source_(source) {}

    KerasCalls out;

    // Inlines a functional model's calls. `inputs`: the flat tensors its inputs take; none at the
    // top, where its InputLayers stay. Returns the flat tensors of its outputs, in order.
    std::vector<std::string> functional(const json& model, const std::string& path, const std::string& prefix,
                                        const std::string& suffix, const std::vector<std::string>& inputs, bool top, int depth) {
        const json* cfg = model.contains("config") ? &model["config"] : nullptr;
        if (!cfg || !cfg->is_object() || !cfg->contains("layers") || !(*cfg)["layers"].is_array())
            fail(path, "a functional model's config must be an object with \"layers\"");
        const auto& layers = (*cfg)["layers"];
        const std::string list_path = (path.empty() ? "" : path + ".") + "config.layers";
        std::map<std::pair<std::string, long long>, std::vector<std::string>> tensors;
        const auto input_refs = endpoints(*cfg, "input_layers");
        if (!top) {
            if (input_refs.empty()) fail((path.empty() ? "" : path + ".") + "config.input_layers", "is required: the model's inputs");
            if (input_refs.size() != inputs.size())
                fail(path, "the model takes " + std::to_string(input_refs.size()) + " input(s), but its call passes " +
                               std::to_string(inputs.size()));
            for (std::size_t k = 0; k < inputs.size(); ++k) tensors[{input_refs[k].layer, 0}] = {inputs[k]};
        }
        struct Call {
            std::size_t entry;
            long long node;
            std::vector<Ref> refs;
        };
        std::vector<Call> pending;
        for (std::size_t i = 0; i < layers.size(); ++i) {
            const auto& layer = layers[i];
            const std::string at = list_path + "[" + std::to_string(i) + "]";
            if (!layer.is_object()) fail(at, "a layer must be an object, got " + layer.dump().substr(0, 80));
            if (class_of(layer) == "InputLayer") {
                if (top) {
                    emit(layer, at, name_of(layer), "", {});
                    tensors[{name_of(layer), 0}] = {name_of(layer)};
                }
                continue;
            }
            const json nodes = layer.contains("inbound_nodes") && layer["inbound_nodes"].is_array() ? layer["inbound_nodes"] : json::array();
            if (nodes.empty()) fail(at, "a layer of a functional model that is never called (no inbound_nodes)");
            for (std::size_t k = 0; k < nodes.size(); ++k)
                pending.push_back({i, static_cast<long long>(k), node_refs(nodes[k], [&](const std::string& what) {
                                       fail(at + ".inbound_nodes[" + std::to_string(k) + "]", what);
                                   })});
        }
        // One call at a time: of the calls whose inputs are ready, the first calls before later
        // ones, then the earliest listed. A file already in order keeps its order, and the calls
        // of a shared layer follow the first calls of the layers listed after it, as Thresher's
        // Keras export lists them (so a Thresher -> Keras -> Thresher round trip keeps the order).
        // A file in order finds its next call at the front: linear, however many layers.
        std::vector<bool> done(pending.size(), false);
        std::size_t first = 0;
        for (std::size_t left = pending.size(); left > 0; --left) {
            while (done[first]) ++first;
            std::size_t ready = pending.size();
            for (std::size_t j = first; j < pending.size(); ++j) {
                if (done[j]) continue;
                bool ok = true;
                for (const auto& r : pending[j].refs) ok = ok && tensors.count({r.layer, r.node});
                if (ok && (ready == pending.size() || pending[j].node < pending[ready].node)) ready = j;
                if (ok && pending[j].node == 0) break;  // nothing later comes before it
            }
            if (ready == pending.size()) {
                const auto& c = pending[first];
                std::string missing;
                for (const auto& r : c.refs)
                    if (!tensors.count({r.layer, r.node}))
                        missing += (missing.empty() ? "" : ", ") + ("call " + std::to_string(r.node) + " of \"" + r.layer + "\"");
                fail(list_path + "[" + std::to_string(c.entry) + "]",
                     "reads " + missing + ", which no layer of the model makes (or the calls form a cycle)");
            }
            done[ready] = true;
            const Call& c = pending[ready];
            const auto& layer = layers[c.entry];
            const std::string at = list_path + "[" + std::to_string(c.entry) + "]";
            const std::string name = name_of(layer);
            std::vector<std::string> reads;
            for (const auto& r : c.refs) {
                const auto& made = tensors[{r.layer, r.node}];
                if (r.tensor >= static_cast<long long>(made.size()))
                    fail(at, "reads output " + std::to_string(r.tensor) + " of call " + std::to_string(r.node) + " of \"" + r.layer +
                                 "\", which has " + std::to_string(made.size()) + " output(s) (Thresher's layers have one)");
                reads.push_back(made[static_cast<std::size_t>(r.tensor)]);
            }
            const std::string call_suffix = (c.node ? "@" + std::to_string(c.node) : "") + suffix;
            const std::string where = at + (c.node ? ".inbound_nodes[" + std::to_string(c.node) + "]" : "") +
                                      (suffix.empty() ? "" : " (call " + suffix + " of its model)");
            tensors[{name, c.node}] = nested(layer, where, prefix, name, call_suffix, reads, depth);
        }
        std::vector<std::string> outs;
        for (const auto& r : endpoints(*cfg, "output_layers")) {
            const auto it = tensors.find({r.layer, r.node});
            if (it == tensors.end() || r.tensor >= static_cast<long long>(it->second.size()))
                fail((path.empty() ? "" : path + ".") + "config.output_layers", "names call " + std::to_string(r.node) + " output " + std::to_string(r.tensor) +
                                                         " of \"" + r.layer + "\", which the model does not make");
            outs.push_back(it->second[static_cast<std::size_t>(r.tensor)]);
        }
        if (outs.empty()) fail((path.empty() ? "" : path + ".") + "config.output_layers", "is required: the model's outputs");
        return outs;
    }

    // A Sequential used as a layer: a chain from its one input.
    std::vector<std::string> sequential(const json& model, const std::string& path, const std::string& prefix,
                                        const std::string& suffix, const std::vector<std::string>& inputs, int depth) {
        if (inputs.size() != 1) fail(path, "a Sequential model takes one input, but its call passes " + std::to_string(inputs.size()));
        const json* list = nullptr;
        std::string list_path = (path.empty() ? "" : path + ".") + "config";
        if (model.contains("config") && model["config"].is_array()) list = &model["config"];
        else if (model.contains("config") && model["config"].is_object() && model["config"].contains("layers") &&
                 model["config"]["layers"].is_array()) {
            list = &model["config"]["layers"];
            list_path += ".layers";
        }
        if (!list) fail(path, "a Sequential model's config must list its layers");
        std::string previous = inputs[0];
        for (std::size_t i = 0; i < list->size(); ++i) {
            const auto& layer = (*list)[i];
            if (!layer.is_object()) fail(list_path + "[" + std::to_string(i) + "]", "a layer must be an object, got " + layer.dump().substr(0, 80));
            if (class_of(layer) == "InputLayer") continue;
            const std::string at = list_path + "[" + std::to_string(i) + "]" + (suffix.empty() ? "" : " (call " + suffix + " of its model)");
            previous = nested(layer, at, prefix, name_of(layer), suffix, {previous}, depth).at(0);
        }
        return {previous};
    }

private:
    // One call of a layer: a plain layer becomes one flat layer; a model, its layers.
    std::vector<std::string> nested(const json& layer, const std::string& where, const std::string& prefix, const std::string& name,
                                    const std::string& call_suffix, const std::vector<std::string>& reads, int depth) {
        if (name.empty()) fail(where, "a layer of a functional model needs a name (its readers name it)");
        const std::string cls = class_of(layer);
        if (is_keras_model_class(cls)) {
            if (depth >= 16) fail(where, "models nested more than 16 deep");
            if (cls == "Sequential") return sequential(layer, where, prefix + name + "/", call_suffix, reads, depth + 1);
            return functional(layer, where, prefix + name + "/", call_suffix, reads, false, depth + 1);
        }
        const std::string flat = prefix + name + call_suffix;
        emit(layer, where, flat, call_suffix.empty() ? "" : prefix + name, reads);
        return {flat};
    }

    void emit(const json& layer, const std::string& where, const std::string& flat, const std::string& owner,
              const std::vector<std::string>& reads) {
        // Nested models called several times multiply their layers: bound what a file can ask for.
        if (out.paths.size() >= kMaxLayers)
            fail(where, "more than " + std::to_string(kMaxLayers) + " layers once nested models and shared calls are inlined");
        if (!out.paths.emplace(flat, where).second)
            fail(where, "two layers are named \"" + flat + "\" once nested models are inlined (" + out.paths[flat] + ")");
        json copy = layer;
        if (copy.contains("config") && copy["config"].is_object()) copy["config"]["name"] = flat;
        if (copy.contains("name")) copy["name"] = flat;
        json node = json::array();
        for (const auto& r : reads) node.push_back(json::array({r, 0, 0, json::object()}));
        copy["inbound_nodes"] = reads.empty() ? json::array() : json::array({node});
        if (!owner.empty()) out.shares[flat] = owner;
        layers_.push_back(std::move(copy));
    }

    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw ConfigError(source_ + ": " + (where.empty() ? std::string("model") : where) + ": " + what);
    }

    const std::string& source_;

public:
    json layers_ = json::array();
};

}  // namespace

bool is_keras_model_class(const std::string& c) { return c == "Model" || c == "Functional" || c == "Sequential"; }

namespace {

// The batch shape a Sequential model's first layer says its input has: its InputLayer's, its
// first layer's batch_input_shape (Keras 2), the model's build_input_shape, or the first layer
// of a model nested first.
std::optional<json> sequential_input_shape(const json& model, const json& layers) {
    for (int depth = 0; depth < 16; ++depth) {
        for (const auto& key : {"batch_shape", "batch_input_shape"})
            if (!layers.empty() && layers[0].contains("config") && layers[0]["config"].is_object() && layers[0]["config"].contains(key) &&
                layers[0]["config"][key].is_array())
                return layers[0]["config"][key];
        if (model.contains("config") && model["config"].is_object() && model["config"].contains("build_input_shape") &&
            model["config"]["build_input_shape"].is_array())
            return model["config"]["build_input_shape"];
        if (layers.empty() || !is_keras_model_class(class_of(layers[0]))) return std::nullopt;
        const auto& inner = layers[0];
        if (!inner.contains("config")) return std::nullopt;
        const json* list = inner["config"].is_array() ? &inner["config"]
                           : inner["config"].is_object() && inner["config"].contains("layers") ? &inner["config"]["layers"]
                                                                                                : nullptr;
        if (!list || !list->is_array()) return std::nullopt;
        return sequential_input_shape(inner, *list);
    }
    return std::nullopt;
}

// A Sequential model holding a model as a layer (a pretrained base, then a classifier) as the
// functional model it is: an InputLayer, then the chain.
std::optional<KerasCalls> sequential_calls(const nlohmann::json& model, const std::string& source, const std::string& prefix) {
    const json* list = model["config"].is_array() ? &model["config"]
                       : model["config"].is_object() && model["config"].contains("layers") ? &model["config"]["layers"]
                                                                                              : nullptr;
    if (!list || !list->is_array() || list->empty()) return std::nullopt;
    if (std::none_of(list->begin(), list->end(), [](const json& l) { return is_keras_model_class(class_of(l)); })) return std::nullopt;
    const std::string path = prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1);
    json input;
    if (class_of((*list)[0]) == "InputLayer") {
        input = (*list)[0];
    } else {
        const auto shape = sequential_input_shape(model, *list);
        if (!shape)
            throw ConfigError(source + ": " + (path.empty() ? std::string("model") : path) +
                              ": cannot tell the input shape of a Sequential model whose first layer is a model (no InputLayer, "
                              "batch_input_shape or build_input_shape)");
        input = {{"class_name", "InputLayer"}, {"config", {{"name", "input"}, {"batch_input_shape", *shape}}}};
    }
    if (!input.contains("config") || !input["config"].is_object())
        throw ConfigError(source + ": " + (path.empty() ? "" : path + ".") + "config.layers[0]: an InputLayer's config must be an object");
    const std::string input_name = name_of(input).empty() ? "input" : name_of(input);
    input["config"]["name"] = input_name;
    input["name"] = input_name;
    input["inbound_nodes"] = json::array();
    Inliner in(source);
    in.out.paths[input_name] = (path.empty() ? "" : path + ".") + "config";
    in.layers_.push_back(input);
    const auto outs = in.sequential(model, path, "", "", {input_name}, 0);
    KerasCalls calls = std::move(in.out);
    calls.model = {{"class_name", "Functional"},
                   {"config", {{"name", model["config"].is_object() ? model["config"].value("name", "sequential") : "sequential"},
                               {"layers", std::move(in.layers_)},
                               {"input_layers", json::array({json::array({input_name, 0, 0})})},
                               {"output_layers", json::array({json::array({outs.at(0), 0, 0})})}}}};
    if (model.contains("module")) calls.model["module"] = model["module"];
    return calls;
}

}  // namespace

std::optional<KerasCalls> keras_calls(const nlohmann::json& model, const std::string& source, const std::string& prefix) {
    if (class_of(model) == "Sequential" && model.contains("config")) return sequential_calls(model, source, prefix);
    if (!model.contains("config") || !model["config"].is_object() || !model["config"].contains("layers") ||
        !model["config"]["layers"].is_array())
        return std::nullopt;
    bool needed = false;
    for (const auto& layer : model["config"]["layers"]) {
        if (is_keras_model_class(class_of(layer))) needed = true;
        if (!layer.is_object() || !layer.contains("inbound_nodes") || !layer["inbound_nodes"].is_array()) continue;
        const auto& nodes = layer["inbound_nodes"];
        if (nodes.size() > 1) needed = true;
        // A malformed reference is the importer's to report, in its words.
        try {
            for (const auto& node : nodes)
                for (const auto& r : node_refs(node, [](const std::string& what) { throw ConfigError(what); }))
                    if (r.node != 0) needed = true;
        } catch (const ConfigError&) {
        }
    }
    if (!needed) return std::nullopt;
    Inliner in(source);
    const auto outs = in.functional(model, prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1), "", "", {}, true, 0);
    KerasCalls calls = std::move(in.out);
    calls.model = model;
    calls.model["config"]["layers"] = std::move(in.layers_);
    json out_layers = json::array();
    for (const auto& o : outs) out_layers.push_back(json::array({o, 0, 0}));
    calls.model["config"]["output_layers"] = out_layers;
    return calls;
}

void for_each_keras_history(const nlohmann::json& node, const std::function<void(const nlohmann::json&)>& history) {
    std::function<void(const nlohmann::json&, int)> walk = [&](const nlohmann::json& v, int depth) {
        if (depth > 8) return;
        if (v.is_object()) {
            if (v.value("class_name", "") == "__keras_tensor__" && v.contains("config") && v["config"].is_object() &&
                v["config"].contains("keras_history")) {
                history(v["config"]["keras_history"]);
                return;
            }
            for (const auto& [k, x] : v.items()) walk(x, depth + 1);
        } else if (v.is_array()) {
            for (const auto& x : v) walk(x, depth + 1);
        }
    };
    walk(node.value("args", nlohmann::json::array()), 0);
}

}  // namespace thresher::config
