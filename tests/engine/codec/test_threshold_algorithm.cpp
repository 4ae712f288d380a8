// Threshold algorithms: τ sequences against hand computation, state kept by clone(), the floor
// that keeps τ a positive normal float, and the spec-string parser with its error messages.
#include <QtTest>

#include <cmath>
#include <limits>

#include "codec/threshold_algorithm.h"
#include "core/error.h"

using namespace thresher;
using namespace thresher::dist;

// d = 0.5^(1/20) = 0.9659363289248456; 1/d = 1.0352649238413775.
static constexpr double kD = 0.9659363289248456;

class TestThresholdAlgorithm : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void decay_constant();
    void sequences_data();
    void sequences();
    void clone_keeps_state();
    void threshold_stays_a_positive_float();
    void ceiling_stops_a_runaway_data();
    void ceiling_stops_a_runaway();
    void parse_data();
    void parse();
    void parse_errors_data();
    void parse_errors();
};

void TestThresholdAlgorithm::decay_constant() {
    QCOMPARE(default_threshold_decay(), kD);
    QVERIFY(std::abs(std::pow(kD, 20) - 0.5) < 1e-15);
}

// Each row feeds the densities of the previous messages (−1: none yet) and expects these τ.
void TestThresholdAlgorithm::sequences_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QList<double>>("densities");
    QTest::addColumn<QList<double>>("expected");
    // fixed: whatever happens.
    QTest::newRow("fixed") << "fixed:0.25" << QList<double>{-1, 0.9, 0.0, 1e-9} << QList<double>{0.25, 0.25, 0.25, 0.25};
    // adaptive defaults, band [1e-4, 1e-2], start 1e-3:
    //   first → 1e-3; 0.05 > 1e-2 → 1e-3/d = 1.0352649e-3; again → 1.0717735e-3;
    //   0.001 inside → stays; 5e-5 < 1e-4 → ·d = 1.0352649e-3; 0 (nothing sent) → ·d = 1e-3
    QTest::newRow("adaptive defaults")
        << "adaptive" << QList<double>{-1, 0.05, 0.05, 0.001, 5e-5, 0}
        << QList<double>{1e-3, 1.0352649238413775e-3, 1.0717734625362932e-3, 1.0717734625362932e-3,
                         1.0352649238413775e-3, 1e-3};
    // The band is inclusive at both ends.
    QTest::newRow("adaptive band edges") << "adaptive" << QList<double>{-1, 1e-4, 1e-2} << QList<double>{1e-3, 1e-3, 1e-3};
    // decay 0.5 makes every step a doubling or halving: 0.5 → 1 → 2 → (0.15 inside) 2 → 1.
    QTest::newRow("adaptive, decay 0.5") << "adaptive:0.5:0.1:0.2:0.5" << QList<double>{-1, 0.3, 0.3, 0.15, 0.05}
                                         << QList<double>{0.5, 1, 2, 2, 1};
    // target 0.25, start 1, decay 0.5: 0.5 above → 2; on target → 2; below → 1; below → 0.5.
    QTest::newRow("target, decay 0.5") << "target:0.25:1:0.5" << QList<double>{-1, 0.5, 0.25, 0.1, 0.1}
                                       << QList<double>{1, 2, 2, 1, 0.5};
    // target defaults (1e-3 density, start 1e-3): 2e-3 above → 1e-3/d; on target; 0 below → ·d.
    QTest::newRow("target defaults") << "target" << QList<double>{-1, 2e-3, 1e-3, 0}
                                     << QList<double>{1e-3, 1.0352649238413775e-3, 1.0352649238413775e-3, 1e-3};
    // A negative density after the first message carries no information: τ stays.
    QTest::newRow("no information") << "target:0.25:1:0.5" << QList<double>{-1, 0.5, -1, 0.5}
                                    << QList<double>{1, 2, 2, 4};
}

void TestThresholdAlgorithm::sequences() {
    QFETCH(QString, spec);
    QFETCH(QList<double>, densities);
    QFETCH(QList<double>, expected);
    const auto a = parse_threshold_algorithm(spec.toStdString());
    for (int k = 0; k < densities.size(); ++k) {
        const float tau = a->next(k, 1000, densities[k]);
        // τ is kept in double and rounded to float on the way out: relative error ≤ 2^-24.
        QVERIFY2(std::abs(tau - expected[k]) <= 1e-7 * expected[k],
                 qPrintable(QString("step %1: %2, expected %3").arg(k).arg(tau, 0, 'g', 9).arg(expected[k], 0, 'g', 9)));
    }
}

