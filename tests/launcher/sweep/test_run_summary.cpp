// RunSummary (launcher/sweep/run_summary.h): the figures of one run from its events alone. Here:
// the traffic per iteration, which must leave out what a run sends once (before its first iteration
// event or after its last: the drain, the end of the run), and the period and CPU per iteration
// on each node's own clock.
#include <QJsonObject>
#include <QtTest>

#include "run_summary.h"

using thresher::launcher::sweep::RunSummary;

class TestRunSummary : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void traffic_leaves_out_start_up_and_end();
    void traffic_of_one_iteration_counts_the_totals();
    void period_and_cpu_on_each_nodes_clock();
};

namespace {

QJsonObject iteration(int node, int worker, int iter, double t, double bytes_tx, double cpu_ms = 0) {
    QJsonObject e{{"event", "iteration"}, {"node", node}, {"worker", worker}, {"iter", iter}, {"t", t},
                  {"bytes_tx", bytes_tx}, {"samples", 32 * iter}};
    if (cpu_ms > 0) e.insert("cpu_ms", cpu_ms);
    return e;
}

}  // namespace

void TestRunSummary::traffic_leaves_out_start_up_and_end() {
    RunSummary s;
    s.add(QJsonObject{{"event", "run_started"}, {"node", 0}, {"workers", 2}});
    // Node 0 sent 7 MB before its first iteration event; then each node sends 50 000 bytes per
    // iteration (node 1 60 000); node 0 sends 1 MB after its last (the drain, the end of the run).
    for (int i = 1; i <= 101; ++i) {
        s.add(iteration(0, 0, i, 0.01 * i, 7'000'000 + 50'000.0 * i));
        s.add(iteration(1, 1, i, 5.0 + 0.01 * i, 60'000.0 * i));
    }
    s.add(QJsonObject{{"event", "run_finished"}, {"node", 0}, {"status", "ok"}, {"bytes_tx", 7'000'000 + 50'000.0 * 101 + 1'000'000}});
    s.add(QJsonObject{{"event", "run_finished"}, {"node", 1}, {"status", "ok"}, {"bytes_tx", 60'000.0 * 101}});
    QVERIFY(s.bytes_per_iteration());
    // 110 000, not (12.05 MB + 6.06 MB) ÷ 101 ≈ 179 000 with the start-up and the end.
    QCOMPARE(*s.bytes_per_iteration(), 110'000.0);
}

void TestRunSummary::traffic_of_one_iteration_counts_the_totals() {
    RunSummary s;
    s.add(iteration(0, 0, 1, 0.01, 4000));
    s.add(iteration(1, 1, 1, 0.01, 1000));
    s.add(QJsonObject{{"event", "run_finished"}, {"node", 0}, {"status", "ok"}, {"bytes_tx", 6000}});
    QVERIFY(s.bytes_per_iteration());
    QCOMPARE(*s.bytes_per_iteration(), 7000.0);  // 6000 + 1000 over the one iteration
}

void TestRunSummary::period_and_cpu_on_each_nodes_clock() {
    RunSummary s;
    // Node 1's clock starts 100 s after node 0's; both run 10 ms per iteration, 8 ms of CPU.
    for (int i = 1; i <= 11; ++i) {
        s.add(iteration(0, 0, i, 0.010 * i, 0, 50 + 8.0 * i));
        s.add(iteration(1, 1, i, 100 + 0.010 * i, 0, 70 + 8.0 * i));
    }
    QVERIFY(s.iteration_period_ms());
    QVERIFY(std::abs(*s.iteration_period_ms() - 10.0) < 1e-9);
    QVERIFY(s.cpu_ms_per_iteration());
    QVERIFY(std::abs(*s.cpu_ms_per_iteration() - 8.0) < 1e-9);
    QVERIFY(s.cores_used());
    QVERIFY(std::abs(*s.cores_used() - 1.6) < 1e-9);  // two nodes, each 0.8 of a core
    QVERIFY(s.samples_per_s());
    QVERIFY(std::abs(*s.samples_per_s() - 6400.0) < 1e-6);  // 2 workers × 32 samples per 10 ms
}

QTEST_MAIN(TestRunSummary)
#include "test_run_summary.moc"
