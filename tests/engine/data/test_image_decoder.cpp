// The image decoders on files written by libpng, libjpeg-turbo and libwebp (and BMP by its
// documented layout): grey and RGB, format by content, and the refusals — truncated and corrupt
// files named in the error, declared sizes over the limits refused before anything is allocated.
#include "data_error.h"
#include "core/error.h"
#include "data/image/image_decoder.h"
#include "image_files.h"

#include <QTemporaryDir>
#include <QtTest>

#include <zlib.h>

#include <cmath>

using namespace thresher::data;
using test_support::Pixels;

namespace {

using test_support::data_error;

double mean_abs_diff(const Image& a, const Pixels& b) {
    double sum = 0;
    for (std::size_t i = 0; i < a.pixels.size(); ++i) sum += std::abs(int(a.pixels[i]) - int(b.data[i]));
    return sum / double(a.pixels.size());
}

void put_be32(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = std::uint8_t(v >> (24 - 8 * i));
}

}  // namespace

class TestImageDecoder : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void decodes_exactly_data();
    void decodes_exactly();
    void jpeg_grey_and_rgb();
    void format_comes_from_content();
    void truncated_files_are_named_data();
    void truncated_files_are_named();
    void garbage_is_named();
    void png_huge_declared_size_refused();
    void jpeg_huge_declared_size_refused();
    void bmp_huge_and_rle_refused();
    void pixel_cap_applies();

private:
    QTemporaryDir dir_;
    std::string path(const char* name) const { return dir_.filePath(name).toStdString(); }
};

void TestImageDecoder::decodes_exactly_data() {
    QTest::addColumn<QString>("format");
    QTest::addColumn<int>("channels");
    QTest::newRow("png grey") << "png" << 1;
    QTest::newRow("png rgb") << "png" << 3;
    QTest::newRow("bmp grey (8-bit palette)") << "bmp" << 1;
    QTest::newRow("bmp rgb (24-bit)") << "bmp" << 3;
    QTest::newRow("webp lossless rgb") << "webp" << 3;
}

// Lossless formats come back byte for byte, in the file's own channel count.
void TestImageDecoder::decodes_exactly() {
    QFETCH(QString, format);
    QFETCH(int, channels);
    const Pixels p = test_support::pattern(13, 7, channels);  // odd width: BMP row padding
    const std::string file = path(qPrintable("exact." + format));
    if (format == "png") test_support::write_png(file, p);
    if (format == "bmp") test_support::write_bmp(file, p);
    if (format == "webp") test_support::write_webp_lossless(file, p);
    const Image img = read_image(file);
    QCOMPARE(img.width, 13);
    QCOMPARE(img.height, 7);
    QCOMPARE(img.channels, channels);
    QVERIFY(img.pixels == p.data);
}

// Lossy: the same size and channel count, pixels close to what was encoded.
void TestImageDecoder::jpeg_grey_and_rgb() {
    for (int channels : {1, 3}) {
        // A smooth gradient (JPEG's strength; the shared pattern's sharp steps are not).
        Pixels p{32, 24, channels, {}};
        for (int y = 0; y < 24; ++y)
            for (int x = 0; x < 32; ++x)
                for (int c = 0; c < channels; ++c) p.data.push_back(std::uint8_t(20 + 3 * x + 2 * y + 30 * c));
        const std::string file = path(channels == 1 ? "grey.jpg" : "rgb.jpg");
        test_support::write_jpeg(file, p, 98);
        const Image img = read_image(file);
        QCOMPARE(img.width, 32);
        QCOMPARE(img.height, 24);
        QCOMPARE(img.channels, channels);
        const double diff = mean_abs_diff(img, p);
        QVERIFY2(diff < 1.5, qPrintable(QString("mean |diff| %1").arg(diff)));
    }
}

void TestImageDecoder::format_comes_from_content() {
    const Pixels p = test_support::pattern(8, 8, 3);
    const std::string file = path("really_a_jpeg.png");
    test_support::write_jpeg(file, p);
    const Image img = read_image(file);
    QCOMPARE(img.channels, 3);
    QCOMPARE(img.width, 8);
}

void TestImageDecoder::truncated_files_are_named_data() {
    QTest::addColumn<QString>("format");
    QTest::addColumn<QString>("expected");
    QTest::newRow("png") << "png" << "PNG:";
    QTest::newRow("jpeg") << "jpg" << "JPEG:";
    QTest::newRow("webp") << "webp" << "WebP:";
    QTest::newRow("bmp") << "bmp" << "BMP: truncated";
}

// Half a file: an error naming the file, never a crash, never libjpeg's grey-filled rows.
void TestImageDecoder::truncated_files_are_named() {
    QFETCH(QString, format);
    QFETCH(QString, expected);
    const Pixels p = test_support::pattern(64, 48, 3);
    const std::string whole = path(qPrintable("whole." + format));
    if (format == "png") test_support::write_png(whole, p);
    if (format == "jpg") test_support::write_jpeg(whole, p);
    if (format == "webp") test_support::write_webp_lossless(whole, p);
    if (format == "bmp") test_support::write_bmp(whole, p);
    auto bytes = test_support::read_bytes(whole);
    bytes.resize(bytes.size() / 2);
    const std::string cut = path(qPrintable("cut." + format));
    test_support::write_bytes(cut, bytes);
    const QString msg = data_error([&] { read_image(cut); });
    QVERIFY2(msg.startsWith(QString::fromStdString(cut) + ": "), qPrintable(msg));
    QVERIFY2(msg.contains(expected), qPrintable(msg));
}

