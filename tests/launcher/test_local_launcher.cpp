// LocalLauncher with real thresher-engine processes on loopback: a small 2-node run finishes
// with events from both nodes; a bad model or a node that cannot start its network fails the
// run with a summary naming the node and the engine's error; stop() mid-run ends every engine
// gracefully (each reports run_finished "stopped") and leaves none behind, and escalates to SIGKILL of the whole process group when TERM is ignored; and a
// `thresher-launch run` killed with SIGKILL takes its engines with it (PR_SET_PDEATHSIG).
#include <QtTest>

#include <QJsonDocument>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launch_fixture.h"
#include "local_launcher.h"

using namespace launch_fixture;
using thresher::launcher::kExitCouldNotStart;
using thresher::launcher::kExitStopped;
using thresher::launcher::Launcher;
using thresher::launcher::LaunchOptions;
using thresher::launcher::LocalLauncher;
using thresher::launcher::RunSpec;

namespace {

// What a launcher reported; events are kept only while `keep_events` (long runs only count).
struct Record {
    explicit Record(Launcher& l, bool keep_events = true) {
        QObject::connect(&l, &Launcher::event, [this, keep_events](const QJsonObject& e) {
            const int node = e.value("node").toInt();
            if (e.value("event").toString() == "iteration") ++iterations[node];
            if (e.value("event").toString() == "run_finished") run_finished[node] << e.value("status").toString();
            if (keep_events) events << e;
        });
        QObject::connect(&l, &Launcher::logLine, [this](const QString& line) { log << line; });
        QObject::connect(&l, &Launcher::finished, [this](int code, const QString& summary) {
            ++finished;
            exit_code = code;
            this->summary = summary;
        });
    }
    QList<QJsonObject> of(const QString& kind, int node) const {
        QList<QJsonObject> out;
        for (const auto& e : events)
            if (e.value("event").toString() == kind && e.value("node").toInt() == node) out << e;
        return out;
    }
    QList<QJsonObject> events;
    QStringList log;
    QHash<int, int> iterations;
    QHash<int, QStringList> run_finished;  // node -> the statuses of its run_finished events
    int finished = 0, exit_code = -100;
    QString summary;
};

// A UDP socket holding 127.0.0.1:port for as long as it lives.
struct PortHolder {
    explicit PortHolder(int port) : fd(::socket(AF_INET, SOCK_DGRAM, 0)) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(port));
        bound = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    ~PortHolder() { ::close(fd); }
    int fd;
    bool bound = false;
};

}  // namespace

class TestLocalLauncher : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void two_nodes_finish_data();
    void two_nodes_finish();
    void bad_model_fails_naming_node_and_error();
    void failing_node_stops_the_others();
    void engine_not_found();
    void stop_mid_run_leaves_no_engines();
    void stop_escalates_to_sigkill_of_the_group();
    void sigkill_of_launcher_leaves_no_engines();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    RunSpec spec(const QString& name, const QByteArray& text) {
        if (!write_file(path(name), text)) qFatal("cannot write %s", qPrintable(path(name)));
        return RunSpec::load(path(name));
    }
    // Thousands of epochs of the slow model: far longer than any test waits.
    QByteArray long_spec(int port) const {
        return local_spec("slow.json", "big.csv", 2, port, R"("epochs":5000,"batch":8,"threads":1,"seed":1)");
    }
    LaunchOptions options(int grace_ms = 5000) const {
        LaunchOptions o;
        o.engine = bin("thresher-engine");
        o.grace_ms = grace_ms;
        return o;
    }
    QTemporaryDir dir_;
};

void TestLocalLauncher::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFileInfo(bin("thresher-engine")).isExecutable(), qPrintable(bin("thresher-engine")));
    QVERIFY(write_file(path("tiny.json"), kTinyModel));
    QVERIFY(write_file(path("slow.json"), kSlowModel));
    QVERIFY(write_file(path("data.csv"), three_class_csv(96)));
    QVERIFY(write_file(path("big.csv"), three_class_csv(960)));
}

void TestLocalLauncher::two_nodes_finish_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("training");
    QTest::addColumn<QString>("save");
    QTest::newRow("model file, gradient sharing") << "tiny.json" << R"("strategy":"gradient-sharing")" << "";
    QTest::newRow("inline model, parameter averaging, saved")
        << QString(kTinyModel) << R"("strategy":"parameter-averaging","averaging_frequency":2)" << "pa.thr";
}

