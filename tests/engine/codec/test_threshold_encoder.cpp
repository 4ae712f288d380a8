// ThresholdEncoder: hand-worked messages (the arithmetic is in the comments), the "nothing is
// dropped, only delayed" identities on random vectors, agreement of the three format policies with
// a plain reference loop, and the Sparse/Bitmap hysteresis at exactly N/16 and N/32.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "codec/threshold_encoder.h"
#include "core/error.h"
#include "core/rng.h"

using namespace thresher;
using namespace thresher::dist;
using Format = EncodedUpdate::Format;
using Policy = ThresholdEncoder::FormatPolicy;

Q_DECLARE_METATYPE(std::vector<float>)
Q_DECLARE_METATYPE(std::vector<std::int32_t>)

namespace {

// The message as one sign per parameter (+1, -1, 0), whatever its format.
std::vector<int> signs_of(const EncodedUpdate& m) {
    std::vector<int> s(m.length, 0);
    if (m.format == Format::Sparse) {
        for (const std::int32_t v : m.sparse) s[static_cast<std::size_t>(std::abs(v)) - 1] = v > 0 ? 1 : -1;
    } else {
        for (std::size_t i = 0; i < m.length; ++i) {
            const unsigned code = (m.bitmap[i / 16] >> (2 * (i % 16))) & 3u;
            s[i] = code == 1 ? 1 : code == 2 ? -1 : 0;
        }
    }
    return s;
}

// The definition, one entry at a time: what every encoder policy must reproduce bit for bit.
std::vector<int> reference_encode(std::vector<float>& r, float t) {
    std::vector<int> s(r.size(), 0);
    for (std::size_t i = 0; i < r.size(); ++i) {
        if (r[i] >= t) {
            r[i] -= t;
            s[i] = 1;
        } else if (r[i] <= -t) {
            r[i] += t;
            s[i] = -1;
        }
    }
    return s;
}

// A residual with exactly `hits` entries at ±[τ, 3τ] (some exactly ±τ) and the rest strictly
// inside (−τ, τ), at positions drawn without replacement.
std::vector<float> residual_with_hits(std::size_t n, std::size_t hits, float t, Rng& rng) {
    std::uniform_real_distribution<float> inside(-0.999f * t, 0.999f * t), outside(t, 3 * t);
    std::vector<float> r(n);
    for (float& v : r) v = inside(rng);
    std::vector<std::size_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) idx[i] = i;
    std::shuffle(idx.begin(), idx.end(), rng);
    for (std::size_t k = 0; k < hits; ++k) {
        const float mag = k % 7 == 0 ? t : outside(rng);
        r[idx[k]] = (k % 2 ? -1.f : 1.f) * mag;
    }
    return r;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

class TestThresholdEncoder : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void hand_worked_data();
    void hand_worked();
    void drains_one_tau_per_call();
    void tiny_vector_auto_mode();
    void exact_per_call_data();
    void exact_per_call();
    void sums_over_many_iterations();
    void policies_match_reference_data();
    void policies_match_reference();
    void limits();
    void format_switching_data();
    void format_switching();
    void reuses_output_buffers();
    void nan_and_infinity();
    void rejects_bad_threshold_data();
    void rejects_bad_threshold();
    void rejects_oversized_length();
};

// N = 8, τ = 0.5, values chosen to be exact in binary:
//   r       = { 0.25, 0.5, -0.75, 1.375, -0.5, 0.4375, -0.125, 2.0 }
//   crosses:    no    +τ    −τ     +τ     −τ    no      no      +τ     → count 5
//   new r   = { 0.25, 0,   -0.25, 0.875,  0,   0.4375, -0.125, 1.5 }
//   sparse  = { +2, −3, +4, −5, +8 }                       (±(i+1))
//   bitmap  = 01<<2 | 10<<4 | 01<<6 | 10<<8 | 01<<14
//           = 0x4 + 0x20 + 0x40 + 0x200 + 0x4000 = 0x4264
// Auto with N = 8: sparse_limit(8) = max(0, 1) = 1, so 5 entries go out as a bitmap.
void TestThresholdEncoder::hand_worked_data() {
    QTest::addColumn<int>("policy");
    QTest::addColumn<int>("format");
    QTest::newRow("sparse") << int(Policy::Sparse) << int(Format::Sparse);
    QTest::newRow("bitmap") << int(Policy::Bitmap) << int(Format::Bitmap);
    QTest::newRow("auto") << int(Policy::Auto) << int(Format::Bitmap);
}

