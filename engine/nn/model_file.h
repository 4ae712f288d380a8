// One file holds a trained model: its config, parameters, updater state and where training
// stopped, so `--resume` continues exactly and `evaluate`/`predict` need nothing else.
//
// Layout (little-endian):
//   8 bytes  magic "THRMODL\0"
//   u32      format version (1)
//   u64      header length H;  H bytes of JSON: {"config": {...}, "params": P, "updater_state": S,
//            "training": {"epoch": e, "iteration": i, "seed": s},
//            "normalization": {"kind", "shift": [...], "scale": [...]},
//            "class_names": ["cat", "dog", ...],   (optional: a classifier trained on named classes)
//            "vocabulary": ["\n", " ", "a", ...]}  (optional: a character model's characters, id order)
//   P floats parameters, S floats updater state
//   u32      CRC-32 (zlib) of everything before it, however large
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/feature_transform.h"
#include "config/model_config.h"

namespace thresher::nn {

struct TrainingPosition {
    int epochs_done = 0;     // completed epochs
    long iterations = 0;     // completed iterations (the updater's step count)
    std::uint64_t seed = 0;  // the run seed that drives shuffling and dropout
};

struct ModelFile {
    config::ModelConfig config;
    std::vector<float> params;
    std::vector<float> updater_state;
    TrainingPosition position;
    data::FeatureTransform normalization;  // what the training data went through
    // One per class index when the training data named its classes (image folders), else empty.
    // Files written before class names existed load with none.
    std::vector<std::string> class_names;
    // A character model's vocabulary (data/text_corpus.h): character id k is vocabulary[k]
    // (UTF-8, one code point), so evaluate/predict/resume read text with the same ids.
    std::vector<std::string> vocabulary = {};  // "= {}": aggregate initialisers written before it stay warning-free
};

// Writes durably (core/durable_file.h: unique temporary, fsync, rename, fsync of the folder), so
// a crash or power cut leaves the old model or the new one, never half of one.
void save_model_file(const std::string& path, const ModelFile&);
// Throws ModelFileError naming the file and what is wrong (missing, truncated, bad checksum, ...).
ModelFile load_model_file(const std::string& path);

}  // namespace thresher::nn