void TestImageDecoder::garbage_is_named() {
    // A JPEG start followed by noise, a file of text, and an empty file.
    std::vector<std::uint8_t> noise{0xff, 0xd8, 0xff, 0xe0};
    for (int i = 0; i < 500; ++i) noise.push_back(std::uint8_t(i * 37 + 11));
    test_support::write_bytes(path("noise.jpg"), noise);
    QString msg = data_error([&] { read_image(path("noise.jpg")); });
    QVERIFY2(msg.startsWith(QString::fromStdString(path("noise.jpg")) + ": JPEG: "), qPrintable(msg));
    test_support::write_bytes(path("text.png"), {'h', 'e', 'l', 'l', 'o'});
    msg = data_error([&] { read_image(path("text.png")); });
    QVERIFY2(msg.contains("text.png: not a JPEG, PNG, WebP or BMP file"), qPrintable(msg));
    test_support::write_bytes(path("empty.png"), {});
    msg = data_error([&] { read_image(path("empty.png")); });
    QVERIFY2(msg.contains("empty.png: not a JPEG, PNG, WebP or BMP file (the file is empty)"), qPrintable(msg));
}

// A tiny PNG whose IHDR (with a valid CRC) declares 20000 x 20000: refused at the header, by our
// limit, before libpng decodes or we allocate 400 M pixels.
void TestImageDecoder::png_huge_declared_size_refused() {
    const std::string file = path("bomb.png");
    test_support::write_png(file, test_support::pattern(4, 4, 1));
    auto b = test_support::read_bytes(file);
    // IHDR data starts at byte 16 (8 signature + 4 length + 4 type); its CRC follows 13 bytes.
    put_be32(b, 16, 20000);
    put_be32(b, 20, 20000);
    put_be32(b, 29, std::uint32_t(crc32(0, b.data() + 12, 17)));
    test_support::write_bytes(file, b);
    const QString msg = data_error([&] { read_image(file); });
    QVERIFY2(msg == QString::fromStdString(file) +
                        ": PNG: header declares 20000 x 20000 pixels, more than the 16384 pixels per side allowed",
             qPrintable(msg));
}

void TestImageDecoder::jpeg_huge_declared_size_refused() {
    const std::string file = path("bomb.jpg");
    test_support::write_jpeg(file, test_support::pattern(8, 8, 3));
    auto b = test_support::read_bytes(file);
    // SOF0 (ff c0): length(2) precision(1) height(2) width(2).
    std::size_t at = 2;
    while (at + 1 < b.size() && !(b[at] == 0xff && b[at + 1] == 0xc0)) ++at;
    QVERIFY(at + 9 < b.size());
    b[at + 5] = 0x75, b[at + 6] = 0x30;  // height 30000 (libjpeg itself stops at 65500)
    b[at + 7] = 0x75, b[at + 8] = 0x30;  // width 30000
    test_support::write_bytes(file, b);
    const QString msg = data_error([&] { read_image(file); });
    QVERIFY2(msg.contains("bomb.jpg: JPEG: header declares 30000 x 30000 pixels, more than the 16384"), qPrintable(msg));
}

void TestImageDecoder::bmp_huge_and_rle_refused() {
    const std::string file = path("huge.bmp");
    test_support::write_bmp(file, test_support::pattern(4, 4, 3));
    auto b = test_support::read_bytes(file);
    b[18] = 0x00, b[19] = 0x00, b[20] = 0x10, b[21] = 0x00;  // width 1 Mi, little-endian
    test_support::write_bytes(file, b);
    QString msg = data_error([&] { read_image(file); });
    QVERIFY2(msg.contains("huge.bmp: BMP: header declares 1048576 x 4 pixels"), qPrintable(msg));

    const std::string rle = path("rle.bmp");
    test_support::write_bmp(rle, test_support::pattern(4, 4, 1));
    b = test_support::read_bytes(rle);
    b[30] = 1;  // BI_RLE8
    test_support::write_bytes(rle, b);
    msg = data_error([&] { read_image(rle); });
    QVERIFY2(msg.contains("rle.bmp: BMP: RLE compression is not read"), qPrintable(msg));
}

void TestImageDecoder::pixel_cap_applies() {
    const std::string file = path("big.webp");
    test_support::write_webp_lossless(file, test_support::pattern(300, 200, 3));
    ImageLimits limits;
    limits.max_pixels = 50000;
    const QString msg = data_error([&] { read_image(file, limits); });
    QVERIFY2(msg.contains("big.webp: WebP: header declares 300 x 200 pixels (60000), more than the 50000 pixels allowed"),
             qPrintable(msg));
    limits.max_file_bytes = 10;
    QVERIFY(data_error([&] { read_image(file, limits); }).contains("allowed per image file"));
}

QTEST_GUILESS_MAIN(TestImageDecoder)
#include "test_image_decoder.moc"
