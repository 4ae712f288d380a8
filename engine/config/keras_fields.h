// Keras field readers that more than one Keras importer file uses (keras_import.cpp for the
// layer stack, keras_recurrent.cpp for sequence layers): an activation by name and a weight
// initializer, each refusing what Thresher cannot run and naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include "config/import_support.h"
#include "config/model_config.h"

namespace thresher::config {

// "relu", "tanh", ... as Thresher's activation. Keras 3 changed hard_sigmoid from
// clamp(0.2x + 0.5) to relu6(x + 3) / 6, hence `keras3`.
ActivationSpec activation_from_name(import::Place& p, const std::string& key, const nlohmann::json& v, bool keras3 = false);

// {"class_name": "GlorotUniform", "config": {...}} or Keras 1's name ("glorot_uniform") at `key`;
// what has no Thresher equivalent is approximated with a note.
WeightInit read_initializer(import::Place& p, const char* key);

// "kernel_regularizer" (Keras 1 "W_regularizer") L1/L2/L1L2 as the layer's l1 and l2 (0 when
// absent; Keras's l2 doubled, a note says so); other regularizers and constraints noted as ignored.
void read_regularizer(import::Place& p, LayerConfig& l);

}  // namespace thresher::config