void TestThresholdAlgorithm::clone_keeps_state() {
    AdaptiveThreshold a(0.5, 0.1, 0.2, 0.5);
    QCOMPARE(a.next(0, 10, -1), 0.5f);
    QCOMPARE(a.next(1, 10, 0.9), 1.f);
    const auto b = a.clone();
    QCOMPARE(b->next(2, 10, 0.9), 2.f);  // continues from 1, not from the start
    QCOMPARE(a.next(2, 10, 0.0), 0.5f);  // the original is independent of the copy
    QCOMPARE(b->name(), a.name());
}

// 5000 empty messages would take τ to 1e-3·0.5^250 ≈ 1e-78 and then 0; 5000 full ones to 1e+72.
// Both stop at the float range so the encoder always gets a positive finite τ.
void TestThresholdAlgorithm::threshold_stays_a_positive_float() {
    for (const double density : {0.0, 1.0}) {
        AdaptiveThreshold a;
        TargetDensityThreshold t;
        float last_a = a.next(0, 10, -1), last_t = t.next(0, 10, -1);
        for (int k = 1; k < 5000; ++k) {
            last_a = a.next(k, 10, density);
            last_t = t.next(k, 10, density);
            QVERIFY(std::isfinite(last_a) && last_a >= std::numeric_limits<float>::min());
            QVERIFY(std::isfinite(last_t) && last_t >= std::numeric_limits<float>::min());
        }
        const float edge = density == 0 ? std::numeric_limits<float>::min() : std::numeric_limits<float>::max();
        QCOMPARE(last_a, edge);
        QCOMPARE(last_t, edge);
    }
}

// Accepted specs and the canonical name each gives back (parse(name) rebuilds the same thing).
void TestThresholdAlgorithm::parse_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("name");
    QTest::newRow("fixed") << "fixed:0.001" << "fixed:0.001";
    QTest::newRow("fixed, exponent") << "fixed:1e-3" << "fixed:0.001";
    QTest::newRow("adaptive") << "adaptive" << "adaptive:0.001:0.0001:0.01:0.9659363289248456";
    QTest::newRow("adaptive, initial") << "adaptive:2e-3" << "adaptive:0.002:0.0001:0.01:0.9659363289248456";
    QTest::newRow("adaptive, band") << "adaptive:1e-3:1e-4:1e-2" << "adaptive:0.001:0.0001:0.01:0.9659363289248456";
    QTest::newRow("adaptive, all") << "adaptive:1:0.1:0.2:0.5" << "adaptive:1:0.1:0.2:0.5";
    QTest::newRow("target") << "target" << "target:0.001:0.001:0.9659363289248456";
    QTest::newRow("target, density") << "target:1e-2" << "target:0.01:0.001:0.9659363289248456";
    QTest::newRow("target, all") << "target:0.01:0.5:0.75" << "target:0.01:0.5:0.75";
    QTest::newRow("min equals max") << "adaptive:1e-3:1e-3:1e-3" << "adaptive:0.001:0.001:0.001:0.9659363289248456";
}

void TestThresholdAlgorithm::parse() {
    QFETCH(QString, spec);
    QFETCH(QString, name);
    const auto a = parse_threshold_algorithm(spec.toStdString());
    QCOMPARE(QString::fromStdString(a->name()), name);
    QCOMPARE(QString::fromStdString(parse_threshold_algorithm(a->name())->name()), name);
}

