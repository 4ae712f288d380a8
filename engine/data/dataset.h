// An in-memory data set: the unit the readers produce and the batch iterator consumes.
//
// Features are row-major [count x feature_size] floats, already normalised. For images the
// feature layout is CHW (channels, height, width), which is what convolution layers expect; a
// CSV row is shape {1, 1, columns}. Targets are what the output layer compares with:
// one-hot [count x num_classes] for classification, raw values [count x target_size] for
// regression. `labels` keeps the class index per sample for evaluation (empty for regression).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace thresher::data {

struct SampleShape {
    int channels = 1;
    int height = 1;
    int width = 1;
    std::size_t size() const { return static_cast<std::size_t>(channels) * height * width; }
};

struct Dataset {
    std::string name;             // where it came from, for messages ("…/train-images-idx3-ubyte.gz")
    SampleShape shape;            // of one sample's features
    std::size_t count = 0;        // samples
    int num_classes = 0;          // 0 for regression
    std::size_t target_size = 0;  // num_classes for classification
    std::vector<float> features;  // count * shape.size()
    std::vector<float> targets;   // count * target_size
    std::vector<std::int32_t> labels;  // count, classification only (count * target_steps per step)
    // Sequences (seq_spec.md, issue 23): steps > 0. A row is 1 + steps * step_features floats, the
    // sample's length L (1 <= L <= steps) first, then the values time-major, zeros from step L;
    // `shape` is {1, 1, 1 + steps * step_features} so batching treats the row as flat.
    int steps = 0;
    int step_features = 0;
    // Per-step targets: target_steps = steps, target_size = steps * K (K per step, zeros at
    // padded steps) and `labels` holds count * steps classes, -1 where a step has no label.
    // 0: one target row per sample.
    int target_steps = 0;

    bool is_classification() const { return num_classes > 0; }
    const float* sample(std::size_t i) const { return features.data() + i * shape.size(); }
};

// A train set and, where the source has one, a test set (Fashion-MNIST's t10k files).
struct DataSplit {
    Dataset train;
    bool has_test = false;
    Dataset test;
    // Where the source names its classes (image folders): one per class index, else empty.
    std::vector<std::string> class_names;
    // A text corpus's characters (UTF-8, one code point each), id order; saved with the model.
    std::vector<std::string> vocabulary;
    // Images left out because they could not be decoded (only when asked to skip them), and the
    // first few reasons, each naming its file.
    std::size_t skipped_images = 0;
    std::vector<std::string> skipped_examples;
};

}  // namespace thresher::data
