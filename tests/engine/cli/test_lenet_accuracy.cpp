// The acceptance figure of the engine: LeNet (resources/models/lenet.json) trained on the real
// Fashion-MNIST for 3 epochs reaches at least 89% accuracy on the 10 000 test images.
#include <QtTest>

#include "engine_process.h"

class TestLenetAccuracy : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void three_epochs_reach_89_percent();
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

QTEST_GUILESS_MAIN(TestLenetAccuracy)
#include "test_lenet_accuracy.moc"
