// The wire format of a gradient-sharing message: golden bytes worked out by hand, round trips of
// encoder output in both formats, a table of hostile byte strings each refused for its own reason,
// and a few thousand random, truncated and bit-flipped buffers that must be refused or decode to a
// well-formed message (run under ASan/UBSan too: no read or write out of bounds).
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "codec/encoded_update.h"
#include "codec/threshold_encoder.h"
#include "core/error.h"
#include "core/rng.h"

using namespace thresher;
using namespace thresher::dist;
using Format = EncodedUpdate::Format;

namespace {

QByteArray le32(std::uint32_t v) {
    QByteArray b(4, '\0');
    for (int k = 0; k < 4; ++k) b[k] = char((v >> (8 * k)) & 0xff);
    return b;
}

QByteArray header(int format, std::uint32_t length, float tau, std::uint32_t count, int reserved = 0) {
    QByteArray b;
    b.append(char(format)).append(char(reserved)).append(char(0)).append(char(0));
    return b + le32(length) + le32(std::bit_cast<std::uint32_t>(tau)) + le32(count);
}

QByteArray body(std::initializer_list<std::int64_t> values) {
    QByteArray b;
    for (const std::int64_t v : values) b += le32(static_cast<std::uint32_t>(v));
    return b;
}

std::span<const std::uint8_t> bytes_of(const QByteArray& b) {
    return {reinterpret_cast<const std::uint8_t*>(b.constData()), static_cast<std::size_t>(b.size())};
}

QByteArray to_qbytes(const std::vector<std::uint8_t>& v) {
    return QByteArray(reinterpret_cast<const char*>(v.data()), static_cast<qsizetype>(v.size()));
}

// The example of test_threshold_encoder: N = 8, τ = 0.5, +τ at 1, 3, 7 and −τ at 2, 4.
EncodedUpdate example(Format format) {
    EncodedUpdate u;
    u.format = format;
    u.length = 8;
    u.threshold = 0.5f;
    u.count = 5;
    if (format == Format::Sparse)
        u.sparse = {2, -3, 4, -5, 8};
    else
        u.bitmap = {0x4264u};
    return u;
}

// Everything deserialize promises about a message it accepted.
QString well_formed(const EncodedUpdate& u, std::uint32_t expected_length) {
    if (u.length != expected_length) return "length";
    if (!std::isfinite(u.threshold) || !(u.threshold > 0.f)) return "threshold";
    if (u.count > u.length) return "count > length";
    if (u.format == Format::Sparse) {
        if (!u.bitmap.empty() || u.sparse.size() != u.count) return "sparse size";
        std::int64_t previous = 0;
        for (const std::int32_t v : u.sparse) {
            const std::int64_t i = std::abs(std::int64_t(v));
            if (i < 1 || i > std::int64_t(u.length) || i <= previous) return "sparse index";
            previous = i;
        }
    } else {
        if (!u.sparse.empty() || u.bitmap.size() != bitmap_words(u.length)) return "bitmap size";
        std::uint64_t set = 0;
        for (std::size_t k = 0; k < u.bitmap.size(); ++k) {
            const std::uint32_t w = u.bitmap[k];
            if (w & (w >> 1) & 0x55555555u) return "code 11";
            set += std::popcount(w);
            for (unsigned j = 0; j < 16; ++j)
                if (16 * k + j >= u.length && ((w >> (2 * j)) & 3u)) return "padding";
        }
        if (set != u.count) return "bitmap count";
    }
    return {};
}

}  // namespace

class TestEncodedUpdate : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void golden_bytes_data();
    void golden_bytes();
    void round_trip_data();
    void round_trip();
    void accepts_edge_cases_data();
    void accepts_edge_cases();
    void hostile_data();
    void hostile();
    void random_buffers();
    void apply_data();
    void apply();
};

