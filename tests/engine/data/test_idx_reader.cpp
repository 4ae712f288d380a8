// IDX reader and IDX-pair loader: the real Fashion-MNIST files, gzip/plain equivalence, and one
// row per malformed-input case, each checked for exception type, file name and place.
#include "data_error.h"
#include "core/error.h"
#include "data/idx_dataset.h"
#include "data/idx_reader.h"

#include <QTemporaryDir>
#include <QtTest>

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace thresher::data;
using Bytes = std::vector<std::uint8_t>;

namespace {

std::string fashion_dir() {
    const char* env = std::getenv("THRESHER_FASHION_MNIST");
    return env && *env ? env : "/usr/share/datasets/fashion-mnist";
}

void write_file(const std::string& path, const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
}

Bytes gzip_bytes(const Bytes& plain, const std::string& scratch) {
    gzFile f = gzopen(scratch.c_str(), "wb");
    gzwrite(f, plain.data(), static_cast<unsigned>(plain.size()));
    gzclose(f);
    std::ifstream in(scratch, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
}

Bytes gunzip_file(const std::string& path) {
    Bytes out;
    gzFile f = gzopen(path.c_str(), "rb");
    std::uint8_t buf[1 << 16];
    int n = 0;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
    gzclose(f);
    return out;
}

Bytes idx(std::vector<std::uint32_t> dims, std::size_t data_bytes) {
    IdxArray a;
    a.dims = std::move(dims);
    // Hash-like bytes: they barely compress, so a gzip stream cut in half is cut inside deflate
    // data.
    for (std::size_t i = 0; i < data_bytes; ++i)
        a.data.push_back(static_cast<std::uint8_t>((i * 2654435761u) >> 13));
    return encode_idx(a);
}

// The DataError message `f` throws, or a marker the checks below will reject.
using test_support::data_error;

}  // namespace

class TestIdxReader : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void fashionMnistTrain();
    void fashionMnistTest();
    void gzipAndPlainIdentical();
    void memoryParserMatchesFile();
    void badInput_data();
    void badInput();
    void missingFile();
    void pairErrors_data();
    void pairErrors();
    void classCountInference();
    void oneHotTargetsBounded();
    void shapes();

private:
    QTemporaryDir dir_;
    std::string path(const char* name) const { return dir_.filePath(name).toStdString(); }
};

void TestIdxReader::fashionMnistTrain() {
    const std::string images = fashion_dir() + "/train-images-idx3-ubyte.gz";
    const std::string labels = fashion_dir() + "/train-labels-idx1-ubyte.gz";
    if (!QFile::exists(QString::fromStdString(images))) QSKIP("Fashion-MNIST is not installed");

    const Dataset ds = load_idx_pair(images, labels);
    QCOMPARE(ds.count, std::size_t{60000});
    QCOMPARE(ds.shape.channels, 1);
    QCOMPARE(ds.shape.height, 28);
    QCOMPARE(ds.shape.width, 28);
    QCOMPARE(ds.num_classes, 10);
    QCOMPARE(ds.target_size, std::size_t{10});
    QCOMPARE(ds.features.size(), std::size_t{60000} * 784);
    QCOMPARE(ds.targets.size(), std::size_t{60000} * 10);
    QCOMPARE(ds.name, images);
    const auto [lo, hi] = std::minmax_element(ds.features.begin(), ds.features.end());
    QCOMPARE(*lo, 0.0f);
    QCOMPARE(*hi, 1.0f);

    // The first label straight from the file: 8-byte header, then one byte per label.
    const Bytes raw = gunzip_file(labels);
    QCOMPARE(raw.size(), std::size_t{60008});
    QCOMPARE(ds.labels[0], std::int32_t{raw[8]});
    for (int c = 0; c < 10; ++c) QCOMPARE(ds.targets[c], c == raw[8] ? 1.0f : 0.0f);
    std::vector<int> per_class(10, 0);
    for (auto l : ds.labels) ++per_class[l];
    for (int c = 0; c < 10; ++c) QCOMPARE(per_class[c], 6000);  // Fashion-MNIST is balanced
}