void TestLocalLauncher::two_nodes_finish() {
    QFETCH(QString, model);
    QFETCH(QString, training);
    QFETCH(QString, save);
    const int port = free_ports(2);
    const RunSpec s = spec("two.json", local_spec(model, "data.csv", 2, port, training + R"(,"epochs":2,"batch":8,"threads":1,"seed":3)",
                                                  save.isEmpty() ? QString() : "\"save\":\"" + save + "\""));
    LocalLauncher l(options());
    Record r(l);
    l.start(s);
    QVERIFY(l.running());
    QTRY_COMPARE_WITH_TIMEOUT(r.finished, 1, 120000);
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary + "\n" + r.log.join('\n')));
    QVERIFY2(r.summary.contains("2 node(s) finished"), qPrintable(r.summary));
    QVERIFY(!l.running());
    for (int node = 0; node < 2; ++node) {
        QCOMPARE(r.of("run_started", node).size(), 1);
        QCOMPARE(r.of("run_started", node).first().value("nodes").toInt(), 2);
        QVERIFY(!r.of("iteration", node).isEmpty());
        QCOMPARE(r.of("run_finished", node).size(), 1);
        QCOMPARE(r.of("run_finished", node).first().value("status").toString(), QString("ok"));
        for (const auto& w : r.of("warning", node)) QFAIL(qPrintable(QJsonDocument(w).toJson()));
        QVERIFY(std::any_of(r.log.begin(), r.log.end(), [node](const QString& line) {
            return line.startsWith(QString("[node %1] ").arg(node));
        }));
    }
    // Node 0, the controller, reports each epoch for the cluster.
    QCOMPARE(r.of("epoch_end", 0).size(), 2);
    // The secret went by file name only, and its private folder is gone with the run.
    const auto started = r.log.filter(QRegularExpression("^\\[launcher\\] node 1: pid \\d+: "));
    QCOMPARE(started.size(), 1);
    const QString secret = started.first().section("--secret-file ", 1).section(' ', 0, 0);
    QVERIFY2(secret.endsWith("/secret"), qPrintable(started.first()));
    QVERIFY(!QFileInfo::exists(secret));
    QVERIFY(!QFileInfo::exists(QFileInfo(secret).path()));
    if (!save.isEmpty()) QVERIFY(QFileInfo(path(save)).size() > 0);
}

void TestLocalLauncher::bad_model_fails_naming_node_and_error() {
    const QString bad = R"({"name":"bad","input":{"size":16},"layers":[{"type":"dense","units":0},{"type":"output","units":3}]})";
    const RunSpec s = spec("bad.json", local_spec(bad, "data.csv", 2, free_ports(2), R"("epochs":1,"threads":1)"));
    LocalLauncher l(options());
    Record r(l);
    l.start(s);
    QTRY_COMPARE_WITH_TIMEOUT(r.finished, 1, 60000);
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(QRegularExpression("^node [01] exited with code 1; its last stderr lines:").match(r.summary).hasMatch(),
             qPrintable(r.summary));
    QVERIFY2(r.summary.contains(R"(layers[0] (dense): "units": must be in)"), qPrintable(r.summary));
    // The engine's own events said so too.
    QVERIFY(!r.of("error", 0).isEmpty() || !r.of("error", 1).isEmpty());
}

void TestLocalLauncher::failing_node_stops_the_others() {
    const int port = free_ports(2);
    PortHolder holder(port + 1);  // node 1 cannot bind its port; node 0 would wait for it
    QVERIFY(holder.bound);
    const RunSpec s = spec("taken.json", local_spec("tiny.json", "data.csv", 2, port, R"("epochs":1,"threads":1)"));
    LocalLauncher l(options(2000));
    Record r(l);
    QElapsedTimer clock;
    clock.start();
    l.start(s);
    const QList<qint64> pids = l.pids();
    QCOMPARE(pids.size(), 2);
    QTRY_COMPARE_WITH_TIMEOUT(r.finished, 1, 30000);
    QVERIFY2(r.summary.startsWith("node 1 exited with code"), qPrintable(r.summary));
    QVERIFY2(r.summary.contains("in use"), qPrintable(r.summary));
    QVERIFY2(r.summary.contains("the other nodes were stopped"), qPrintable(r.summary));
    QVERIFY(r.exit_code > 0 && r.exit_code != kExitCouldNotStart);
    QVERIFY2(clock.elapsed() < 20000, "node 0 was not stopped");
    for (qint64 pid : pids) QVERIFY(!alive(pid));
}

void TestLocalLauncher::engine_not_found() {
    const RunSpec s = spec("nf.json", local_spec("tiny.json", "data.csv", 2, free_ports(2), R"("threads":1)"));
    LaunchOptions o = options();
    o.engine = path("no-such-engine");
    LocalLauncher l(o);
    Record r(l);
    l.start(s);
    QTRY_COMPARE_WITH_TIMEOUT(r.finished, 1, 10000);
    QCOMPARE(r.exit_code, kExitCouldNotStart);
    QVERIFY2(r.summary.startsWith("node 0: could not start " + path("no-such-engine")), qPrintable(r.summary));
}

