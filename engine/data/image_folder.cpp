// Lists an image folder's classes and files, splits them when asked, checks the memory budget,
// then decodes every image into its sample.
#include "data/image_folder.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"
#include "data/image/image_decoder.h"
#include "data/memory_budget.h"
#include "data/shard_format.h"

namespace thresher::data {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kSkippedExamples = 5;
constexpr std::uint64_t kSplitStream = 0x53504c4954;  // "SPLIT": the split's own random stream

struct Entry {
    std::string relative;  // inside its class folder, for the sample order
    std::string path;
    int label = 0;
    std::uint64_t bytes = 0;  // the file's size, for the memory budget
};

struct Listing {
    std::vector<Entry> entries;
    std::uint64_t bytes() const {
        std::uint64_t sum = 0;
        for (const auto& e : entries) sum += e.bytes;
        return sum;
    }
};

bool hidden(const fs::path& p) { return p.filename().string().rfind('.', 0) == 0; }

// The sub-folders of `dir`, sorted by name (hidden ones left out).
std::vector<std::string> class_folders(const fs::path& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) throw DataError(dir.string() + ": cannot list the folder: " + ec.message());
    for (const auto& e : it)
        if (e.is_directory(ec) && !hidden(e.path())) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// Every image file below dir/<class>, recursively.
void list_class(const fs::path& class_dir, int label, Listing& out) {
    std::error_code ec;
    fs::recursive_directory_iterator it(class_dir, fs::directory_options::none, ec);
    if (ec) throw DataError(class_dir.string() + ": cannot list the folder: " + ec.message());
    for (auto end = fs::recursive_directory_iterator(); it != end; it.increment(ec)) {
        if (ec) throw DataError(class_dir.string() + ": cannot list the folder: " + ec.message());
        if (hidden(it->path())) {
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        if (!it->is_regular_file(ec) || !has_image_extension(it->path().filename().string())) continue;
        const std::uint64_t size = it->file_size(ec);
        out.entries.push_back({fs::relative(it->path(), class_dir).string(), it->path().string(), label, ec ? 0 : size});
    }
}

void sort_samples(std::vector<Entry>& entries) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.relative != b.relative ? a.relative < b.relative : a.label < b.label;
    });
}

Listing list_classes(const fs::path& dir, const std::vector<std::string>& classes) {
    Listing l;
    for (std::size_t c = 0; c < classes.size(); ++c) list_class(dir / classes[c], static_cast<int>(c), l);
    sort_samples(l.entries);
    return l;
}

// Stratified: each class's files in a seeded random order, the first round(fraction x n) to test.
void split_listing(const Listing& all, int classes, double fraction, std::uint64_t seed, Listing& train,
                   Listing& test) {
    std::vector<std::vector<const Entry*>> by_class(static_cast<std::size_t>(classes));
    for (const auto& e : all.entries) by_class[static_cast<std::size_t>(e.label)].push_back(&e);
    for (int c = 0; c < classes; ++c) {
        auto& files = by_class[static_cast<std::size_t>(c)];  // already in sample order
        Rng rng(derive_seed(seed, kSplitStream, static_cast<std::uint64_t>(c)));
        std::shuffle(files.begin(), files.end(), rng);
        const auto held = static_cast<std::size_t>(std::llround(fraction * static_cast<double>(files.size())));
        for (std::size_t i = 0; i < files.size(); ++i) (i < held ? test : train).entries.push_back(*files[i]);
    }
    sort_samples(train.entries);
    sort_samples(test.entries);
}

// `done` and `total` count images across the calls of one load, for ImageFolderOptions::progress.
Dataset decode(const Listing& l, const std::string& name, int classes, const ImageFolderOptions& o,
               DataSplit& report, std::size_t done = 0, std::size_t total = 0) {
    const std::size_t width = o.shape.size();
    const std::uint64_t n = l.entries.size();
    check_memory_budget(name, std::to_string(n) + " images decoded to " + std::to_string(o.shape.channels) + "x" +
                                  std::to_string(o.shape.height) + "x" + std::to_string(o.shape.width) +
                                  " floats (the model's input), with one-hot targets for " + std::to_string(classes) +
                                  " classes",
                        n * (width + static_cast<std::uint64_t>(classes)) * sizeof(float), l.bytes());
    Dataset ds;
    ds.name = name;
    ds.shape = o.shape;
    ds.num_classes = classes;
    ds.target_size = static_cast<std::size_t>(classes);
    ds.features.resize(l.entries.size() * width);
    ds.labels.reserve(l.entries.size());
    std::size_t kept = 0;
    for (const auto& e : l.entries) {
        try {
            const Image image = read_image(e.path, o.limits);
            image_to_sample(image, o.shape, o.fit, ds.features.data() + kept * width);
        } catch (const DataError& err) {
            if (!o.skip_bad) throw;
            ++report.skipped_images;
            if (report.skipped_examples.size() < kSkippedExamples) report.skipped_examples.push_back(err.what());
            if (o.progress) o.progress(++done, total);
            continue;
        }
        if (o.progress) o.progress(++done, total);
        ds.labels.push_back(e.label);
        ++kept;
    }
    ds.features.resize(kept * width);
    ds.features.shrink_to_fit();
    ds.count = kept;
    ds.targets.assign(kept * ds.target_size, 0.0f);
    for (std::size_t i = 0; i < kept; ++i) ds.targets[i * ds.target_size + static_cast<std::size_t>(ds.labels[i])] = 1.0f;
    return ds;
}

