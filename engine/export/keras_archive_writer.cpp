// Keras 3's model.save("m.keras") layout (keras/src/saving/saving_lib.py), from the plan: a zip,
// entries stored (Keras's zipfile default), in Keras's order:
//   metadata.json     {"keras_version": "3.6.0", "date_saved": "2025-01-31@12:00:00"}
//   config.json       the Sequential or Functional model as Keras 3 serialises it (keras_config.cpp)
//   model.weights.h5  /vars (the model's own variables: none), and per layer of model.layers
//                     (a Functional model's InputLayer first: layers/input_layer/vars, empty)
//                     /layers/<name>/vars/0, /1, ... in the order the layer creates them
//                     (kernel, bias; gamma, beta, moving_mean, moving_variance; alpha)
// <name> is not the layer's name but Keras's snake_case of its class, numbered per class in
// order ("dense", "dense_1", "conv2d", "max_pooling2d"): saving_lib addresses a container's
// layers so, because automatic layer names differ between two builds of one model.
#include <chrono>
#include <ctime>
#include <map>

#include "export/hdf5_image.h"
#include "export/keras_model.h"
#include "export/model_export.h"
#include "export/zip_image.h"

namespace thresher::model_export {

namespace {

std::string keras3_weights(const KerasModel& k, const std::string& what) {
    Hdf5Image h5(what);
    h5.group("vars");
    std::map<std::string, int> used;  // per snake_case class name, as saving_lib counts
    auto vars_of = [&](const std::string& class_name) {
        const std::string base = keras_snake_case(class_name);
        const int n = used.contains(base) ? ++used[base] : (used[base] = 0);
        const std::string vars = "layers/" + (n ? base + "_" + std::to_string(n) : base) + "/vars";
        h5.group(vars);
        return vars;
    };
    if (k.functional)  // a Functional model's layers start with its InputLayers
        for (std::size_t i = 0; i <= k.extra_inputs.size(); ++i) vars_of("InputLayer");
    for (const auto& l : k.layers) {
        const auto vars = vars_of(l.class_name);
        // Numbered within their group: a recurrent layer's cell/vars/0, 1, 2 (its own vars empty).
        std::map<std::string, int> next;
        for (const auto& w : l.weights) {
            const std::string group = w.keras3_group.empty() ? vars
                                                             : vars.substr(0, vars.size() - 4) + w.keras3_group + "/vars";
            if (!next.contains(group) && group != vars) h5.group(group);
            h5.floats(group + "/" + std::to_string(next[group]++), w.dims, w.values);
        }
    }
    return h5.finish();
}

std::string now_as_keras_writes_it() {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm local{};
    localtime_r(&t, &local);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d@%H:%M:%S", &local);
    return text;
}

}  // namespace

KerasBytes keras_archive_bytes(const ExportableModel& m) {
    auto k = planned_keras_model(m, KerasDialect::Keras3);
    fill_keras_weights(k, m);
    const std::string what = m.source + " as Keras .keras";
    nlohmann::json metadata{{"keras_version", kKeras3Version}, {"date_saved", now_as_keras_writes_it()}};
    // Keras reads only the version; the labels travel with the model for its user.
    if (!m.class_names.empty()) metadata["class_names"] = m.class_names;
    const std::vector<std::pair<std::string, std::string>> entries{
        {"metadata.json", metadata.dump()},
        {"config.json", keras3_config(k).dump()},
        {"model.weights.h5", keras3_weights(k, what + ": model.weights.h5")},
    };
    return {zip_bytes(entries, what), k.layers.size()};
}

}  // namespace thresher::model_export