void TestIdxReader::fashionMnistTest() {
    const std::string images = fashion_dir() + "/t10k-images-idx3-ubyte.gz";
    if (!QFile::exists(QString::fromStdString(images))) QSKIP("Fashion-MNIST is not installed");
    const IdxArray a = read_idx(images);
    QCOMPARE(a.dims, (std::vector<std::uint32_t>{10000, 28, 28}));
    QCOMPARE(a.data.size(), std::size_t{7840000});
    const Dataset ds = load_idx_pair(images, fashion_dir() + "/t10k-labels-idx1-ubyte.gz");
    QCOMPARE(ds.count, std::size_t{10000});
    QCOMPARE(ds.num_classes, 10);
}

void TestIdxReader::gzipAndPlainIdentical() {
    QVERIFY(dir_.isValid());
    // A small synthetic file...
    const Bytes plain = idx({3, 4, 5}, 60);
    write_file(path("small.idx"), plain);
    write_file(path("small.idx.gz"), gzip_bytes(plain, path("scratch.gz")));
    const IdxArray a = read_idx(path("small.idx"));
    const IdxArray b = read_idx(path("small.idx.gz"));
    QCOMPARE(a.dims, b.dims);
    QVERIFY(a.data == b.data);

    // ...and the real test set decompressed next to its .gz.
    const std::string gz = fashion_dir() + "/t10k-images-idx3-ubyte.gz";
    if (!QFile::exists(QString::fromStdString(gz))) QSKIP("Fashion-MNIST is not installed");
    write_file(path("t10k-images-idx3-ubyte"), gunzip_file(gz));
    const IdxArray c = read_idx(gz);
    const IdxArray d = read_idx(path("t10k-images-idx3-ubyte"));
    QCOMPARE(c.dims, d.dims);
    QVERIFY(c.data == d.data);
}

void TestIdxReader::memoryParserMatchesFile() {
    const Bytes bytes = idx({2, 3}, 6);
    write_file(path("mem.idx"), bytes);
    const IdxArray a = parse_idx(bytes.data(), bytes.size(), "mem");
    const IdxArray b = read_idx(path("mem.idx"));
    QCOMPARE(a.dims, b.dims);
    QVERIFY(a.data == b.data);
    QCOMPARE(a.element_count(), std::size_t{6});
}

void TestIdxReader::badInput_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<bool>("gzip");
    QTest::addColumn<QString>("place");
    QTest::addColumn<QString>("detail");

    auto qb = [](const Bytes& b) {
        return QByteArray(reinterpret_cast<const char*>(b.data()), qsizetype(b.size()));
    };
    Bytes wrong_magic = idx({2}, 2);
    wrong_magic[0] = 0x12;
    wrong_magic[1] = 0x34;
    Bytes float_type = idx({2}, 2);
    float_type[2] = 0x0D;
    const Bytes header = idx({2, 3}, 0);
    Bytes short_data = idx({2, 3}, 4);
    Bytes trailing = idx({3}, 3);
    trailing.push_back(0xAB);

    QTest::newRow("empty file") << QByteArray() << false << "header: truncated"
                                << "found 0";
    QTest::newRow("short magic") << QByteArray("\0\0", 2) << false << "header: truncated"
                                 << "found 2";
    QTest::newRow("wrong magic") << qb(wrong_magic) << false << "byte 0: wrong magic"
                                 << "found 12 34 08 01";
    QTest::newRow("unsupported type")
        << qb(float_type) << false << "byte 2: unsupported element type"
        << "0x0D (32-bit float)";
    QTest::newRow("zero dimensions") << QByteArray("\0\0\x08\0", 4) << false << "byte 3"
                                     << "0 dimensions";
    QTest::newRow("truncated header")
        << qb(Bytes(header.begin(), header.begin() + 9)) << false << "header: truncated"
        << "expected a 12-byte header (2 dimensions), found 9 bytes";
    QTest::newRow("truncated data") << qb(short_data) << false << "bytes 4-11"
                                    << "the header declares 6 data bytes, but";
    // Exactly 2^31 elements (the most a header may declare) over 100 bytes of data: refused from
    // the file's size before any allocation, plain or gzip.
    QTest::newRow("2^31 elements in a small file")
        << qb(idx({32768, 65536}, 100)) << false << "bytes 4-11"
        << "the header declares 2147483648 data bytes, but";
    QTest::newRow("gzip: 2^31 elements in a small file")
        << qb(idx({32768, 65536}, 100)) << true << "bytes 4-11"
        << "the header declares 2147483648 data bytes, but a gzip file of";
    QTest::newRow("trailing garbage") << qb(trailing) << false << "byte 11"
                                      << "trailing data after the 3 data bytes";
    QTest::newRow("absurd dims") << qb(idx({65536, 65536}, 0)) << false << "bytes 4-11"
                                 << "65536 x 65536 make more than 2^31 elements";
    QTest::newRow("overflowing dims")
        << qb(idx({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, 0)) << false << "bytes 4-15"
        << "more than 2^31 elements";
    QTest::newRow("gzip: truncated data")
        << qb(short_data) << true << "truncated"
        << "expected 6 data bytes after the 12-byte header, found 4";
    QTest::newRow("gzip: wrong magic") << qb(wrong_magic) << true << "byte 0: wrong magic"
                                       << "12 34";

    // Compressed streams damaged after compression (see badInput for how).
    const Bytes good = idx({100, 10}, 1000);
    QTest::newRow("gzip: cut short") << qb(good) << true << "truncated gzip stream"
                                     << "unexpected end of file";
    QTest::newRow("gzip: bad CRC") << qb(good) << true << "corrupt gzip stream"
                                   << "incorrect data check";
    QTest::newRow("gzip: bad block") << qb(good) << true << "corrupt gzip stream"
                                     << "invalid block type";
}

