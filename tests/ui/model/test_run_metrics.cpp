// RunMetrics on synthetic events with hand-computed answers: traffic rates from cumulative
// counters (never negative, never from a zero time step), the loss as the mean of the workers per
// iteration, TensorBoard-style debiased smoothing, throughput, per-message decode time, the worst
// status of all nodes, and the revision counter the charts use to skip redraws.
#include <QtTest>

#include <QJsonArray>

#include <QJsonObject>

#include "run_metrics.h"

using thresher::ui::RunMetrics;

namespace {

QJsonObject iteration(int node, int worker, int iter, double t, double loss, qint64 tx, qint64 rx, qint64 samples) {
    return {{"event", "iteration"}, {"node", node}, {"worker", worker}, {"iter", iter}, {"t", t},
            {"loss", loss}, {"iter_ms", 10.0 + worker}, {"bytes_tx", tx}, {"bytes_rx", rx}, {"samples", samples}};
}

}  // namespace

class TestRunMetrics : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void rates_from_counters();
    void loss_is_mean_of_workers();
    void smoothing_is_debiased_ema();
    void throughput_and_timings();
    void status_is_the_worst();
    void revision_moves_only_on_data();
    void staleness_per_worker();
};

void TestRunMetrics::rates_from_counters() {
    RunMetrics m(0.5);
    m.add(iteration(0, 0, 1, 10.0, 1, 5'000'000, 1'000'000, 64));
    m.add(iteration(0, 0, 2, 10.2, 1, 5'100'000, 1'000'000, 128));  // < 0.5 s: no point yet
    QVERIFY(m.sent_rate().empty());
    m.add(iteration(0, 0, 3, 10.5, 1, 5'400'000, 1'200'000, 192));
    QCOMPARE(m.sent_rate().at(0).size(), 1);
    QCOMPARE(m.sent_rate().at(0).x[0], 10.5);
    QCOMPARE(m.sent_rate().at(0).y[0], 800'000.0);  // 400 000 bytes in 0.5 s
    QCOMPARE(m.received_rate().at(0).y[0], 400'000.0);
    // A counter seen out of order (another worker's older event) gives 0, not a negative rate.
    m.add(iteration(0, 1, 3, 11.0, 1, 5'300'000, 1'200'000, 192));
    QCOMPARE(m.sent_rate().at(0).y.back(), 0.0);
    // Nodes are separate.
    m.add(iteration(1, 2, 1, 10.0, 1, 0, 0, 64));
    m.add(iteration(1, 2, 2, 11.0, 1, 1000, 3000, 128));
    QCOMPARE(m.sent_rate().at(1).y[0], 1000.0);
    QCOMPARE(m.received_rate().at(1).y[0], 3000.0);
}

void TestRunMetrics::loss_is_mean_of_workers() {
    RunMetrics m;
    m.add(iteration(0, 0, 1, 1.0, 2.0, 0, 0, 64));
    m.add(iteration(0, 1, 1, 1.0, 4.0, 0, 0, 64));
    m.add(iteration(0, 0, 2, 1.1, 1.0, 0, 0, 128));
    const auto loss = m.loss();
    QCOMPARE(loss.size(), 2);
    QCOMPARE(loss.x[0], 1.0);
    QCOMPARE(loss.y[0], 3.0);
    QCOMPARE(loss.y[1], 1.0);  // worker 1 has not reported iteration 2 yet
    QCOMPARE(m.iteration_ms().size(), std::size_t(2));
    QCOMPARE(m.iteration_ms().at(1).y[0], 11.0);
}

void TestRunMetrics::smoothing_is_debiased_ema() {
    RunMetrics m;
    const double values[] = {4.0, 2.0, 1.0};
    for (int i = 0; i < 3; ++i) m.add(iteration(0, 0, i + 1, i, values[i], 0, 0, 64));
    const auto s = m.smoothed_loss(0.5);
    // By hand, weight 0.5: e1 = 0.5·4 = 2, e2 = 0.5·2 + 0.5·2 = 2, e3 = 0.5·2 + 0.5·1 = 1.5, and
    // the debiasing norms 0.5, 0.75, 0.875.
    QCOMPARE(s.y[0], 4.0);
    QCOMPARE(s.y[1], 2.0 / 0.75);
    QCOMPARE(s.y[2], 1.5 / 0.875);
    const auto none = m.smoothed_loss(0.0);
    QCOMPARE(none.y[2], 1.0);
}

void TestRunMetrics::throughput_and_timings() {
    RunMetrics m;
    QVERIFY(!m.samples_per_s());
    // Two workers, 64 samples per iteration each, over 2 s after their first events.
    for (int i = 1; i <= 5; ++i)
        for (int w = 0; w < 2; ++w) {
            auto e = iteration(0, w, i, 0.5 * (i - 1), 1, 0, 0, 64 * i);
            e["encode_ms"] = 1.0;
            e["decode_ms"] = 0.4;
            e["messages_applied"] = 2;
            m.add(e);
        }
    QCOMPARE(*m.samples_per_s(), 2 * 4 * 64 / 2.0);
    QCOMPARE(*m.mean_iter_ms(), 10.5);
    QCOMPARE(*m.mean_encode_ms(), 1.0);
    QCOMPARE(*m.decode_ms_per_message(), 0.2);
}

void TestRunMetrics::status_is_the_worst() {
    RunMetrics m;
    QVERIFY(m.status().isEmpty());
    m.add({{"event", "run_finished"}, {"node", 0}, {"status", "ok"}, {"wall_s", 10.0}});
    QCOMPARE(m.status(), QString("ok"));
    m.add({{"event", "run_finished"}, {"node", 1}, {"status", "failed"}, {"wall_s", 12.5}});
    m.add({{"event", "run_finished"}, {"node", 2}, {"status", "stopped"}, {"wall_s", 11.0}});
    QCOMPARE(m.status(), QString("failed"));
    QCOMPARE(*m.wall_s(), 12.5);
    m.add({{"event", "epoch_end"}, {"node", 0}, {"epoch", 0}, {"loss", 0.5}, {"accuracy", 0.8}});
    m.add({{"event", "epoch_end"}, {"node", 0}, {"epoch", 1}, {"loss", 0.4}, {"accuracy", 0.85}});
    QCOMPARE(*m.final_accuracy(), 0.85);
    QCOMPARE(m.accuracy().x[1], 2.0);  // epochs are shown 1-based

    // Several outputs: the further classifier outputs each get a series by name; the main
    // output's stays accuracy(), a regression output (no accuracy) gets none.
    const QJsonArray outputs{QJsonObject{{"name", "main"}, {"accuracy", 0.9}},
                             QJsonObject{{"name", "aux"}, {"accuracy", 0.7}},
                             QJsonObject{{"name", "size"}, {"mse", QJsonArray{0.1}}}};
    m.add({{"event", "epoch_end"}, {"node", 0}, {"epoch", 2}, {"loss", 0.3}, {"accuracy", 0.9}, {"outputs", outputs}});
    QCOMPARE(m.output_accuracy().size(), std::size_t{1});
    QCOMPARE(m.output_accuracy().at("aux").y[0], 0.7);
    QCOMPARE(m.output_accuracy().at("aux").x[0], 3.0);
    QCOMPARE(*m.final_accuracy(), 0.9);
}

void TestRunMetrics::revision_moves_only_on_data() {
    RunMetrics m;
    const auto r0 = m.revision();
    m.add({{"event", "something_new"}, {"node", 0}});
    QCOMPARE(m.revision(), r0);
    m.add(iteration(0, 0, 1, 0, 1, 0, 0, 64));
    QVERIFY(m.revision() > r0);
    m.clear();
    QVERIFY(m.loss().empty());
}

void TestRunMetrics::staleness_per_worker() {
    RunMetrics m(0.5);
    auto e = iteration(0, 1, 7, 1.0, 1, 0, 0, 64);
    e["lag_max"] = 2;
    e["wait_ms"] = 3.5;
    m.add(e);
    m.add(iteration(0, 0, 7, 1.0, 1, 0, 0, 64));  // parameter averaging: no staleness fields
    QCOMPARE(m.lag().size(), std::size_t(1));
    QCOMPARE(m.lag().at(1).x[0], 7.0);
    QCOMPARE(m.lag().at(1).y[0], 2.0);
    QCOMPARE(m.wait_ms().at(1).y[0], 3.5);
}

QTEST_MAIN(TestRunMetrics)
#include "test_run_metrics.moc"
