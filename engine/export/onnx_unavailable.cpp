// ONNX export in a build without libonnx (THRESHER_ONNX=OFF, or AUTO without libonnx-dev): the
// command line says so instead of the build failing (engine/export/CMakeLists.txt picks this
// file or onnx_writer.cpp, so no #ifdef is needed anywhere but the default of its reason).
#include "export/model_export.h"
#include "export/onnx_export.h"

#ifndef THRESHER_ONNX_WHY
#define THRESHER_ONNX_WHY "libonnx-dev was not found"
#endif

namespace thresher::model_export {

bool onnx_export_built() { return false; }

OnnxBytes onnx_model_bytes(const ExportableModel&) {
    // The reason configure gave (cmake/ThresherOnnx.cmake), e.g. "THRESHER_ONNX=OFF".
    throw ExportError("this thresher-engine was built without ONNX export (" THRESHER_ONNX_WHY ")");
}

}  // namespace thresher::model_export
