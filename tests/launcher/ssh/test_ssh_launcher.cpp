// SshLauncher against a real sshd on 127.0.0.1 (sshd_fixture.h); the two "hosts" of each run
// are two connections to it, so both nodes run on this machine under their own sessions, with
// engine bundles and data in a remote cache inside the test's temporary folder:
//   - a full 2-node gradient-sharing run (resources/models/mlp.json on fashion-mnist) finishes,
//     with events from both nodes, stderr lines prefixed "[host N 127.0.0.1] ", and node 0's
//     saved model fetched back;
//   - the engine bundle (the engine, its HDF5 reader, their libraries) and a CSV data set are
//     uploaded the first time only;
//   - a changed host key, a key the server does not accept, a closed port and an engine whose
//     libraries do not resolve on the host each end the run before any engine starts, with one
//     error naming the host (the closed port within the connect timeout);
//   - a failing node ends the run with its exit code and stderr;
//   - stop() ends the remote engines gracefully (run_finished "stopped") and leaves none;
//   - a shard set (thresher-engine export, 4 train shards) with per-node placement: each host
//     gets the index and its node's 2 shards only, and the two nodes train from them.
#include <QtTest>

#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QRegularExpression>
#include <QSignalSpy>

#include "launch_fixture.h"
#include "ssh_launcher.h"
#include "sshd_fixture.h"
#include "staged_tree.h"

using namespace thresher::launcher;
using namespace launch_fixture;

namespace {

struct Outcome {
    bool finished = false;
    int code = 0;
    QString summary;
    QList<QJsonObject> events;
    QStringList log;
    qint64 ms = 0;

    QList<QJsonObject> of(const QString& name, int node = -1) const {
        QList<QJsonObject> out;
        for (const auto& e : events)
            if (e.value("event").toString() == name && (node < 0 || e.value("node").toInt() == node)) out << e;
        return out;
    }
    int log_count(const QString& pattern) const {
        return static_cast<int>(log.filter(QRegularExpression(pattern)).size());
    }
    QString text() const {
        return QString("exit %1: %2\n--- log ---\n%3").arg(code).arg(summary, log.join('\n'));
    }
};

}  // namespace

class TestSshLauncher : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void create_launcher_needs_the_registration();
    void two_nodes_train_over_ssh();
    void bundle_and_data_are_uploaded_once();
    void changed_host_key_is_refused();
    void unaccepted_identity_is_refused();
    void unreachable_host_fails_within_the_timeout();
    void missing_engine_dependency_is_refused();
    void failing_node_ends_the_run_with_its_stderr();
    void stop_ends_the_remote_engines();
    void per_node_shards_go_to_their_hosts_only();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    QString spec_file(const QString& name, const QString& model, const QString& data, const QString& training,
                      const QStringList& hosts, const QString& extra = {});
    LaunchOptions options(const QString& cache) const;
    // Runs the spec with an SshLauncher; `while_running` is called once every node iterates.
    Outcome run(const QString& spec, const LaunchOptions& o, int timeout_ms,
                const std::function<void(Launcher&)>& while_running = {});

    SshdFixture sshd_;
    QTemporaryDir dir_;
};

void TestSshLauncher::initTestCase() {
    if (const QString why = SshdFixture::unavailable(); !why.isEmpty()) QSKIP(qPrintable("no real sshd here: " + why));
    QVERIFY(dir_.isValid());
    QString error;
    QVERIFY2(sshd_.start(error), qPrintable(error));
    // Learn the host key once, as `thresher-launch check --accept-new-host-keys` would.
    thresher::launcher::ssh::SshSession learn(sshd_.target(true));
    QVERIFY(learn.host_key_added());
    QVERIFY(write_file(path("tiny.json"), kTinyModel));
    QVERIFY(write_file(path("slow.json"), kSlowModel));
    QVERIFY(write_file(path("data.csv"), three_class_csv(192)));
    QVERIFY(write_file(path("big.csv"), three_class_csv(4800)));
    QVERIFY2(QFileInfo(bin("thresher-engine")).isExecutable(), qPrintable(bin("thresher-engine")));
}

QString TestSshLauncher::spec_file(const QString& name, const QString& model, const QString& data,
                                   const QString& training, const QStringList& hosts, const QString& extra) {
    const QString file = path(name + ".json");
    const QString m = model.trimmed().startsWith('{') ? model : "\"" + model + "\"";
    const QByteArray text = QString(R"({"format":"thresher-run","version":1,"name":"%1","model":%2,"data":"%3",
        "training":{%4},"cluster":{"kind":"ssh","hosts":[%5]},"udp_port":%6%7})")
                                .arg(name, m, data, training, hosts.join(',')).arg(free_ports(2))
                                .arg(extra.isEmpty() ? QString() : "," + extra).toUtf8();
    if (!write_file(file, text)) qFatal("cannot write %s", qPrintable(file));
    return file;
}

