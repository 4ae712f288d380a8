// Keras exports of Thresher models (issue 25): a Sequential model for a layer stack, a Functional
// model for a graph (its vertices Keras merge layers), for a Python service that calls
// keras.models.load_model.
//
//   keras-h5  Keras 2's model.save("m.h5"): root attributes keras_version, backend, model_config
//             (the Sequential's or Functional's JSON), training_config (loss and optimizer); group model_weights
//             with layer_names and, per layer, weight_names and <layer>/<layer>/kernel:0 ...
//   keras     Keras 3's model.save("m.keras"): a zip of metadata.json, config.json (Keras 3's
//             serialisation: module / class_name / config / registered_name, an InputLayer
//             first, compile_config) and model.weights.h5 (layers/<dense, dense_1, ...>/vars/0, 1).
//
// Images are channels_last, as Keras's default: convolution kernels are written HWIO, PReLU
// slopes HWC, depthwise kernels [kh, kw, in, multiplier], transposed ones [kh, kw, filters, in],
// and the Dense after a Flatten of an image gets its rows in Keras's (h, w, c) order
// (Thresher flattens c, h, w). What needs a layer of its own in Keras is given one: a Flatten
// before a Dense that reads an image, a ZeroPadding2D before a padded convolution, a LeakyReLU /
// ELU / ReLU layer after a layer whose activation Keras cannot name. Thresher's Keras importers
// fold them back, so import(export(m)) is m. engine/export/README.md has the table.
#pragma once

#include <optional>
#include <string>

#include "export/exportable_model.h"

namespace thresher::model_export {

enum class KerasDialect { Keras2, Keras3 };

// The versions whose formats the files follow (written as their keras_version).
inline constexpr const char* kKeras2Version = "2.15.0";
inline constexpr const char* kKeras3Version = "3.6.0";

// Why Keras (in that dialect) cannot express the model, naming the first layer or setting that is
// the reason ("layers[1] (subsampling \"pool1\"): Keras cannot express this layer: ..."); nullopt
// when it can. Decided from the config and the normalisation alone, before anything is written.
std::optional<std::string> keras_refusal(const ExportableModel&, KerasDialect);

struct KerasBytes {
    std::string bytes;       // the whole file
    std::size_t layers = 0;  // Keras layers written (the InputLayer not counted)
};

// The file's bytes; the caller has ruled out keras_refusal(). Throws ExportError when libhdf5 or
// libzip fails (naming the call).
KerasBytes keras_h5_bytes(const ExportableModel&);       // Keras 2 .h5
KerasBytes keras_archive_bytes(const ExportableModel&);  // Keras 3 .keras

}  // namespace thresher::model_export
