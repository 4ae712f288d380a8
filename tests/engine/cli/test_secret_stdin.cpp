// `thresher-engine train --secret-stdin` (engine/cli/stdin_control.h), the SSH launcher's way
// of starting a remote engine: the run secret is the first line of stdin, and stdin reaching EOF
// afterwards stops the run — run_finished "stopped", exit code 143 — which is how a stopped or
// dropped SSH connection ends its engine. Each test can fail: two nodes that disagree on the
// secret never finish; an engine that ignored EOF would run its 200 epochs.
#include <QtTest>

#include <QElapsedTimer>
#include <QTimer>
#include <QProcess>
#include <QTemporaryDir>

#include <sys/stat.h>

#include "engine_process.h"

namespace {

const char* kModel = R"({"name":"ss","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.05},
  "layers":[{"type":"dense","units":64,"activation":"tanh"},{"type":"output","units":3}]})";

const QByteArray kSecret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";

}  // namespace

class TestSecretStdin : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void two_nodes_share_the_secret_from_stdin();
    void different_secrets_are_not_one_run();
    void eof_on_stdin_stops_the_run();
    void silent_stdin_stops_the_run_after_the_heartbeat();
    void silent_stdin_ends_an_engine_whose_output_is_stuck();
    void eof_before_the_secret_is_an_error();
    void secret_file_and_stdin_exclude_each_other();

private:
    QString path(const QString& n) const { return dir_.filePath(n); }
    QStringList args(int rank, const QString& nodes, int epochs) const {
        return {"train", "--model", path("m.json"), "--data", path("data.csv"), "--epochs", QString::number(epochs),
                "--batch", "8", "--seed", "5", "--threads", "1", "--nodes", nodes, "--node-rank", QString::number(rank),
                "--strategy", "gradient-sharing", "--secret-stdin"};
    }
    QTemporaryDir dir_;
};

void TestSecretStdin::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY(write_file(path("m.json"), kModel));
    QVERIFY(write_file(path("data.csv"), test_support::three_class_csv(480)));
}

void TestSecretStdin::two_nodes_share_the_secret_from_stdin() {
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    NodeGroup group;
    for (int rank = 0; rank < 2; ++rank) {
        const int i = group.start(args(rank, nodes, 2));
        QVERIFY(group.process(i).waitForStarted());
        group.process(i).write(kSecret);  // and stdin stays open, as over SSH
    }
    QVERIFY2(group.wait_for([&] { return group.count_events(0, "run_finished") && group.count_events(1, "run_finished"); }, 60000),
             qPrintable(group.stdout_so_far(0)));
    const auto runs = group.wait_all(10000);
    for (int rank = 0; rank < 2; ++rank) {
        const EngineRun& r = runs[rank];
        QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
        QCOMPARE(r.of("run_finished").size(), 1);
        QCOMPARE(r.of("run_finished").first().value("status").toString(), QString("ok"));
        QCOMPARE(r.of("run_started").first().value("nodes").toInt(), 2);
        // Never on the command line: argv holds the flag, not the key.
        QVERIFY(!args(rank, nodes, 2).join(' ').contains(QString::fromLatin1(kSecret.trimmed())));
    }
}

void TestSecretStdin::different_secrets_are_not_one_run() {
    // Each node takes what its own stdin says: with different secrets their datagrams fail each
    // other's HMAC (and the run ids differ), so the two cannot train together. The nodes wait
    // for each other and never finish; stopping them through stdin ends both.
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    NodeGroup group;
    for (int rank = 0; rank < 2; ++rank) {
        const int i = group.start(args(rank, nodes, 2));
        QVERIFY(group.process(i).waitForStarted());
        group.process(i).write(rank == 0 ? kSecret : QByteArray("ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100\n"));
    }
    QVERIFY(!group.wait_for([&] { return group.count_events(0, "run_finished") + group.count_events(1, "run_finished") > 0; }, 4000));
    for (int i = 0; i < 2; ++i) group.process(i).closeWriteChannel();
    const auto runs = group.wait_all(15000);
    for (const auto& r : runs) {
        QVERIFY2(r.finished, qPrintable(r.summary()));
        QVERIFY2(r.of("run_finished").size() == 1 && r.of("run_finished").first().value("status").toString() == "stopped",
                 qPrintable(r.summary()));
    }
}

