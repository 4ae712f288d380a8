// thresher-launch as users and scripts run it: a small 2-node run prints one line per epoch on
// a non-terminal stderr and passes events through with --events; every outcome has its exit
// code (0 ok, 1 failed, 2 usage/spec); `check` gives a verdict per node; SIGINT and SIGTERM
// stop the run cleanly and leave no engine.
#include <QtTest>

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <csignal>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launch_fixture.h"

using namespace launch_fixture;

class TestLaunchCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void run_prints_epochs_and_passes_events();
    void outcomes_data();
    void outcomes();
    void signal_stops_the_run_data();
    void signal_stops_the_run();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    QTemporaryDir dir_;
};

void TestLaunchCli::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFileInfo(bin("thresher-launch")).isExecutable(), qPrintable(bin("thresher-launch")));
    QVERIFY(write_file(path("tiny.json"), kTinyModel));
    QVERIFY(write_file(path("slow.json"), kSlowModel));
    QVERIFY(write_file(path("data.csv"), three_class_csv(96)));
    QVERIFY(write_file(path("big.csv"), three_class_csv(960)));
}

void TestLaunchCli::run_prints_epochs_and_passes_events() {
    QVERIFY(write_file(path("ok.json"), local_spec("tiny.json", "data.csv", 2, free_ports(2), R"("epochs":2,"batch":8,"threads":1)")));
    const auto r = run_cli({"run", path("ok.json"), "--events", "--engine", bin("thresher-engine")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    // stderr is not a terminal here: no redrawn progress, one line per epoch, then the result.
    QVERIFY2(!r.err.contains('\r'), qPrintable(r.err));
    QCOMPARE(r.err.count(QRegularExpression("^epoch \\d/2: loss ", QRegularExpression::MultilineOption)), 2);
    QVERIFY2(r.err.contains("\nrun finished: 2 node(s) finished in "), qPrintable(r.err));
    // stdout: nothing but the engines' events, from both nodes.
    QSet<int> nodes;
    int finished = 0;
    for (const auto& line : r.out.split('\n', Qt::SkipEmptyParts)) {
        const QJsonObject e = QJsonDocument::fromJson(line.toUtf8()).object();
        QVERIFY2(e.value("event").isString(), qPrintable(line));
        nodes << e.value("node").toInt();
        finished += e.value("event").toString() == "run_finished";
    }
    QCOMPARE(nodes, (QSet<int>{0, 1}));
    QCOMPARE(finished, 2);
}

void TestLaunchCli::outcomes_data() {
    QTest::addColumn<QString>("setup");
    QTest::addColumn<QStringList>("args");  // SPEC stands for the spec file setup wrote
    QTest::addColumn<int>("exit_code");
    QTest::addColumn<QString>("expected");  // in stdout or stderr
    QTest::newRow("no subcommand") << "" << QStringList{} << 2 << "A subcommand is required";
    QTest::newRow("unknown option") << "local" << QStringList{"run", "SPEC", "--fast"} << 2 << "--fast";
    QTest::newRow("missing spec file") << "" << QStringList{"run", "/nonexistent/spec.json"} << 2
                                       << "/nonexistent/spec.json: cannot read";
    QTest::newRow("run: invalid spec") << "bad" << QStringList{"run", "SPEC"} << 2
                                       << "training.batch: must be a positive integer, got 0";
    QTest::newRow("check: invalid spec") << "bad" << QStringList{"check", "SPEC"} << 2 << "training.batch:";
    // SSH runs for real are in tests/launcher/ssh; here the hosts do not resolve, and the run
    // fails before any engine starts, naming a host.
    QTest::newRow("run: ssh hosts") << "ssh" << QStringList{"run", "SPEC", "--connect-timeout", "10"} << 1
                                    << "thresher-launch: run failed: host ";
    QTest::newRow("run: bad model") << "bad-model" << QStringList{"run", "SPEC"} << 1
                                    << "thresher-launch: run failed: node ";
    // 400 KB of nested arrays as the spec, and a model nested 200 deep inside a valid spec: each
    // refused with a message naming the file and place, never a crash.
    QTest::newRow("run: 400 KB of nested arrays") << "deep" << QStringList{"run", "SPEC"} << 2
                                                  << "deep.json:1:";
    QTest::newRow("run: model nested 200 deep") << "deep-model" << QStringList{"run", "SPEC"} << 1
                                                << "nested deeper than 64 levels";
    QTest::newRow("check: ready") << "local" << QStringList{"check", "SPEC"} << 0 << "verdict: ready";
    // Real SSH checks are in tests/launcher/ssh; hosts that do not resolve simply fail.
    QTest::newRow("check: ssh hosts") << "ssh" << QStringList{"check", "SPEC", "--host-timeout", "10"} << 1
                                      << "node 1  me@b.example:22  FAILED";
    QTest::newRow("check: port taken") << "taken" << QStringList{"check", "SPEC"} << 1 << "FAILED: UDP port";
    QTest::newRow("check: no engine") << "local" << QStringList{"check", "SPEC", "--engine", "/nonexistent/engine"} << 1
                                      << "FAILED: the engine does not run";
}

void TestLaunchCli::outcomes() {
    QFETCH(QString, setup);
    QFETCH(QStringList, args);
    QFETCH(int, exit_code);
    QFETCH(QString, expected);
    const QString spec = path(setup + ".json");
    const int port = free_ports(2);
    int holder = -1;
    if (setup == "local" || setup == "taken") {
        QVERIFY(write_file(spec, local_spec("tiny.json", "data.csv", 2, port, R"("threads":1)")));
    } else if (setup == "bad") {
        QVERIFY(write_file(spec, local_spec("tiny.json", "data.csv", 2, port, R"("batch":0)")));
    } else if (setup == "bad-model") {
        QVERIFY(write_file(spec, local_spec(R"({"input":{"size":16},"layers":[{"type":"output","units":0}]})", "data.csv", 2,
                                            port, R"("threads":1)")));
    } else if (setup == "deep") {
        QVERIFY(write_file(spec, QByteArray(400 * 1024, '[')));
    } else if (setup == "deep-model") {
        const QByteArray deep = QByteArray(200, '[') + QByteArray(200, ']');
        QVERIFY(write_file(spec, local_spec(QString::fromUtf8(R"({"input":{"size":16},"layers":)" + deep + "}"), "data.csv", 2, port,
                                            R"("threads":1)")));
    } else if (setup == "ssh") {
        QVERIFY(write_file(spec, R"({"format":"thresher-run","version":1,"model":"tiny.json",
            "cluster":{"kind":"ssh","hosts":[{"address":"a.example"},{"address":"b.example","user":"me"}]}})"));
    }
    if (setup == "taken") {
        holder = ::socket(AF_INET, SOCK_DGRAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(port + 1));
        QVERIFY(::bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    }
    args.replaceInStrings(QRegularExpression("^SPEC$"), spec);
    if (args.value(0) == "run" || (args.value(0) == "check" && !args.contains("--engine")))
        args << "--engine" << bin("thresher-engine");
    const auto r = run_cli(args);
    if (holder >= 0) ::close(holder);
    QVERIFY2(r.exit_code == exit_code, qPrintable(QString("exit %1\n%2%3").arg(r.exit_code).arg(r.out, r.err)));
    QVERIFY2((r.out + r.err).contains(expected), qPrintable(r.out + r.err));
}

void TestLaunchCli::signal_stops_the_run_data() {
    QTest::addColumn<int>("sig");
    QTest::newRow("SIGINT (Ctrl-C)") << SIGINT;
    QTest::newRow("SIGTERM") << SIGTERM;
}

void TestLaunchCli::signal_stops_the_run() {
    QFETCH(int, sig);
    QVERIFY(write_file(path("long.json"), local_spec("slow.json", "big.csv", 2, free_ports(2),
                                                     R"("epochs":5000,"batch":8,"threads":1)")));
    QProcess launcher;
    QByteArray out;
    connect(&launcher, &QProcess::readyReadStandardOutput, [&] { out += launcher.readAllStandardOutput(); });
    launcher.start(bin("thresher-launch"), {"run", path("long.json"), "--events", "--engine", bin("thresher-engine")});
    QVERIFY(launcher.waitForStarted(10000));
    QTRY_VERIFY_WITH_TIMEOUT(out.count("\"event\":\"iteration\"") > 40 && out.contains(R"("node":1)"), 60000);
    QList<qint64> engines;
    for (const auto& p : processes())
        if (p.ppid == launcher.processId() && p.comm == "thresher-engine" && p.state != 'Z') engines << p.pid;
    QCOMPARE(engines.size(), 2);
    ::kill(static_cast<pid_t>(launcher.processId()), sig);
    QVERIFY(launcher.waitForFinished(10000));
    const QString err = QString::fromUtf8(launcher.readAllStandardError());
    QCOMPARE(launcher.exitStatus(), QProcess::NormalExit);
    QVERIFY2(launcher.exitCode() == 1, qPrintable(err));
    QVERIFY2(err.contains("stopping the engines") && err.contains("run stopped: stopped after"), qPrintable(err));
    for (qint64 pid : engines) QVERIFY2(!alive(pid), qPrintable(QString("engine %1 still running").arg(pid)));
}

QTEST_GUILESS_MAIN(TestLaunchCli)
#include "test_launch_cli.moc"
