// `thresher-launch sweep` end to end on real engines and the real Fashion-MNIST: strategy ×
// nodes 1, 2 (the MLP on 256 samples) gives four result rows with measured throughput, a report
// with a chart point per run; run again it skips every finished point, and with one run taken
// out of results.json it runs only that one; stopped by SIGINT, it keeps what finished and the
// same command runs the rest. A bad sweep file is exit 2 with the place named.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <csignal>

#include "launch_fixture.h"

using namespace launch_fixture;

namespace {

constexpr int kSweepTimeoutMs = 240000;  // four tiny runs, on a loaded machine

QJsonObject read_json(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

}  // namespace

class TestSweepCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void two_axis_sweep_then_resume();
    void interrupted_sweep_resumes();
    void bad_sweep_is_a_usage_error();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    QTemporaryDir dir_;
};

void TestSweepCli::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFileInfo(bin("thresher-launch")).isExecutable(), qPrintable(bin("thresher-launch")));
    const QString mlp = qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/resources/models/mlp.json";
    QVERIFY(QFileInfo::exists(mlp));
    const QString sweep = QString(R"({"format": "thresher-sweep", "version": 1, "name": "cli",
        "base": {"format": "thresher-run", "version": 1, "model": "%1", "data": "fashion-mnist",
                 "training": {"epochs": 1, "batch": 32, "limit": 256, "threads": 1, "seed": 5, "averaging_frequency": 2},
                 "udp_port": %2},
        "axes": [{"field": "strategy", "values": ["gradient-sharing", "parameter-averaging"]},
                 {"field": "nodes", "values": [1, 2]}]})").arg(mlp).arg(free_ports(2));
    QVERIFY(write_file(path("sweep.json"), sweep.toUtf8()));
}

void TestSweepCli::two_axis_sweep_then_resume() {
    const QStringList args{"sweep", path("sweep.json"), "--out", path("out"), "--engine", bin("thresher-engine")};
    const auto r = run_cli(args, kSweepTimeoutMs);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("0 run(s) already done"), qPrintable(r.err));
    QCOMPARE(r.err.count(QRegularExpression("^run \\d/4: ok: ", QRegularExpression::MultilineOption)), 4);

    const QJsonObject results = read_json(path("out/results.json"));
    const QJsonArray runs = results.value("runs").toArray();
    QCOMPARE(runs.size(), 4);
    QMap<int, double> sps;
    for (const auto& v : runs) {
        const QJsonObject row = v.toObject();
        QCOMPARE(row.value("status").toString(), QString("ok"));
        QVERIFY2(row.value("samples_per_s").toDouble() > 0, qPrintable(QJsonDocument(row).toJson()));
        QVERIFY(row.value("iterations").toInt() > 0);
        QVERIFY(row.contains("accuracy"));
        const int workers = row.value("workers").toInt();
        QCOMPARE(workers, row.value("values").toArray()[1].toInt());
        // One node sends nothing; two exchange updates or averages (every 2 of their 4
        // iterations: the traffic counted is what nodes send between their first and last one).
        if (workers == 1) QCOMPARE(row.value("bytes_per_iter").toDouble(), 0.0);
        else QVERIFY(row.value("bytes_per_iter").toDouble() > 0);
        sps[row.value("point").toInt()] = row.value("samples_per_s").toDouble();
    }
    QCOMPARE(sps.size(), 4);
    QCOMPARE(results.value("points").toArray().size(), 4);
    // A model per strategy, calibrated from the runs' phase times; every point left out once.
    const QJsonObject model = results.value("model").toObject();
    QVERIFY(model.value("fitted").toBool());
    const QJsonArray per_strategy = model.value("per_strategy").toArray();
    QCOMPARE(per_strategy.size(), 2);
    int left_out = 0;
    for (const auto& m : per_strategy) {
        QVERIFY(m.toObject().value("phases").toBool());
        QVERIFY(m.toObject().value("compute_ms").toDouble() > 0);
        left_out += int(m.toObject().value("leave_one_out").toArray().size());
    }
    QCOMPARE(left_out, 4);
    for (const auto& row : results.value("runs").toArray()) QVERIFY(row.toObject().value("compute_ms").toDouble() > 0);

    QFile csv(path("out/results.csv"));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(csv.readAll()).trimmed().split('\n').size(), 5);
    QFile report(path("out/report.html"));
    QVERIFY(report.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(report.readAll());
    QVERIFY(html.count("<circle class=\"point\"") >= 4 * 4);
    QVERIFY(!html.contains("<script") && !html.contains("src="));

    // Again: everything is done, nothing runs, nothing changes.
    const auto again = run_cli(args, kSweepTimeoutMs);
    QVERIFY2(again.exit_code == 0, qPrintable(again.err));
    QVERIFY2(again.err.contains("4 run(s) already done"), qPrintable(again.err));
    QVERIFY2(!again.err.contains("run 1/"), qPrintable(again.err));
    QCOMPARE(read_json(path("out/results.json")).value("runs").toArray(), runs);

    // One run taken out (as if the sweep had stopped there): only it runs.
    QJsonObject edited = results;
    QJsonArray fewer = runs;
    int removed_point = -1;
    for (int i = 0; i < fewer.size(); ++i)
        if (fewer[i].toObject().value("point").toInt() == 3) {
            fewer.removeAt(i);
            removed_point = 3;
            break;
        }
    QCOMPARE(removed_point, 3);
    edited.insert("runs", fewer);
    QVERIFY(write_file(path("out/results.json"), QJsonDocument(edited).toJson()));
    const auto resumed = run_cli(args, kSweepTimeoutMs);
    QVERIFY2(resumed.exit_code == 0, qPrintable(resumed.err));
    QVERIFY2(resumed.err.contains("3 run(s) already done") && resumed.err.contains("1 to run"), qPrintable(resumed.err));
    QVERIFY2(resumed.err.contains("run 1/1: point 4 (strategy = parameter-averaging, nodes = 2)"), qPrintable(resumed.err));
    const QJsonArray after = read_json(path("out/results.json")).value("runs").toArray();
    QCOMPARE(after.size(), 4);
    for (const auto& v : after) {
        const QJsonObject row = v.toObject();
        const int point = row.value("point").toInt();
        if (point != 3) QCOMPARE(row.value("samples_per_s").toDouble(), sps[point]);  // kept, not re-run
        QCOMPARE(row.value("status").toString(), QString("ok"));
    }
}

