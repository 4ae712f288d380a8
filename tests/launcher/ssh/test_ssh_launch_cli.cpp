// `thresher-launch run` on SSH clusters, the launcher as a child process:
//   - SIGKILL of thresher-launch mid-run leaves no engine behind within a few seconds: the
//     kernel closes its SSH connections, sshd closes the engines' stdin, and an engine started
//     with --secret-stdin ends on EOF (engine/cli/stdin_control.h);
//   - SIGSTOP of thresher-launch (frozen, or its machine gone without closing the connection:
//     sshd notices nothing) ends the engines after --heartbeat-timeout of silence on their stdin;
//   - as root: sshd in two network namespaces joined by a veth pair (10.77.0.1/24 and
//     10.77.0.2/24, addresses only inside namespaces this test makes), thresher-launch running in
//     the first: a full 2-node run across them completes and prints both nodes' events.
// Engines are found by a marker in their command line: the remote cache folder, unique to the
// test's temporary folder (its bundles hold the engine the hosts run).
#include <QtTest>

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QProcess>
#include <csignal>
#include <unistd.h>

#include "launch_fixture.h"
#include "netns_pair.h"
#include "sshd_fixture.h"

using namespace launch_fixture;

namespace {

using test_support::NetnsPair;

QList<QJsonObject> events_of(const QByteArray& out) {
    QList<QJsonObject> events;
    for (const QByteArray& line : out.split('\n'))
        if (!line.trimmed().isEmpty()) events << QJsonDocument::fromJson(line).object();
    return events;
}

int count(const QList<QJsonObject>& events, const QString& name, int node) {
    int n = 0;
    for (const auto& e : events) n += e.value("event").toString() == name && e.value("node").toInt() == node;
    return n;
}

}  // namespace

class TestSshLaunchCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void killed_launcher_leaves_no_engine();
    void frozen_launcher_leaves_no_engine();
    void two_namespaces_train_over_ssh();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    QString spec(const QString& name, const QString& model, const QString& data, const QString& training,
                 const QStringList& hosts, int port);

    SshdFixture sshd_;
    QTemporaryDir dir_;
};

void TestSshLaunchCli::initTestCase() {
    if (const QString why = SshdFixture::unavailable(); !why.isEmpty()) QSKIP(qPrintable("no real sshd here: " + why));
    QVERIFY(dir_.isValid());
    QVERIFY2(QFileInfo(bin("thresher-launch")).isExecutable(), qPrintable(bin("thresher-launch")));
    QVERIFY(write_file(path("slow.json"), kSlowModel));
    QVERIFY(write_file(path("tiny.json"), kTinyModel));
    QVERIFY(write_file(path("big.csv"), three_class_csv(4800)));
    QVERIFY(write_file(path("data.csv"), three_class_csv(480)));
}

void TestSshLaunchCli::cleanupTestCase() { NetnsPair("thr-ssh").remove_leftovers(); }

QString TestSshLaunchCli::spec(const QString& name, const QString& model, const QString& data, const QString& training,
                               const QStringList& hosts, int port) {
    const QString file = path(name + ".json");
    const QByteArray text = QString(R"({"format":"thresher-run","version":1,"name":"%1","model":"%2","data":"%3",
        "training":{%4},"cluster":{"kind":"ssh","hosts":[%5]},"udp_port":%6})")
                                .arg(name, model, data, training, hosts.join(',')).arg(port).toUtf8();
    if (!write_file(file, text)) qFatal("cannot write %s", qPrintable(file));
    return file;
}

void TestSshLaunchCli::killed_launcher_leaves_no_engine() {
    QString error;
    QVERIFY2(sshd_.start(error), qPrintable(error));
    const QString cache = path("cache-kill");
    const QString file = spec("kill", "slow.json", "big.csv", R"("epochs":500,"batch":16,"threads":1)",
                              {sshd_.host_json(), sshd_.host_json()}, free_ports(2));
    QProcess launcher;
    launcher.start(bin("thresher-launch"), {"run", file, "--events", "--accept-new-host-keys", "--remote-cache", cache,
                                            "--connect-timeout", "5"});
    QVERIFY(launcher.waitForStarted());
    QByteArray out;
    QElapsedTimer waited;
    waited.start();
    QList<QJsonObject> events;
    while (waited.elapsed() < 60000 && launcher.state() == QProcess::Running) {
        launcher.waitForReadyRead(100);
        out += launcher.readAllStandardOutput();
        events = events_of(out.left(out.lastIndexOf('\n') + 1));
        if (count(events, "iteration", 0) > 2 && count(events, "iteration", 1) > 2) break;
    }
    QVERIFY2(count(events, "iteration", 0) > 2 && count(events, "iteration", 1) > 2,
             qPrintable(QString::fromUtf8(launcher.readAllStandardError())));
    const QString marker = cache + "/bundles/";
    QCOMPARE(pids_with_cmdline(marker).size(), 2);  // the marker finds both engines

    ::kill(static_cast<pid_t>(launcher.processId()), SIGKILL);
    QVERIFY(launcher.waitForFinished(5000));
    QElapsedTimer gone;
    gone.start();
    while (!pids_with_cmdline(marker).isEmpty() && gone.elapsed() < 10000) QTest::qWait(100);
    // Typically: one engine dies at once (SIGPIPE on its next event: sshd is gone); the other
    // sees EOF on stdin, but its workers wait in gradient sharing's drain for the vanished peer,
    // so the stdin watch's 3 s deadline ends it. Either way well within a few seconds.
    QVERIFY2(pids_with_cmdline(marker).isEmpty(), "engines still running 10 s after the launcher was killed");
    qInfo("engines gone %.1f s after SIGKILL of thresher-launch", gone.elapsed() / 1000.0);
    sshd_.stop();
}

