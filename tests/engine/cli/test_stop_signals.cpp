// SIGTERM and SIGINT stop `thresher-engine train` gracefully (engine/cli/stop_requests.h): the
// workers end at their next iteration, the last stdout line is run_finished "stopped", and the
// exit code is 143 -- what the local launcher's stop() (SIGTERM to each engine) and Ctrl-C in a
// terminal rely on. Each test can fail: an engine killed by the signal exits without run_finished
// and without an exit code; one that ignored it would train its 1000 epochs.
//
//   one node, 1 or 2 workers      stopped within a second of the signal
//   two nodes, both signalled     both drain, both report "stopped" (the local launcher's case)
//   two nodes, one signalled      that node cannot drain (its peer trains on): after half a
//                                 second it leaves the run, reports "stopped", and the peer is
//                                 told; a second signal ends it at once
#include <QtTest>

#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <algorithm>
#include <csignal>

#include "engine_process.h"

namespace {

const char* kModel = R"({"name":"stop","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.05},
  "layers":[{"type":"dense","units":64,"activation":"tanh"},{"type":"output","units":3}]})";

// Whether the stop deadline (engine/cli/stop_deadline.h) ended the run (its warning event) rather than the drain.
bool ended_by_deadline(const EngineRun& r) {
    for (const auto& w : r.of("warning"))
        if (w.value("message").toString().contains("did not end within 3 s")) return true;
    return false;
}

// Polls until process `i` of `group` has exited; returns the milliseconds since `since` started.
qint64 wait_exit(NodeGroup& group, int i, const QElapsedTimer& since, int timeout_ms) {
    group.wait_for([&] { return group.process(i).state() == QProcess::NotRunning; }, timeout_ms);
    return since.elapsed();
}

}  // namespace

class TestStopSignals : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void signal_stops_one_node_data();
    void signal_stops_one_node();
    void sigterm_stops_two_nodes();
    void one_node_stopped_alone_leaves_the_run();
    void second_signal_ends_at_once();

private:
    QString path(const QString& n) const { return dir_.filePath(n); }
    QStringList args(int workers, const QString& strategy) const {
        return {"train", "--model", path("m.json"), "--data", path("data.csv"), "--epochs", "100000", "--batch", "8",
                "--seed", "5", "--threads", "1", "--workers-per-node", QString::number(workers), "--strategy", strategy};
    }
    QStringList node_args(int rank, const QString& nodes, int workers) const {
        return args(workers, "gradient-sharing") + QStringList{"--nodes", nodes, "--node-rank", QString::number(rank),
                                                               "--secret-file", path("secret")};
    }
    // Starts two nodes on loopback and waits until both iterate.
    void start_two_nodes(NodeGroup& group, int workers);
    // Exit 143, one run_finished "stopped" and it is the last line, contract events only.
    static void check_stopped(const EngineRun& r, int node);
    QTemporaryDir dir_;
};

void TestStopSignals::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFile::exists(engine_binary()), qPrintable(engine_binary()));
    QVERIFY(write_file(path("m.json"), kModel));
    QVERIFY(write_file(path("secret"), "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"));
    QVERIFY(write_file(path("data.csv"), test_support::three_class_csv(480)));
    // A shell starts background jobs with SIGINT ignored, and the engine keeps an ignored SIGINT
    // ignored (as it should); ctest run that way must still test the handler.
    std::signal(SIGINT, SIG_DFL);
}

void TestStopSignals::check_stopped(const EngineRun& r, int node) {
    const QString who = QString("node %1: ").arg(node);
    QVERIFY2(r.finished, qPrintable(who + r.summary()));
    QVERIFY2(r.exit_code == 143, qPrintable(who + r.summary()));
    QVERIFY2(r.contract_errors.isEmpty(), qPrintable(r.contract_errors.join('\n')));
    const auto finished = r.of("run_finished");
    QVERIFY2(finished.size() == 1, qPrintable(who + r.summary()));
    QVERIFY2(!r.events.isEmpty() && r.events.last().value("event").toString() == "run_finished", qPrintable(who + r.summary()));
    QCOMPARE(finished.first().value("status").toString(), QString("stopped"));
    QCOMPARE(finished.first().value("node").toInt(), node);
    QVERIFY2(finished.first().value("wall_s").isDouble(), qPrintable(who + r.summary()));
}

void TestStopSignals::signal_stops_one_node_data() {
    QTest::addColumn<int>("signal");
    QTest::addColumn<int>("workers");
    QTest::addColumn<QString>("strategy");
    QTest::newRow("SIGTERM, one worker") << int(SIGTERM) << 1 << "single";
    QTest::newRow("SIGINT, one worker") << int(SIGINT) << 1 << "single";
    // Stopped workers leave the averaging barrier one by one: the last one's completion step
    // still reads every replica (trainer.cpp keeps them until all have left).
    QTest::newRow("SIGTERM, two workers, parameter averaging") << int(SIGTERM) << 2 << "parameter-averaging";
    QTest::newRow("SIGTERM, two workers, gradient sharing") << int(SIGTERM) << 2 << "gradient-sharing";
}