void TestSecretStdin::eof_on_stdin_stops_the_run() {
    // Two nodes on 200 epochs (far beyond the test's time); once both iterate, stdin closes.
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    NodeGroup group;
    for (int rank = 0; rank < 2; ++rank) {
        const int i = group.start(args(rank, nodes, 200));
        QVERIFY(group.process(i).waitForStarted());
        group.process(i).write(kSecret);
    }
    QVERIFY2(group.wait_for([&] { return group.count_events(0, "iteration") > 5 && group.count_events(1, "iteration") > 5; }, 60000),
             qPrintable(group.stdout_so_far(0)));
    QElapsedTimer stopping;
    stopping.start();
    for (int i = 0; i < 2; ++i) group.process(i).closeWriteChannel();
    const auto runs = group.wait_all(15000);
    const qint64 took = stopping.elapsed();
    for (int rank = 0; rank < 2; ++rank) {
        const EngineRun& r = runs[rank];
        QVERIFY2(r.finished, qPrintable(r.summary()));
        QVERIFY2(r.exit_code == 143, qPrintable(r.summary()));
        const auto finished = r.of("run_finished");
        QVERIFY2(finished.size() == 1, qPrintable(r.summary()));
        QCOMPARE(finished.first().value("status").toString(), QString("stopped"));
        QVERIFY(finished.first().value("iters").toInt() > 5);
        QVERIFY2(r.contract_errors.isEmpty(), qPrintable(r.contract_errors.join('\n')));
        QVERIFY2(r.of("epoch_end").size() < 200, qPrintable(r.summary()));
    }
    // Gracefully at the next iteration: well before the 3 s stop deadline would end it.
    qInfo("both nodes stopped %lld ms after stdin closed", took);
    for (const EngineRun& r : runs)
        QVERIFY2(!r.stderr_text.contains("did not end within 3 s"), qPrintable(r.summary()));
    QVERIFY2(took < 2500, qPrintable(QString("stopping took %1 ms").arg(took)));
}

void TestSecretStdin::silent_stdin_stops_the_run_after_the_heartbeat() {
    // --stdin-heartbeat 1.5: heartbeat lines every 300 ms keep both nodes training well past 1.5 s;
    // when they stop (stdin still open, as when the launcher's machine vanishes without closing
    // the connection) both nodes stop on their own, naming the silence.
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    NodeGroup group;
    for (int rank = 0; rank < 2; ++rank) {
        const int i = group.start(args(rank, nodes, 100000) << "--stdin-heartbeat" << "1.5");
        QVERIFY(group.process(i).waitForStarted());
        group.process(i).write(kSecret);
    }
    QTimer beat;
    QObject::connect(&beat, &QTimer::timeout, [&] {
        for (int i = 0; i < 2; ++i) group.process(i).write("\n");
    });
    beat.start(300);
    QVERIFY2(group.wait_for([&] { return group.count_events(0, "iteration") > 5 && group.count_events(1, "iteration") > 5; }, 60000),
             qPrintable(group.stdout_so_far(0)));
    // Three heartbeat periods later both still train.
    QVERIFY2(!group.wait_for([&] { return group.count_events(0, "run_finished") + group.count_events(1, "run_finished") > 0; }, 4500),
             qPrintable(group.stdout_so_far(0) + "\n" + group.stdout_so_far(1)));
    beat.stop();
    QElapsedTimer silent;
    silent.start();
    const auto runs = group.wait_all(15000);
    const qint64 took = silent.elapsed();
    for (const EngineRun& r : runs) {
        QVERIFY2(r.finished && r.exit_code == 143, qPrintable(r.summary()));
        QVERIFY2(r.stderr_text.contains("no heartbeat from the launcher on stdin for 1.5 s"), qPrintable(r.summary()));
        QCOMPARE(r.of("run_finished").size(), 1);
        QCOMPARE(r.of("run_finished").first().value("status").toString(), QString("stopped"));
    }
    qInfo("both nodes stopped %lld ms after the last heartbeat", took);
    QVERIFY2(took >= 1000 && took < 1500 + 3500, qPrintable(QString("stopping took %1 ms").arg(took)));
}

