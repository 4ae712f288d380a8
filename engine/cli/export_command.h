// `thresher-engine export-model MODEL --format onnx|keras-h5|keras|dl4j --out FILE [--class-names A,B,...]`: a trained
// model (a Thresher .thr, or a DL4J zip / Keras file with weights) written for another runtime
// (engine/export). On success one record on stdout,
//   {"exported": FILE, "format": "onnx", "bytes": N, "nodes": K, "layers": L, "params": P}
// ("nodes": the ONNX graph's operators, the Keras model's layers or the DL4J confs; "layers":
// Thresher's; "notes": what the file leaves out, e.g. a DL4J zip without updaterState.bin)
// and a line for people on stderr; a model the format cannot express is an error naming the
// layer, and nothing is written.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "config/model_format.h"

namespace thresher::cli {

struct ExportModelOptions {
    std::string model;                     // the model file to export
    std::string format;                    // as the user wrote it; parsed by engine/export
    std::string out;                       // the file to write
    std::vector<std::string> class_names;  // recorded in the file (ONNX metadata / Keras "class_names")
    config::ImportOptions import;          // what the user adds to an imported file (--steps)
};

void export_model_command(const ExportModelOptions&, std::ostream& out, std::ostream& log);

}  // namespace thresher::cli
