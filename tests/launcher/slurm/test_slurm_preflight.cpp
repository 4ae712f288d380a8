// The part of the Slurm pre-flight that needs no cluster: whether the spec's GPUs per node and its
// Training device agree (launcher/slurm/slurm_preflight.h). The checks that ask Slurm run against
// the real one-node cluster in test_slurm_launch_cli.
#include <QtTest>

#include <QTemporaryDir>

#include "run_spec.h"
#include "slurm_preflight.h"

using thresher::launcher::RunSpec;
using thresher::launcher::slurm::check_gpus_for_device;
using thresher::launcher::slurm::SlurmCheck;

class TestSlurmPreflight : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void gpus_and_device_agree_data();
    void gpus_and_device_agree();

private:
    QTemporaryDir dir_;
};

void TestSlurmPreflight::gpus_and_device_agree_data() {
    QTest::addColumn<int>("gpus");
    QTest::addColumn<QString>("device");
    QTest::addColumn<int>("status");  // -1: no check
    QTest::addColumn<QString>("says");
    const int ok = int(SlurmCheck::Status::Ok), warning = int(SlurmCheck::Status::Warning);
    QTest::newRow("cpu, no GPUs") << 0 << "cpu" << -1 << "";
    QTest::newRow("GPUs for a CPU run") << 2 << "cpu" << warning << "2 GPU(s) per node asked, but the Training device is cpu";
    QTest::newRow("CUDA without GPUs") << 0 << "cuda" << warning << "the Training device is cuda, but no GPUs are asked per node";
    QTest::newRow("one per worker") << 2 << "cuda:0,cuda:1" << ok << "cuda:0,cuda:1 on 2 GPU(s) per node";
}

void TestSlurmPreflight::gpus_and_device_agree() {
    QFETCH(int, gpus);
    QFETCH(QString, device);
    QFETCH(int, status);
    QFETCH(QString, says);
    QVERIFY(dir_.isValid());
    QFile m(dir_.filePath("m.json"));
    QVERIFY(m.open(QIODevice::WriteOnly));
    m.write(R"({"name":"m","input":{"size":4},"layers":[{"type":"output","units":2}]})");
    m.close();
    const QString workers = device.contains(',') ? "2" : "1";
    RunSpec spec;
    try {
        spec = RunSpec::from_json(
        QString(R"({"format":"thresher-run","version":1,"model":"m.json","training":{"device":"%1"},
                   "cluster":{"kind":"slurm","nodes":1,"workers_per_node":%2,"gpus_per_node":%3}})")
            .arg(device, workers).arg(gpus).toUtf8(),
        dir_.filePath("s.json"), dir_.path());
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
    const auto check = check_gpus_for_device(spec);
    if (status < 0) {
        QVERIFY2(!check, check ? qPrintable(check->detail) : "");
        return;
    }
    QVERIFY(check);
    QCOMPARE(check->name, QString("device"));
    QCOMPARE(int(check->status), status);
    QVERIFY2(check->detail.startsWith(says), qPrintable(check->detail));
}

QTEST_MAIN(TestSlurmPreflight)
#include "test_slurm_preflight.moc"
