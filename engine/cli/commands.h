// The engine's subcommands besides `train`: each reads a saved model file and writes JSON lines
// on stdout (one object per line) and human-readable notes on stderr.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "cli/cluster.h"
#include "config/model_format.h"
#include "data/data_source.h"
#include "data/image_folder.h"
#include "nn/model_file.h"
#include "train/text_sampling.h"

namespace thresher::cli {

// A Thresher model file, or a file with weights from elsewhere (DL4J model zip, Keras .h5 /
// .keras: config/weight_import.h), which then brings no normalisation and no updater state.
// `import`: what the user adds to an imported file (config/model_format.h: --steps).
nn::ModelFile model_file_any(const std::string& path, const config::ImportOptions& import = {});

// {"event":"evaluation", accuracy/precision/recall/f1/confusion (+ top_k, top_k_accuracy) or
// mse/mae/r2, "loss", "count"}. `images` reads an image folder (its shape: the model's input).
void evaluate_command(const std::string& model_file, const std::string& data, std::size_t limit, int threads,
                      const std::string& device, const data::ImageFolderOptions& images = {},
                      std::optional<int> top_k = std::nullopt, const data::SequenceReadOptions& sequences = {},
                      const config::ImportOptions& import = {});
// One line per input: {"index", "class", "probabilities"} (or "outputs" for regression), and
// "class_name" when the model file names its classes. A per-step output gives, for the sample's
// valid steps, {"index", "steps", "classes", "probabilities"} (+ "class_names"; "text", the
// predicted next characters, for a character model), or {"index", "steps", "outputs"}. With
// a cluster, node r predicts inputs i ≡ r (mod nodes) and node 0 prints every line in input
// order (DL4J's feedForwardWithKey); the other nodes print nothing on stdout.
void predict_command(const std::string& model_file, const std::string& data, std::size_t limit, int threads,
                     const std::string& device, const data::ImageFolderOptions& images = {},
                     ClusterSession* cluster = nullptr, const data::SequenceReadOptions& sequences = {},
                     const config::ImportOptions& import = {});
// Text drawn from a character model (train/text_sampling.h), as one line
// {"event":"sample","model","prime","text","length","temperature","seed"}.
void sample_text_command(const std::string& model_file, const train::TextSampleOptions& options, int threads,
                         const std::string& device, const config::ImportOptions& import = {});
// {"max_abs_diff", "params"}; returns false when above `tolerance` (exit 1 for scripts).
bool compare_command(const std::string& a, const std::string& b, double tolerance);
void devices_command();

}  // namespace thresher::cli