// Header: format, 3 reserved zeros, length 8, τ = 0.5f = 0x3f000000, count 5 (all little-endian).
// Sparse body: 2, −3 = 0xfffffffd, 4, −5 = 0xfffffffb, 8.   Bitmap body: 0x00004264.
void TestEncodedUpdate::golden_bytes_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<QByteArray>("hex");
    QTest::newRow("sparse") << int(Format::Sparse)
                            << QByteArray("01000000" "08000000" "0000003f" "05000000"
                                          "02000000" "fdffffff" "04000000" "fbffffff" "08000000");
    QTest::newRow("bitmap") << int(Format::Bitmap)
                            << QByteArray("02000000" "08000000" "0000003f" "05000000" "64420000");
}

void TestEncodedUpdate::golden_bytes() {
    QFETCH(int, format);
    QFETCH(QByteArray, hex);
    const EncodedUpdate u = example(static_cast<Format>(format));
    const std::vector<std::uint8_t> bytes = serialize(u);
    QCOMPARE(to_qbytes(bytes).toHex(), hex);
    QCOMPARE(encoded_bytes(u), bytes.size());
    const EncodedUpdate back = deserialize(bytes, 8);
    QCOMPARE(int(back.format), format);
    QCOMPARE(back.count, 5u);
    QCOMPARE(back.sparse, u.sparse);
    QCOMPARE(back.bitmap, u.bitmap);
}

void TestEncodedUpdate::round_trip_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<double>("density");
    QTest::addColumn<int>("policy");
    for (const int n : {1, 16, 17, 1000, 65537})
        for (const double d : {0.0, 0.01, 0.3, 1.0})
            for (const auto p : {ThresholdEncoder::FormatPolicy::Sparse, ThresholdEncoder::FormatPolicy::Bitmap})
                QTest::addRow("n=%d density=%g %s", n, d,
                              p == ThresholdEncoder::FormatPolicy::Sparse ? "sparse" : "bitmap")
                    << n << d << int(p);
}

void TestEncodedUpdate::round_trip() {
    QFETCH(int, n);
    QFETCH(double, density);
    QFETCH(int, policy);
    Rng rng(derive_seed(11, std::uint64_t(n), std::uint64_t(density * 100) * 2 + std::uint64_t(policy)));
    std::bernoulli_distribution hit(density), sign(0.5);
    std::vector<float> r(static_cast<std::size_t>(n));
    for (float& v : r) v = hit(rng) ? (sign(rng) ? 0.75f : -0.75f) : 0.125f;
    ThresholdEncoder enc(r.size(), static_cast<ThresholdEncoder::FormatPolicy>(policy));
    const EncodedUpdate u = enc.encode(r.data(), 0.5f);
    const std::vector<std::uint8_t> bytes = serialize(u);
    QCOMPARE(bytes.size(), encoded_bytes(u));
    const EncodedUpdate back = deserialize(bytes, static_cast<std::uint32_t>(n));
    QCOMPARE(int(back.format), int(u.format));
    QCOMPARE(back.length, u.length);
    QCOMPARE(back.threshold, u.threshold);
    QCOMPARE(back.count, u.count);
    QCOMPARE(back.sparse, u.sparse);
    QCOMPARE(back.bitmap, u.bitmap);
    QCOMPARE(serialize(back), bytes);
}

void TestEncodedUpdate::accepts_edge_cases_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<uint>("expected_length");
    QTest::addColumn<uint>("count");
    QTest::newRow("empty model, sparse") << header(1, 0, 1.f, 0) << 0u << 0u;
    QTest::newRow("empty model, bitmap") << header(2, 0, 1.f, 0) << 0u << 0u;
    QTest::newRow("empty sparse message") << header(1, 8, 0.5f, 0) << 8u << 0u;
    QTest::newRow("first and last entries") << header(1, 8, 0.5f, 2) + body({-1, 8}) << 8u << 2u;
    QTest::newRow("full bitmap") << header(2, 16, 0.5f, 16) + body({0x55555555}) << 16u << 16u;
    QTest::newRow("bitmap, 17 params") << header(2, 17, 0.5f, 2) + body({0x80000000u, 0x1}) << 17u << 2u;
    QTest::newRow("denormal threshold") << header(1, 8, std::numeric_limits<float>::denorm_min(), 0) << 8u << 0u;
}

