// DL4J's data normaliser as ModelSerializer.addNormalizerToModel stores it in a model zip
// (normalizer.bin, written by NormalizerSerializer; big-endian Java DataOutputStream):
//   UTF "NORMALIZER", i32 version (1), UTF type, then per type
//   STANDARDIZE    bool fitLabel, Nd4j mean, Nd4j std [, label mean, label std]
//   MIN_MAX        bool fitLabel, f64 targetMin, f64 targetMax, Nd4j min, Nd4j max [, label min, max]
//   IMAGE_MIN_MAX  f64 minRange, f64 maxRange, f64 maxPixelVal
// (UTF: u16 byte count then the bytes; Nd4j: nd4j_array.h.) DL4J applies them as
//   standardize  x' = (x - mean) / max(std, 1e-5)                      (DistributionStats)
//   min-max      x' = (x - min) / max(max - min, 1e-5) · (tMax - tMin) + tMin   (MinMaxStats)
//   image        x' = x / maxPixelVal · (maxRange - minRange) + minRange
// which Thresher holds in its own form x' = (x - shift) · scale per feature (data/feature_transform.h),
// the same form `train --normalize` saves with a model, so train, evaluate and predict apply it
// the same way. Statistics per channel of an image input are spread over that channel's pixels.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/model_config.h"

namespace thresher::config {

struct ImportedNormalization {
    std::string kind = "none";  // none | standardize | minmax (as FeatureTransform names them)
    std::vector<float> shift, scale;
    std::string description;    // "NormalizerStandardize (784 features)", for notes
    bool active() const { return kind != "none"; }
};

// Throws ConfigError naming `source` ("model.zip: normalizer.bin") and what is wrong: a truncated
// or oversized file, an unknown or unsupported normaliser, statistics that do not fit `m`'s input.
ImportedNormalization read_dl4j_normalizer(std::span<const std::uint8_t> bytes, const std::string& source,
                                           const ModelConfig& m);

}  // namespace thresher::config