bool has_idx_file(const fs::path& dir) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string n = e.path().filename().string();
        if (e.is_regular_file(ec) && (n.find("idx1") != std::string::npos || n.find("idx3") != std::string::npos)) return true;
    }
    return false;
}

}  // namespace

bool is_image_folder(const std::string& dir) {
    if (is_shard_folder(dir)) return false;  // train/ and test/ of shard files, not of class folders
    std::error_code ec;
    if (fs::is_directory(fs::path(dir) / "train", ec)) return true;
    return !has_idx_file(dir) && !class_folders(dir).empty();
}

namespace {

// What both the loader and the preview check first; returns the folder train images come from.
fs::path check_folder(const std::string& dir, const ImageFolderOptions& o, DataSplit& split) {
    const SampleShape& s = o.shape;
    if (s.height == 1 && s.width == 1)
        throw ConfigError(dir + ": image folders need a model whose input is an image (channels, height, width); this "
                                "model's input is flat (" + std::to_string(s.size()) +
                          " features): declare e.g. \"input\": {\"channels\": 1, \"height\": 28, \"width\": 28}");
    if (s.channels != 1 && s.channels != 3)
        throw ConfigError(dir + ": image folders give 1 (grey) or 3 (RGB) channels; the model's input has " +
                          std::to_string(s.channels));
    const fs::path root(dir);
    std::error_code ec;
    const fs::path train_dir = fs::is_directory(root / "train", ec) ? root / "train" : root;
    split.class_names = class_folders(train_dir);
    if (split.class_names.size() < 2)
        throw DataError(train_dir.string() + ": " + std::to_string(split.class_names.size()) +
                        " class folder(s); a classifier needs at least 2 (one sub-folder per class)");
    return train_dir;
}

}  // namespace

DataSplit preview_image_folder(const std::string& dir, const ImageFolderOptions& o, int per_class, int max_classes) {
    DataSplit split;
    const fs::path train_dir = check_folder(dir, o, split);
    const int classes = static_cast<int>(split.class_names.size());
    Listing some;
    for (int c = 0; c < std::min(classes, max_classes); ++c) {
        Listing one;
        list_class(train_dir / split.class_names[static_cast<std::size_t>(c)], c, one);
        sort_samples(one.entries);
        const auto take = std::min<std::size_t>(one.entries.size(), static_cast<std::size_t>(std::max(0, per_class)));
        some.entries.insert(some.entries.end(), one.entries.begin(), one.entries.begin() + static_cast<std::ptrdiff_t>(take));
    }
    ImageFolderOptions lenient = o;
    lenient.skip_bad = true;
    split.train = decode(some, train_dir.string(), classes, lenient, split);
    return split;
}

DataSplit load_image_folder(const std::string& dir, const ImageFolderOptions& o) {
    DataSplit split;
    const fs::path root(dir);
    std::error_code ec;
    const fs::path train_dir = check_folder(dir, o, split);
    const bool has_train = train_dir != root;  // check_folder took DIR/train/ when there is one
    const int classes = static_cast<int>(split.class_names.size());

    Listing train, test;
    if (has_train) {
        train = list_classes(train_dir, split.class_names);
        if (fs::is_directory(root / "test", ec)) {
            const auto test_classes = class_folders(root / "test");
            for (const auto& c : test_classes)
                if (!std::binary_search(split.class_names.begin(), split.class_names.end(), c))
                    throw DataError((root / "test" / c).string() + ": class \"" + c +
                                    "\" is not among train's class folders (" + train_dir.string() + ")");
            split.has_test = true;
            // Labels are train's indices: test may lack classes.
            for (const auto& c : test_classes) {
                const auto label = std::lower_bound(split.class_names.begin(), split.class_names.end(), c) -
                                   split.class_names.begin();
                list_class(root / "test" / c, static_cast<int>(label), test);
            }
            sort_samples(test.entries);
        }
    } else {
        Listing all = list_classes(train_dir, split.class_names);
        if (o.test_fraction < 0 || o.test_fraction >= 1)
            throw ConfigError("--test-fraction must be in [0, 1), got " + std::to_string(o.test_fraction));
        if (o.test_fraction > 0) {
            split.has_test = true;
            split_listing(all, classes, o.test_fraction, o.split_seed, train, test);
        } else {
            train = std::move(all);
        }
    }
    if (train.entries.empty())
        throw DataError(train_dir.string() + ": no image files (.jpg .jpeg .png .webp .bmp) in its class folders");
    const std::string train_name = has_train ? train_dir.string() : dir + " (train split)";
    const std::size_t total = train.entries.size() + (split.has_test ? test.entries.size() : 0);
    split.train = decode(train, train_name, classes, o, split, 0, total);
    if (split.has_test) {
        const std::string test_name = has_train ? (root / "test").string() : dir + " (test split)";
        split.test = decode(test, test_name, classes, o, split, train.entries.size(), total);
        if (split.test.count == 0) split.has_test = false;
    }
    if (split.train.count == 0)
        throw DataError(train_name + ": none of its " + std::to_string(train.entries.size()) + " images could be decoded (" +
                        (split.skipped_examples.empty() ? std::string() : split.skipped_examples.front()) + ")");
    return split;
}

}  // namespace thresher::data
