// Keras functional models with shared layers and nested models, made into the one-call-per-layer
// form the Keras importer walks (keras_import.cpp).
//
// A Keras layer called twice (a siamese network's shared encoder) has two inbound nodes, and its
// readers name the call they read: [layer, node_index, tensor_index]. A model used as a layer
// (a pretrained base inside a Functional model, a Sequential inside a Functional) holds its own
// layers. Both become plain layers here, each with one call:
//   call 0 of "dense_1"                      -> "dense_1"
//   call 1 of "dense_1"                      -> "dense_1@1", sharing the parameters of "dense_1"
//   layer "conv" of nested model "encoder"   -> "encoder/conv" (its InputLayers become the
//                                               tensors the outer call passes in)
//   call 1 of "encoder" (a nested model)     -> "encoder/conv@1" sharing "encoder/conv", ...
// Readers of a nested model's output k read the inner layer that produces it. Layers come out in
// an order where every layer follows what it reads (a shared layer's second call may read a layer
// listed after it).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace thresher::config {

struct KerasCalls {
    nlohmann::json model;                        // the functional model, one call per layer
    std::map<std::string, std::string> shares;   // a later call's name -> the first call's name
    std::map<std::string, std::string> paths;    // each layer's name -> its place in the file
};

// A Sequential model holding a model as a layer becomes the functional model it is (an
// InputLayer named as its own, or "input", then the chain).
// `model` is a {"class_name", "config"} object; `prefix` the path of that
// object in the file ("" or "modelTopology.model_config."). Nothing (nullopt) when no layer is
// called twice and no layer is a model: the importer then reads the file as it is.
std::optional<KerasCalls> keras_calls(const nlohmann::json& model, const std::string& source, const std::string& prefix);

// True for the class names of a model used as a layer.
bool is_keras_model_class(const std::string& class_name);

// A Keras 3 inbound node (an object of the call's "args"/"kwargs"): calls `history` with the
// keras_history ([layer, node, tensor]) of every tensor among its args, in order, at most 8 deep.
void for_each_keras_history(const nlohmann::json& node, const std::function<void(const nlohmann::json&)>& history);

}  // namespace thresher::config
