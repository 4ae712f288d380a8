// The ResNet template (resources/models/resnet.json, a graph: three residual blocks with batch
// norm) on the real Fashion-MNIST: 3 epochs reach at least 90% test accuracy; and on two nodes
// with gradient sharing the replicas are equal before the final reconcile averages them (batch
// norm's running statistics included: they travel in the update vector).
#include <QtTest>

#include <QFile>
#include <QTemporaryDir>

#include "engine_process.h"

class TestResnetAccuracy : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void three_epochs_reach_90_percent();
    void two_nodes_keep_replicas_equal();
};

void TestResnetAccuracy::three_epochs_reach_90_percent() {
    if (qEnvironmentVariableIsSet("THRESHER_TEST_QUICK"))
        QSKIP("THRESHER_TEST_QUICK is set (sanitizer builds): the full 3-epoch run is for release builds");
    const auto r = run_engine({"train", "--model", source_dir() + "/resources/models/resnet.json", "--data",
                               "fashion-mnist", "--epochs", "3", "--batch", "64", "--seed", "1"},
                              20 * 60 * 1000);
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    const auto epochs = r.of("epoch_end");
    QCOMPARE(epochs.size(), 3);
    QCOMPARE(epochs.last().value("count").toInt(), 10000);
    const double acc = epochs.last().value("accuracy").toDouble();
    qInfo("ResNet test accuracy after 3 epochs: %.4f (per epoch: %.4f %.4f %.4f)", acc, epochs[0].value("accuracy").toDouble(),
          epochs[1].value("accuracy").toDouble(), acc);
    QVERIFY2(acc >= 0.90, qPrintable(QString("accuracy %1 < 0.90").arg(acc)));
}

void TestResnetAccuracy::two_nodes_keep_replicas_equal() {
    QTemporaryDir dir;
    QFile secret(dir.filePath("secret"));
    QVERIFY(secret.open(QIODevice::WriteOnly));
    secret.write("0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff");
    secret.close();
    QVERIFY(secret.setPermissions(QFile::ReadOwner | QFile::WriteOwner));
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    QList<QStringList> args;
    for (int rank = 0; rank < 2; ++rank)
        args << QStringList{"train", "--model", source_dir() + "/resources/models/resnet.json", "--data", "fashion-mnist",
                            "--epochs", "1", "--limit", "1280", "--test-limit", "500", "--batch", "32", "--seed", "1",
                            "--threads", "1", "--strategy", "gradient-sharing", "--nodes", nodes, "--node-rank",
                            QString::number(rank), "--secret-file", secret.fileName(), "--save",
                            dir.filePath(QString("n%1.thr").arg(rank))};
    const auto cluster = run_nodes(args, 10 * 60 * 1000);
    for (int rank = 0; rank < 2; ++rank) {
        const auto& r = cluster[rank];
        QVERIFY2(r.finished && r.exit_code == 0, qPrintable(r.summary()));
        const auto totals = r.of("run_finished").last();
        QVERIFY2(totals.contains("reconcile_gap"), qPrintable(r.summary()));
        const double gap = totals.value("reconcile_gap").toDouble();
        qInfo("node %d: replicas %.3g apart before the reconcile (at %s)", rank, gap,
              qPrintable(totals.value("reconcile_gap_at").toString()));
        QVERIFY2(gap <= 1e-5, qPrintable(QString("node %1: gap %2 at %3").arg(rank).arg(gap).arg(totals.value("reconcile_gap_at").toString())));
    }
    const auto cmp = run_engine({"compare", dir.filePath("n0.thr"), dir.filePath("n1.thr"), "--tolerance", "1e-5"});
    QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
}

QTEST_GUILESS_MAIN(TestResnetAccuracy)
#include "test_resnet_accuracy.moc"