void TestThresholdAlgorithm::parse_errors_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("problem");
    QTest::newRow("empty") << "" << "unknown threshold algorithm \"\"";
    QTest::newRow("unknown") << "sparsity:1e-3" << "unknown threshold algorithm \"sparsity\"";
    QTest::newRow("case matters") << "Fixed:0.1" << "unknown threshold algorithm";
    QTest::newRow("fixed without value") << "fixed" << "expected fixed:<threshold>";
    QTest::newRow("fixed, two values") << "fixed:1:2" << "expected fixed[:τ]";
    QTest::newRow("fixed, empty value") << "fixed:" << "\"\" is not a number";
    QTest::newRow("fixed, text") << "fixed:abc" << "\"abc\" is not a number";
    QTest::newRow("fixed, trailing text") << "fixed:1e-3x" << "\"1e-3x\" is not a number";
    QTest::newRow("fixed, plus sign") << "fixed:+1" << "\"+1\" is not a number";
    QTest::newRow("fixed, zero") << "fixed:0" << "must be a positive finite number";
    QTest::newRow("fixed, negative") << "fixed:-0.1" << "must be a positive finite number";
    QTest::newRow("fixed, inf") << "fixed:inf" << "must be a positive finite number";
    QTest::newRow("fixed, nan") << "fixed:nan" << "must be a positive finite number";
    QTest::newRow("fixed, beyond float") << "fixed:1e39" << "must be a positive finite number";
    QTest::newRow("fixed, below float") << "fixed:1e-50" << "too small for a float";
    QTest::newRow("adaptive, min above max") << "adaptive:1e-3:1e-2:1e-4" << "is above the maximum density";
    QTest::newRow("adaptive, zero min") << "adaptive:1e-3:0:1e-2" << "minimum density must be in (0, 1]";
    QTest::newRow("adaptive, max above 1") << "adaptive:1e-3:1e-4:2" << "maximum density must be in (0, 1]";
    QTest::newRow("adaptive, decay 1") << "adaptive:1e-3:1e-4:1e-2:1" << "decay must be in [0.5, 1)";
    QTest::newRow("adaptive, decay 0.4") << "adaptive:1e-3:1e-4:1e-2:0.4" << "decay must be in [0.5, 1)";
    QTest::newRow("adaptive, too many") << "adaptive:1:0.1:0.2:0.5:9" << "expected adaptive[:τ[:min[:max[:decay]]]]";
    QTest::newRow("target, zero") << "target:0" << "target density must be in (0, 1]";
    QTest::newRow("target, bad initial") << "target:0.01:-1" << "initial threshold must be a positive finite number";
    QTest::newRow("target, too many") << "target:0.01:0.1:0.9:1" << "expected target[:density[:τ[:decay]]]";
}

void TestThresholdAlgorithm::parse_errors() {
    QFETCH(QString, spec);
    QFETCH(QString, problem);
    try {
        (void)parse_threshold_algorithm(spec.toStdString(), "--threshold-algorithm");
        QFAIL("accepted");
    } catch (const ConfigError& e) {
        const QString what = QString::fromUtf8(e.what());
        QVERIFY2(what.startsWith("--threshold-algorithm: \"" + spec + "\": "), qPrintable(what));
        QVERIFY2(what.contains(problem), qPrintable(QString("\"%1\" does not say \"%2\"").arg(what, problem)));
    }
}

void TestThresholdAlgorithm::ceiling_stops_a_runaway_data() {
    QTest::addColumn<QString>("spec");
    QTest::newRow("adaptive") << "adaptive";
    QTest::newRow("target") << "target:1e-3";
}

// A density stuck above the band raised τ by 3.5% per message without end (issue: both-stale
// runs grew τ until NaN). With a ceiling it climbs to the ceiling and stays there; when the
// density falls back into the band it comes down from there, not from wherever it had drifted.
void TestThresholdAlgorithm::ceiling_stops_a_runaway() {
    QFETCH(QString, spec);
    auto a = dist::parse_threshold_algorithm(spec.toStdString());
    a->set_ceiling(4e-3);
    float tau = a->next(0, 1000, -1);
    QCOMPARE(tau, 1e-3f);
    for (int i = 1; i < 1000; ++i) tau = a->next(i, 1000, 0.5);
    QCOMPARE(tau, 4e-3f);
    tau = a->next(1000, 1000, 1e-7);  // now too sparse: τ shrinks from the ceiling
    QVERIFY(tau < 4e-3f && tau > 3.8e-3f);
    QVERIFY(a->density_band().has_value());
    auto fixed = dist::parse_threshold_algorithm("fixed:0.01");
    fixed->set_ceiling(4e-3);  // a fixed τ is the user's choice
    QCOMPARE(fixed->next(0, 1000, 0.5), 0.01f);
    QVERIFY(!fixed->density_band());
}

QTEST_APPLESS_MAIN(TestThresholdAlgorithm)
#include "test_threshold_algorithm.moc"