void TestThresholdEncoder::hand_worked() {
    QFETCH(int, policy);
    QFETCH(int, format);
    std::vector<float> r{0.25f, 0.5f, -0.75f, 1.375f, -0.5f, 0.4375f, -0.125f, 2.0f};
    ThresholdEncoder enc(8, static_cast<Policy>(policy));
    const EncodedUpdate m = enc.encode(r.data(), 0.5f);
    QCOMPARE(int(m.format), format);
    QCOMPARE(m.length, 8u);
    QCOMPARE(m.threshold, 0.5f);
    QCOMPARE(m.count, 5u);
    if (m.format == Format::Sparse) {
        QCOMPARE(m.sparse, (std::vector<std::int32_t>{2, -3, 4, -5, 8}));
        QVERIFY(m.bitmap.empty());
    } else {
        QCOMPARE(m.bitmap, (std::vector<std::uint32_t>{0x4264u}));
        QVERIFY(m.sparse.empty());
    }
    QCOMPARE(r, (std::vector<float>{0.25f, 0.f, -0.25f, 0.875f, 0.f, 0.4375f, -0.125f, 1.5f}));
}

// Continuing the example: an entry sends at most one τ per call, the rest waits.
//   call 2: 0.875 → +τ (0.375), 1.5 → +τ (1.0)   sparse {+4, +8}
//   call 3: 1.0 → +τ (0.5)                        sparse {+8}
//   call 4: 0.5 → +τ (0)                          sparse {+8}
//   call 5: nothing crosses                       sparse {}
// Entry 7 sent 4·0.5 = 2.0, all of it; entry 3 sent 2·0.5 and keeps 0.375: 1.375 in total.
void TestThresholdEncoder::drains_one_tau_per_call() {
    std::vector<float> r{0.25f, 0.5f, -0.75f, 1.375f, -0.5f, 0.4375f, -0.125f, 2.0f};
    ThresholdEncoder enc(8, Policy::Sparse);
    (void)enc.encode(r.data(), 0.5f);
    const std::vector<std::vector<std::int32_t>> expected{{4, 8}, {8}, {8}, {}};
    for (const auto& e : expected) QCOMPARE(enc.encode(r.data(), 0.5f).sparse, e);
    QCOMPARE(r, (std::vector<float>{0.25f, 0.f, -0.25f, 0.375f, 0.f, 0.4375f, -0.125f, 0.f}));
}

// N = 8 in Auto mode: limit = exit = 1. Counts 5, 2, 1, 1, 0 all go out as bitmaps (the mode
// was entered at 5 and 1 is not below the exit); the empty message sends the encoder back, so
// the sixth call (count 0) is Sparse again.
void TestThresholdEncoder::tiny_vector_auto_mode() {
    std::vector<float> r{0.25f, 0.5f, -0.75f, 1.375f, -0.5f, 0.4375f, -0.125f, 2.0f};
    ThresholdEncoder enc(8);
    QCOMPARE(int(enc.mode()), int(Format::Sparse));
    const std::vector<std::pair<std::uint32_t, Format>> expected{
        {5, Format::Bitmap}, {2, Format::Bitmap}, {1, Format::Bitmap},
        {1, Format::Bitmap}, {0, Format::Bitmap}, {0, Format::Sparse}};
    for (const auto& [count, format] : expected) {
        const EncodedUpdate m = enc.encode(r.data(), 0.5f);
        QCOMPARE(m.count, count);
        QCOMPARE(int(m.format), int(format));
    }
}

// decoded message + new residual == old residual, bit for bit, where the subtraction r ∓ τ is
// exact: |r| ≤ 2τ (Sterbenz: x − y is exact for y/2 ≤ x ≤ 2y), or τ a power of two and
// |r| < 2^24·τ (r and τ are then both multiples of ulp(r), and so is their difference, which is
// smaller than r). Otherwise r ∓ τ rounds, by at most half an ulp of the result.
void TestThresholdEncoder::exact_per_call_data() {
    QTest::addColumn<float>("tau");
    QTest::addColumn<float>("spread");  // values are τ·spread·N(0, 1)
    QTest::addColumn<bool>("exact");
    QTest::newRow("sterbenz range, tau 0.0137") << 0.0137f << 0.0f << true;
    QTest::newRow("power-of-two tau, wide range") << 0.0078125f << 40.f << true;
    QTest::newRow("any tau, wide range") << 0.0137f << 40.f << false;
}

