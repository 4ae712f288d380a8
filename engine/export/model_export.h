// Writing a trained model in another runtime's format (issue 25: models go back out).
//
//   export_model(model, ExportFormat::Onnx, "lenet.onnx")
//   export_model(model, ExportFormat::KerasH5, "lenet.h5")
//   export_model(model, ExportFormat::Dl4j, "lenet.zip")
//
// checks that the format can express every layer and setting first and throws an ExportError
// naming the first layer it cannot ("lenet.thr: layers[3] (subsampling \"pool2\"): ONNX cannot
// express ...") before anything is written; then writes the file durably (core/durable_file.h:
// a temporary beside it, renamed over it), so a failed export never leaves a partial file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "export/exportable_model.h"

namespace thresher::model_export {

// A model the format cannot express, or a request that does not fit the model (class names).
class ExportError : public Error {
public:
    using Error::Error;
};

// onnx: ONNX opset 13 (onnx_export.h); keras-h5: Keras 2's model.save("m.h5"); keras: Keras 3's
// .keras archive (keras_export.h); dl4j: DL4J's ModelSerializer zip of a MultiLayerNetwork
// (dl4j_export.h).
enum class ExportFormat { Onnx, KerasH5, Keras, Dl4j };

// "onnx", "keras-h5", "keras", "dl4j"; anything else is an ExportError listing what this build writes.
ExportFormat parse_export_format(std::string_view name);
std::string_view to_string(ExportFormat);
// The formats this build can write ("onnx" only when it was built with libonnx; the others always).
std::vector<std::string> built_export_formats();

struct ExportSummary {
    std::size_t bytes = 0;  // of the written file
    std::size_t nodes = 0;  // operators in the exported graph (ONNX), layers in the Keras model or DL4J confs
    std::vector<std::string> notes;  // what the file leaves out and why (DL4J: "updaterState.bin: not written (...)")
};

ExportSummary export_model(const ExportableModel&, ExportFormat, const std::string& out_path);

}  // namespace thresher::model_export
