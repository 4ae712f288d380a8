// Progress: totals worked out by hand from run_started, the current count as the most advanced
// worker, resumed runs starting at 0 %, the ETA from the recent rate, and the rendered line.
#include <QtTest>

#include "progress.h"

using thresher::launcher::Progress;

namespace {

QJsonObject started(qint64 samples, int batch, int workers, int epochs, int start_epoch = 0) {
    return {{"event", "run_started"}, {"t", 0.0}, {"node", 0}, {"train_samples", double(samples)}, {"batch", batch},
            {"workers", workers}, {"epochs", epochs}, {"start_epoch", start_epoch}};
}

QJsonObject iteration(int worker, qint64 iter, double t, int epoch = 0, double loss = 1.0) {
    return {{"event", "iteration"}, {"t", t}, {"node", 0}, {"worker", worker}, {"epoch", epoch}, {"iter", double(iter)},
            {"loss", loss}};
}

}  // namespace

class TestProgress : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void totals_data();
    void totals();
    void current_is_the_most_advanced_worker();
    void resumed_run_starts_at_zero();
    void eta_from_constant_rate();
    void eta_follows_the_recent_rate();
    void line();
    void line_before_start();
    void finished_is_complete();
    void format_duration_data();
    void format_duration();
};

void TestProgress::totals_data() {
    QTest::addColumn<qint64>("samples");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("workers");
    QTest::addColumn<int>("epochs");
    QTest::addColumn<int>("start_epoch");
    QTest::addColumn<qint64>("per_epoch");
    QTest::addColumn<qint64>("total");
    // Fashion-MNIST on 2 nodes: ceil(60000 / (64 × 2)) = 469 per epoch, × 2 epochs.
    QTest::newRow("fashion-mnist, 2 workers") << qint64(60000) << 64 << 2 << 2 << 0 << qint64(469) << qint64(938);
    // The tiny CSV of the launcher tests: ceil(96 / 16) = 6, × 3.
    QTest::newRow("96 samples, batch 8, 2 workers") << qint64(96) << 8 << 2 << 3 << 0 << qint64(6) << qint64(18);
    // Resumed after epoch 1 of 3: 2 epochs left, ceil(1000 / 40) = 25 each.
    QTest::newRow("resumed") << qint64(1000) << 10 << 4 << 3 << 1 << qint64(25) << qint64(50);
    QTest::newRow("exact fit") << qint64(100) << 100 << 1 << 1 << 0 << qint64(1) << qint64(1);
    QTest::newRow("one sample over") << qint64(101) << 100 << 1 << 1 << 0 << qint64(2) << qint64(2);
    QTest::newRow("more workers than batches") << qint64(10) << 8 << 4 << 5 << 0 << qint64(1) << qint64(5);
}

void TestProgress::totals() {
    QFETCH(qint64, samples);
    QFETCH(int, batch);
    QFETCH(int, workers);
    QFETCH(int, epochs);
    QFETCH(int, start_epoch);
    QFETCH(qint64, per_epoch);
    QFETCH(qint64, total);
    Progress p;
    QVERIFY(!p.started());
    p.add(started(samples, batch, workers, epochs, start_epoch));
    QVERIFY(p.started());
    QCOMPARE(p.iterations_per_epoch(), per_epoch);
    QCOMPARE(p.total(), total);
    QCOMPARE(p.current(), qint64(0));
    QCOMPARE(p.epochs(), epochs);
    QCOMPARE(p.epoch(), start_epoch + 1);
}

void TestProgress::current_is_the_most_advanced_worker() {
    Progress p;
    p.add(started(96, 8, 2, 3));
    p.add(started(96, 8, 2, 3));  // node 1 says the same; counted once
    QCOMPARE(p.total(), qint64(18));
    p.add(iteration(0, 1, 0.1));
    p.add(iteration(1, 1, 0.1));
    p.add(iteration(1, 2, 0.2));
    p.add(iteration(1, 3, 0.3));
    p.add(iteration(0, 2, 0.3));  // a worker behind does not pull the count back
    QCOMPARE(p.current(), qint64(3));
    p.add(iteration(0, 9, 0.9, 1));
    QCOMPARE(p.current(), qint64(9));
    QCOMPARE(p.epoch(), 2);
    QCOMPARE(p.fraction(), 0.5);
}

void TestProgress::resumed_run_starts_at_zero() {
    Progress p;
    p.add(started(1000, 10, 4, 3, 1));  // 25 iterations per epoch, one epoch done before
    QCOMPARE(p.epoch(), 2);
    p.add(iteration(0, 26, 0.1, 1));  // the engine counts from the start of the whole run
    QCOMPARE(p.current(), qint64(1));
    p.add(iteration(0, 50, 0.2, 1));
    QCOMPARE(p.current(), qint64(25));
    QCOMPARE(p.fraction(), 0.5);
}

