// One string names a data source on the command line and in run configs; this resolves it.
//   "fashion-mnist"          the installed Fashion-MNIST (folder overridable:
//   THRESHER_FASHION_MNIST)
//   "/data/mnist"            a folder of IDX files: train-images*idx3*, train-labels*idx1*, and
//                            optionally t10k-* or test-* images and labels (plain or .gz)
//   "/data/iris.csv"         a CSV table (data/csv_reader.h); no test set
//   "/data/flowers"          a folder of images in class folders, DIR/train/<class>/ (+ test/)
//                            or DIR/<class>/ split by a fraction (data/image_folder.h)
#pragma once

#include "data/csv_reader.h"
#include "data/dataset.h"
#include "data/image_folder.h"

#include <string>

namespace thresher::data {

struct IdxFiles {
    std::string train_images, train_labels;
    std::string test_images, test_labels;  // both empty when the folder has no test set
};

// Finds the IDX files in `folder`. Where a plain and a .gz copy both exist the plain one wins
// (no decompression). Throws thresher::DataError when the train pair is missing, when only half
// of the test pair exists, or when a pattern matches two different files.
IdxFiles find_idx_files(const std::string& folder);

// How each kind of source is read; a source uses only its own part.
struct DataOptions {
    CsvOptions csv;
    ImageFolderOptions images;  // images.shape comes from the model (train/task.h)
};

// Throws thresher::DataError saying what was expected when `spec` names nothing usable.
DataSplit load_data(const std::string& spec, const DataOptions& options);
DataSplit load_data(const std::string& spec, const CsvOptions& csv = {});

}  // namespace thresher::data
