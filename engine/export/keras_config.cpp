// The JSON of a planned Keras model, in the two serialisations Keras writes:
//   Keras 2 (tf.keras model.save("m.h5")): {"class_name": "Sequential", "config": {"name",
//     "layers": [{"class_name", "config": {"name", "trainable", "dtype": "float32", ...}}]}},
//     the InputLayer with "batch_input_shape"; a graph {"class_name": "Functional", "config":
//     {"name", "layers": [{..., "name", "inbound_nodes": [[["conv", 0, 0, {}]]]}], "input_layers":
//     [["input", 0, 0]], "output_layers": [["out", 0, 0]]}} (one entry per model input and
//     output, main output first); training_config {"loss" (several outputs: {"out": "loss", ...}), "metrics",
//     "weighted_metrics", "loss_weights", "optimizer_config"} (Keras 2 reads every one of them).
//   Keras 3 (config.json of a .keras): every object {"module", "class_name", "config",
//     "registered_name"}, dtype a DTypePolicy object, the InputLayer with "batch_shape", each
//     layer's "build_config" with its input shape, and the model's "compile_config"; a graph is
//     {"module": "keras.src.models.functional", "class_name": "Functional", "registered_name":
//     "Functional"}, its layers' "inbound_nodes" [{"args": [{"class_name": "__keras_tensor__",
//     "config": {"shape", "dtype", "keras_history": ["conv", 0, 0]}}], "kwargs": {}}].
#include "export/keras_model.h"

