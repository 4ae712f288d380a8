// Pairs an IDX images file with its IDX labels file into a classification Dataset
// (the MNIST / Fashion-MNIST layout: images [N, H, W] of bytes, labels [N] of class indices).
#pragma once

#include "data/dataset.h"
#include "data/idx_reader.h"

#include <string>

namespace thresher::data {

// Images may be [N, H, W] (shape {1, H, W}), [N, C, H, W] (shape {C, H, W}) or [N, F]
// (shape {1, 1, F}); pixels are scaled to [0, 1]. Targets are one-hot. num_classes 0 infers
// it: max label + 1, but at least 10 while every label is below 10 (so a slice of an MNIST-like
// set keeps its 10 outputs); a positive num_classes rejects labels at or above it.
// Throws thresher::DataError naming the file(s) and the place.
Dataset load_idx_pair(const std::string& images_path, const std::string& labels_path,
                      int num_classes = 0);

// The same from arrays already read; the names are used in messages and Dataset::name.
Dataset make_idx_dataset(const IdxArray& images, const std::string& images_name,
                         const IdxArray& labels, const std::string& labels_name,
                         int num_classes = 0);

}  // namespace thresher::data
