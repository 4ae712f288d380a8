// Data-source strings: "fashion-mnist", IDX folders (plain, .gz, t10k-/test- test sets), CSV
// files, and the messages for sources that are not usable.
#include "data_error.h"
#include "core/error.h"
#include "data/data_source.h"
#include "data/idx_reader.h"

#include <QTemporaryDir>
#include <QtTest>

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <string>

using namespace thresher::data;

namespace {

using test_support::data_error;

void write_idx(const std::string& path, std::vector<std::uint32_t> dims,
               std::vector<std::uint8_t> data) {
    IdxArray a;
    a.dims = std::move(dims);
    a.data = std::move(data);
    const std::vector<std::uint8_t> bytes = encode_idx(a);
    if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
        gzFile f = gzopen(path.c_str(), "wb");
        gzwrite(f, bytes.data(), unsigned(bytes.size()));
        gzclose(f);
    } else {
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }
}

// n images of 2x2 with pixel value 51*i, labels as given.
void write_pair(const QTemporaryDir& dir, const char* images, const char* labels,
                std::vector<std::uint8_t> label_values) {
    const auto n = std::uint32_t(label_values.size());
    std::vector<std::uint8_t> pixels;
    for (std::uint32_t i = 0; i < n * 4; ++i) pixels.push_back(std::uint8_t(51 * (i % 6)));
    write_idx(dir.filePath(images).toStdString(), {n, 2, 2}, pixels);
    write_idx(dir.filePath(labels).toStdString(), {n}, std::move(label_values));
}

class EnvGuard {  // restores THRESHER_FASHION_MNIST after a test changes it
public:
    EnvGuard() : had_(qEnvironmentVariableIsSet(kName)), old_(qgetenv(kName)) {}
    ~EnvGuard() { had_ ? qputenv(kName, old_) : qunsetenv(kName); }
    static constexpr const char* kName = "THRESHER_FASHION_MNIST";

private:
    bool had_;
    QByteArray old_;
};

}  // namespace

class TestDataSource : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void fashionMnist();
    void idxFolder_data();
    void idxFolder();
    void plainPreferredOverGzip();
    void classesAgreeAcrossSplits();
    void csvFile();
    void badSpecs_data();
    void badSpecs();
    void fashionMnistOverrideMissing();
};

void TestDataSource::fashionMnist() {
    const char* env = std::getenv("THRESHER_FASHION_MNIST");
    const QString folder = env && *env ? env : "/usr/share/datasets/fashion-mnist";
    if (!QFile::exists(folder + "/train-images-idx3-ubyte.gz"))
        QSKIP("Fashion-MNIST is not installed");
    const DataSplit split = load_data("fashion-mnist");
    QVERIFY(split.has_test);
    QCOMPARE(split.train.count, std::size_t{60000});
    QCOMPARE(split.test.count, std::size_t{10000});
    QCOMPARE(split.train.shape.height, 28);
    QCOMPARE(split.test.shape.width, 28);
    QCOMPARE(split.train.num_classes, 10);
    QCOMPARE(split.test.num_classes, 10);
    QVERIFY(QString::fromStdString(split.train.name).endsWith("train-images-idx3-ubyte.gz"));
    QVERIFY(QString::fromStdString(split.test.name).endsWith("t10k-images-idx3-ubyte.gz"));
}

void TestDataSource::idxFolder_data() {
    QTest::addColumn<QString>("train_images");
    QTest::addColumn<QString>("train_labels");
    QTest::addColumn<QString>("test_images");
    QTest::addColumn<QString>("test_labels");

    QTest::newRow("gzip, t10k") << "train-images-idx3-ubyte.gz"
                                << "train-labels-idx1-ubyte.gz"
                                << "t10k-images-idx3-ubyte.gz"
                                << "t10k-labels-idx1-ubyte.gz";
    QTest::newRow("plain, test-") << "train-images-idx3-ubyte"
                                  << "train-labels-idx1-ubyte"
                                  << "test-images-idx3-ubyte"
                                  << "test-labels-idx1-ubyte";
    QTest::newRow("mixed, dotted names") << "train-images.idx3-ubyte"
                                         << "train-labels.idx1-ubyte.gz"
                                         << "t10k-images.idx3-ubyte.gz"
                                         << "t10k-labels.idx1-ubyte";
    QTest::newRow("no test set") << "train-images-idx3-ubyte"
                                 << "train-labels-idx1-ubyte"
                                 << ""
                                 << "";
}

