// Model files that carry weights as well as the architecture:
//   - DL4J model zips (ModelSerializer.writeModel): configuration.json, coefficients.bin (ND4J's
//     binary array, nd4j_array.h), optional updaterState.bin, normalizer.bin;
//   - Keras HDF5 (model.save("m.h5")): a model_config attribute (and training_config), and
//     model_weights/<layer>/<weight name> datasets listed by layer_names / weight_names;
//   - Keras 3 .keras archives (a zip): config.json and model.weights.h5 with
//     layers/<layer>/vars/0, 1, ...
// The architecture goes through the same importers as the JSON alone (model_format.h); the
// weights are then mapped into Thresher's parameter layout layer by layer (README "Weights"):
// DL4J's dense W is [nIn, nOut] in 'f' order and its convolution stores the bias first; Keras's
// Dense kernel is [in, out], Conv2D's [kh, kw, in, out], and a Dense after Flatten reads
// channels_last (h, w, c) features where Thresher flattens c, h, w. A weight that does not fit
// is refused naming the layer as the file names it and both shapes.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "config/model_format.h"

namespace thresher::config {

// By content: a zip holding configuration.json (DL4J) or config.json (Keras 3), or an HDF5 file.
// Throws ConfigError naming the file, the entry or object, the layer and what is wrong.
ImportResult import_model_with_weights(std::span<const std::uint8_t> bytes, const std::string& source,
                                       const ImportOptions& options = {});

// Whether `bytes` is a zip or HDF5 file (what import_model_with_weights reads).
bool holds_weights_format(std::span<const std::uint8_t> bytes);

}  // namespace thresher::config
