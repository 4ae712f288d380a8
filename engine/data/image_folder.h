// Folders of images as a classification data set (DL4J's ImageRecordReader with
// ParentPathLabelGenerator: the class is the name of the folder an image sits in).
//
// Two layouts of DIR:
//   DIR/train/<class>/...  and optionally DIR/test/<class>/...
//       The classes are train's sub-folder names in sorted (byte) order: class 0 is the first.
//       A test class folder that train does not have is an error naming it; a class missing
//       from test is fine.
//   DIR/<class>/...
//       No train/: each class's images are split, by `test_fraction` and `split_seed`, into
//       train and test (stratified: round(fraction x n) of every class go to test), the same
//       split on every run and node with the same seed and files.
// Images may sit deeper inside a class folder (Tiny ImageNet's train/<class>/images/): every
// .jpg .jpeg .png .webp .bmp file below it counts; other files and names starting with "." are
// ignored. Samples are ordered by their path inside the class folder, then by class, so a folder
// written from an indexed set with names such as 00042.png keeps that set's sample order.
//
// Every image becomes one sample of the model's input shape (data/image/image_sample.h: channel
// conversion, stretch or centre crop, bilinear resize, [0, 1]). Everything is decoded into memory;
// the float features are checked against the memory budget (data/memory_budget.h) before any
// image is decoded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "data/dataset.h"
#include "data/image/image.h"
#include "data/image/image_sample.h"

namespace thresher::data {

struct ImageFolderOptions {
    SampleShape shape{0, 0, 0};      // the model's input, C x H x W (C: 1 or 3); set by the caller
    ImageFit fit = ImageFit::Stretch;
    double test_fraction = 0.2;      // DIR/<class>/ layout only: the share held out for test, [0, 1)
    std::uint64_t split_seed = 0;    // and the seed of that split
    bool skip_bad = false;           // a corrupt image is skipped and counted instead of an error
    ImageLimits limits;
    // Called after each image is decoded with (images done, images in the folder's train and
    // test sets together); on the decoding thread. Empty: no reports.
    std::function<void(std::size_t done, std::size_t total)> progress;
};

// True when `dir` has the DIR/train/ layout, or holds sub-folders and no IDX files.
bool is_image_folder(const std::string& dir);

// Throws DataError naming the file or folder (an unreadable image unless skip_bad, an unknown
// test class, fewer than 2 classes, no images, the memory budget), ConfigError for a model
// input that is not an image. The split's class_names and skipped_images are filled.
DataSplit load_image_folder(const std::string& dir, const ImageFolderOptions& options);

// A look at a folder before a run (the app's data preview): the first `per_class` training images
// (in sample order) of each of the first `max_classes` classes, decoded as load_image_folder
// decodes them, in `train`; `class_names` lists every class. Images that cannot be decoded are
// skipped and reported in skipped_images/skipped_examples, so the preview shows what is wrong.
// Throws as load_image_folder does for the folder itself (no classes, a flat model input).
DataSplit preview_image_folder(const std::string& dir, const ImageFolderOptions& options, int per_class, int max_classes);

}  // namespace thresher::data
