// Image folders as data sets: class order, train/test layout and its unknown-class error, the
// seeded split, sample order, corrupt files (named, or skipped and counted), the memory budget
// checked before decoding, a flat model input refused, and load_data telling image folders
// from IDX folders.
#include "core/error.h"
#include "data/data_source.h"
#include "data/idx_reader.h"
#include "data/image_folder.h"
#include "image_files.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <set>

using namespace thresher::data;
namespace fs = std::filesystem;

namespace {

template <class E = thresher::DataError, class F>
QString error_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return QStringLiteral("<wrong exception type: %1>").arg(e.what());
    }
    return QStringLiteral("<no exception>");
}

// `n` grey 4x4 PNGs in dir/cls, each filled with `value + i`, named 000.png ...
void write_class(const fs::path& dir, const std::string& cls, int n, int value) {
    fs::create_directories(dir / cls);
    for (int i = 0; i < n; ++i) {
        test_support::Pixels p{4, 4, 1, std::vector<std::uint8_t>(16, std::uint8_t(value + i))};
        char name[16];
        std::snprintf(name, sizeof name, "%03d.png", i);
        test_support::write_png((dir / cls / name).string(), p);
    }
}

ImageFolderOptions grey4() {
    ImageFolderOptions o;
    o.shape = {1, 4, 4};
    return o;
}

std::multiset<float> first_pixels(const Dataset& ds) {
    std::multiset<float> s;
    for (std::size_t i = 0; i < ds.count; ++i) s.insert(ds.sample(i)[0]);
    return s;
}

}  // namespace

class TestImageFolder : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void classes_are_sorted_folder_names();
    void samples_ordered_by_name_then_class();
    void test_folder_uses_train_classes();
    void unknown_test_class_is_named();
    void split_is_stratified_and_seeded();
    void fraction_zero_means_no_test_set();
    void corrupt_image_is_named();
    void skipped_images_are_counted();
    void memory_budget_checked_before_decoding();
    void flat_model_input_refused();
    void rgb_model_reads_grey_files();
    void load_data_tells_image_from_idx_folders();

private:
    fs::path fresh() {
        auto* d = new QTemporaryDir;  // owned by dirs_
        dirs_.emplace_back(d);
        return fs::path(d->path().toStdString());
    }
    std::vector<std::unique_ptr<QTemporaryDir>> dirs_;
};

void TestImageFolder::classes_are_sorted_folder_names() {
    const fs::path root = fresh();
    write_class(root / "train", "dog", 2, 20);
    write_class(root / "train", "cat", 3, 10);
    write_class(root / "train", "eel", 1, 30);
    fs::create_directories(root / "train" / ".thumbnails");  // hidden: not a class
    const DataSplit s = load_image_folder(root.string(), grey4());
    QCOMPARE(s.class_names, (std::vector<std::string>{"cat", "dog", "eel"}));
    QCOMPARE(s.train.count, std::size_t(6));
    QCOMPARE(s.train.num_classes, 3);
    QVERIFY(!s.has_test);
    for (std::size_t i = 0; i < s.train.count; ++i) {
        // cat's pixels are 10.., dog's 20.., eel's 30..: the label follows the folder.
        const int value = int(std::lround(s.train.sample(i)[0] * 255));
        QCOMPARE(s.train.labels[i], value / 10 - 1);
        QCOMPARE(s.train.targets[i * 3 + std::size_t(s.train.labels[i])], 1.0f);
    }
}

void TestImageFolder::samples_ordered_by_name_then_class() {
    const fs::path root = fresh();
    write_class(root / "train", "a", 2, 10);  // a/000 a/001
    write_class(root / "train", "b", 2, 20);  // b/000 b/001
    const DataSplit s = load_image_folder(root.string(), grey4());
    QCOMPARE(s.train.labels, (std::vector<std::int32_t>{0, 1, 0, 1}));  // 000(a) 000(b) 001(a) 001(b)
}