void TestEncodedUpdate::accepts_edge_cases() {
    QFETCH(QByteArray, bytes);
    QFETCH(uint, expected_length);
    QFETCH(uint, count);
    const EncodedUpdate u = deserialize(bytes_of(bytes), expected_length);
    QCOMPARE(u.count, count);
    QCOMPARE(well_formed(u, expected_length), QString());
    QCOMPARE(to_qbytes(serialize(u)), bytes);
}

// Every way a byte string can be wrong, each with the reason the error must name.
void TestEncodedUpdate::hostile_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<uint>("expected_length");
    QTest::addColumn<QString>("reason");
    const QByteArray ok_sparse = header(1, 8, 0.5f, 2) + body({2, -3});
    const QByteArray ok_bitmap = header(2, 8, 0.5f, 5) + body({0x4264});
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::uint32_t big = kMaxEncodedLength;

    QTest::newRow("empty") << QByteArray() << 8u << "truncated";
    QTest::newRow("half a header") << ok_sparse.left(8) << 8u << "truncated";
    QTest::newRow("header less one byte") << ok_sparse.left(15) << 8u << "truncated";
    QTest::newRow("format 0") << header(0, 8, 0.5f, 0) << 8u << "unknown format";
    QTest::newRow("format 3") << header(3, 8, 0.5f, 0) << 8u << "unknown format";
    QTest::newRow("format 255") << header(255, 8, 0.5f, 0) << 8u << "unknown format";
    QTest::newRow("reserved byte") << header(1, 8, 0.5f, 0, 1) << 8u << "reserved header bytes";
    QTest::newRow("length 9 for 8") << header(1, 9, 0.5f, 0) << 8u << "length mismatch";
    QTest::newRow("length 0 for 8") << header(1, 0, 0.5f, 0) << 8u << "length mismatch";
    QTest::newRow("threshold nan") << header(1, 8, nan, 0) << 8u << "bad threshold";
    QTest::newRow("threshold inf") << header(1, 8, inf, 0) << 8u << "bad threshold";
    QTest::newRow("threshold 0") << header(1, 8, 0.f, 0) << 8u << "bad threshold";
    QTest::newRow("threshold -0") << header(1, 8, -0.f, 0) << 8u << "bad threshold";
    QTest::newRow("threshold negative") << header(2, 8, -0.5f, 0) + body({0}) << 8u << "bad threshold";
    QTest::newRow("count 9 of 8") << header(1, 8, 0.5f, 9) + body({1, 2, 3, 4, 5, 6, 7, 8, 8}) << 8u
                                  << "count exceeds length";
    QTest::newRow("count 2^32-1") << header(1, 8, 0.5f, 0xffffffffu) << 8u << "count exceeds length";
    // A 16-byte header claiming 2^31 − 1 entries: refused before anything is allocated.
    QTest::newRow("huge sparse claim") << header(1, big, 0.5f, big) << big << "truncated";
    QTest::newRow("huge bitmap claim") << header(2, big, 0.5f, 0) << big << "truncated";
    QTest::newRow("sparse missing entry") << header(1, 8, 0.5f, 2) + body({2}) << 8u << "truncated";
    QTest::newRow("sparse half entry") << header(1, 8, 0.5f, 1) + QByteArray(2, '\x02') << 8u << "truncated";
    QTest::newRow("sparse extra entry") << header(1, 8, 0.5f, 1) + body({2, 3}) << 8u << "trailing bytes";
    QTest::newRow("sparse extra byte") << ok_sparse + QByteArray(1, '\0') << 8u << "trailing bytes";
    QTest::newRow("zero index") << header(1, 8, 0.5f, 2) + body({2, 0}) << 8u << "zero index";
    QTest::newRow("index 9 of 8") << header(1, 8, 0.5f, 1) + body({9}) << 8u << "index out of range";
    QTest::newRow("index -9 of 8") << header(1, 8, 0.5f, 1) + body({-9}) << 8u << "index out of range";
    QTest::newRow("INT32_MIN") << header(1, 8, 0.5f, 1) + body({std::numeric_limits<std::int32_t>::min()})
                               << 8u << "index out of range";
    QTest::newRow("INT32_MAX") << header(1, 8, 0.5f, 1) + body({std::numeric_limits<std::int32_t>::max()})
                               << 8u << "index out of range";
    QTest::newRow("duplicate") << header(1, 8, 0.5f, 2) + body({2, 2}) << 8u << "duplicate index";
    QTest::newRow("duplicate, both signs") << header(1, 8, 0.5f, 2) + body({-4, 4}) << 8u << "duplicate index";
    QTest::newRow("descending") << header(1, 8, 0.5f, 2) + body({3, -2}) << 8u << "indices not ascending";
    QTest::newRow("bitmap without body") << ok_bitmap.left(16) << 8u << "truncated";
    QTest::newRow("bitmap, 17 params, 1 word") << header(2, 17, 0.5f, 0) + body({0}) << 17u << "truncated";
    QTest::newRow("bitmap extra word") << ok_bitmap + body({0}) << 8u << "trailing bytes";
    QTest::newRow("bitmap code 11") << header(2, 8, 0.5f, 2) + body({0x3}) << 8u << "invalid bitmap code";
    QTest::newRow("bitmap code 11 high") << header(2, 16, 0.5f, 2) + body({0xc0000000u}) << 16u
                                         << "invalid bitmap code";
    QTest::newRow("bitmap count low") << header(2, 8, 0.5f, 4) + body({0x4264}) << 8u << "count mismatch";
    QTest::newRow("bitmap count high") << header(2, 8, 0.5f, 6) + body({0x4264}) << 8u << "count mismatch";
    QTest::newRow("bitmap padding") << header(2, 8, 0.5f, 1) + body({0x10000}) << 8u << "padding bits set";
    QTest::newRow("sparse body as bitmap") << header(2, 8, 0.5f, 2) + body({2, -3}) << 8u << "trailing bytes";
}