void TestStopSignals::signal_stops_one_node() {
    QFETCH(int, signal);
    QFETCH(int, workers);
    QFETCH(QString, strategy);
    NodeGroup group;
    group.start(args(workers, strategy));
    QVERIFY2(group.wait_for([&] { return group.count_events(0, "iteration") > 10; }, 60000), qPrintable(group.stdout_so_far(0)));
    QElapsedTimer clock;
    clock.start();
    QCOMPARE(::kill(static_cast<pid_t>(group.process(0).processId()), signal), 0);
    const qint64 took = wait_exit(group, 0, clock, 15000);
    const EngineRun r = group.wait_all(0).first();
    check_stopped(r, 0);
    if (QTest::currentTestFailed()) return;
    QVERIFY(r.of("run_finished").first().value("iters").toInt() > 10 / workers);
    QVERIFY2(r.of("epoch_end").size() < 1000, qPrintable(r.summary()));
    const QString name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
    QVERIFY2(r.stderr_text.contains(name + ": stopping the run at the next iteration"), qPrintable(r.summary()));
    QVERIFY2(r.stderr_text.contains("stopped (" + name + ")"), qPrintable(r.summary()));
    qInfo("exited %lld ms after %s", took, qPrintable(name));
    // At the next iteration: far inside the 3 s stop deadline.
    QVERIFY2(took < 2000, qPrintable(QString("stopping took %1 ms").arg(took)));
}

void TestStopSignals::start_two_nodes(NodeGroup& group, int workers) {
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    for (int rank = 0; rank < 2; ++rank) group.start(node_args(rank, nodes, workers));
    QVERIFY2(group.wait_for([&] { return group.count_events(0, "iteration") > 10 && group.count_events(1, "iteration") > 10; }, 60000),
             qPrintable(group.stdout_so_far(0) + "\n" + group.stdout_so_far(1)));
}

void TestStopSignals::sigterm_stops_two_nodes() {
    // What the local launcher's stop() does: SIGTERM to every engine. Two workers per node, so
    // the final drain and reconcile run after workers that stopped at different iterations.
    NodeGroup group;
    start_two_nodes(group, 2);
    if (QTest::currentTestFailed()) return;
    QElapsedTimer clock;
    clock.start();
    for (int i = 0; i < 2; ++i) group.process(i).terminate();  // SIGTERM
    qint64 took = 0;
    for (int i = 0; i < 2; ++i) took = std::max(took, wait_exit(group, i, clock, 15000));
    const auto runs = group.wait_all(0);
    bool by_deadline = false;
    for (int rank = 0; rank < 2; ++rank) {
        check_stopped(runs[rank], rank);
        if (QTest::currentTestFailed()) return;
        by_deadline = by_deadline || ended_by_deadline(runs[rank]);
    }
    qInfo("both nodes exited %lld ms after SIGTERM%s", took, by_deadline ? " (the stop deadline)" : "");
    // At the next iteration, by the drain, not by the deadline. (About one stop in fifteen used to
    // land while node 0 waited in the epoch-end evaluation gather for a part node 1 would not
    // send, having stopped before its epoch end; node 1's "done" now names its last evaluated
    // epoch, so the controller stops waiting for that part.)
    QVERIFY2(!by_deadline, "the stop deadline ended a two-node stop: the drain did not finish");
    QVERIFY2(took < 2500, qPrintable(QString("stopping took %1 ms").arg(took)));
}

void TestStopSignals::one_node_stopped_alone_leaves_the_run() {
    // Node 1 is signalled, node 0 trains on: node 1's drain waits for node 0's last messages,
    // which come only when node 0's run ends. The deadline ends node 1 with the same report.
    NodeGroup group;
    start_two_nodes(group, 1);
    if (QTest::currentTestFailed()) return;
    QElapsedTimer clock;
    clock.start();
    group.process(1).terminate();
    const qint64 took = wait_exit(group, 1, clock, 15000);
    QVERIFY2(group.process(0).state() != QProcess::NotRunning, "node 0 should train on");
    const auto runs = group.wait_all(0);  // ends node 0 too
    check_stopped(runs[1], 1);
    if (QTest::currentTestFailed()) return;
    // It waits half a second for node 0's "done" (none comes: node 0 trains on), then leaves the
    // run -- not held until the stop deadline -- and tells node 0, which goes on without it.
    const bool by_deadline = ended_by_deadline(runs[1]);
    qInfo("node 1 exited %lld ms after SIGTERM (%s)", took, by_deadline ? "the stop deadline" : "left the run");
    QVERIFY2(!by_deadline, "the stop deadline ended node 1: it did not leave the run");
    QVERIFY2(took < 2500, qPrintable(QString("node 1 took %1 ms").arg(took)));
    bool told = false;
    for (const auto& w : runs[0].of("warning"))
        told = told || w.value("message").toString().contains("node 1's run was stopped; the run goes on without it");
    QVERIFY2(told, qPrintable("node 0 was not told that node 1 left: " + runs[0].summary()));
}

void TestStopSignals::second_signal_ends_at_once() {
    // As above, but a second SIGTERM 0.15 s after the first -- while node 1 still waits for its
    // peer -- ends it at once (without run_finished: nothing but the exit code can be trusted).
    NodeGroup group;
    start_two_nodes(group, 1);
    if (QTest::currentTestFailed()) return;
    group.process(1).terminate();
    QTest::qWait(150);
    if (group.process(1).state() == QProcess::NotRunning) QSKIP("node 1 drained before the second signal: nothing to cut short");
    QElapsedTimer clock;
    clock.start();
    group.process(1).terminate();
    const qint64 took = wait_exit(group, 1, clock, 15000);
    const auto runs = group.wait_all(0);
    QVERIFY2(runs[1].finished && runs[1].exit_code == 143, qPrintable(runs[1].summary()));
    QVERIFY2(runs[1].contract_errors.isEmpty(), qPrintable(runs[1].contract_errors.join('\n')));
    qInfo("node 1 exited %lld ms after the second SIGTERM", took);
    QVERIFY2(took < 1000, qPrintable(QString("node 1 took %1 ms").arg(took)));
}

QTEST_GUILESS_MAIN(TestStopSignals)
#include "test_stop_signals.moc"
