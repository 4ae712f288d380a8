// scalability(): the worked example of scalability.h by hand, the baseline being the smallest
// count whatever the order, and no estimate without a measured single-worker iteration time.
#include <QtTest>

#include "scalability.h"

using thresher::launcher::sweep::ScalePoint;

class TestScalability : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void worked_example();
    void baseline_is_smallest_count();
};

void TestScalability::worked_example() {
    ScalePoint one{1, 1000, 50.0, 0.0, std::nullopt};
    ScalePoint four{4, 3200, 60.0, 1.0, 0.5};
    const auto rows = thresher::launcher::sweep::scalability({four, one});
    QCOMPARE(rows.size(), 2);
    QCOMPARE(rows[0].workers, 1);
    QCOMPARE(rows[0].speedup, 1.0);
    QCOMPARE(*rows[0].estimate_speedup, 1.0);  // one worker: no encoding, no decoding
    QCOMPARE(rows[1].speedup, 3.2);
    QCOMPARE(rows[1].efficiency, 0.8);
    QCOMPARE(*rows[1].estimate_efficiency, 50.0 / 53.0);
    QCOMPARE(*rows[1].estimate_speedup, 4 * 50.0 / 53.0);
    const auto with_overhead = thresher::launcher::sweep::scalability({one, four}, 7.0);
    QCOMPARE(*with_overhead[1].estimate_efficiency, 50.0 / 60.0);
}

void TestScalability::baseline_is_smallest_count() {
    ScalePoint two{2, 1800, std::nullopt, std::nullopt, std::nullopt};
    ScalePoint four{4, 3000, std::nullopt, std::nullopt, std::nullopt};
    const auto rows = thresher::launcher::sweep::scalability({four, two});
    QCOMPARE(rows[0].workers, 2);
    QCOMPARE(rows[0].speedup, 2.0);  // per-worker baseline: 900 samples/s
    QCOMPARE(rows[1].speedup, 3000.0 / 900.0);
    QVERIFY(!rows[1].estimate_speedup);
    QVERIFY(thresher::launcher::sweep::scalability({}).isEmpty());
}

QTEST_MAIN(TestScalability)
#include "test_scalability.moc"
