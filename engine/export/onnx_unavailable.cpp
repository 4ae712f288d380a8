// ONNX export in a build without libonnx (THRESHER_ONNX=OFF, or AUTO without libonnx-dev): the
// command line says so instead of the build failing (engine/export/CMakeLists.txt picks this
// file or onnx_writer.cpp, so no #ifdef is needed anywhere).
#include "export/model_export.h"
#include "export/onnx_export.h"

namespace thresher::model_export {

bool onnx_export_built() { return false; }

OnnxBytes onnx_model_bytes(const ExportableModel&) {
    throw ExportError("this thresher-engine was built without ONNX export (libonnx-dev was not found when it was built)");
}

}  // namespace thresher::model_export