LaunchOptions TestSshLauncher::options(const QString& cache) const {
    LaunchOptions o;
    o.engine = bin("thresher-engine");
    o.grace_ms = 3000;
    o.ssh.known_hosts_file = sshd_.known_hosts();
    o.ssh.ssh_config_file = sshd_.path("no-ssh-config");
    o.ssh.connect_timeout_s = 5;
    o.ssh.start_timeout_s = 60;
    o.ssh.remote_cache = path(cache);
    return o;
}

Outcome TestSshLauncher::run(const QString& spec_path, const LaunchOptions& o, int timeout_ms,
                             const std::function<void(Launcher&)>& while_running) {
    Outcome out;
    const RunSpec spec = RunSpec::load(spec_path);
    thresher::launcher::ssh::SshLauncher launcher(o);
    QElapsedTimer clock;
    clock.start();
    bool called = false;
    QObject::connect(&launcher, &Launcher::event, [&](const QJsonObject& e) {
        out.events << e;
        if (while_running && !called && !out.of("iteration", 0).isEmpty() && !out.of("iteration", 1).isEmpty()) {
            called = true;
            while_running(launcher);
        }
    });
    QObject::connect(&launcher, &Launcher::logLine, [&](const QString& line) {
        out.log << QString("%1 ms %2").arg(clock.elapsed(), 6).arg(line);  // when, for failure reports
    });
    QObject::connect(&launcher, &Launcher::finished, [&](int code, const QString& summary) {
        out.finished = true;
        out.code = code;
        out.summary = summary;
    });
    launcher.start(spec);
    while (!out.finished && clock.elapsed() < timeout_ms) QTest::qWait(20);
    out.ms = clock.elapsed();
    if (!out.finished) out.summary = QString("no finished() within %1 ms").arg(timeout_ms);
    // finished() means every host thread is done; no engine may remain.
    if (!o.ssh.remote_cache.isEmpty()) {
        const auto left = pids_with_cmdline(o.ssh.remote_cache + "/bundles/");
        if (!left.isEmpty()) qWarning("engines left after finished(): %d", int(left.size()));
        out.summary += left.isEmpty() ? QString() : QString("\nLEFT RUNNING: %1 process(es)").arg(left.size());
    }
    return out;
}

void TestSshLauncher::create_launcher_needs_the_registration() {
    const RunSpec spec = RunSpec::load(spec_file("reg", "tiny.json", "data.csv", R"("threads":1)", {sshd_.host_json()}));
    set_launcher_factory(ClusterSettings::Kind::Ssh, {});
    try {
        create_launcher(spec, {});
        QFAIL("create_launcher made a launcher for an SSH cluster with none registered");
    } catch (const LaunchError& e) {
        QVERIFY2(QString(e.what()).contains("register_ssh_launcher"), e.what());
    }
    thresher::launcher::ssh::register_ssh_launcher();
    const auto launcher = create_launcher(spec, {});
    QVERIFY(dynamic_cast<thresher::launcher::ssh::SshLauncher*>(launcher.get()) != nullptr);
}