namespace thresher::model_export {

namespace {

nlohmann::json batch_shape(const std::vector<int>& shape) {
    auto j = nlohmann::json::array({nullptr});
    for (int d : shape) j.push_back(d);
    return j;
}

nlohmann::json dtype(KerasDialect d) {
    if (d == KerasDialect::Keras2) return "float32";
    return keras_object(d, "keras", "DTypePolicy", {{"name", "float32"}});
}

// name, trainable and dtype, which every Keras layer has, beside the class's own fields.
nlohmann::json layer_config(KerasDialect d, const KerasLayer& l) {
    nlohmann::json cfg = nlohmann::json::object();
    cfg["name"] = l.name;
    cfg["trainable"] = true;
    cfg["dtype"] = dtype(d);
    for (const auto& [key, value] : l.config.items()) cfg[key] = value;
    return cfg;
}

// Keras 3's serialize_node: the call's arguments with each input as a serialised KerasTensor
// (its shape, dtype and keras_history [layer, node 0, tensor 0]); a merge layer's one argument
// is the list of its inputs.
nlohmann::json inbound_node(const KerasLayer::Call& c) {
    auto tensors = nlohmann::json::array();
    for (std::size_t i = 0; i < c.inbound.size(); ++i)
        tensors.push_back({{"class_name", "__keras_tensor__"},
                           {"config",
                            {{"shape", batch_shape(c.inbound_shapes[i])},
                             {"dtype", "float32"},
                             {"keras_history", {c.inbound[i], i < c.inbound_node.size() ? c.inbound_node[i] : 0, 0}}}}});
    const auto args = c.inbound.size() > 1 ? nlohmann::json::array({tensors}) : tensors;
    return {{"args", args}, {"kwargs", nlohmann::json::object()}};
}

// Every call of a layer: the first (its inbound fields), then a shared layer's later ones.
std::vector<KerasLayer::Call> calls_of(const KerasLayer& l) {
    std::vector<KerasLayer::Call> calls{{l.inbound, l.inbound_node, l.inbound_shapes}};
    calls.insert(calls.end(), l.later_calls.begin(), l.later_calls.end());
    return calls;
}

// Keras 2's node: [["source", node, tensor 0, {call kwargs}], ...].
nlohmann::json keras2_node(const KerasLayer::Call& c) {
    auto call = nlohmann::json::array();
    for (std::size_t i = 0; i < c.inbound.size(); ++i)
        call.push_back({c.inbound[i], i < c.inbound_node.size() ? c.inbound_node[i] : 0, 0, nlohmann::json::object()});
    return call;
}

// The model's input_layers and output_layers: [["name", 0, 0], ...]; Keras 3 writes one of
// them unnested, ["name", 0, 0], when the model was built on one tensor.
nlohmann::json endpoints(const std::vector<std::string>& names, bool keras3) {
    if (keras3 && names.size() == 1) return {names[0], 0, 0};
    auto j = nlohmann::json::array();
    for (const auto& n : names) j.push_back({n, 0, 0});
    return j;
}

std::vector<std::string> input_names(const KerasModel& k) {
    std::vector<std::string> names{k.input_name};
    for (const auto& in : k.extra_inputs) names.push_back(in.name);
    return names;
}

std::vector<std::string> output_names(const KerasModel& k) {
    return k.output_names.empty() ? std::vector<std::string>{k.output_name} : k.output_names;
}

// One output: the loss's name; several: {"output layer": "loss", ...} (compile(loss={...})).
nlohmann::json loss_of(const KerasModel& k) {
    if (k.output_names.size() <= 1) return k.loss;
    auto j = nlohmann::json::object();
    for (std::size_t i = 0; i < k.output_names.size(); ++i) j[k.output_names[i]] = k.losses[i];
    return j;
}

}  // namespace

nlohmann::json keras_object(KerasDialect d, std::string_view module, std::string_view class_name, nlohmann::json config) {
    if (d == KerasDialect::Keras2) return {{"class_name", class_name}, {"config", std::move(config)}};
    return {{"module", module}, {"class_name", class_name}, {"config", std::move(config)}, {"registered_name", nullptr}};
}

nlohmann::json keras2_model_config(const KerasModel& k) {
    auto layers = nlohmann::json::array();
    layers.push_back({{"class_name", "InputLayer"},
                      {"config",
                       {{"batch_input_shape", batch_shape(k.input_shape)},
                        {"dtype", "float32"},
                        {"sparse", false},
                        {"ragged", false},
                        {"name", k.input_name}}}});
    if (!k.functional) {
        for (const auto& l : k.layers) layers.push_back({{"class_name", l.class_name}, {"config", layer_config(k.dialect, l)}});
        return {{"class_name", "Sequential"}, {"config", {{"name", k.name}, {"layers", std::move(layers)}}}};
    }
    // tf.keras's get_network_config: each layer with its name and the calls that made it (a shared
    // layer's several), [[["source", node, tensor 0, {call kwargs}], ...], ...]; the InputLayer's is none.
    layers[0]["name"] = k.input_name;
    layers[0]["inbound_nodes"] = nlohmann::json::array();
    for (const auto& in : k.extra_inputs)
        layers.push_back({{"class_name", "InputLayer"},
                          {"config",
                           {{"batch_input_shape", batch_shape(in.shape)},
                            {"dtype", "float32"},
                            {"sparse", false},
                            {"ragged", false},
                            {"name", in.name}}},
                          {"name", in.name},
                          {"inbound_nodes", nlohmann::json::array()}});
    for (const auto& l : k.layers) {
        auto nodes = nlohmann::json::array();
        for (const auto& c : calls_of(l)) nodes.push_back(keras2_node(c));
        layers.push_back({{"class_name", l.class_name},
                          {"config", layer_config(k.dialect, l)},
                          {"name", l.name},
                          {"inbound_nodes", std::move(nodes)}});
    }
    return {{"class_name", "Functional"},
            {"config",
             {{"name", k.name},
              {"layers", std::move(layers)},
              {"input_layers", endpoints(input_names(k), false)},
              {"output_layers", endpoints(output_names(k), false)}}}};
}

nlohmann::json keras2_training_config(const KerasModel& k) {
    auto optimizer = k.optimizer;
    optimizer["config"]["is_legacy_optimizer"] = false;  // Keras 2.11+'s optimizers
    return {{"loss", loss_of(k)},
            {"metrics", nullptr},
            {"weighted_metrics", nullptr},
            {"loss_weights", nullptr},
            {"optimizer_config", std::move(optimizer)}};
}

nlohmann::json keras3_config(const KerasModel& k) {
    const auto d = KerasDialect::Keras3;
    auto layers = nlohmann::json::array();
    layers.push_back(keras_object(d, "keras.layers", "InputLayer",
                                  {{"batch_shape", batch_shape(k.input_shape)},
                                   {"dtype", "float32"},
                                   {"sparse", false},
                                   {"name", k.input_name}}));
    if (k.functional) {
        layers[0]["name"] = k.input_name;
        layers[0]["inbound_nodes"] = nlohmann::json::array();
        for (const auto& in : k.extra_inputs) {
            auto o = keras_object(d, "keras.layers", "InputLayer",
                                  {{"batch_shape", batch_shape(in.shape)}, {"dtype", "float32"}, {"sparse", false}, {"name", in.name}});
            o["name"] = in.name;
            o["inbound_nodes"] = nlohmann::json::array();
            layers.push_back(std::move(o));
        }
    }
    for (const auto& l : k.layers) {
        auto o = keras_object(d, "keras.layers", l.class_name, layer_config(d, l));
        if (l.inbound.size() > 1) {  // a merge layer is built on the list of its inputs' shapes
            auto shapes = nlohmann::json::array();
            for (const auto& s : l.inbound_shapes) shapes.push_back(batch_shape(s));
            o["build_config"] = {{"input_shape", shapes}};
        } else {
            o["build_config"] = {{"input_shape", batch_shape(l.input_shape)}};
        }
        if (k.functional) {
            o["name"] = l.name;
            auto nodes = nlohmann::json::array();
            for (const auto& c : calls_of(l)) nodes.push_back(inbound_node(c));
            o["inbound_nodes"] = std::move(nodes);
        }
        layers.push_back(std::move(o));
    }
    nlohmann::json model;
    if (k.functional) {
        // Functional.get_config: a model built as keras.Model(inputs, outputs) on one tensor each
        // names them unnested, ["input_layer", 0, 0]; on lists, [["a", 0, 0], ["b", 0, 0]].
        model = keras_object(d, "keras.src.models.functional", "Functional",
                             {{"name", k.name},
                              {"trainable", true},
                              {"layers", std::move(layers)},
                              {"input_layers", endpoints(input_names(k), true)},
                              {"output_layers", endpoints(output_names(k), true)}});
        model["registered_name"] = "Functional";  // not a public keras.* class: saved by its own name
    } else {
        model = keras_object(d, "keras", "Sequential",
                             {{"name", k.name},
                              {"trainable", true},
                              {"dtype", dtype(d)},
                              {"layers", std::move(layers)},
                              {"build_input_shape", batch_shape(k.input_shape)}});
        model["build_config"] = {{"input_shape", batch_shape(k.input_shape)}};
    }
    model["compile_config"] = {{"optimizer", k.optimizer},
                               {"loss", loss_of(k)},
                               {"loss_weights", nullptr},
                               {"metrics", nullptr},
                               {"weighted_metrics", nullptr},
                               {"run_eagerly", false},
                               {"steps_per_execution", 1},
                               {"jit_compile", false}};
    return model;
}

}  // namespace thresher::model_export