// A frozen launcher (SIGSTOP) stops reading the SSH channel: the engine's stdout and stderr fill
// up and every write blocks. The heartbeat's deadline must still end the process; it used to wait
// forever on its own "stopping the run" line to stderr (test_ssh_launch_cli's frozen launcher,
// now and then). Here stdout and stderr go to a FIFO that nobody reads.
void TestSecretStdin::silent_stdin_ends_an_engine_whose_output_is_stuck() {
    const QString fifo = path("stuck.fifo");
    QFile::remove(fifo);
    QVERIFY(::mkfifo(QFile::encodeName(fifo).constData(), 0600) == 0);
    const auto ports = free_node_ports(1);
    QStringList engine{engine_binary()};
    engine << args(0, QString("127.0.0.1:%1").arg(ports[0]), 100000) << "--stdin-heartbeat" << "1";
    QStringList quoted;
    for (const QString& a : engine) quoted << "'" + a + "'";
    QProcess p;
    // exec 3<>FIFO holds both ends, so writes succeed until the pipe's 64 KiB are full, then block.
    p.start("/bin/sh", {"-c", "exec 3<>'" + fifo + "'; exec " + quoted.join(' ') + " >&3 2>&3"});
    QVERIFY(p.waitForStarted());
    p.write(kSecret);
    QVERIFY(p.waitForBytesWritten(5000));
    // Heartbeats for a while: the engine trains and fills the FIFO (a few hundred iterations).
    for (int i = 0; i < 10; ++i) {
        p.write("\n");
        QTest::qWait(300);
    }
    QVERIFY2(p.state() == QProcess::Running, "the engine ended while it still had heartbeats");
    QElapsedTimer silent;
    silent.start();
    // 1 s of silence, the graceful stop's 3 s, a second for the last words: about 5 s.
    const bool ended = p.waitForFinished(15000);
    if (!ended) p.kill();
    QVERIFY2(ended, "the engine was still running 15 s after the last heartbeat, its output stuck");
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 143);
    qInfo("stuck engine ended %lld ms after the last heartbeat", silent.elapsed());
}

void TestSecretStdin::eof_before_the_secret_is_an_error() {
    QProcess p;
    p.start(engine_binary(), args(0, "127.0.0.1:1,127.0.0.1:2", 1));
    QVERIFY(p.waitForStarted());
    p.write("0011223344");  // no newline, then EOF
    p.closeWriteChannel();
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 1);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains("--secret-stdin: stdin ended before the secret's line"), qPrintable(err));
    EngineRun r;
    r.stdout_text = QString::fromUtf8(p.readAllStandardOutput());
    parse_events(r);
    QCOMPARE(r.of("run_finished").size(), 1);
    QCOMPARE(r.of("run_finished").first().value("status").toString(), QString("failed"));
}

void TestSecretStdin::secret_file_and_stdin_exclude_each_other() {
    QVERIFY(write_file(path("secret"), kSecret));
    QProcess p;
    p.start(engine_binary(), args(0, "127.0.0.1:1,127.0.0.1:2", 1) << "--secret-file" << path("secret"));
    QVERIFY(p.waitForStarted());
    p.closeWriteChannel();
    QVERIFY(p.waitForFinished(30000));
    QVERIFY(p.exitCode() != 0);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains("--secret-stdin") && err.contains("excludes"), qPrintable(err));
}

QTEST_GUILESS_MAIN(TestSecretStdin)
#include "test_secret_stdin.moc"