void TestIdxReader::badInput() {
    QFETCH(QByteArray, bytes);
    QFETCH(bool, gzip);
    QFETCH(QString, place);
    QFETCH(QString, detail);

    Bytes content(bytes.begin(), bytes.end());
    const QString tag = QString::fromUtf8(QTest::currentDataTag());
    std::string file = path("bad.idx");
    if (gzip) {
        file += ".gz";
        content = gzip_bytes(content, path("scratch.gz"));
        // gzip = 10-byte header, deflate data, CRC32, length.
        if (tag.contains("cut short")) content.resize(content.size() / 2);
        if (tag.contains("bad CRC")) content[content.size() - 8] ^= 0xFF;
        if (tag.contains("bad block")) content[10] = 0xFF;  // BFINAL=1, BTYPE=11 (reserved)
    }
    write_file(file, content);

    const QString msg = data_error([&] { read_idx(file); });
    QVERIFY2(msg.startsWith(QString::fromStdString(file) + ": "), qPrintable(msg));
    QVERIFY2(msg.contains(place), qPrintable(msg));
    QVERIFY2(msg.contains(detail), qPrintable(msg));

    if (!gzip) {  // the in-memory parser reports the same place
        const QString mem =
            data_error([&] { parse_idx(content.data(), content.size(), "memory"); });
        QVERIFY2(mem.startsWith("memory: ") && mem.contains(place) && mem.contains(detail),
                 qPrintable(mem));
    }
}

void TestIdxReader::missingFile() {
    const std::string file = path("no-such-file.idx");
    const QString msg = data_error([&] { read_idx(file); });
    QVERIFY2(msg.contains(QString::fromStdString(file)), qPrintable(msg));
    QVERIFY2(msg.contains("cannot open") && msg.contains("No such file"), qPrintable(msg));
    const QString dir_msg = data_error([&] { read_idx(dir_.path().toStdString()); });
    QVERIFY2(dir_msg.contains("is a directory"), qPrintable(dir_msg));
}

void TestIdxReader::pairErrors_data() {
    QTest::addColumn<int>("images");
    QTest::addColumn<int>("labels");
    QTest::addColumn<bool>("labels_2d");
    QTest::addColumn<int>("num_classes");
    QTest::addColumn<QString>("detail");
    QTest::addColumn<bool>("names_images");

    QTest::newRow("count mismatch") << 4 << 3 << false << 0 << "3 labels, but" << true;
    QTest::newRow("labels not 1-d") << 4 << 4 << true << 0 << "expected one dimension" << false;
    QTest::newRow("label out of range")
        << 4 << 4 << false << 3 << "label 3: class 3 is out of range for 3 classes" << false;
}

