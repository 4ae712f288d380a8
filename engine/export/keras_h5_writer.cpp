// Keras 2's model.save("m.h5") layout (tf.keras saving/legacy/hdf5_format.py), from the plan:
//   /                      attrs keras_version, backend, model_config, training_config (JSON,
//                          as scalar byte strings)
//   /model_weights         attrs layer_names (every layer of model.layers, in order: a
//                          Functional model's InputLayer first), backend, keras_version
//   /model_weights/dense   attr weight_names ["dense/kernel:0", "dense/bias:0"] (an empty float64
//                          array for a layer without weights)
//   /model_weights/dense/dense/kernel:0   float32 [in, out], and so on
// No optimizer_weights: Thresher's updater state is not in Keras's form (Keras starts the
// optimizer afresh, as it does for any file saved before the optimizer was built).
#include <algorithm>

#include "export/hdf5_image.h"
#include "export/keras_model.h"
#include "export/model_export.h"

namespace thresher::model_export {

namespace {

// Keras's save_attributes_to_hdf5_group: a list too large for one attribute (64 KiB) is split
// into name0, name1, ... of nearly equal length (numpy's array_split: the first ones one longer),
// every entry as wide as the widest.
void keras_list_attribute(Hdf5Image& h5, const std::string& object, const std::string& name, const std::vector<std::string>& values) {
    std::size_t width = 1;
    for (const auto& v : values) width = std::max(width, v.size());
    std::size_t chunks = 1;
    while ((values.size() + chunks - 1) / chunks * width > Hdf5Image::kMaxAttributeBytes) ++chunks;
    if (chunks == 1) {
        h5.strings_attribute(object, name, values);
        return;
    }
    std::size_t at = 0;
    for (std::size_t c = 0; c < chunks; ++c) {
        const std::size_t n = values.size() / chunks + (c < values.size() % chunks ? 1 : 0);
        std::vector<std::string> part(values.begin() + static_cast<std::ptrdiff_t>(at), values.begin() + static_cast<std::ptrdiff_t>(at + n));
        h5.strings_attribute(object, name + std::to_string(c), part, width);
        at += n;
    }
}

void json_attribute(Hdf5Image& h5, const std::string& name, const nlohmann::json& value, const std::string& source) {
    const std::string text = value.dump();
    if (text.size() > Hdf5Image::kMaxAttributeBytes)
        throw ExportError(source + ": the model's Keras " + name + " takes " + std::to_string(text.size()) +
                          " bytes, more than one HDF5 attribute holds (" + std::to_string(Hdf5Image::kMaxAttributeBytes) +
                          "; Keras 2 cannot save such a model to .h5 either): export --format keras instead; nothing was written");
    h5.string_attribute("/", name, text);
}

}  // namespace

KerasBytes keras_h5_bytes(const ExportableModel& m) {
    auto k = planned_keras_model(m, KerasDialect::Keras2);
    fill_keras_weights(k, m);
    Hdf5Image h5(m.source + " as Keras .h5");
    h5.string_attribute("/", "keras_version", kKeras2Version);
    h5.string_attribute("/", "backend", "tensorflow");
    json_attribute(h5, "model_config", keras2_model_config(k), m.source);
    json_attribute(h5, "training_config", keras2_training_config(k), m.source);
    // Keras ignores attributes it does not know; the labels travel with the model for its user.
    if (!m.class_names.empty()) h5.string_attribute("/", "class_names", nlohmann::json(m.class_names).dump());

    h5.group("model_weights");
    // A Functional model's model.layers start with its InputLayer (a Sequential's do not): its
    // group is there, without weights.
    std::vector<std::string> layer_names;
    if (k.functional) {
        layer_names.push_back(k.input_name);
        for (const auto& in : k.extra_inputs) layer_names.push_back(in.name);
    }
    for (const auto& l : k.layers) layer_names.push_back(l.name);
    keras_list_attribute(h5, "model_weights", "layer_names", layer_names);
    h5.string_attribute("model_weights", "backend", "tensorflow");
    h5.string_attribute("model_weights", "keras_version", kKeras2Version);
    if (k.functional) {
        h5.group("model_weights/" + k.input_name);
        keras_list_attribute(h5, "model_weights/" + k.input_name, "weight_names", {});
        for (const auto& in : k.extra_inputs) {
            h5.group("model_weights/" + in.name);
            keras_list_attribute(h5, "model_weights/" + in.name, "weight_names", {});
        }
    }
    for (const auto& l : k.layers) {
        const std::string group = "model_weights/" + l.name;
        h5.group(group);
        std::vector<std::string> weight_names;
        for (const auto& w : l.weights) {
            weight_names.push_back(l.name + "/" + w.name + ":0");
            h5.floats(group + "/" + weight_names.back(), w.dims, w.values);
        }
        keras_list_attribute(h5, group, "weight_names", weight_names);
    }
    return {h5.finish(), k.layers.size()};
}

}  // namespace thresher::model_export
