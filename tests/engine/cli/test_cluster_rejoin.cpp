// Nodes that join a running gradient-sharing cluster, with real thresher-engine processes over
// real UDP and TCP on loopback (node_link.h has the protocol):
//   - a node killed mid-run (SIGKILL) and started again with the same command line rejoins: it
//     gets the controller's parameters and position, the run finishes with all three nodes, and
//     their replicas end equal;
//   - a node started only after the others began training joins the same way;
//   - the controller cannot come back: a restarted node 0 stops with an error saying so, and the
//     others warn and finish without it.
// The MLP on 6000 Fashion-MNIST samples, 3 nodes, batch 32: 63 iterations per epoch per node,
// ~15 ms each on a quiet machine, so 12 epochs leave the late node seconds to load its data and
// join before the others finish.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include "engine_process.h"

namespace {

const char* kSecretHex = "5e1f0a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7";
constexpr int kEpochs = 12;

}  // namespace

class TestClusterRejoin : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void killed_node_restarted_rejoins_data();
    void killed_node_restarted_rejoins();
    void late_node_joins();
    void restarted_controller_is_refused();

private:
    QString path(const QString& n) const { return dir_.filePath(n); }
    // One command line per rank: a restarted or late node runs exactly what it would have run.
    QStringList node_args(const QString& nodes, int rank, const QString& prefix) const {
        return {"train", "--model", source_dir() + "/resources/models/mlp.json", "--data", "fashion-mnist",
                "--epochs", QString::number(kEpochs), "--batch", "32", "--seed", "3", "--threads", "1",
                "--limit", "6000", "--test-limit", "1000", "--nodes", nodes, "--node-rank", QString::number(rank),
                "--secret-file", path("secret"), "--save", path(QString("%1%2.thr").arg(prefix).arg(rank)),
                "--strategy", "gradient-sharing", "--threshold-algorithm", "fixed:0.01", "--residual", "none",
                "--join-wait", "2"};
    }
    static QString three_nodes() {
        const auto ports = free_node_ports(3);
        return QString("127.0.0.1:%1,127.0.0.1:%2,127.0.0.1:%3").arg(ports[0]).arg(ports[1]).arg(ports[2]);
    }
    // The joiner's own events: one node_joined naming itself, mid-run; `rejoin` as expected.
    void check_joined(const EngineRun& r, bool rejoin);
    // The three saved models are equal, and the last evaluation merged all three nodes' shards.
    void check_all_three_finished_together(const QList<EngineRun>& finished, const QString& prefix);
    QTemporaryDir dir_;
};

void TestClusterRejoin::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY(write_file(path("secret"), QByteArray(kSecretHex) + "\n"));
}

void TestClusterRejoin::check_joined(const EngineRun& r, bool rejoin) {
    const auto joined = r.of("node_joined");
    QVERIFY2(joined.size() == 1, qPrintable("node 2 did not say it joined: " + r.summary()));
    const auto& e = joined.first();
    QCOMPARE(e.value("joined_node").toInt(), 2);
    QCOMPARE(e.value("rejoin").toBool(), rejoin);
    const int iter = e.value("iter").toInt();
    QVERIFY2(iter > 0, qPrintable(QString("joined at iteration %1").arg(iter)));
    QVERIFY2(iter < kEpochs * 63, qPrintable(QString("joined at iteration %1, after the end").arg(iter)));
    qInfo("node 2: %s", qPrintable(e.value("message").toString()));
    // It continued from there, not from epoch 0: its first iteration follows the joining point.
    const auto started = r.of("run_started");
    QCOMPARE(started.size(), 1);
    QVERIFY(started.first().value("joined").toBool());
    QCOMPARE(started.first().value("start_iter").toInt(), iter);
    QCOMPARE(started.first().value("start_epoch").toInt(), e.value("epoch").toInt());
    const auto iterations = r.of("iteration");
    QVERIFY(!iterations.isEmpty());
    QCOMPARE(iterations.first().value("iter").toInt(), iter + 1);
    QCOMPARE(iterations.last().value("iter").toInt(), kEpochs * 63);
}

void TestClusterRejoin::check_all_three_finished_together(const QList<EngineRun>& finished, const QString& prefix) {
    // The controller's last evaluation merged every node's shard: node 2 was a member to the end.
    const auto epochs = finished[0].of("epoch_end");
    QVERIFY(!epochs.isEmpty());
    QCOMPARE(epochs.last().value("epoch").toInt(), kEpochs - 1);
    QCOMPARE(epochs.last().value("nodes_evaluated").toInt(), 3);
    for (int node : {1, 2}) {
        const auto cmp = run_engine({"compare", path(QString("%1%2.thr").arg(prefix).arg(0)),
                                     path(QString("%1%2.thr").arg(prefix).arg(node)), "--tolerance", "1e-5"});
        QVERIFY2(cmp.exit_code == 0, qPrintable(QString("node %1's replica differs: %2").arg(node).arg(cmp.summary())));
        qInfo("node 0 vs node %d: %s", node, qPrintable(cmp.stdout_text.trimmed()));
    }
}

void TestClusterRejoin::killed_node_restarted_rejoins_data() {
    QTest::addColumn<QStringList>("topology");
    QTest::newRow("mesh") << QStringList{};
    // The chain 0 - 1 - 2: node 0 hears of node 2's new process only through node 1's relaying.
    QTest::newRow("tree fanout 1") << QStringList{"--topology", "tree", "--fanout", "1"};
}