void TestImageFolder::test_folder_uses_train_classes() {
    const fs::path root = fresh();
    write_class(root / "train", "a", 2, 10);
    write_class(root / "train", "b", 2, 20);
    write_class(root / "train", "c", 2, 30);
    write_class(root / "test", "c", 1, 30);  // test lacks a and b: fine
    const DataSplit s = load_image_folder(root.string(), grey4());
    QVERIFY(s.has_test);
    QCOMPARE(s.test.count, std::size_t(1));
    QCOMPARE(s.test.labels[0], 2);
    QCOMPARE(s.test.num_classes, 3);
}

void TestImageFolder::unknown_test_class_is_named() {
    const fs::path root = fresh();
    write_class(root / "train", "a", 1, 10);
    write_class(root / "train", "b", 1, 20);
    write_class(root / "test", "zebra", 1, 30);
    const QString msg = error_of([&] { load_image_folder(root.string(), grey4()); });
    QVERIFY2(msg.contains("test/zebra: class \"zebra\" is not among train's class folders"), qPrintable(msg));
}

void TestImageFolder::split_is_stratified_and_seeded() {
    const fs::path root = fresh();
    write_class(root, "a", 10, 0);
    write_class(root, "b", 5, 100);
    ImageFolderOptions o = grey4();
    o.test_fraction = 0.2;
    o.split_seed = 7;
    const DataSplit one = load_image_folder(root.string(), o);
    const DataSplit again = load_image_folder(root.string(), o);
    QVERIFY(one.has_test);
    QCOMPARE(one.test.count, std::size_t(3));  // round(0.2 * 10) + round(0.2 * 5)
    QCOMPARE(one.train.count, std::size_t(12));
    QCOMPARE(std::count(one.test.labels.begin(), one.test.labels.end(), 1), 1L);
    QVERIFY(one.test.features == again.test.features);  // same seed, same split
    QVERIFY(one.train.features == again.train.features);
    // Train and test are disjoint and together the whole folder.
    auto all = first_pixels(one.train);
    for (float v : first_pixels(one.test)) {
        QVERIFY(all.find(v) == all.end());
        all.insert(v);
    }
    QCOMPARE(all.size(), std::size_t(15));
    // Some other seed picks other test images.
    bool differs = false;
    for (std::uint64_t seed = 8; seed < 12 && !differs; ++seed) {
        o.split_seed = seed;
        differs = load_image_folder(root.string(), o).test.features != one.test.features;
    }
    QVERIFY(differs);
}

void TestImageFolder::fraction_zero_means_no_test_set() {
    const fs::path root = fresh();
    write_class(root, "a", 3, 0);
    write_class(root, "b", 3, 100);
    ImageFolderOptions o = grey4();
    o.test_fraction = 0;
    const DataSplit s = load_image_folder(root.string(), o);
    QVERIFY(!s.has_test);
    QCOMPARE(s.train.count, std::size_t(6));
}

void TestImageFolder::corrupt_image_is_named() {
    const fs::path root = fresh();
    write_class(root / "train", "a", 2, 10);
    write_class(root / "train", "b", 2, 20);
    auto bytes = test_support::read_bytes((root / "train" / "b" / "001.png").string());
    bytes.resize(bytes.size() - 20);
    test_support::write_bytes((root / "train" / "b" / "001.png").string(), bytes);
    const QString msg = error_of([&] { load_image_folder(root.string(), grey4()); });
    QVERIFY2(msg.startsWith(QString::fromStdString((root / "train" / "b" / "001.png").string()) + ": PNG: "),
             qPrintable(msg));
}

