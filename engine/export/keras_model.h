// The Keras model a Thresher model becomes (a Sequential for a layer stack, a Functional model for
// a graph), before it is written in either dialect (engine/export's own header; keras_export.h is
// the public one). Planned from the config alone
// (plan_keras_model), so a model Keras cannot express is refused before any byte is written; the
// weights are then laid out in Keras's shapes (fill_keras_weights) and the JSON built
// (keras_config.cpp) for the .h5 writer or the .keras writer. Worked example, LeNet on 1x28x28:
//   InputLayer [None, 28, 28, 1] -> Conv2D "conv2d" (kernel 5x5x1x20, bias 20) -> MaxPooling2D
//   -> Conv2D "conv2d_1" -> MaxPooling2D -> Flatten (4x4x50 = 800) -> Dense "dense" (kernel
//   800x500: its rows reordered from c,h,w to h,w,c) -> Dense "dense_1" (500x10, softmax)
// In a graph each Keras layer also names what it reads: ResNet's block "b1_add" becomes
//   Add "b1_add" reading ["b1_bn2", "stem_relu"] (inbound_nodes), the vertices Keras merge layers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/exportable_model.h"
#include "export/keras_export.h"

namespace thresher::model_export {

// One Keras variable, in Keras's layout: "kernel", "bias", "gamma", "beta", "moving_mean",
// "moving_variance" or "alpha", in the order Keras creates them (Keras 3 numbers them so).
struct KerasWeight {
    std::string name;
    std::vector<std::uint64_t> dims;
    std::vector<float> values;
    // Keras 3 keeps some layers' variables in a sub-object: "cell" (a recurrent layer's),
    // "forward_layer/cell" (a Bidirectional's); "" for the layer's own vars.
    std::string keras3_group;
};

struct KerasLayer {
    std::string class_name;  // "Dense", "Conv2D", ...
    std::string name;        // unique in the model
    // The class's own fields; name, trainable and dtype are added per dialect when written.
    nlohmann::json config = nlohmann::json::object();
    std::vector<int> input_shape;  // Keras's, without the batch: [h, w, c] or [features]
    // What it reads (a functional model's inbound node): the Keras layers by name and their
    // output shapes (without the batch); one for every layer but a merge.
    std::vector<std::string> inbound;
    std::vector<std::vector<int>> inbound_shapes;
    // Which call of each inbound layer it reads (node_index; empty: all 0).
    std::vector<int> inbound_node;
    // A shared layer (Thresher layers with "shares"): its later calls, node 1, 2, ..., each
    // reading its own tensors with the same weights.
    struct Call {
        std::vector<std::string> inbound;
        std::vector<int> inbound_node;
        std::vector<std::vector<int>> inbound_shapes;
    };
    std::vector<Call> later_calls;
    // The Thresher layer whose parameters it holds (npos: none), and whether its input is an
    // image that a Flatten before it turned into (h, w, c) features.
    std::size_t params_of = std::numeric_limits<std::size_t>::max();
    bool after_flatten = false;
    std::vector<KerasWeight> weights;  // filled by fill_keras_weights
};

struct KerasModel {
    KerasDialect dialect = KerasDialect::Keras2;
    // A graph (some layer reads other than the layer before it) is a Functional model, whose
    // model.layers start with the InputLayer; a layer stack a Sequential, whose do not.
    bool functional = false;
    std::string output_name;         // the Keras layer whose output is the model's (the main one)
    // Several outputs (main first, Thresher's output_layers order): each Keras layer and its loss.
    std::vector<std::string> output_names;
    std::vector<std::string> losses;
    std::string name;                // the model's, valid as a Keras name
    std::string input_name;          // the InputLayer's
    std::vector<int> input_shape;    // without the batch
    // Further model inputs (a Functional model's further InputLayers, in input_layers order).
    struct Input {
        std::string name;
        std::vector<int> shape;
    };
    std::vector<Input> extra_inputs;
    std::vector<KerasLayer> layers;  // without the InputLayer (Keras's model.layers)
    nlohmann::json optimizer;        // a serialised Keras optimizer (dialect's form)
    std::string loss;                // "categorical_crossentropy", ...
};

// Thrown by plan_keras_model with the reason (keras_refusal returns its text).
struct KerasRefusal {
    std::string why;
};

KerasModel plan_keras_model(const ExportableModel&, KerasDialect);
// The same for the writers: a refusal becomes an ExportError naming the model's file.
KerasModel planned_keras_model(const ExportableModel&, KerasDialect);
// Copies every parameter out of m.params into the planned layers' weights, in Keras's layouts.
void fill_keras_weights(KerasModel&, const ExportableModel&);

// JSON (keras_config.cpp). Keras 2: the model_config attribute and training_config.
nlohmann::json keras2_model_config(const KerasModel&);
nlohmann::json keras2_training_config(const KerasModel&);
// Keras 3: config.json (the model with its compile_config).
nlohmann::json keras3_config(const KerasModel&);
// A Keras object as the dialect serialises it: {"class_name", "config"}, and for Keras 3 also
// "module" and "registered_name" (null for Keras's own classes).
nlohmann::json keras_object(KerasDialect, std::string_view module, std::string_view class_name, nlohmann::json config);

// Names (keras_names.cpp). Keras's snake_case of a class name, as it names layers and the
// groups of a .keras file: "Conv2D" -> "conv2d", "BatchNormalization" -> "batch_normalization",
// "PReLU" -> "p_re_lu".
std::string keras_snake_case(std::string_view class_name);

// Unique layer names: a name the model gives is kept where Keras can use it (not empty, no "/",
// not taken); others get Keras's automatic names "dense", "dense_1", ... around the kept ones.
class KerasNames {
public:
    // Reserves the names kept from the model first, so automatic names never take them.
    void reserve(const std::string& name) { taken_.insert(name); }
    static bool usable(const std::string& name);
    // `wanted` when it was reserved for this layer (and not handed out yet), else a fresh name.
    std::string keep_or_fresh(const std::string& wanted, std::string_view class_name);
    std::string fresh(std::string_view class_name);

private:
    std::set<std::string> taken_, handed_out_;
};

}  // namespace thresher::model_export