void TestThresholdEncoder::exact_per_call() {
    QFETCH(float, tau);
    QFETCH(float, spread);
    QFETCH(bool, exact);
    Rng rng(derive_seed(7, 1));
    std::normal_distribution<float> normal(0.f, 1.f);
    std::uniform_real_distribution<float> sterbenz(-2 * tau, 2 * tau);
    for (const Policy policy : {Policy::Auto, Policy::Sparse, Policy::Bitmap}) {
        const std::size_t n = 10007;
        std::vector<float> r(n);
        for (float& v : r) v = spread == 0.f ? sterbenz(rng) : tau * spread * normal(rng);
        const std::vector<float> old = r;
        ThresholdEncoder enc(n, policy);
        const EncodedUpdate m = enc.encode(r.data(), tau);
        QVERIFY(m.count > 0);
        std::vector<float> decoded(n, 0.f);
        apply(m, decoded.data(), 1.f);
        for (std::size_t i = 0; i < n; ++i) {
            const float sum = decoded[i] + r[i];
            if (exact) {
                QVERIFY2(sum == old[i], qPrintable(QString("entry %1: %2 + %3 != %4").arg(i).arg(decoded[i]).arg(r[i]).arg(old[i])));
            } else {
                // |fl(r − τ) − (r − τ)| ≤ ulp(r)/2, and adding τ back in double is exact enough.
                const double ulp = std::nextafter(std::fabs(old[i]), INFINITY) - std::fabs(old[i]);
                QVERIFY2(std::fabs(double(decoded[i]) + double(r[i]) - double(old[i])) <= 0.5 * ulp,
                         qPrintable(QString("entry %1").arg(i)));
            }
            QVERIFY(std::fabs(r[i]) < tau || std::fabs(old[i]) >= 2 * tau);  // below τ unless it had more than one τ
        }
    }
}

// Σ messages + residual == Σ updates over a run whose density swings across both formats.
// Error bound: each iteration rounds twice in float, r + u and then r ∓ τ, each by at most
// half an ulp of its result, i.e. ≤ 2^-24·M where M bounds |r| (before and after encoding).
// Messages (±τ) and updates are summed in double, whose own rounding (2^-53) is negligible.
// So after T iterations |Σm + r − Σu| ≤ T·2·2^-24·M = T·2^-23·M per entry.
void TestThresholdEncoder::sums_over_many_iterations() {
    const std::size_t n = 5003;
    const int iterations = 300;
    const float tau = 0.01f;
    Rng rng(derive_seed(7, 2));
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> r(n, 0.f), u(n), decoded(n);
    std::vector<double> sent(n, 0.0), updates(n, 0.0);
    ThresholdEncoder enc(n);
    double max_abs = 0;
    int sparse = 0, bitmap = 0;
    for (int t = 0; t < iterations; ++t) {
        const float sigma = (t / 20) % 2 ? 0.02f : 0.0005f;  // 20 quiet, 20 busy, ...
        for (std::size_t i = 0; i < n; ++i) {
            u[i] = sigma * normal(rng);
            updates[i] += u[i];
            r[i] += u[i];
            max_abs = std::max(max_abs, double(std::fabs(r[i])));
        }
        const EncodedUpdate m = enc.encode(r.data(), tau);
        (m.format == Format::Sparse ? sparse : bitmap) += 1;
        std::fill(decoded.begin(), decoded.end(), 0.f);
        apply(m, decoded.data(), 1.f);
        for (std::size_t i = 0; i < n; ++i) {
            sent[i] += decoded[i];
            max_abs = std::max(max_abs, double(std::fabs(r[i])));
        }
    }
    QVERIFY2(sparse > 0 && bitmap > 0, qPrintable(QString("sparse %1, bitmap %2").arg(sparse).arg(bitmap)));
    const double bound = iterations * std::ldexp(1.0, -23) * max_abs;
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(sent[i] + r[i] - updates[i]));
    QVERIFY2(worst <= bound, qPrintable(QString("worst %1 > bound %2").arg(worst).arg(bound)));
}

// Every policy, every size class (tails of 1..15 after the last full word), every density:
// the same signs and the same residual, bit for bit, as the one-entry-at-a-time definition.
void TestThresholdEncoder::policies_match_reference_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<double>("density");
    for (const int n : {1, 15, 16, 17, 31, 33, 64, 1000, 4096, 100003})
        for (const double d : {0.0, 0.001, 0.05, 0.0625, 0.5, 1.0})
            QTest::addRow("n=%d density=%g", n, d) << n << d;
}