void TestSshLaunchCli::frozen_launcher_leaves_no_engine() {
    QString error;
    SshdFixture sshd;  // its own: a fixture starts once
    QVERIFY2(sshd.start(error), qPrintable(error));
    const QString cache = path("cache-freeze");
    const QString file = spec("freeze", "slow.json", "big.csv", R"("epochs":500,"batch":16,"threads":1)",
                              {sshd.host_json(), sshd.host_json()}, free_ports(2));
    QProcess launcher;
    launcher.start(bin("thresher-launch"), {"run", file, "--events", "--accept-new-host-keys", "--remote-cache", cache,
                                            "--connect-timeout", "5", "--heartbeat-timeout", "3"});
    QVERIFY(launcher.waitForStarted());
    QByteArray out;
    QElapsedTimer waited;
    waited.start();
    QList<QJsonObject> events;
    // Training past two heartbeat timeouts shows the heartbeats keep the engines alive.
    while (waited.elapsed() < 60000 && launcher.state() == QProcess::Running) {
        launcher.waitForReadyRead(100);
        out += launcher.readAllStandardOutput();
        events = events_of(out.left(out.lastIndexOf('\n') + 1));
        if (count(events, "iteration", 0) > 2 && count(events, "iteration", 1) > 2) break;
    }
    QVERIFY2(count(events, "iteration", 0) > 2 && count(events, "iteration", 1) > 2,
             qPrintable(QString::fromUtf8(launcher.readAllStandardError())));
    QTest::qWait(7000);
    QVERIFY2(launcher.state() == QProcess::Running, qPrintable(QString::fromUtf8(launcher.readAllStandardError())));
    const QString marker = cache + "/bundles/";
    QCOMPARE(pids_with_cmdline(marker).size(), 2);

    ::kill(static_cast<pid_t>(launcher.processId()), SIGSTOP);  // the connections stay open, silent
    QElapsedTimer gone;
    gone.start();
    while (!pids_with_cmdline(marker).isEmpty() && gone.elapsed() < 20000) QTest::qWait(100);
    const qint64 took = gone.elapsed();
    ::kill(static_cast<pid_t>(launcher.processId()), SIGKILL);
    QVERIFY(launcher.waitForFinished(5000));
    // 3 s of silence, then a graceful stop (or the engine's 3 s stop deadline).
    QVERIFY2(pids_with_cmdline(marker).isEmpty(), "engines still running 20 s after the launcher froze");
    QVERIFY2(took >= 2500, qPrintable(QString("engines ended %1 ms after the freeze: before the heartbeat timeout").arg(took)));
    qInfo("engines gone %.1f s after SIGSTOP of thresher-launch (heartbeat timeout 3 s)", took / 1000.0);
    sshd.stop();
}

void TestSshLaunchCli::two_namespaces_train_over_ssh() {
    // The namespaces are isolated from the host's network, so these addresses are ours alone.
    const QString addr_a = "10.77.0.1", addr_b = "10.77.0.2";
    NetnsPair pair("thr-ssh");
    if (!pair.create(addr_a, addr_b)) {
        if (!pair.skip_reason.isEmpty()) QSKIP(qPrintable(pair.skip_reason + " (with sshd in each)"));
        QFAIL(qPrintable(pair.error));
    }
    const QString &ip = pair.ip, &a = pair.a, &b = pair.b;
    QString err;

    SshdFixture host_a, host_b;
    QVERIFY2(host_a.start(err, addr_a, a), qPrintable(err));
    QVERIFY2(host_b.start(err, addr_b, b), qPrintable(err));
    const QString cache = path("cache-netns");
    const QString file = spec("netns", "tiny.json", "data.csv", R"("epochs":2,"batch":16,"threads":1)",
                              {host_a.host_json(), host_b.host_json()}, 40123);
    // The launcher runs inside namespace a: it reaches host a on its own veth address and host b
    // across the veth pair, as a machine on a cluster's network would.
    QProcess launcher;
    launcher.start(ip, {"netns", "exec", a, bin("thresher-launch"), "run", file, "--events", "--accept-new-host-keys",
                        "--remote-cache", cache, "--connect-timeout", "5", "-v"});
    QVERIFY(launcher.waitForStarted());
    QVERIFY(launcher.waitForFinished(90000));
    const QByteArray out = launcher.readAllStandardOutput();
    const QString log = QString::fromUtf8(launcher.readAllStandardError());
    QVERIFY2(launcher.exitCode() == 0, qPrintable(log));
    const auto events = events_of(out);
    for (int node = 0; node < 2; ++node) {
        QVERIFY2(count(events, "run_started", node) == 1, qPrintable(log));
        QVERIFY2(count(events, "iteration", node) > 0, qPrintable(log));
        QVERIFY2(count(events, "run_finished", node) == 1, qPrintable(log));
    }
    for (const auto& e : events)
        if (e.value("event").toString() == "run_finished") QCOMPARE(e.value("status").toString(), QString("ok"));
    // Each node ran on its own address: the engine lines name the --nodes of both namespaces.
    QVERIFY2(log.contains(QString("[host 0 %1] ").arg(addr_a)) && log.contains(QString("[host 1 %1] ").arg(addr_b)), qPrintable(log));
    QVERIFY2(log.contains(QString("%1:40123,%2:40123").arg(addr_a, addr_b)), qPrintable(log));
    QVERIFY2(log.contains("run finished: 2 host(s) finished in "), qPrintable(log));
}

QTEST_GUILESS_MAIN(TestSshLaunchCli)
#include "test_ssh_launch_cli.moc"