void TestProgress::eta_from_constant_rate() {
    Progress p;
    p.add(started(1000, 10, 1, 1));  // 100 iterations
    QVERIFY(!p.eta_seconds());
    p.add(iteration(0, 1, 0.1));
    QVERIFY(!p.eta_seconds());  // one point is no rate
    for (int i = 2; i <= 50; ++i) p.add(iteration(0, i, 0.1 * i));  // 10 iterations a second
    QVERIFY(p.rate());
    QVERIFY(qAbs(*p.rate() - 10.0) < 1e-9);
    QVERIFY(qAbs(*p.eta_seconds() - 5.0) < 1e-9);  // 50 left at 10/s
}

void TestProgress::eta_follows_the_recent_rate() {
    Progress p(5.0);                // rate over the last 5 s of event time
    p.add(started(2000, 10, 1, 1));  // 200 iterations
    for (int i = 1; i <= 10; ++i) p.add(iteration(0, i, double(i)));  // slow start: 1/s
    QVERIFY(qAbs(*p.rate() - 1.0) < 1e-9);
    for (int k = 1; k <= 100; ++k) p.add(iteration(0, 10 + k, 10.0 + 0.1 * k));  // then 10/s, until t = 20
    // The window holds only the fast part now: 90 left at 10/s.
    QVERIFY2(qAbs(*p.rate() - 10.0) < 1e-6, qPrintable(QString::number(*p.rate())));
    QVERIFY(qAbs(*p.eta_seconds() - 9.0) < 1e-6);
}

void TestProgress::line() {
    Progress p;
    // 2 epochs of ceil(30080 / 128) = 235 iterations: 470 in all.
    p.add(started(30080, 64, 2, 2));
    p.add(iteration(0, 5, 1.0, 0, 0.9));
    p.add(QJsonObject{{"event", "epoch_end"}, {"t", 15.0}, {"node", 0}, {"epoch", 0}, {"loss", 0.5}, {"accuracy", 0.8714}});
    p.add(iteration(1, 245, 16.0, 1, 0.4123));  // 240 iterations in 15 s: 16/s; 225 left -> 14 s
    QCOMPARE(p.line(), QString("[#####.....] 52% epoch 2/2 iter 245/470 loss 0.412 acc 0.871 ETA 0:14"));
    QCOMPARE(p.epoch_line(QJsonObject{{"event", "epoch_end"}, {"t", 15.04}, {"epoch", 0}, {"loss", 0.5}, {"accuracy", 0.8714},
                                      {"f1", 0.86}, {"eval_set", "test"}}),
             QString("epoch 1/2: loss 0.5000 acc 0.8714 f1 0.8600 (test set) at 15.0 s"));
}

void TestProgress::line_before_start() {
    Progress p;
    QCOMPARE(p.line(), QString("waiting for the engines to start"));
    // Nodes decoding their folders: the one furthest behind is shown, until training starts.
    p.add(QJsonObject{{"event", "data_progress"}, {"node", 0}, {"what", "images"}, {"done", 600}, {"total", 1200}});
    QCOMPARE(p.line(), QString("reading the data: images 600/1200 (50%)"));
    p.add(QJsonObject{{"event", "data_progress"}, {"node", 1}, {"what", "images"}, {"done", 60}, {"total", 1200}});
    QCOMPARE(p.data_reading()->done, 60);
    p.add(QJsonObject{{"event", "data_progress"}, {"node", 1}, {"what", "images"}, {"done", 1200}, {"total", 1200}});
    QCOMPARE(p.line(), QString("reading the data: images 600/1200 (50%)"));
    p.add(started(30080, 64, 2, 2));
    QVERIFY(!p.data_reading());
    QCOMPARE(p.line(), QString("[..........] 0% epoch 1/2 iter 0/470"));
}

void TestProgress::finished_is_complete() {
    Progress p;
    p.add(started(96, 8, 2, 1));
    p.add(iteration(0, 5, 0.1));
    p.add(QJsonObject{{"event", "run_finished"}, {"t", 0.2}, {"status", "ok"}, {"iters", 6}});
    QCOMPARE(p.fraction(), 1.0);
    QVERIFY(p.line().startsWith("[##########] 100%"));
}

void TestProgress::format_duration_data() {
    QTest::addColumn<double>("seconds");
    QTest::addColumn<QString>("text");
    QTest::newRow("zero") << 0.0 << "0:00";
    QTest::newRow("seconds") << 14.0 << "0:14";
    QTest::newRow("rounds") << 59.6 << "1:00";
    QTest::newRow("minutes") << 754.0 << "12:34";
    QTest::newRow("hours") << 3723.0 << "1:02:03";
    QTest::newRow("negative clamps") << -3.0 << "0:00";
}

void TestProgress::format_duration() {
    QFETCH(double, seconds);
    QFETCH(QString, text);
    QCOMPARE(Progress::format_duration(seconds), text);
}

QTEST_GUILESS_MAIN(TestProgress)
#include "test_progress.moc"
