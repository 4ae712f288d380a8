// The acceptance figures of the engine on the real Fashion-MNIST with resources/models/lenet.json:
// 3 epochs reach at least 89% test accuracy; and 2 nodes x 1 worker with gradient sharing
// (batch 32 each) end 2 epochs within 1 point of one node on the same total batch of 64.
#include <QtTest>

#include <QFile>
#include <QTemporaryDir>

#include "engine_process.h"

class TestLenetAccuracy : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void three_epochs_reach_89_percent();
    void two_nodes_match_one_node();
};

void TestLenetAccuracy::three_epochs_reach_89_percent() {
    if (qEnvironmentVariableIsSet("THRESHER_TEST_QUICK"))
        QSKIP("THRESHER_TEST_QUICK is set (sanitizer builds): the full 3-epoch run is for release builds");
    const auto r = run_engine({"train", "--model", source_dir() + "/resources/models/lenet.json", "--data",
                               "fashion-mnist", "--epochs", "3", "--batch", "64", "--seed", "1"},
                              15 * 60 * 1000);
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    const auto epochs = r.of("epoch_end");
    QCOMPARE(epochs.size(), 3);
    QCOMPARE(epochs.last().value("eval_set").toString(), QString("test"));
    QCOMPARE(epochs.last().value("count").toInt(), 10000);
    const double acc = epochs.last().value("accuracy").toDouble();
    qInfo("test accuracy after 3 epochs: %.4f (per epoch: %.4f %.4f %.4f)", acc, epochs[0].value("accuracy").toDouble(),
          epochs[1].value("accuracy").toDouble(), acc);
    QVERIFY2(acc >= 0.89, qPrintable(QString("accuracy %1 < 0.89").arg(acc)));
}

void TestLenetAccuracy::two_nodes_match_one_node() {
    if (qEnvironmentVariableIsSet("THRESHER_TEST_QUICK"))
        QSKIP("THRESHER_TEST_QUICK is set (sanitizer builds): the full 2-epoch runs are for release builds");
    QTemporaryDir dir;
    QFile secret(dir.filePath("secret"));
    QVERIFY(secret.open(QIODevice::WriteOnly));
    secret.write("5e1f0c2d3b4a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff");
    secret.close();
    QVERIFY(secret.setPermissions(QFile::ReadOwner | QFile::WriteOwner));
    const QString model = source_dir() + "/resources/models/lenet.json";
    const QStringList common{"train", "--model", model, "--data", "fashion-mnist", "--epochs", "2", "--seed", "1", "--threads", "1"};
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    QList<QStringList> args;
    for (int rank = 0; rank < 2; ++rank)
        args << common + QStringList{"--batch", "32", "--nodes", nodes, "--node-rank", QString::number(rank),
                                     "--secret-file", secret.fileName()};
    const auto cluster = run_nodes(args, 15 * 60 * 1000);
    for (const auto& r : cluster) QVERIFY2(r.finished && r.exit_code == 0, qPrintable(r.summary()));
    const auto single = run_engine(common + QStringList{"--batch", "64"}, 15 * 60 * 1000);
    QVERIFY2(single.exit_code == 0, qPrintable(single.summary()));
    const double one = single.of("epoch_end").last().value("accuracy").toDouble();
    const auto merged = cluster[0].of("epoch_end").last();
    QCOMPARE(merged.value("nodes_evaluated").toInt(), 2);
    QCOMPARE(merged.value("count").toInt(), 10000);
    const double two = merged.value("accuracy").toDouble();
    qInfo("2 epochs: one node %.4f, two nodes %.4f", one, two);
    QVERIFY2(std::abs(two - one) <= 0.01, qPrintable(QString("two nodes %1 vs one node %2").arg(two).arg(one)));
}

QTEST_GUILESS_MAIN(TestLenetAccuracy)
#include "test_lenet_accuracy.moc"
