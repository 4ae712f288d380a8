// Resolves a data-source string to files and loads them. Train and test labels are read
// before either Dataset is built, so both get the same number of classes (one-hot width).
#include "data/data_source.h"

#include "core/error.h"
#include "data/idx_dataset.h"
#include "data/idx_reader.h"
#include "data/shard_format.h"
#include "data/shard_reader.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <vector>

namespace thresher::data {

namespace fs = std::filesystem;

namespace {

constexpr const char* kDefaultFashionMnist = "/usr/share/datasets/fashion-mnist";

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// A compressed copy in a format zlib cannot read is not an IDX file, even if its name matches.
bool foreign_archive(const std::string& name) {
    for (const char* ext :
         {".zip", ".bz2", ".xz", ".zst", ".7z", ".tar", ".tgz", ".md5", ".sha256"})
        if (ends_with(name, ext)) return true;
    return false;
}

// The file in `folder` whose name starts with `prefix` and contains `tag`, or "" when none.
std::string find_one(const fs::path& folder, const std::string& prefix, const std::string& tag) {
    std::vector<std::string> names;
    std::error_code ec;
    fs::directory_iterator it(folder, ec);
    if (ec) throw DataError(folder.string() + ": cannot list the folder: " + ec.message());
    for (const auto& entry : it) {
        if (!entry.is_regular_file(ec)) continue;
        const std::string name = entry.path().filename().string();
        const std::string key = lower(name);
        if (key.rfind(prefix, 0) == 0 && key.find(tag) != std::string::npos &&
            !foreign_archive(key))
            names.push_back(name);
    }
    if (names.empty()) return "";
    std::sort(names.begin(), names.end());
    std::vector<std::string> stems;  // "x" and "x.gz" are one file in two forms
    for (const auto& n : names) {
        const std::string stem = ends_with(lower(n), ".gz") ? n.substr(0, n.size() - 3) : n;
        if (std::find(stems.begin(), stems.end(), stem) == stems.end()) stems.push_back(stem);
    }
    if (stems.size() > 1) {
        throw DataError(folder.string() + ": several files match " + prefix + "*" + tag +
                        "*: " + names[0] + ", " + names[1] + (names.size() > 2 ? ", ..." : "") +
                        "; keep one");
    }
    const auto plain = std::find(names.begin(), names.end(), stems[0]);
    return (folder / (plain != names.end() ? *plain : names[0])).string();
}

int max_label(const IdxArray& labels) {
    int m = 0;
    for (std::uint8_t v : labels.data) m = std::max(m, int{v});
    return m;
}

DataSplit load_idx_folder(const std::string& folder) {
    const IdxFiles files = find_idx_files(folder);
    const IdxArray train_images = read_idx(files.train_images);
    const IdxArray train_labels = read_idx(files.train_labels);
    int classes_from = train_labels.dims.size() == 1 ? max_label(train_labels) : 0;

    DataSplit split;
    IdxArray test_images, test_labels;
    if (!files.test_images.empty()) {
        split.has_test = true;
        test_images = read_idx(files.test_images);
        test_labels = read_idx(files.test_labels);
        if (test_labels.dims.size() == 1)
            classes_from = std::max(classes_from, max_label(test_labels));
    }
    // The classes the labels name, over train and test together (binary at least).
    const int num_classes = std::max(classes_from + 1, 2);
    split.train = make_idx_dataset(train_images, files.train_images, train_labels,
                                   files.train_labels, num_classes);
    if (split.has_test) {
        split.test = make_idx_dataset(test_images, files.test_images, test_labels,
                                      files.test_labels, num_classes);
        const SampleShape a = split.train.shape, b = split.test.shape;
        if (a.channels != b.channels || a.height != b.height || a.width != b.width) {
            auto text = [](SampleShape s) {
                return std::to_string(s.channels) + "x" + std::to_string(s.height) + "x" +
                       std::to_string(s.width);
            };
            throw DataError(files.test_images + ": header: test samples are " + text(b) +
                            ", but train samples (" + files.train_images + ") are " + text(a));
        }
    }
    return split;
}

const char* kExpected =
    "expected \"fashion-mnist\", a folder holding train-images*idx3* and train-labels*idx1* files "
    "(plain or .gz), a folder of images in class folders, a folder of sequence CSVs (features/ and labels/), a .csv "
    "file, a .txt file (a character corpus), or a shard folder written by thresher-engine export";

}  // namespace

IdxFiles find_idx_files(const std::string& folder) {
    const fs::path dir(folder);
    IdxFiles f;
    f.train_images = find_one(dir, "train-images", "idx3");
    f.train_labels = find_one(dir, "train-labels", "idx1");
    if (f.train_images.empty() || f.train_labels.empty()) {
        throw DataError(
            folder + ": no " +
            std::string(f.train_images.empty() ? "train-images*idx3*" : "train-labels*idx1*") +
            " file in the folder (plain or .gz)");
    }
    for (const char* prefix : {"t10k", "test"}) {
        const std::string images = find_one(dir, std::string(prefix) + "-images", "idx3");
        const std::string labels = find_one(dir, std::string(prefix) + "-labels", "idx1");
        if (images.empty() && labels.empty()) continue;
        if (images.empty() || labels.empty()) {
            throw DataError(folder + ": " + (images.empty() ? labels : images) +
                            " has no matching " + prefix +
                            (images.empty() ? "-images*idx3*" : "-labels*idx1*") + " file");
        }
        if (!f.test_images.empty()) {
            throw DataError(folder + ": both t10k-* and test-* files present; keep one test set");
        }
        f.test_images = images;
        f.test_labels = labels;
    }
    return f;
}

bool is_csv_file(const std::string& spec) { return ends_with(lower(spec), ".csv"); }

DataSplit load_data(const std::string& spec, const CsvOptions& csv) {
    DataOptions options;
    options.csv = csv;
    return load_data(spec, options);
}

DataSplit load_data(const std::string& spec, const DataOptions& options) {
    const CsvOptions& csv = options.csv;
    std::error_code ec;
    if (spec == "fashion-mnist") {
        const char* env = std::getenv("THRESHER_FASHION_MNIST");
        const std::string folder = env && *env ? env : kDefaultFashionMnist;
        if (!fs::is_directory(folder, ec)) {
            throw DataError(spec + ": folder " + folder +
                            " does not exist (install "
                            "dataset-fashion-mnist or set THRESHER_FASHION_MNIST to the folder)");
        }
        return load_idx_folder(folder);
    }
    // A shard folder (thresher-engine export) carries its own index; checked before the others.
    if (is_shard_folder(spec)) return load_shard_folder(spec);
    if (fs::is_directory(spec, ec) && is_sequence_folder(spec)) return load_sequence_folder(spec, options.sequences);
    if (fs::is_directory(spec, ec))
        return is_image_folder(spec) ? load_image_folder(spec, options.images) : load_idx_folder(spec);
    if (is_csv_file(spec)) {
        DataSplit split;
        split.train = options.csv_as_tokens ? read_token_csv(spec, options.tokens) : read_csv(spec, csv);
        return split;
    }
    if (ends_with(lower(spec), ".txt")) return read_text_corpus(spec, options.text);
    // Plain text often has no extension (README, COPYING, /usr/share/common-licenses/GPL-3): read
    // as a corpus when the model reads sequences (text.steps comes from its input).
    if (options.text.steps > 0 && fs::is_regular_file(spec, ec) && fs::path(spec).extension().empty())
        return read_text_corpus(spec, options.text);
    if (!fs::exists(spec, ec)) throw DataError(spec + ": no such file or folder; " + kExpected);
    throw DataError(spec + ": not a data source; " + kExpected);
}

}  // namespace thresher::data