void TestLocalLauncher::stop_mid_run_leaves_no_engines() {
    const RunSpec s = spec("long.json", long_spec(free_ports(2)));
    LocalLauncher l(options());
    Record r(l, false);
    l.start(s);
    QTRY_VERIFY_WITH_TIMEOUT(r.iterations.value(0) >= 20 && r.iterations.value(1) >= 20, 60000);
    const QList<qint64> pids = l.pids();
    QCOMPARE(pids.size(), 2);
    for (qint64 pid : pids) QVERIFY(alive(pid));
    QCOMPARE(r.finished, 0);
    QElapsedTimer clock;
    clock.start();
    l.stop();
    QTRY_COMPARE_WITH_TIMEOUT(r.finished, 1, 10000);
    QCOMPARE(r.exit_code, kExitStopped);
    QVERIFY2(r.summary.startsWith("stopped after"), qPrintable(r.summary));
    QVERIFY2(!r.summary.contains("SIGKILL"), qPrintable(r.summary));  // SIGTERM was enough
    for (qint64 pid : pids) QVERIFY2(!alive(pid), qPrintable(QString("engine %1 still running").arg(pid)));
    QVERIFY2(clock.elapsed() < 4000, qPrintable(QString("stop took %1 ms").arg(clock.elapsed())));
    // SIGTERM is a graceful stop (engine/cli/stop_requests.h): each engine reported its end.
    for (int node = 0; node < 2; ++node)
        QVERIFY2(r.run_finished.value(node) == QStringList{"stopped"},
                 qPrintable(QString("node %1: %2").arg(node).arg(r.run_finished.value(node).join(','))));
    qInfo("stopped in %lld ms", clock.elapsed());
}

void TestLocalLauncher::stop_escalates_to_sigkill_of_the_group() {
    // An "engine" that ignores SIGTERM and has a child doing the same: only SIGKILL of the whole
    // process group ends both.
    const QString fake = path("stubborn-engine");
    QVERIFY(write_file(fake, "#!/bin/sh\ntrap '' TERM\nsleep 300 &\necho '{\"event\":\"run_started\",\"t\":0}'\nwait\n"));
    QVERIFY(QFile::setPermissions(fake, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    const RunSpec s = spec("stubborn.json", local_spec("tiny.json", "data.csv", 1, free_ports(1), R"("threads":1)"));
    LaunchOptions o = options(1000);
    o.engine = fake;
    LocalLauncher l(o);
    Record r(l);
    l.start(s);
    QTRY_COMPARE_WITH_TIMEOUT(r.of("run_started", 0).size(), 1, 10000);
    QCOMPARE(l.pids().size(), 1);
    const qint64 group = l.pids().first();
    QList<qint64> members;
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
            members.clear();
            for (const auto& p : processes())
                if (p.pgid == group && p.state != 'Z') members << p.pid;
            return members.size() == 2;  // sh and sleep
        }(),
        10000);
    QElapsedTimer clock;
    clock.start();
    l.stop();
    QTRY_COMPARE_WITH_TIMEOUT(r.finished, 1, 10000);
    QVERIFY2(clock.elapsed() >= 900, "the grace period was not waited out");
    QCOMPARE(r.exit_code, kExitStopped);
    QVERIFY2(r.summary.contains("1 needed SIGKILL after the 1 s grace period"), qPrintable(r.summary));
    for (qint64 pid : members) QTRY_VERIFY2_WITH_TIMEOUT(!alive(pid), qPrintable(QString("%1 survived").arg(pid)), 3000);
}

void TestLocalLauncher::sigkill_of_launcher_leaves_no_engines() {
    write_file(path("cli-long.json"), long_spec(free_ports(2)));
    QProcess launcher;
    QByteArray out;
    connect(&launcher, &QProcess::readyReadStandardOutput, [&] { out += launcher.readAllStandardOutput(); });
    launcher.setProcessChannelMode(QProcess::SeparateChannels);
    launcher.start(bin("thresher-launch"), {"run", path("cli-long.json"), "--events", "--engine", bin("thresher-engine")});
    QVERIFY(launcher.waitForStarted(10000));
    // Running: iteration events from both nodes on the launcher's stdout.
    QTRY_VERIFY_WITH_TIMEOUT(out.contains(R"("event":"iteration")") && out.contains(R"("node":1)") &&
                                 out.count("\"event\":\"iteration\"") > 40,
                             60000);
    QList<qint64> engines;
    for (const auto& p : processes())
        if (p.ppid == launcher.processId() && p.comm == "thresher-engine" && p.state != 'Z') engines << p.pid;
    QCOMPARE(engines.size(), 2);
    launcher.kill();  // SIGKILL: no handler, no cleanup code in the launcher runs
    QVERIFY(launcher.waitForFinished(5000));
    QCOMPARE(launcher.exitStatus(), QProcess::CrashExit);
    QElapsedTimer clock;
    clock.start();
    for (qint64 pid : engines)
        QTRY_VERIFY2_WITH_TIMEOUT(!alive(pid), qPrintable(QString("engine %1 outlived its launcher").arg(pid)), 5000);
    QVERIFY(clock.elapsed() < 5000);
}

QTEST_GUILESS_MAIN(TestLocalLauncher)
#include "test_local_launcher.moc"