void TestSshLauncher::two_nodes_train_over_ssh() {
    if (!QFileInfo::exists("/usr/share/datasets/fashion-mnist")) QSKIP("needs /usr/share/datasets/fashion-mnist");
    const QString model = QDir(qEnvironmentVariable("THRESHER_SOURCE_DIR")).filePath("resources/models/mlp.json");
    const QString spec = spec_file("full", model, "fashion-mnist",
                                   R"("strategy":"gradient-sharing","epochs":1,"batch":64,"limit":2000,"threads":1)",
                                   {sshd_.host_json(), sshd_.host_json()}, R"("save":"full.thr")");
    const Outcome r = run(spec, options("cache-full"), 90000);
    QVERIFY2(r.code == 0, qPrintable(r.text()));
    QVERIFY2(r.summary.startsWith("2 host(s) finished in "), qPrintable(r.summary));
    for (int node = 0; node < 2; ++node) {
        QVERIFY2(r.of("run_started", node).size() == 1, qPrintable(r.text()));
        QCOMPARE(r.of("run_started", node).first().value("nodes").toInt(), 2);
        QVERIFY2(!r.of("iteration", node).isEmpty(), qPrintable(r.text()));
        QVERIFY2(r.of("run_finished", node).size() == 1, qPrintable(r.text()));
        QCOMPARE(r.of("run_finished", node).first().value("status").toString(), QString("ok"));
        // The engine's stderr, under its host's prefix.
        QVERIFY2(r.log_count(QString(" ms \\[host %1 127\\.0\\.0\\.1\\] ").arg(node)) > 0, qPrintable(r.text()));
    }
    QVERIFY2(!r.of("epoch_end", 0).isEmpty(), qPrintable(r.text()));
    // Node 0 saved the model on its host; the launcher fetched it next to the spec.
    QVERIFY2(QFileInfo(path("full.thr")).size() > 1000000, qPrintable(r.text()));  // 1.8 M parameters
    QVERIFY2(r.log_count(": saved model fetched to " + QRegularExpression::escape(path("full.thr"))) == 1, qPrintable(r.text()));
    // fashion-mnist was there on the "host": used as is, not staged.
    QCOMPARE(r.log_count(": data [0-9a-f]+ uploaded"), 0);
    QVERIFY(!QFileInfo::exists(path("cache-full/data")) || QDir(path("cache-full/data")).isEmpty());
    // The secret never appears on an engine's command line.
    const QStringList commands = r.log.filter("thresher-engine' 'train'");
    QCOMPARE(commands.size(), 2);
    for (const QString& line : commands) QVERIFY2(line.contains("'--secret-stdin'"), qPrintable(line));
    qInfo("2-node SSH run: %.1f s", r.ms / 1000.0);
}