void TestIdxReader::pairErrors() {
    QFETCH(int, images);
    QFETCH(int, labels);
    QFETCH(bool, labels_2d);
    QFETCH(int, num_classes);
    QFETCH(QString, detail);
    QFETCH(bool, names_images);

    const std::string img = path("pair-images-idx3-ubyte");
    const std::string lab = path("pair-labels-idx1-ubyte");
    write_file(img, idx({std::uint32_t(images), 2, 2}, std::size_t(images) * 4));
    IdxArray l;
    l.dims = labels_2d ? std::vector<std::uint32_t>{std::uint32_t(labels), 1}
                       : std::vector<std::uint32_t>{std::uint32_t(labels)};
    for (int i = 0; i < labels; ++i) l.data.push_back(std::uint8_t(i));  // labels 0, 1, 2, 3
    write_file(lab, encode_idx(l));

    const QString msg = data_error([&] { load_idx_pair(img, lab, num_classes); });
    QVERIFY2(msg.startsWith(QString::fromStdString(lab) + ": "), qPrintable(msg));
    QVERIFY2(msg.contains(detail), qPrintable(msg));
    if (names_images) QVERIFY2(msg.contains(QString::fromStdString(img)), qPrintable(msg));
}

void TestIdxReader::classCountInference() {
    IdxArray images;
    images.dims = {3, 2};
    images.data = {0, 255, 51, 102, 1, 2};
    IdxArray labels;
    labels.dims = {3};

    labels.data = {0, 1, 1};
    Dataset ds = make_idx_dataset(images, "i", labels, "l");
    QCOMPARE(ds.num_classes, 2);  // the classes the labels name: 0 and 1
    QCOMPARE(ds.features[1], 1.0f);
    QCOMPARE(ds.features[2], 0.2f);
    QCOMPARE(ds.targets[1 * 2 + 1], 1.0f);

    labels.data = {0, 12, 3};
    ds = make_idx_dataset(images, "i", labels, "l");
    QCOMPARE(ds.num_classes, 13);
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{0, 12, 3}));
    QCOMPARE(ds.targets[13 + 12], 1.0f);

    ds = make_idx_dataset(images, "i", labels, "l", 20);
    QCOMPARE(ds.num_classes, 20);
}

void TestIdxReader::oneHotTargetsBounded() {
    // 2,000,000 one-pixel samples (4 MB of IDX data, a few KB gzipped) with one label of 255
    // would need 2,000,000 x 256 one-hot floats (1.9 GiB): refused, naming the label.
    IdxArray images, labels;
    images.dims = {2000000, 1};
    images.data.assign(2000000, 7);
    labels.dims = {2000000};
    labels.data.assign(2000000, 0);
    labels.data[1234] = 255;
    const QString msg = data_error([&] { make_idx_dataset(images, "imgs", labels, "lbls"); });
    QVERIFY2(msg.startsWith("lbls: label 1234: class 255 (the largest) makes 256 classes: one-hot targets for "
                            "2000000 samples would take 1.9 GiB"),
             qPrintable(msg));
    labels.data[1234] = 9;  // ten classes: 76 MiB, fine
    QCOMPARE(make_idx_dataset(images, "imgs", labels, "lbls").num_classes, 10);
}

void TestIdxReader::shapes() {
    IdxArray labels;
    labels.dims = {1};
    labels.data = {0};
    IdxArray images;
    images.dims = {1, 3, 2, 5};
    images.data.assign(30, 0);
    const Dataset chw = make_idx_dataset(images, "i", labels, "l");
    QCOMPARE(chw.shape.channels, 3);
    QCOMPARE(chw.shape.height, 2);
    QCOMPARE(chw.shape.width, 5);
    images.dims = {1, 30};
    const Dataset flat = make_idx_dataset(images, "i", labels, "l");
    QCOMPARE(flat.shape.width, 30);
    QCOMPARE(flat.shape.height, 1);
    images.dims = {30};
    const QString msg = data_error([&] { make_idx_dataset(images, "imgs", labels, "l"); });
    QVERIFY2(msg.startsWith("imgs: header: ") && msg.contains("[30]"), qPrintable(msg));
}

QTEST_APPLESS_MAIN(TestIdxReader)
#include "test_idx_reader.moc"
