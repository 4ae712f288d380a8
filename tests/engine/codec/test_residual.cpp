// Residual post-processing (DL4J's clipping every 5 iterations to ±5τ, or nothing), its spec
// parser, and the debug statistics on vectors whose percentiles are worked out by hand.
#include <QtTest>

#include <cmath>
#include <limits>
#include <vector>

#include "codec/residual.h"
#include "core/error.h"

using namespace thresher;
using namespace thresher::dist;

class TestResidual : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void clipping_schedule_data();
    void clipping_schedule();
    void none_leaves_residual();
    void parse_data();
    void parse();
    void parse_errors_data();
    void parse_errors();
    void stats_data();
    void stats();
    void stats_edge_cases();
};

// τ = 0.5, so the default clip value is 5·0.5 = 2.5:
//   r = {3.0, −7.5, 1.0, 2.5, −2.5, 0} → {2.5, −2.5, 1.0, 2.5, −2.5, 0} on clipping iterations.
// "clip:2:1.5" clips to ±0.75 on iterations 2, 4, ...: → {0.75, −0.75, 0.75, 0.75, −0.75, 0}.
void TestResidual::clipping_schedule_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QList<int>>("clipped_at");  // iterations 0..12 that clip
    QTest::addColumn<QList<float>>("clipped");
    QTest::newRow("default") << "clip" << QList<int>{5, 10} << QList<float>{2.5f, -2.5f, 1.f, 2.5f, -2.5f, 0.f};
    QTest::newRow("every 2, 1.5 tau") << "clip:2:1.5" << QList<int>{2, 4, 6, 8, 10, 12}
                                      << QList<float>{0.75f, -0.75f, 0.75f, 0.75f, -0.75f, 0.f};
    QTest::newRow("every iteration") << "clip:1:5" << QList<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
                                     << QList<float>{2.5f, -2.5f, 1.f, 2.5f, -2.5f, 0.f};
}

void TestResidual::clipping_schedule() {
    QFETCH(QString, spec);
    QFETCH(QList<int>, clipped_at);
    QFETCH(QList<float>, clipped);
    const QList<float> start{3.f, -7.5f, 1.f, 2.5f, -2.5f, 0.f};
    const auto p = parse_residual_processor(spec.toStdString());
    for (int iteration = 0; iteration <= 12; ++iteration) {
        std::vector<float> r(start.begin(), start.end());
        p->process(iteration, 0.5f, r.data(), r.size());
        const QList<float> expected = clipped_at.contains(iteration) ? clipped : start;
        QVERIFY2(QList<float>(r.begin(), r.end()) == expected, qPrintable(QString("iteration %1").arg(iteration)));
    }
}

void TestResidual::none_leaves_residual() {
    NoResidualProcessing none;
    std::vector<float> r{1e9f, -1e9f, std::numeric_limits<float>::quiet_NaN()};
    for (int iteration = 0; iteration <= 20; ++iteration) none.process(iteration, 0.5f, r.data(), r.size());
    QCOMPARE(r[0], 1e9f);
    QCOMPARE(r[1], -1e9f);
    QVERIFY(std::isnan(r[2]));
    QCOMPARE(QString::fromStdString(none.clone()->name()), QString("none"));
}

void TestResidual::parse_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("name");
    QTest::newRow("clip") << "clip" << "clip:5:5";
    QTest::newRow("clip:5:5") << "clip:5:5" << "clip:5:5";
    QTest::newRow("clip:3:2.5") << "clip:3:2.5" << "clip:3:2.5";
    QTest::newRow("none") << "none" << "none";
}

void TestResidual::parse() {
    QFETCH(QString, spec);
    QFETCH(QString, name);
    const auto p = parse_residual_processor(spec.toStdString());
    QCOMPARE(QString::fromStdString(p->name()), name);
    QCOMPARE(QString::fromStdString(p->clone()->name()), name);
}

void TestResidual::parse_errors_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("problem");
    QTest::newRow("empty") << "" << "unknown residual processing";
    QTest::newRow("unknown") << "clamp" << "unknown residual processing";
    QTest::newRow("clip with one field") << "clip:5" << "expected clip:<every>:<multiple>";
    QTest::newRow("clip with three fields") << "clip:5:5:5" << "expected clip:<every>:<multiple>";
    QTest::newRow("clip, text") << "clip:a:5" << "\"a\" is not a number";
    QTest::newRow("clip, fractional interval") << "clip:2.5:5" << "\"2.5\" is not a number";
    QTest::newRow("clip, interval 0") << "clip:0:5" << "clipping interval must be at least 1";
    QTest::newRow("clip, negative interval") << "clip:-5:5" << "clipping interval must be at least 1";
    QTest::newRow("clip, multiple below 1") << "clip:5:0.5" << "clipping multiple must be a finite number >= 1";
    QTest::newRow("clip, multiple inf") << "clip:5:inf" << "clipping multiple must be a finite number >= 1";
    QTest::newRow("none with fields") << "none:1" << "unknown residual processing";
}

