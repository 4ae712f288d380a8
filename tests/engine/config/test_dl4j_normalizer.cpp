// DL4J's normalizer.bin (engine/config/dl4j_normalizer.h), written here as NormalizerSerializer
// writes it (test_support::JavaOut: big-endian DataOutputStream, ND4J arrays by their documented
// layout) from known statistics: each normaliser's shift/scale applied to sample values gives
// what DL4J's own formula gives, and truncated, oversized, lying or unsupported files are clear
// errors naming normalizer.bin.
#include <QtTest>

#include <cmath>
#include <fstream>

#include "config/dl4j_normalizer.h"
#include "core/error.h"
#include "weight_files.h"

using namespace thresher;
using test_support::Bytes;
using test_support::JavaOut;

namespace {

const std::string kSource = "model.zip: normalizer.bin";

config::ModelConfig flat_model(int n) {
    return config::ModelConfig::parse(R"({"input":{"size":)" + std::to_string(n) + R"(},"layers":[{"type":"output","units":2}]})",
                                  "m.json");
}

config::ModelConfig image_model() {
    return config::ModelConfig::parse(R"({"input":{"channels":2,"height":3,"width":3},"layers":[{"type":"output","units":2}]})",
                                  "m.json");
}

void append(JavaOut& o, const Bytes& b) { o.b.insert(o.b.end(), b.begin(), b.end()); }

JavaOut header(const std::string& type) {
    JavaOut o;
    o.utf("NORMALIZER");
    o.be(1, 4);
    o.utf(type);
    return o;
}

Bytes standardize(const std::vector<float>& mean, const std::vector<float>& sd, bool fit_label = false) {
    auto o = header("STANDARDIZE");
    o.be(fit_label ? 1 : 0, 1);
    append(o, test_support::nd4j_row(mean, false, false));
    append(o, test_support::nd4j_row(sd, true, true));  // 0.x style, doubles: both eras are read
    if (fit_label) {
        append(o, test_support::nd4j_row({0.f}, false, false));
        append(o, test_support::nd4j_row({1.f}, false, false));
    }
    return o.b;
}

Bytes min_max(double tmin, double tmax, const std::vector<float>& lo, const std::vector<float>& hi) {
    auto o = header("MIN_MAX");
    o.be(0, 1);
    o.f64(tmin);
    o.f64(tmax);
    append(o, test_support::nd4j_row(lo, false, false));
    append(o, test_support::nd4j_row(hi, false, false));
    return o.b;
}

Bytes image(double lo, double hi, double max_pixel) {
    auto o = header("IMAGE_MIN_MAX");
    o.f64(lo);
    o.f64(hi);
    o.f64(max_pixel);
    return o.b;
}

float apply(const config::ImportedNormalization& n, std::size_t i, float x) { return (x - n.shift[i]) * n.scale[i]; }

void save_corpus(const char* name, const Bytes& b) {
    const QByteArray dir = qgetenv("THRESHER_NORMALIZER_CORPUS");
    if (dir.isEmpty()) return;
    std::ofstream(dir.toStdString() + "/" + name, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

QString refusal(const Bytes& b, const config::ModelConfig& m) {
    try {
        config::read_dl4j_normalizer(b, kSource, m);
    } catch (const ConfigError& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

}  // namespace

class TestDl4jNormalizer : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void standardizeAsDl4j();
    void minMaxAsDl4j();
    void imageScalerAsDl4j();
    void perChannelStatisticsSpread();
    void refused_data();
    void refused();
    void everyTruncationIsAnError();
};

// DL4J: x' = (x - mean) / max(std, 1e-5) (DistributionStats rounds a zero std up to 1e-5).
void TestDl4jNormalizer::standardizeAsDl4j() {
    const std::vector<float> mean{0.5f, -2.f, 10.f, 0.f}, sd{2.f, 0.25f, 0.f, 1.f};
    const auto b = standardize(mean, sd);
    save_corpus("standardize.bin", b);
    const auto n = config::read_dl4j_normalizer(b, kSource, flat_model(4));
    QCOMPARE(n.kind, std::string("standardize"));
    for (std::size_t i = 0; i < 4; ++i)
        for (float x : {-3.f, 0.f, 1.5f, 12.f}) {
            const double want = (x - mean[i]) / std::max<double>(sd[i], 1e-5);
            QVERIFY2(std::abs(apply(n, i, x) - want) <= 1e-5 * std::max(1.0, std::abs(want)),
                     qPrintable(QString("feature %1 x %2: %3, DL4J %4").arg(i).arg(x).arg(apply(n, i, x)).arg(want)));
        }
}

// DL4J: x' = (x - min) / max(max - min, 1e-5) · (tMax - tMin) + tMin. A constant feature (its
// range rounded up to 1e-5, a scale of 2e5 here) agrees to the float precision of its shift times
// that scale.
void TestDl4jNormalizer::minMaxAsDl4j() {
    const std::vector<float> lo{0.f, -5.f, 3.f}, hi{255.f, 5.f, 3.f};
    const auto b = min_max(-1.0, 1.0, lo, hi);
    save_corpus("minmax.bin", b);
    const auto n = config::read_dl4j_normalizer(b, kSource, flat_model(3));
    QCOMPARE(n.kind, std::string("minmax"));
    for (std::size_t i = 0; i < 3; ++i)
        for (float x : {-5.f, 0.f, 3.f, 100.f}) {
            const double want = (x - lo[i]) / std::max<double>(hi[i] - lo[i], 1e-5) * 2.0 - 1.0;
            const double tolerance = 1e-5 * std::max(1.0, std::abs(want)) + 1e-6 * n.scale[i] * std::max(1.f, std::abs(x));
            QVERIFY2(std::abs(apply(n, i, x) - want) <= tolerance,
                     qPrintable(QString("feature %1 x %2: %3, DL4J %4").arg(i).arg(x).arg(apply(n, i, x)).arg(want)));
        }
}

// DL4J: x' = x / maxPixelVal · (maxRange - minRange) + minRange, every feature alike.
void TestDl4jNormalizer::imageScalerAsDl4j() {
    const auto b = image(-0.5, 0.5, 255.0);
    save_corpus("image.bin", b);
    const auto m = image_model();
    const auto n = config::read_dl4j_normalizer(b, kSource, m);
    QCOMPARE(n.shift.size(), m.input.size());
    for (std::size_t i = 0; i < n.shift.size(); ++i)
        for (float x : {0.f, 17.f, 128.f, 255.f}) QVERIFY(std::abs(apply(n, i, x) - (x / 255.0 - 0.5)) < 1e-6);
}

// Statistics of an image data set per channel: every pixel of a channel gets its channel's.
void TestDl4jNormalizer::perChannelStatisticsSpread() {
    const auto b = standardize({1.f, -1.f}, {2.f, 4.f});
    const auto n = config::read_dl4j_normalizer(b, kSource, image_model());
    QCOMPARE(n.shift.size(), std::size_t(18));
    for (std::size_t i = 0; i < 18; ++i) {
        QCOMPARE(n.shift[i], i < 9 ? 1.f : -1.f);
        QCOMPARE(n.scale[i], i < 9 ? 0.5f : 0.25f);
    }
}

void TestDl4jNormalizer::refused_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");
    auto q = [](const Bytes& b) { return QByteArray(reinterpret_cast<const char*>(b.data()), qsizetype(b.size())); };
    const std::vector<float> four{1, 2, 3, 4};
    QTest::newRow("java serialisation") << q({0xac, 0xed, 0x00, 0x05, 0x73, 0x72}) << "NORMALIZER";
    auto v2 = header("STANDARDIZE");
    v2.b[2 + 10 + 3] = 2;  // the version's low byte
    QTest::newRow("version 2") << q(v2.b) << "version 2";
    QTest::newRow("fitLabel") << q(standardize(four, four, true)) << "fitLabel";
    QTest::newRow("wrong size") << q(standardize({1, 2, 3}, {1, 2, 3})) << "input is 4";
    QTest::newRow("negative std") << q(standardize(four, {1, -1, 1, 1})) << "negative";
    QTest::newRow("NaN mean") << q(standardize({1, NAN, 3, 4}, four)) << "NaN";
    QTest::newRow("empty target range") << q(min_max(1.0, 1.0, four, four)) << "empty";
    QTest::newRow("zero max pixel") << q(image(0, 1, 0)) << "maxPixelVal";
    QTest::newRow("multi") << q(header("MULTI_STANDARDIZE").b) << "ComputationGraph";
    QTest::newRow("custom") << q(header("CUSTOM").b) << "CUSTOM";
    QTest::newRow("unknown") << q(header("IMAGE_VGG16").b) << "unknown normaliser type \"IMAGE_VGG16\"";
    auto trailing = standardize(four, four);
    trailing.push_back(0);
    QTest::newRow("trailing bytes") << q(trailing) << "1 bytes after";
    // An ND4J array that claims 2^40 floats in a few bytes: refused before anything is allocated.
    auto lying = header("STANDARDIZE");
    lying.be(0, 1);
    lying.utf("HEAP");
    lying.be(1u << 30, 4);
    lying.utf("INT");
    QTest::newRow("lying array length") << q(lying.b) << "normalizer.bin";
}

void TestDl4jNormalizer::refused() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    const Bytes b(bytes.begin(), bytes.end());
    const QString msg = refusal(b, flat_model(4));
    QVERIFY2(!msg.isEmpty(), "accepted");
    QVERIFY2(msg.startsWith(QString::fromStdString(kSource)), qPrintable(msg));
    QVERIFY2(msg.contains(expected), qPrintable(expected + " not in: " + msg));
}

// Every prefix of every kind is an error naming the file (bounded reads, never a crash).
void TestDl4jNormalizer::everyTruncationIsAnError() {
    const std::vector<float> four{1, 2, 3, 4};
    for (const auto& whole : {standardize(four, four), min_max(0, 1, four, {5, 6, 7, 8}), image(0, 1, 255)}) {
        for (std::size_t cut = 0; cut < whole.size(); ++cut) {
            const Bytes part(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
            const QString msg = refusal(part, flat_model(4));
            QVERIFY2(msg.startsWith(QString::fromStdString(kSource)), qPrintable(QString("cut at %1: %2").arg(cut).arg(msg)));
        }
    }
}

QTEST_GUILESS_MAIN(TestDl4jNormalizer)
#include "test_dl4j_normalizer.moc"