void TestClusterRejoin::killed_node_restarted_rejoins() {
    QFETCH(QStringList, topology);
    const QString nodes = three_nodes();
    NodeGroup group;
    for (int rank = 0; rank < 3; ++rank) group.start(node_args(nodes, rank, "kill") + topology);
    QVERIFY2(group.wait_for([&] { return group.count_events(2, "iteration") >= 10 ||
                                         group.process(2).state() == QProcess::NotRunning; },
                            120000),
             "node 2 never reached its 10th iteration");
    QVERIFY2(group.process(2).state() == QProcess::Running,
             qPrintable("node 2 ended before it could be killed:\n" + group.stdout_so_far(2).right(1000)));
    group.process(2).kill();  // SIGKILL: no goodbye
    QVERIFY(group.process(2).waitForFinished(10000));
    const int restarted = group.start(node_args(nodes, 2, "kill") + topology);  // the same command line
    const auto runs = group.wait_all(240000);
    QVERIFY2(runs[2].exit_code == -1, qPrintable("node 2 was not killed: " + runs[2].summary()));
    check_finished_ok(runs[0], 0);
    check_finished_ok(runs[1], 1);
    check_finished_ok(runs[restarted], 2);
    check_joined(runs[restarted], true);
    for (int node : {0, 1}) {
        // The others said that node 2 came back, and nothing else went wrong.
        const auto warnings = runs[node].of("warning");
        bool restart_seen = false, rejoin_seen = false;
        for (const auto& w : warnings) {
            const QString message = w.value("message").toString();
            // The staleness bound's note that a node waited for a slow live peer (seen under ASan on a
            // busy machine: node 1 about node 0 at iteration 3) is no fault; test_cluster_faults
            // allows it the same way.
            QVERIFY2(message.contains("node 2") || message.contains("has heard nothing from"),
                     qPrintable(QString("node %1: unexpected warning: %2").arg(node).arg(message)));
            restart_seen = restart_seen || message.contains("restarted") || message.contains("stopped answering");
            rejoin_seen = rejoin_seen || message.contains("node 2 rejoined at epoch");
        }
        QVERIFY2(restart_seen && rejoin_seen, qPrintable(QString("node %1: %2").arg(node).arg(runs[node].summary())));
        const auto joined = runs[node].of("node_joined");
        QCOMPARE(joined.size(), 1);
        QCOMPARE(joined.first().value("joined_node").toInt(), 2);
        QVERIFY(joined.first().value("rejoin").toBool());
    }
    check_all_three_finished_together({runs[0], runs[1], runs[restarted]}, "kill");
}

void TestClusterRejoin::late_node_joins() {
    const QString nodes = three_nodes();
    NodeGroup group;
    for (int rank = 0; rank < 2; ++rank) group.start(node_args(nodes, rank, "late"));
    // The controller waits --join-wait (2 s) for node 2, then trains without it.
    QVERIFY2(group.wait_for([&] { return group.count_events(0, "iteration") >= 20 ||
                                         group.process(0).state() == QProcess::NotRunning; },
                            120000),
             "node 0 never reached its 20th iteration");
    QVERIFY2(group.count_events(0, "run_finished") == 0, "the run ended before node 2 could join");
    group.start(node_args(nodes, 2, "late"));
    const auto runs = group.wait_all(240000);
    for (int node = 0; node < 3; ++node) check_finished_ok(runs[node], node);
    check_joined(runs[2], false);
    const auto warnings = runs[0].of("warning");
    QCOMPARE(warnings.size(), 1);  // that the run began without node 2
    QVERIFY2(warnings.first().value("message").toString().contains("node 2 did not ask to join"),
             qPrintable(runs[0].summary()));
    QVERIFY2(runs[1].of("warning").isEmpty(), qPrintable(runs[1].summary()));
    for (int node : {0, 1}) {
        const auto joined = runs[node].of("node_joined");
        QCOMPARE(joined.size(), 1);
        QCOMPARE(joined.first().value("joined_node").toInt(), 2);
        QVERIFY(!joined.first().value("rejoin").toBool());
    }
    check_all_three_finished_together(runs, "late");
}

void TestClusterRejoin::restarted_controller_is_refused() {
    const QString nodes = three_nodes();
    NodeGroup group;
    for (int rank = 0; rank < 3; ++rank) group.start(node_args(nodes, rank, "ctl"));
    QVERIFY2(group.wait_for([&] { return group.count_events(0, "iteration") >= 10 ||
                                         group.process(0).state() == QProcess::NotRunning; },
                            120000),
             "node 0 never reached its 10th iteration");
    QVERIFY(group.process(0).state() == QProcess::Running);
    group.process(0).kill();
    QVERIFY(group.process(0).waitForFinished(10000));
    const int restarted = group.start(node_args(nodes, 0, "ctl"));
    const auto runs = group.wait_all(240000);
    // The new node 0 learns from the others that the run was going on, and stops with an error.
    const EngineRun& again = runs[restarted];
    QVERIFY2(again.finished && again.exit_code != 0, qPrintable(again.summary()));
    QVERIFY2(again.of("iteration").isEmpty(), qPrintable(again.summary()));
    const auto errors = again.of("error");
    QVERIFY2(errors.size() == 1 && errors.first().value("message").toString().contains("cannot rejoin a running run"),
             qPrintable(again.summary()));
    QCOMPARE(again.of("run_finished").size(), 1);
    QCOMPARE(again.of("run_finished").first().value("status").toString(), QString("failed"));
    // The others say so and finish.
    for (int node : {1, 2}) {
        check_finished_ok(runs[node], node);
        bool said = false;
        for (const auto& w : runs[node].of("warning"))
            said = said || w.value("message").toString().contains("the controller (node 0) was restarted");
        QVERIFY2(said, qPrintable(runs[node].summary()));
        QVERIFY(runs[node].of("node_joined").isEmpty());
    }
}

QTEST_GUILESS_MAIN(TestClusterRejoin)
#include "test_cluster_rejoin.moc"