void TestResidual::parse_errors() {
    QFETCH(QString, spec);
    QFETCH(QString, problem);
    try {
        (void)parse_residual_processor(spec.toStdString(), "--residual");
        QFAIL("accepted");
    } catch (const ConfigError& e) {
        const QString what = QString::fromUtf8(e.what());
        QVERIFY2(what.startsWith("--residual: \"" + spec + "\": "), qPrintable(what));
        QVERIFY2(what.contains(problem), qPrintable(QString("\"%1\" does not say \"%2\"").arg(what, problem)));
    }
}

// Vectors with |r_i|/τ = (i+1)/8 (exact in binary), signs alternating, τ = 0.5.
//   n = 4 (header example {0.25, −0.5, 1, −2} is the same shape with /2): see the row.
//   n = 100, all sampled: mean = (1+…+100)/8/100 = 5050/800 = 6.3125, max 100/8 = 12.5,
//     nearest rank: p50 = 50th = 50/8 = 6.25, p90 = 90th = 11.25, p99 = 99th = 12.375.
//   n = 1000, sample 100: stride 10 picks i = 0, 10, …, 990, i.e. (i+1)/8 = 0.125, 1.375, …;
//     p50 = 50th pick, i = 490 → 491/8 = 61.375; p90 → i = 890 → 111.375; p99 → i = 980 → 122.625.
//     mean and max still cover all 1000: 500500/8000 = 62.5625 and 125.
void TestResidual::stats_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("sample");
    QTest::addColumn<double>("mean");
    QTest::addColumn<double>("max");
    QTest::addColumn<double>("p50");
    QTest::addColumn<double>("p90");
    QTest::addColumn<double>("p99");
    // n = 4: |r|/τ = {0.125, 0.25, 0.375, 0.5}: mean 0.3125; p50 = 2nd = 0.25; p90 = p99 = 4th.
    QTest::newRow("n=4") << 4 << 100000 << 0.3125 << 0.5 << 0.25 << 0.5 << 0.5;
    QTest::newRow("n=100") << 100 << 100000 << 6.3125 << 12.5 << 6.25 << 11.25 << 12.375;
    QTest::newRow("n=1000 sampled") << 1000 << 100 << 62.5625 << 125.0 << 61.375 << 111.375 << 122.625;
}

void TestResidual::stats() {
    QFETCH(int, n);
    QFETCH(int, sample);
    QFETCH(double, mean);
    QFETCH(double, max);
    QFETCH(double, p50);
    QFETCH(double, p90);
    QFETCH(double, p99);
    const float tau = 0.5f;
    std::vector<float> r(static_cast<std::size_t>(n));
    // Reversed when every entry is sampled, so the percentiles do not start from sorted data; in
    // order when sampling, so the stride picks i = 0, 10, … as worked out above.
    for (int i = 0; i < n; ++i) {
        const int at = sample < n ? i : n - 1 - i;
        r[std::size_t(at)] = (i % 2 ? -1.f : 1.f) * tau * float(i + 1) / 8.f;
    }
    const ResidualStats s = residual_stats(r.data(), r.size(), tau, std::size_t(sample));
    QCOMPARE(s.mean_abs, mean);
    QCOMPARE(s.max_abs, max);
    QCOMPARE(s.p50, p50);
    QCOMPARE(s.p90, p90);
    QCOMPARE(s.p99, p99);
}

void TestResidual::stats_edge_cases() {
    const ResidualStats empty = residual_stats(nullptr, 0, 0.5f);
    QCOMPARE(empty.mean_abs, 0.0);
    QCOMPARE(empty.p99, 0.0);
    // The header's example: τ = 0.5, r = {0.25, −0.5, 1, −2} → |r|/τ = {0.5, 1, 2, 4}.
    const std::vector<float> r{0.25f, -0.5f, 1.f, -2.f};
    const ResidualStats s = residual_stats(r.data(), r.size(), 0.5f);
    QCOMPARE(s.mean_abs, 1.875);
    QCOMPARE(s.max_abs, 4.0);
    QCOMPARE(s.p50, 1.0);
    QCOMPARE(s.p90, 4.0);
    QCOMPARE(s.p99, 4.0);
    // NaN counts as +infinity: it shows in max and the top percentiles, not as a crash or a 0.
    const std::vector<float> bad{0.25f, std::numeric_limits<float>::quiet_NaN(), 0.5f};
    const ResidualStats b = residual_stats(bad.data(), bad.size(), 0.5f);
    QVERIFY(std::isinf(b.max_abs));
    QVERIFY(std::isinf(b.mean_abs));
    QVERIFY(std::isinf(b.p99));
    QCOMPARE(b.p50, 1.0);
    // sample 0 is treated as 1: only r[0] is looked at for the percentiles.
    const ResidualStats one = residual_stats(r.data(), r.size(), 0.5f, 0);
    QCOMPARE(one.p50, 0.5);
    QCOMPARE(one.max_abs, 4.0);
    QVERIFY_THROWS_EXCEPTION(Error, residual_stats(r.data(), r.size(), 0.f));
    QVERIFY_THROWS_EXCEPTION(Error, residual_stats(r.data(), r.size(), std::numeric_limits<float>::infinity()));
}

QTEST_APPLESS_MAIN(TestResidual)
#include "test_residual.moc"
