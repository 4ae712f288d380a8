// `thresher-engine inspect MODEL [--json]`: a model file of any format (Thresher, DL4J, Keras) as
// Thresher will train it -- the file's layer names and locations beside Thresher's layers, output
// shapes, parameter counts, updater, loss, task and what the import approximated -- without
// building a network. A file that cannot be imported throws the importer's ConfigError (exit 1).
#pragma once

#include <iosfwd>
#include <string>

#include "config/model_format.h"

namespace thresher::cli {

// Writes the model to `out` (a table, or one JSON object with `json`); the import notes go to
// `log` (stderr) either way, one per line.
void inspect_command(const std::string& model_path, bool json, std::ostream& out, std::ostream& log,
                     const config::ImportOptions& import = {});

}  // namespace thresher::cli