void TestDataSource::idxFolder() {
    QFETCH(QString, train_images);
    QFETCH(QString, train_labels);
    QFETCH(QString, test_images);
    QFETCH(QString, test_labels);
    QTemporaryDir dir;
    write_pair(dir, qPrintable(train_images), qPrintable(train_labels), {0, 1, 2, 1, 0});
    if (!test_images.isEmpty())
        write_pair(dir, qPrintable(test_images), qPrintable(test_labels), {2, 2});

    const DataSplit split = load_data(dir.path().toStdString());
    QCOMPARE(split.train.count, std::size_t{5});
    QCOMPARE(split.train.shape.size(), std::size_t{4});
    QCOMPARE(split.train.features[1], 0.2f);
    QCOMPARE(split.train.labels, (std::vector<std::int32_t>{0, 1, 2, 1, 0}));
    QCOMPARE(split.has_test, !test_images.isEmpty());
    if (split.has_test) {
        QCOMPARE(split.test.count, std::size_t{2});
        QVERIFY(QString::fromStdString(split.test.name).endsWith(test_images));
    }
}

void TestDataSource::plainPreferredOverGzip() {
    QTemporaryDir dir;
    write_pair(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", {0, 1});
    write_pair(dir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", {0, 1});
    const IdxFiles f = find_idx_files(dir.path().toStdString());
    QVERIFY(QString::fromStdString(f.train_images).endsWith("/train-images-idx3-ubyte"));
    QVERIFY(QString::fromStdString(f.train_labels).endsWith("/train-labels-idx1-ubyte"));
    QVERIFY(f.test_images.empty() && f.test_labels.empty());
}

void TestDataSource::classesAgreeAcrossSplits() {
    QTemporaryDir dir;
    write_pair(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", {0, 3});
    write_pair(dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", {11, 1});
    const DataSplit split = load_data(dir.path().toStdString());
    QCOMPARE(split.train.num_classes, 12);  // widened by a test label: one-hot widths must match
    QCOMPARE(split.test.num_classes, 12);
    QCOMPARE(split.train.target_size, split.test.target_size);
}

void TestDataSource::csvFile() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("houses.CSV").toStdString();
    std::ofstream(path) << "area,rooms,price\n80,3,1.5\n120,4,2.5\n";
    CsvOptions o;
    o.classification = false;
    const DataSplit split = load_data(path, o);
    QVERIFY(!split.has_test);
    QCOMPARE(split.train.count, std::size_t{2});
    QCOMPARE(split.train.targets, (std::vector<float>{1.5f, 2.5f}));
}

void TestDataSource::badSpecs_data() {
    QTest::addColumn<QString>("setup");
    QTest::addColumn<QString>("detail");
    QTest::newRow("nothing there") << "none"
                                   << "no such file or folder; expected \"fashion-mnist\"";
    QTest::newRow("not csv") << "text file"
                             << "not a data source; expected";
    QTest::newRow("empty folder") << "empty folder"
                                  << "no train-images*idx3* file";
    QTest::newRow("labels missing") << "no labels"
                                    << "no train-labels*idx1* file";
    QTest::newRow("half a test set") << "half test"
                                     << "has no matching t10k-labels*idx1* file";
    QTest::newRow("two candidates") << "two images"
                                    << "several files match train-images*idx3*";
    QTest::newRow("broken csv") << "broken csv"
                                << "line 2, column 1: non-numeric cell \"x\"";
}

void TestDataSource::badSpecs() {
    QFETCH(QString, setup);
    QFETCH(QString, detail);
    QTemporaryDir dir;
    std::string spec = dir.path().toStdString();
    if (setup == "none") spec += "/missing";
    if (setup == "text file") {
        spec += "/notes.md";  // a .txt would be a character corpus (text_corpus.h)
        std::ofstream(spec) << "hello\n";
    }
    if (setup == "no labels") write_idx(spec + "/train-images-idx3-ubyte", {1, 1, 1}, {0});
    if (setup == "half test" || setup == "two images") {
        write_pair(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", {0});
        const char* extra =
            setup == "half test" ? "/t10k-images-idx3-ubyte" : "/train-images-idx3-ubyte-copy";
        write_idx(spec + extra, {1, 2, 2}, {0, 0, 0, 0});
    }
    if (setup == "broken csv") {
        spec += "/d.csv";
        std::ofstream(spec) << "1,2\nx,1\n";
    }
    const QString msg = data_error([&] { load_data(spec); });
    QVERIFY2(msg.startsWith(dir.path()), qPrintable(msg));
    QVERIFY2(msg.contains(detail), qPrintable(msg));
}

void TestDataSource::fashionMnistOverrideMissing() {
    EnvGuard guard;
    qputenv(EnvGuard::kName, "/nonexistent/fashion");
    const QString msg = data_error([] { load_data("fashion-mnist"); });
    QVERIFY2(msg.startsWith("fashion-mnist: folder /nonexistent/fashion does not exist"),
             qPrintable(msg));
    QVERIFY2(msg.contains("THRESHER_FASHION_MNIST"), qPrintable(msg));
}

QTEST_APPLESS_MAIN(TestDataSource)
#include "test_data_source.moc"