void TestThresholdEncoder::policies_match_reference() {
    QFETCH(int, n);
    QFETCH(double, density);
    const float tau = 0.25f;
    Rng rng(derive_seed(7, 3, std::uint64_t(n) * 1000 + std::uint64_t(density * 1000)));
    const auto hits = static_cast<std::size_t>(std::llround(density * n));
    const std::vector<float> start = residual_with_hits(std::size_t(n), hits, tau, rng);
    std::vector<float> expected_r = start;
    const std::vector<int> expected = reference_encode(expected_r, tau);
    for (const Policy policy : {Policy::Auto, Policy::Sparse, Policy::Bitmap}) {
        std::vector<float> r = start;
        ThresholdEncoder enc(std::size_t(n), policy);
        const EncodedUpdate m = enc.encode(r.data(), tau);
        QCOMPARE(std::size_t(m.count), hits);
        QCOMPARE(signs_of(m), expected);
        for (std::size_t i = 0; i < r.size(); ++i) QVERIFY(same_bits(r[i], expected_r[i]));
        if (policy == Policy::Auto)
            QCOMPARE(int(m.format), int(hits >= ThresholdEncoder::sparse_limit(n) ? Format::Bitmap : Format::Sparse));
        if (m.format == Format::Sparse)
            QVERIFY(std::is_sorted(m.sparse.begin(), m.sparse.end(),
                                   [](std::int32_t a, std::int32_t b) { return std::abs(a) < std::abs(b); }));
        else
            QCOMPARE(m.bitmap.size(), bitmap_words(std::size_t(n)));
    }
}

void TestThresholdEncoder::limits() {
    QCOMPARE(ThresholdEncoder::sparse_limit(1024), std::size_t(64));
    QCOMPARE(ThresholdEncoder::bitmap_exit(1024), std::size_t(32));
    QCOMPARE(ThresholdEncoder::sparse_limit(1000), std::size_t(62));
    QCOMPARE(ThresholdEncoder::bitmap_exit(1000), std::size_t(31));
    QCOMPARE(ThresholdEncoder::sparse_limit(8), std::size_t(1));
    QCOMPARE(ThresholdEncoder::bitmap_exit(8), std::size_t(1));
    QCOMPARE(ThresholdEncoder::sparse_limit(0), std::size_t(1));
    // Sparse at limit − 1 entries is never larger than the bitmap: 4·(N/16 − 1) < N/4.
    for (const std::size_t n : {16u, 1000u, 1024u, 1800000u})
        QVERIFY(4 * (ThresholdEncoder::sparse_limit(n) - 1) < 4 * bitmap_words(n));
}

// One row is a sequence of messages with the given entry counts from one Auto encoder.
// N = 1024: limit 64, exit 32.  N = 1000: limit 62, exit 31.
void TestThresholdEncoder::format_switching_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<QList<int>>("counts");
    QTest::addColumn<QString>("formats");  // S or B per message
    QTest::addColumn<QString>("modes");    // the mode after each message
    QTest::newRow("one below the limit") << 1024 << QList<int>{63} << "S" << "S";
    QTest::newRow("exactly the limit") << 1024 << QList<int>{64} << "B" << "B";
    QTest::newRow("bitmap down to the exit") << 1024 << QList<int>{64, 63, 40, 32} << "BBBB" << "BBBB";
    QTest::newRow("below the exit") << 1024 << QList<int>{64, 31, 63, 64} << "BBSB" << "BSSB";
    QTest::newRow("empty from bitmap") << 1024 << QList<int>{100, 0, 0} << "BBS" << "BSS";
    QTest::newRow("hysteresis band")
        << 1024 << QList<int>{40, 63, 64, 63, 33, 32, 31, 40, 63, 64}
        << "SSBBBBBSSB" << "SSBBBBSSSB";
    QTest::newRow("n=1000") << 1000 << QList<int>{61, 62, 31, 30, 61, 62} << "SBBBSB" << "SBBSSB";
    QTest::newRow("all set") << 1000 << QList<int>{1000, 1000, 0} << "BBB" << "BBS";
}