void TestSweepCli::interrupted_sweep_resumes() {
    // Three one-node points; SIGINT once the second has started: the first stays recorded, and
    // the same command then runs only the other two.
    const QString mlp = qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/resources/models/mlp.json";
    QVERIFY(write_file(path("stop.json"), QString(R"({"format": "thresher-sweep", "version": 1, "name": "stop",
        "base": {"format": "thresher-run", "version": 1, "model": "%1", "data": "fashion-mnist",
                 "training": {"epochs": 1, "batch": 32, "limit": 4096, "threads": 1}, "udp_port": %2},
        "axes": [{"field": "batch", "values": [16, 32, 64]}]})").arg(mlp).arg(free_ports(1)).toUtf8()));
    const QStringList args{"sweep", path("stop.json"), "--out", path("stop-out"), "--engine", bin("thresher-engine")};
    QProcess p;
    p.start(bin("thresher-launch"), args);
    QVERIFY(p.waitForStarted(10000));
    QString err;
    QDeadlineTimer deadline(kSweepTimeoutMs);
    while (!err.contains("run 2/3: point 2") && !deadline.hasExpired() && p.state() == QProcess::Running) {
        p.waitForReadyRead(1000);
        err += QString::fromUtf8(p.readAllStandardError());
    }
    QVERIFY2(err.contains("run 2/3: point 2"), qPrintable(err));
    ::kill(pid_t(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(60000));
    err += QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 1);
    // Normally the signal stops point 2's run; on a machine slow to deliver it, that run may have
    // finished first and the sweep stops before point 3. Either way what finished is kept.
    const QJsonArray runs = read_json(path("stop-out/results.json")).value("runs").toArray();
    const int done = int(runs.size());
    QVERIFY2(done == 1 ? err.contains("stopped during point 2") : done == 2, qPrintable(err));
    for (int i = 0; i < done; ++i) {
        QCOMPARE(runs[i].toObject().value("point").toInt(), i);
        QCOMPARE(runs[i].toObject().value("status").toString(), QString("ok"));
    }

    const auto resumed = run_cli(args, kSweepTimeoutMs);
    QVERIFY2(resumed.exit_code == 0, qPrintable(resumed.err));
    QVERIFY2(resumed.err.contains(QString("%1 run(s) already done").arg(done)) &&
                 resumed.err.contains(QString("%1 to run").arg(3 - done)), qPrintable(resumed.err));
    QVERIFY2(resumed.err.contains(QString("run 1/%1: point %2 (batch = %3)").arg(3 - done).arg(done + 1).arg(done == 1 ? 32 : 64)),
             qPrintable(resumed.err));
    const QJsonArray after = read_json(path("stop-out/results.json")).value("runs").toArray();
    QCOMPARE(after.size(), 3);
    for (int i = 0; i < done; ++i) QCOMPARE(after[i].toObject(), runs[i].toObject());  // kept as they were
}

void TestSweepCli::bad_sweep_is_a_usage_error() {
    QVERIFY(write_file(path("bad.json"), QString(R"({"format": "thresher-sweep", "version": 1,
        "base": {"format": "thresher-run", "version": 1, "model": "%1/resources/models/mlp.json"},
        "axes": [{"field": "nodes", "values": [1, -2]}]})").arg(qEnvironmentVariable("THRESHER_SOURCE_DIR")).toUtf8()));
    const auto r = run_cli({"sweep", path("bad.json"), "--out", path("bad-out")});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("bad.json: axes[0].values[1] (nodes = -2): cluster.nodes: must be a positive integer, got -2"),
             qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(path("bad-out")));
}

QTEST_MAIN(TestSweepCli)
#include "test_sweep_cli.moc"