void TestEncodedUpdate::hostile() {
    QFETCH(QByteArray, bytes);
    QFETCH(uint, expected_length);
    QFETCH(QString, reason);
    try {
        (void)deserialize(bytes_of(bytes), expected_length);
        QFAIL("accepted");
    } catch (const Error& e) {
        const QString what = QString::fromUtf8(e.what());
        QVERIFY2(what.startsWith("encoded update: "), qPrintable(what));
        QVERIFY2(what.contains(reason), qPrintable(QString("\"%1\" does not name \"%2\"").arg(what, reason)));
    }
}

// Valid messages from the encoder, then damaged: cut short, bits flipped, bytes overwritten,
// bytes appended, or replaced with noise behind a plausible header. Each must be refused with
// thresher::Error or decode to a well-formed message that serializes back to the same bytes.
void TestEncodedUpdate::random_buffers() {
    Rng rng(derive_seed(11, 99));
    std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>> seeds;
    for (const std::uint32_t n : {8u, 37u, 1000u}) {
        for (const double d : {0.02, 0.5}) {
            for (const auto p : {ThresholdEncoder::FormatPolicy::Sparse, ThresholdEncoder::FormatPolicy::Bitmap}) {
                std::bernoulli_distribution hit(d), sign(0.5);
                std::vector<float> r(n);
                for (float& v : r) v = hit(rng) ? (sign(rng) ? 1.f : -1.f) : 0.f;
                ThresholdEncoder enc(n, p);
                seeds.emplace_back(n, serialize(enc.encode(r.data(), 0.5f)));
            }
        }
    }
    std::uniform_int_distribution<int> byte(0, 255), mutation(0, 5);
    int accepted = 0, refused = 0;
    const int cases = 4000;
    for (int c = 0; c < cases; ++c) {
        const auto& [n, seed] = seeds[static_cast<std::size_t>(c) % seeds.size()];
        std::vector<std::uint8_t> b = seed;
        const auto pick = [&](std::size_t size) {
            return std::uniform_int_distribution<std::size_t>(0, size ? size - 1 : 0)(rng);
        };
        switch (mutation(rng)) {
        case 0:  // cut short
            b.resize(pick(b.size() + 1));
            break;
        case 1:  // flip 1 to 4 bits anywhere
            for (int k = 1 + pick(4); k > 0; --k) b[pick(b.size())] ^= std::uint8_t(1u << pick(8));
            break;
        case 2:  // flip a bit in the body only: the header stays plausible
            if (b.size() > kEncodedHeaderBytes)
                b[kEncodedHeaderBytes + pick(b.size() - kEncodedHeaderBytes)] ^= std::uint8_t(1u << pick(8));
            break;
        case 3:  // overwrite a byte
            b[pick(b.size())] = std::uint8_t(byte(rng));
            break;
        case 4:  // append 1 to 8 bytes
            for (int k = 1 + pick(8); k > 0; --k) b.push_back(std::uint8_t(byte(rng)));
            break;
        default:  // keep the header, replace the body with noise of a random length
            b.resize(kEncodedHeaderBytes + pick(2 * (b.size() - kEncodedHeaderBytes) + 8));
            for (std::size_t k = kEncodedHeaderBytes; k < b.size(); ++k) b[k] = std::uint8_t(byte(rng));
            break;
        }
        try {
            const EncodedUpdate u = deserialize(b, n);
            const QString problem = well_formed(u, n);
            QVERIFY2(problem.isEmpty(), qPrintable(QString("case %1: accepted but %2").arg(c).arg(problem)));
            QVERIFY2(serialize(u) == b, qPrintable(QString("case %1: not canonical").arg(c)));
            std::vector<float> target(n, 0.f);
            dist::apply(u, target.data(), 1.f);
            ++accepted;
        } catch (const Error&) {
            ++refused;
        }
    }
    qInfo("%d accepted, %d refused", accepted, refused);
    QVERIFY(accepted > 100);
    QVERIFY(refused > 1000);
}