void TestSshLauncher::bundle_and_data_are_uploaded_once() {
    const QString spec = spec_file("cached", "tiny.json", "data.csv", R"("epochs":1,"batch":16,"threads":1)",
                                   {sshd_.host_json(), sshd_.host_json()});
    const LaunchOptions o = options("cache-once");
    const Outcome first = run(spec, o, 60000);
    QVERIFY2(first.code == 0, qPrintable(first.text()));
    // Both hosts are this machine: one or both may upload (the first rename wins), never none.
    const int bundles = first.log_count(": engine bundle [0-9a-f]{12} uploaded: ");
    QVERIFY2(bundles >= 1 && bundles <= 2, qPrintable(first.text()));
    const int data = first.log_count(": data [0-9a-f]{12} uploaded: ");
    QVERIFY2(data >= 1 && data <= 2, qPrintable(first.text()));
    for (const QString& line : first.log.filter(QRegularExpression("(engine bundle|data) [0-9a-f]{12} uploaded")))
        qInfo("%s", qPrintable(line));

    const Outcome second = run(spec, o, 60000);
    QVERIFY2(second.code == 0, qPrintable(second.text()));
    QCOMPARE(second.log_count(" uploaded: "), 0);
    QCOMPARE(second.log_count(": engine bundle [0-9a-f]{12} already there$"), 2);
    QCOMPARE(second.log_count(": data [0-9a-f]{12} already there$"), 2);
    QCOMPARE(second.of("run_finished").size(), 2);

    // On the "host": one whole bundle (binary, libraries, marker), no half uploads, no run folders.
    const QStringList bundle_dirs = QDir(path("cache-once/bundles")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(bundle_dirs.size(), 1);
    QVERIFY2(QRegularExpression("^[0-9a-f]{64}$").match(bundle_dirs.first()).hasMatch(), qPrintable(bundle_dirs.first()));
    const QString bundle = path("cache-once/bundles/") + bundle_dirs.first();
    QVERIFY(QFileInfo::exists(bundle + "/.complete"));
    QVERIFY(QFileInfo(bundle + "/bin/thresher-engine").isExecutable());
    QVERIFY(QFileInfo(bundle + "/bin/thresher-hdf5-reader").isExecutable());  // the engine reads .h5 through it
    QVERIFY(!QDir(bundle + "/lib").entryList({"libhdf5*"}, QDir::Files).isEmpty());
    QVERIFY(!QDir(bundle + "/lib").entryList({"libc.so*", "libm.so*", "ld-linux*"}, QDir::Files).size());
    QCOMPARE(QDir(path("cache-once/runs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot), QStringList());
    qint64 bytes = 0;
    for (QDirIterator it(bundle, QDir::Files, QDirIterator::Subdirectories); it.hasNext();) bytes += QFileInfo(it.next()).size();
    qInfo("bundle: %s, %lld bytes, libs: %s", qPrintable(bundle_dirs.first().left(12)), bytes,
          qPrintable(QDir(bundle + "/lib").entryList(QDir::Files).join(' ')));
}

void TestSshLauncher::changed_host_key_is_refused() {
    // A known_hosts that lists another key for this host:port: refused, nothing runs.
    QFile pub(sshd_.stranger_key() + ".pub");
    QVERIFY(pub.open(QIODevice::ReadOnly));
    const QList<QByteArray> key = pub.readAll().split(' ');
    const QString wrong = path("wrong_known_hosts");
    QVERIFY(write_file(wrong, QString("[127.0.0.1]:%1 %2 %3\n").arg(sshd_.port()).arg(QString(key[0]), QString(key[1])).toUtf8()));
    LaunchOptions o = options("cache-refused");
    o.ssh.known_hosts_file = wrong;
    o.ssh.accept_new_host_keys = true;  // never covers a changed key
    const Outcome r = run(spec_file("hostkey", "tiny.json", "data.csv", R"("threads":1)", {sshd_.host_json(), sshd_.host_json()}),
                          o, 30000);
    qInfo("summary (%lld ms): %s", r.ms, qPrintable(r.summary));
    QCOMPARE(r.code, kExitCouldNotStart);
    QVERIFY2(r.summary.contains(QRegularExpression("^host [01] 127\\.0\\.0\\.1: ssh root@127\\.0\\.0\\.1:\\d+: host key: host key changed")),
             qPrintable(r.text()));
    QVERIFY(r.events.isEmpty());
    QCOMPARE(r.log_count("engine bundle"), 0);
}

void TestSshLauncher::unaccepted_identity_is_refused() {
    const Outcome r = run(spec_file("identity", "tiny.json", "data.csv", R"("threads":1)",
                                    {sshd_.host_json(), sshd_.host_json(sshd_.stranger_key())}),
                          options("cache-identity"), 30000);
    qInfo("summary (%lld ms): %s", r.ms, qPrintable(r.summary));
    QCOMPARE(r.code, kExitCouldNotStart);
    QVERIFY2(r.summary.startsWith("host 1 127.0.0.1: ssh root@127.0.0.1:") && r.summary.contains(": auth: refused"),
             qPrintable(r.text()));
    QVERIFY2(r.summary.contains(sshd_.stranger_key()), qPrintable(r.summary));
    QVERIFY(r.events.isEmpty());
}

void TestSshLauncher::unreachable_host_fails_within_the_timeout() {
    const int closed = free_ports(1);  // nothing listens there
    const QString unreachable = QString(R"({"address":"127.0.0.1","port":%1,"user":"root","identity_file":"%2"})")
                                    .arg(closed).arg(sshd_.client_key());
    LaunchOptions o = options("cache-unreachable");
    o.ssh.connect_timeout_s = 3;
    const Outcome r = run(spec_file("unreachable", "tiny.json", "data.csv", R"("threads":1)", {sshd_.host_json(), unreachable}), o, 30000);
    qInfo("summary (%lld ms): %s", r.ms, qPrintable(r.summary));
    QCOMPARE(r.code, kExitCouldNotStart);
    QVERIFY2(r.summary.startsWith(QString("host 1 127.0.0.1: ssh root@127.0.0.1:%1: connect: ").arg(closed)), qPrintable(r.text()));
    QVERIFY2(r.ms < 3000 + 5000, qPrintable(QString("took %1 ms").arg(r.ms)));
    QVERIFY(r.events.isEmpty());
}

void TestSshLauncher::missing_engine_dependency_is_refused() {
    // The host already holds "the" bundle (same hash, marker present), but its engine needs a
    // library the host's loader cannot find — as when a host lacks a library the bundle does not
    // carry (glibc's are never shipped). The launcher asks the host's loader before starting.
    const QString helper = bin("needs_missing_library");
    QVERIFY2(QFileInfo(helper).isExecutable(), qPrintable(helper));
    const auto bundle = thresher::launcher::ssh::engine_bundle(bin("thresher-engine"));
    const QString seeded = path("cache-missing/bundles/") + bundle.hash;
    QVERIFY(QDir().mkpath(seeded + "/bin") && QDir().mkpath(seeded + "/lib"));
    QVERIFY(QFile::copy(helper, seeded + "/bin/thresher-engine"));
    QVERIFY(write_file(seeded + "/.complete", {}));
    const Outcome r = run(spec_file("missing", "tiny.json", "data.csv", R"("threads":1)", {sshd_.host_json(), sshd_.host_json()}),
                          options("cache-missing"), 30000);
    qInfo("summary (%lld ms): %s", r.ms, qPrintable(r.summary));
    QCOMPARE(r.code, kExitCouldNotStart);
    QVERIFY2(r.summary.contains(QRegularExpression("^host [01] 127\\.0\\.0\\.1: missing engine dependencies: ")), qPrintable(r.text()));
    QVERIFY2(r.summary.contains("libthresher_test_missing.so => not found"), qPrintable(r.summary));
    QVERIFY(r.events.isEmpty());
}

void TestSshLauncher::failing_node_ends_the_run_with_its_stderr() {
    // A model whose output does not fit the data's 3 classes: every engine refuses it at load.
    const QString model = R"({"input":{"size":16},"layers":[{"type":"output","units":5}]})";
    const Outcome r = run(spec_file("failing", model, "data.csv", R"("threads":1)", {sshd_.host_json(), sshd_.host_json()}),
                          options("cache-failing"), 60000);
    qInfo("summary (%lld ms): %s", r.ms, qPrintable(r.summary));
    QVERIFY2(r.code == 1, qPrintable(r.text()));
    QVERIFY2(r.summary.contains(QRegularExpression("^host [01] 127\\.0\\.0\\.1 exited with code 1; its last stderr lines:\n  ")),
             qPrintable(r.text()));
    QVERIFY2(r.summary.contains("thresher-engine: error: "), qPrintable(r.summary));
}

void TestSshLauncher::stop_ends_the_remote_engines() {
    const QString spec = spec_file("stop", "slow.json", "big.csv", R"("epochs":500,"batch":16,"threads":1)",
                                   {sshd_.host_json(), sshd_.host_json()});
    const LaunchOptions o = options("cache-stop");
    QElapsedTimer since_stop;
    const Outcome r = run(spec, o, 90000, [&](Launcher& l) {
        QVERIFY(!pids_with_cmdline(o.ssh.remote_cache + "/bundles/").isEmpty());  // the marker finds engines
        since_stop.start();
        l.stop();
    });
    QVERIFY2(since_stop.isValid(), qPrintable(r.text()));
    QVERIFY2(r.code == kExitStopped, qPrintable(r.text()));
    QVERIFY2(!r.summary.contains("LEFT RUNNING"), qPrintable(r.summary));
    // Graceful: each engine saw its stdin close and reported the stop itself, well inside the
    // grace period, so nothing needed SIGKILL.
    for (int node = 0; node < 2; ++node) {
        QVERIFY2(r.of("run_finished", node).size() == 1, qPrintable(r.text()));
        QCOMPARE(r.of("run_finished", node).first().value("status").toString(), QString("stopped"));
    }
    QCOMPARE(r.log_count("killing process group"), 0);
    QVERIFY2(since_stop.elapsed() < 10000, qPrintable(QString("%1 ms").arg(since_stop.elapsed())));
}

// Per-node shard placement through SshLauncher (ssh/staged_tree.h shard_subset_tree is tested
// on its own in test_shard_staging): a real export, two nodes, two staged subsets.
void TestSshLauncher::per_node_shards_go_to_their_hosts_only() {
    const Finished exported = run_to_end(bin("thresher-engine"), {"export", "--data", path("data.csv"), "--out", path("shards"),
                                                                  "--batch", "16", "--shards", "4"}, 60000);
    QVERIFY2(exported.code == 0, qPrintable(exported.text()));
    const QString spec = spec_file("per-node", "tiny.json", "shards", R"("epochs":1,"batch":16,"threads":1,"shard_placement":"per-node")",
                                   {sshd_.host_json(), sshd_.host_json()});
    const Outcome r = run(spec, options("cache-shards"), 60000);
    // Staged whatever the engine then makes of it: one folder per node, index and 2 shards each.
    QCOMPARE(r.log_count(": data [0-9a-f]{12} uploaded: 3 files, "), 2);
    const QDir data(path("cache-shards/data"));
    QStringList held;
    for (const QString& d : data.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QStringList files;
        for (QDirIterator it(data.filePath(d), QDir::Files, QDirIterator::Subdirectories); it.hasNext();)
            files << data.relativeFilePath(it.next()).section('/', 1);
        files.sort();
        held << files.join(' ');
    }
    held.sort();
    QCOMPARE(held, QStringList({"index.json train/shard-00000.thrs train/shard-00002.thrs",
                                "index.json train/shard-00001.thrs train/shard-00003.thrs"}));
    // Each engine trains from its host's subset (--shard-placement per-node, spec/shard_placement.h).
    QVERIFY2(r.code == 0, qPrintable(r.text()));
    for (int node = 0; node < 2; ++node) {
        QVERIFY2(!r.of("iteration", node).isEmpty(), qPrintable(r.text()));
        QCOMPARE(r.of("run_finished", node).value(0).value("status").toString(), QString("ok"));
    }
}

QTEST_GUILESS_MAIN(TestSshLauncher)
#include "test_ssh_launcher.moc"
