// ONNX export (opset 13) of Thresher's layer stacks, for inference in any ONNX runtime.
//
// The graph takes "input" [batch, C, H, W] (or [batch, F] for a flat input; "batch" is a dynamic
// dimension) exactly as `thresher-engine predict` reads it: the model's input normalisation is
// the graph's first two nodes. It returns "output" [batch, outputs]: probabilities for a
// classifier, as predict prints them. Every layer keeps its model name as its node's name
// (layers without a name get "<kind>_<index>"); its parameters are initializers
// "<name>.weight", ".bias", ".gamma", ".beta", ".running_mean", ".running_var", ".alpha".
// engine/export/README.md has the layer-by-layer table.
#pragma once

#include <optional>
#include <string>

#include "export/exportable_model.h"

namespace thresher::model_export {

inline constexpr int kOnnxOpset = 13;

// Why ONNX cannot express the model, naming the first layer or setting that is the reason
// ("layers[1] (subsampling \"pool1\"): ..."); nullopt when it can. Needs no ONNX library.
std::optional<std::string> onnx_refusal(const config::ModelConfig&);

// False in a build without libonnx (onnx_unavailable.cpp): then onnx_model_bytes throws.
bool onnx_export_built();

struct OnnxBytes {
    std::string bytes;  // a serialised onnx.ModelProto, already checked by ONNX's checker
    std::size_t nodes = 0;
};

// The model as ONNX; the caller has ruled out onnx_refusal(). Throws ExportError when ONNX's
// own checker or shape inference rejects the graph (an exporter bug, reported as such).
OnnxBytes onnx_model_bytes(const ExportableModel&);

}  // namespace thresher::model_export
