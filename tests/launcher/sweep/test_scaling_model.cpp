// The scaling model: the header's worked example by hand; on points drawn from a known cost
// (compute + per peer + per KiB) with seeded ±3% noise, the fit finds the costs and the
// leave-one-out test predicts every point within 15%; a term that would come out negative is
// left out rather than predicting that more traffic is faster.
#include <QtTest>

#include <random>

#include "scaling_model.h"

using namespace thresher::launcher::sweep;

class TestScalingModel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void worked_example();
    void recovers_known_costs_and_passes_leave_one_out();
    void no_negative_costs();
    void from_sweep_points();
};

void TestScalingModel::worked_example() {
    const auto m = fit_scaling_model(QList<ModelPoint>{{1, 0, 20}, {2, 48, 32}});
    QVERIFY(m.fitted);
    QCOMPARE(m.terms, (QStringList{"compute", "per_peer"}));
    QCOMPARE(m.compute_ms, 20.0);
    QCOMPARE(m.per_peer_ms, 12.0);
    QCOMPARE(m.per_kib_ms, 0.0);
    QCOMPARE(m.predict(4, 0), 56.0);
}

void TestScalingModel::recovers_known_costs_and_passes_leave_one_out() {
    // Two strategies' traffic per worker: one message to every peer (64 KiB each), or a constant
    // 300 KiB; compute 25 ms, 1.5 ms per peer, 0.02 ms per KiB.
    std::mt19937 rng(2024);
    std::uniform_real_distribution<double> noise(-0.03, 0.03);
    QList<PointResult> points;
    int index = 0;
    for (const QString strategy : {"gradient-sharing", "parameter-averaging"})
        for (int n : {1, 2, 3, 4, 6, 8}) {
            const double kib = n == 1 ? 0 : strategy == "gradient-sharing" ? 64.0 * (n - 1) : 300.0;
            const double ms = (25 + 1.5 * (n - 1) + 0.02 * kib) * (1 + noise(rng));
            PointResult p;
            p.point = index++;
            p.label = QString("%1 × %2").arg(strategy).arg(n);
            p.workers = n;
            p.batch = 32;
            p.strategy = strategy;
            p.samples_per_s = 1000.0 * n * p.batch / ms;
            p.bytes_per_iter = kib * 1024 * n;
            points << p;
        }
    const auto m = fit_scaling_model(points);
    QVERIFY(m.fitted);
    QCOMPARE(m.points, 12);
    QVERIFY2(std::abs(m.compute_ms - 25) < 1.5, qPrintable(QString::number(m.compute_ms)));
    QVERIFY2(std::abs(m.per_peer_ms - 1.5) < 0.6, qPrintable(QString::number(m.per_peer_ms)));
    QVERIFY2(std::abs(m.per_kib_ms - 0.02) < 0.006, qPrintable(QString::number(m.per_kib_ms)));
    QCOMPARE(m.leave_one_out.size(), 12);
    for (const auto& l : m.leave_one_out) {
        QVERIFY(l.relative_error);
        QVERIFY2(*l.relative_error < 0.15, qPrintable(QString("%1: %2 %").arg(l.label).arg(*l.relative_error * 100)));
    }
    QVERIFY(*m.max_loo_error < 0.15);
    // Beyond: gradient sharing's traffic per worker grows with its peers, averaging's does not.
    const QList<PointResult> gs = points.mid(0, 6), pa = points.mid(6);
    QCOMPARE(extrapolated_kib(gs, 16), 64.0 * 15);
    QCOMPARE(extrapolated_kib(pa, 16), 300.0);
    QCOMPARE(extrapolated_kib(gs, 1), 0.0);
}

void TestScalingModel::no_negative_costs() {
    // More traffic, less time: nothing in these points shows a cost of traffic.
    const auto m = fit_scaling_model(QList<ModelPoint>{{1, 0, 30}, {2, 10, 29}, {2, 100, 20}, {3, 200, 19}});
    QVERIFY(m.fitted);
    QVERIFY(m.per_kib_ms >= 0);
    QVERIFY(m.per_peer_ms >= 0);
    QVERIFY(!fit_scaling_model(QList<ModelPoint>{}).fitted);
}

void TestScalingModel::from_sweep_points() {
    PointResult one, two;
    one.workers = 1;
    one.batch = 64;
    one.samples_per_s = 3200;  // 20 ms per iteration
    two.point = 1;
    two.workers = 2;
    two.batch = 64;
    two.samples_per_s = 4000;  // 2 × 64 / 4000 = 32 ms
    two.bytes_per_iter = 2 * 48 * 1024.0;
    const auto p = model_point(two);
    QVERIFY(p);
    QCOMPARE(p->iter_ms, 32.0);
    QCOMPARE(p->kib_per_worker, 48.0);
    const auto m = fit_scaling_model(QList<PointResult>{one, two});
    QCOMPARE(m.compute_ms, 20.0);
    QCOMPARE(m.leave_one_out.size(), 2);
    // One point left cannot separate compute from per-peer cost; it still predicts with compute.
    QCOMPARE(*m.leave_one_out[0].predicted_ms, 32.0);
    QVERIFY(m.to_json().value("leave_one_out").toArray().size() == 2);
    PointResult none;
    QVERIFY(!model_point(none));
}

QTEST_MAIN(TestScalingModel)
#include "test_scaling_model.moc"