void TestThresholdEncoder::format_switching() {
    QFETCH(int, n);
    QFETCH(QList<int>, counts);
    QFETCH(QString, formats);
    QFETCH(QString, modes);
    const float tau = 0.5f;
    Rng rng(derive_seed(7, 4, std::uint64_t(n)));
    ThresholdEncoder enc{std::size_t(n)};
    for (int k = 0; k < counts.size(); ++k) {
        std::vector<float> r = residual_with_hits(std::size_t(n), std::size_t(counts[k]), tau, rng);
        std::vector<float> expected_r = r;
        const std::vector<int> expected = reference_encode(expected_r, tau);
        const EncodedUpdate m = enc.encode(r.data(), tau);
        const QString where = QString("message %1 (%2 entries)").arg(k).arg(counts[k]);
        QVERIFY2(std::int64_t(m.count) == counts[k], qPrintable(where));
        QVERIFY2(QChar(m.format == Format::Sparse ? 'S' : 'B') == formats[k], qPrintable(where + ": format"));
        QVERIFY2(QChar(enc.mode() == Format::Sparse ? 'S' : 'B') == modes[k], qPrintable(where + ": mode after"));
        QVERIFY2(signs_of(m) == expected, qPrintable(where + ": entries"));
        QVERIFY2(r == expected_r, qPrintable(where + ": residual"));
    }
}

// Refilling one EncodedUpdate: a bitmap message followed by a sparse one leaves no stale words.
void TestThresholdEncoder::reuses_output_buffers() {
    Rng rng(derive_seed(7, 5));
    ThresholdEncoder enc(1024);
    EncodedUpdate m;
    std::vector<float> r = residual_with_hits(1024, 500, 0.5f, rng);
    enc.encode(r.data(), 0.5f, m);
    QCOMPARE(int(m.format), int(Format::Bitmap));
    r = residual_with_hits(1024, 3, 0.5f, rng);
    enc.encode(r.data(), 0.5f, m);  // bitmap (mode), 3 < 32 → back to sparse
    r = residual_with_hits(1024, 5, 0.5f, rng);
    enc.encode(r.data(), 0.5f, m);
    QCOMPARE(int(m.format), int(Format::Sparse));
    QCOMPARE(m.count, 5u);
    QCOMPARE(m.sparse.size(), std::size_t(5));
    QVERIFY(m.bitmap.empty());
    QCOMPARE(encoded_bytes(m), kEncodedHeaderBytes + 20);
}

// NaN never crosses (comparisons with NaN are false) and stays in the residual; +inf crosses
// every time and stays +inf. Neither disturbs its neighbours. The pattern sits in a full block,
// in a block next to a quiet one and in the partial tail (N = 53 = 3·16 + 5).
void TestThresholdEncoder::nan_and_infinity() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> pattern{nan, 1.f, inf, -inf, 0.25f};
    const std::vector<int> signs{0, 1, 1, -1, 0};
    for (const Policy policy : {Policy::Sparse, Policy::Bitmap}) {
        std::vector<float> r(53, 0.f);
        std::vector<int> expected(53, 0);
        for (const std::size_t at : {0u, 35u, 48u})
            for (std::size_t j = 0; j < pattern.size(); ++j) {
                r[at + j] = pattern[j];
                expected[at + j] = signs[j];
            }
        ThresholdEncoder enc(r.size(), policy);
        const EncodedUpdate m = enc.encode(r.data(), 0.5f);
        QCOMPARE(signs_of(m), expected);
        for (const std::size_t at : {0u, 35u, 48u}) {
            QVERIFY(std::isnan(r[at]));
            QCOMPARE(r[at + 1], 0.5f);
            QCOMPARE(r[at + 2], inf);
            QCOMPARE(r[at + 3], -inf);
            QCOMPARE(r[at + 4], 0.25f);
        }
    }
}

void TestThresholdEncoder::rejects_bad_threshold_data() {
    QTest::addColumn<float>("tau");
    QTest::newRow("zero") << 0.f;
    QTest::newRow("negative") << -0.5f;
    QTest::newRow("nan") << std::numeric_limits<float>::quiet_NaN();
    QTest::newRow("infinity") << std::numeric_limits<float>::infinity();
}

void TestThresholdEncoder::rejects_bad_threshold() {
    QFETCH(float, tau);
    std::vector<float> r(8, 1.f);
    ThresholdEncoder enc(8);
    QVERIFY_THROWS_EXCEPTION(Error, enc.encode(r.data(), tau));
    QCOMPARE(r, std::vector<float>(8, 1.f));  // untouched
}

void TestThresholdEncoder::rejects_oversized_length() {
    QVERIFY_THROWS_EXCEPTION(Error, ThresholdEncoder(std::size_t(kMaxEncodedLength) + 1));
    ThresholdEncoder ok(kMaxEncodedLength);  // constructing allocates nothing
    QCOMPARE(ok.length(), std::size_t(kMaxEncodedLength));
}

QTEST_APPLESS_MAIN(TestThresholdEncoder)
#include "test_threshold_encoder.moc"
