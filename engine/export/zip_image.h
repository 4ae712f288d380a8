// A zip archive built in memory by libzip (entries stored, not compressed: Keras's zipfile
// default, and what DL4J's ModelSerializer reads as well as deflated ones), so the caller writes
// the whole file durably in one go (core/durable_file.h) and a failed export leaves nothing.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace thresher::model_export {

// The archive's bytes, entries in the given order. `what` names the file in an ExportError
// thrown when libzip fails (naming the step).
std::string zip_bytes(const std::vector<std::pair<std::string, std::string>>& entries, const std::string& what);

}  // namespace thresher::model_export