// θ −= message with scale −1: the example message on θ = 1 everywhere.
//   +τ at 1, 3, 7 → 0.5;  −τ at 2, 4 → 1.5;  the rest stays 1.
// Scale 2 on zeros decodes to ±2τ = ±1.
void TestEncodedUpdate::apply_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<float>("start");
    QTest::addColumn<float>("scale");
    QTest::addColumn<QList<float>>("expected");
    for (const Format f : {Format::Sparse, Format::Bitmap}) {
        const char* name = f == Format::Sparse ? "sparse" : "bitmap";
        QTest::addRow("%s, parameter update", name)
            << int(f) << 1.f << -1.f << QList<float>{1.f, 0.5f, 1.5f, 0.5f, 1.5f, 1.f, 1.f, 0.5f};
        QTest::addRow("%s, scale 2", name)
            << int(f) << 0.f << 2.f << QList<float>{0.f, 1.f, -1.f, 1.f, -1.f, 0.f, 0.f, 1.f};
    }
}

void TestEncodedUpdate::apply() {
    QFETCH(int, format);
    QFETCH(float, start);
    QFETCH(float, scale);
    QFETCH(QList<float>, expected);
    std::vector<float> target(8, start);
    dist::apply(example(static_cast<Format>(format)), target.data(), scale);
    QCOMPARE(QList<float>(target.begin(), target.end()), expected);
}

QTEST_APPLESS_MAIN(TestEncodedUpdate)
#include "test_encoded_update.moc"