void TestImageFolder::skipped_images_are_counted() {
    const fs::path root = fresh();
    write_class(root / "train", "a", 3, 10);
    write_class(root / "train", "b", 3, 20);
    test_support::write_bytes((root / "train" / "a" / "bad1.jpg").string(), {0xff, 0xd8, 0xff, 0x00});
    test_support::write_bytes((root / "train" / "b" / "bad2.png").string(), {'n', 'o'});
    std::ofstream((root / "train" / "b" / "notes.txt").string()) << "not an image: ignored, not skipped";
    ImageFolderOptions o = grey4();
    o.skip_bad = true;
    // Progress counts every image, skipped ones too, up to the folder's total.
    std::vector<std::pair<std::size_t, std::size_t>> reports;
    o.progress = [&](std::size_t done, std::size_t total) { reports.emplace_back(done, total); };
    const DataSplit s = load_image_folder(root.string(), o);
    QCOMPARE(reports.size(), std::size_t(8));
    for (std::size_t i = 0; i < reports.size(); ++i) QCOMPARE(reports[i], std::make_pair(i + 1, std::size_t(8)));
    QCOMPARE(s.skipped_images, std::size_t(2));
    QCOMPARE(s.skipped_examples.size(), std::size_t(2));
    QVERIFY(QString::fromStdString(s.skipped_examples[0]).contains("bad1.jpg: JPEG: "));
    QCOMPARE(s.train.count, std::size_t(6));
    QCOMPARE(s.train.labels.size(), std::size_t(6));
    QCOMPARE(s.train.features.size(), std::size_t(6 * 16));
}

void TestImageFolder::memory_budget_checked_before_decoding() {
    const fs::path root = fresh();
    write_class(root / "train", "a", 2, 10);
    write_class(root / "train", "b", 2, 20);
    ImageFolderOptions o;
    o.shape = {3, 8192, 8192};  // 4 images x 768 MiB of floats: over the 1 GiB floor
    const QString msg = error_of([&] { load_image_folder(root.string(), o); });
    QVERIFY2(msg.contains("4 images decoded to 3x8192x8192 floats (the model's input)") && msg.contains("would take 3.0 GiB"),
             qPrintable(msg));
}

void TestImageFolder::flat_model_input_refused() {
    const fs::path root = fresh();
    write_class(root / "train", "a", 1, 10);
    write_class(root / "train", "b", 1, 20);
    ImageFolderOptions o;
    o.shape = {784, 1, 1};
    const QString msg = error_of<thresher::ConfigError>([&] { load_image_folder(root.string(), o); });
    QVERIFY2(msg.contains("this model's input is flat (784 features)"), qPrintable(msg));
}

void TestImageFolder::rgb_model_reads_grey_files() {
    const fs::path root = fresh();
    write_class(root / "train", "a", 1, 10);
    write_class(root / "train", "b", 1, 20);
    ImageFolderOptions o;
    o.shape = {3, 2, 2};  // 4x4 grey files -> 2x2 RGB
    const DataSplit s = load_image_folder(root.string(), o);
    QCOMPARE(s.train.shape.channels, 3);
    QCOMPARE(s.train.features.size(), std::size_t(2 * 12));
    for (int i = 0; i < 12; ++i) QCOMPARE(s.train.features[std::size_t(i)], 10 / 255.f);
}

void TestImageFolder::load_data_tells_image_from_idx_folders() {
    const fs::path images = fresh();
    write_class(images, "a", 2, 10);
    write_class(images, "b", 2, 20);
    DataOptions o;
    o.images = grey4();
    o.images.test_fraction = 0.5;
    const DataSplit s = load_data(images.string(), o);
    QCOMPARE(s.class_names.size(), std::size_t(2));
    QCOMPARE(s.test.count, std::size_t(2));
    // A folder of IDX files with a stray sub-folder stays an IDX folder.
    const fs::path idx = fresh();
    fs::create_directories(idx / "backup");
    IdxArray img{{2, 2, 2}, std::vector<std::uint8_t>(8, 7)}, lab{{2}, {0, 1}};
    test_support::write_bytes((idx / "train-images-idx3-ubyte").string(), encode_idx(img));
    test_support::write_bytes((idx / "train-labels-idx1-ubyte").string(), encode_idx(lab));
    QVERIFY(!is_image_folder(idx.string()));
    QCOMPARE(load_data(idx.string(), o).train.count, std::size_t(2));
}

QTEST_GUILESS_MAIN(TestImageFolder)
#include "test_image_folder.moc"
