// SlurmLauncher in-process against a real one-node Slurm (tests/support/slurm_cluster.h):
//   - submit mode: a 2-task run is submitted, followed through the queue (job_state events with
//     the job id), finishes with both nodes' events; the secret file is gone afterwards;
//   - the LeNet example spec (resources/runs/lenet-slurm.json, 1 node × 2 tasks) on a small
//     slice of Fashion-MNIST finishes with both replicas equal (`thresher-engine compare`);
//   - `scancel` of the job by someone else mid-run: every engine is gone within seconds and the
//     summary says CANCELLED; stop(): the same, reported as stopped;
//   - a job on a DOWN partition shows PENDING and Slurm's reason (PartitionDown);
//   - a partition that does not exist: sbatch's own error, exit kExitCouldNotStart.
// Engines are found by their command line: it holds the run folder (the secret's path).
#include <QtTest>

#include <QJsonDocument>
#include <QSignalSpy>

#include "launch_fixture.h"
#include "free_ports.h"
#include "netns_pair.h"
#include "slurm_cluster.h"
#include "slurm_launcher.h"

using namespace launch_fixture;
using thresher::launcher::kExitCouldNotStart;
using thresher::launcher::kExitStopped;
using thresher::launcher::LaunchOptions;
using thresher::launcher::RunSpec;
using thresher::launcher::SlurmLaunchOptions;
using thresher::launcher::slurm::SlurmLauncher;
using test_support::SlurmCluster;

namespace {

// thresher-engine processes whose command line holds `marker` (srun's holds it too).
int engines_with(const QString& marker) {
    int n = 0;
    for (qint64 pid : pids_with_cmdline(marker))
        for (const Proc& p : processes()) n += p.pid == pid && p.comm == "thresher-engine";
    return n;
}

struct Outcome {
    bool finished = false;
    int code = 0;
    QString summary;
    QList<QJsonObject> events;
    QStringList log;
    QString text() const { return QString("exit %1: %2\n--- log:\n%3").arg(code).arg(summary, log.join('\n')); }
    QList<QJsonObject> of(const QString& name, int node = -2) const {
        QList<QJsonObject> out;
        for (const auto& e : events)
            if (e.value("event").toString() == name && (node == -2 || e.value("node").toInt() == node)) out << e;
        return out;
    }
};

}  // namespace

class TestSlurmLauncher : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void submitted_job_trains_two_tasks();
    void lenet_spec_replicas_equal();
    void scancel_mid_run_ends_every_engine();
    void stop_cancels_the_job();
    void stop_in_an_allocation_cancels_the_step();
    void pending_job_shows_its_reason();
    void bad_partition_is_a_clear_error();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    RunSpec spec(const QString& name, const QString& cluster, const QString& training, const QString& model = "tiny.json",
                 const QString& data = "data.csv", const QString& extra = {});
    LaunchOptions options() const;
    // Connects `l` and starts `s`; the run's folder is the first log line.
    void start(SlurmLauncher& l, const RunSpec& s, Outcome& o);
    // Waits (deadline) for `o` to finish.
    bool wait_finished(Outcome& o, int timeout_ms);
    // Waits (deadline) until `n` nodes announced run_started.
    bool wait_started(Outcome& o, int nodes, int timeout_ms);

    SlurmCluster cluster_;
    QTemporaryDir dir_;
};

void TestSlurmLauncher::initTestCase() {
    if (const QString why = SlurmCluster::unavailable(); !why.isEmpty()) QSKIP(qPrintable("no real Slurm here: " + why));
    QVERIFY(dir_.isValid());
    QString error;
    QVERIFY2(cluster_.start(error), qPrintable(error));
    QVERIFY(write_file(path("tiny.json"), kTinyModel));
    QVERIFY(write_file(path("slow.json"), kSlowModel));
    QVERIFY(write_file(path("data.csv"), three_class_csv(480)));
    QVERIFY(write_file(path("big.csv"), three_class_csv(4800)));
}

void TestSlurmLauncher::cleanupTestCase() { cluster_.stop(); }

RunSpec TestSlurmLauncher::spec(const QString& name, const QString& cluster, const QString& training,
                                const QString& model, const QString& data, const QString& extra) {
    const QString text = QString(R"({"format":"thresher-run","version":1,"name":"%1","model":"%2","data":"%3",
        "training":{%4},"cluster":{"kind":"slurm",%5},"udp_port":%6%7})")
                             .arg(name, model, path(data), training, cluster)
                             .arg(test_support::free_node_ports(2).first())
                             .arg(extra.isEmpty() ? QString() : "," + extra);
    const QString file = path(name + ".json");
    if (!write_file(file, text.toUtf8())) qFatal("cannot write %s", qPrintable(file));
    return RunSpec::load(file);
}

LaunchOptions TestSlurmLauncher::options() const {
    LaunchOptions o;
    o.engine = bin("thresher-engine");
    o.grace_ms = 3000;
    o.slurm.mode = SlurmLaunchOptions::Mode::Submit;
    o.slurm.run_root = dir_.filePath("runs");
    o.slurm.poll_ms = 200;
    return o;
}

void TestSlurmLauncher::start(SlurmLauncher& l, const RunSpec& s, Outcome& o) {
    connect(&l, &SlurmLauncher::event, this, [&o](const QJsonObject& e) { o.events << e; });
    connect(&l, &SlurmLauncher::logLine, this, [&o](const QString& line) { o.log << line; });
    connect(&l, &SlurmLauncher::finished, this, [&o](int code, const QString& summary) {
        o.finished = true;
        o.code = code;
        o.summary = summary;
    });
    l.start(s);
}

bool TestSlurmLauncher::wait_finished(Outcome& o, int timeout_ms) {
    QElapsedTimer t;
    t.start();
    while (!o.finished && t.elapsed() < timeout_ms) QTest::qWait(50);
    return o.finished;
}

bool TestSlurmLauncher::wait_started(Outcome& o, int nodes, int timeout_ms) {
    QElapsedTimer t;
    t.start();
    while (!o.finished && o.of("run_started").size() < nodes && t.elapsed() < timeout_ms) QTest::qWait(50);
    return o.of("run_started").size() >= nodes;
}

void TestSlurmLauncher::submitted_job_trains_two_tasks() {
    const RunSpec s = spec("two", R"("partition":"main","nodes":1,"tasks_per_node":2)", R"("epochs":2,"batch":16,"seed":3)");
    SlurmLauncher l(options());
    Outcome o;
    start(l, s, o);
    QVERIFY2(wait_finished(o, 90000), qPrintable(o.text()));
    QVERIFY2(o.code == 0, qPrintable(o.text()));
    for (int node : {0, 1}) {
        QCOMPARE(o.of("run_started", node).size(), 1);
        QVERIFY2(!o.of("iteration", node).isEmpty(), qPrintable(o.text()));
        QCOMPARE(o.of("run_finished", node).size(), 1);
        QCOMPARE(o.of("run_finished", node).first().value("status").toString(), QString("ok"));
    }
    QCOMPARE(o.of("run_started", 0).first().value("nodes").toInt(), 2);
    // The queue: the job's id in every job_state event, RUNNING or COMPLETED seen.
    const auto states = o.of("job_state");
    QVERIFY2(!states.isEmpty(), qPrintable(o.text()));
    QStringList seen;
    for (const auto& e : states) {
        QCOMPARE(e.value("job").toString(), l.job_id());
        seen << e.value("state").toString();
    }
    QVERIFY2(seen.contains("RUNNING") || seen.contains("COMPLETED"), qPrintable(seen.join(' ')));
    QVERIFY(!l.job_id().isEmpty());
    QVERIFY2(!QFile::exists(l.run_dir() + "/secret"), "the secret outlived the run");
    QVERIFY(QFile::exists(l.run_dir() + "/run.sh"));
}

void TestSlurmLauncher::lenet_spec_replicas_equal() {
    if (!QFileInfo::exists("/usr/share/datasets/fashion-mnist")) QSKIP("needs /usr/share/datasets/fashion-mnist");
    // The example as shipped, with a small slice of the data and the save file moved here.
    QFile f(qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/resources/runs/lenet-slurm.json");
    QVERIFY(f.open(QIODevice::ReadOnly));
    QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    QJsonObject training = o["training"].toObject();
    training["limit"] = 1280;
    o["training"] = training;
    o["save"] = path("lenet.thr");
    o["udp_port"] = test_support::free_node_ports(2).first();
    RunSpec s = RunSpec::from_json(o, f.fileName(), QFileInfo(f.fileName()).absolutePath());
    QCOMPARE(s.node_count(), 2);
    LaunchOptions opt = options();
    opt.slurm.save_every_node = true;
    SlurmLauncher l(opt);
    Outcome out;
    start(l, s, out);
    QVERIFY2(wait_finished(out, 180000), qPrintable(out.text()));
    QVERIFY2(out.code == 0, qPrintable(out.text()));
    QVERIFY2(!out.of("epoch_end", 0).isEmpty(), qPrintable(out.text()));
    QVERIFY(QFile::exists(path("lenet.thr")));
    QVERIFY(QFile::exists(path("lenet.node-1.thr")));
    QProcess cmp;
    cmp.start(bin("thresher-engine"), {"compare", path("lenet.thr"), path("lenet.node-1.thr"), "--tolerance", "1e-5"});
    QVERIFY(cmp.waitForFinished(60000));
    QVERIFY2(cmp.exitCode() == 0, cmp.readAllStandardOutput() + cmp.readAllStandardError());
}

void TestSlurmLauncher::scancel_mid_run_ends_every_engine() {
    const RunSpec s = spec("cancelled", R"("partition":"main","nodes":1,"tasks_per_node":2)",
                           R"("epochs":1000,"batch":8,"threads":1)", "slow.json", "big.csv");
    SlurmLauncher l(options());
    Outcome o;
    start(l, s, o);
    QVERIFY2(wait_started(o, 2, 60000), qPrintable(o.text()));
    const QString marker = l.run_dir();
    QCOMPARE(engines_with(marker + "/secret"), 2);
    // Someone else (the user in another terminal, an administrator) cancels the job.
    QString err;
    QVERIFY2(cluster_.command("scancel", {l.job_id()}, nullptr, &err), qPrintable(err));
    QElapsedTimer t;
    t.start();
    while (!pids_with_cmdline(marker + "/secret").isEmpty() && t.elapsed() < 15000) QTest::qWait(100);
    QVERIFY2(pids_with_cmdline(marker + "/secret").isEmpty(), "engines still running 15 s after scancel");
    qInfo("every engine gone %.1f s after scancel", t.elapsed() / 1000.0);
    QVERIFY2(wait_finished(o, 30000), qPrintable(o.text()));
    QVERIFY2(o.code != 0 && o.code != kExitStopped, qPrintable(o.text()));
    QVERIFY2(o.summary.contains("CANCELLED"), qPrintable(o.text()));
}

void TestSlurmLauncher::stop_cancels_the_job() {
    const RunSpec s = spec("stopped", R"("partition":"main","nodes":1,"tasks_per_node":2)",
                           R"("epochs":1000,"batch":8,"threads":1)", "slow.json", "big.csv");
    SlurmLauncher l(options());
    Outcome o;
    start(l, s, o);
    QVERIFY2(wait_started(o, 2, 60000), qPrintable(o.text()));
    const QString marker = l.run_dir() + "/secret";
    l.stop();
    QVERIFY2(wait_finished(o, 30000), qPrintable(o.text()));
    QVERIFY2(o.code == kExitStopped, qPrintable(o.text()));
    QVERIFY2(pids_with_cmdline(marker).isEmpty(), "engines outlived stop()");
}

void TestSlurmLauncher::stop_in_an_allocation_cancels_the_step() {
    // An allocation without a shell (what salloc holds for a user), and this process inside it
    // as salloc's shell would be: SLURM_JOB_ID and SLURM_JOB_NODELIST.
    QString out, err;
    QVERIFY2(cluster_.command("salloc", {"--no-shell", "--partition=main", "--nodes=1", "--ntasks=2", "--time=5"},
                              &out, &err, 60000),
             qPrintable(err));
    const auto granted = QRegularExpression(R"(Granted job allocation (\d+))").match(err);
    QVERIFY2(granted.hasMatch(), qPrintable(err));
    const QString job = granted.captured(1);
    qputenv("SLURM_JOB_ID", job.toUtf8());
    qputenv("SLURM_JOB_NODELIST", SlurmCluster::kNode);
    const auto leave = qScopeGuard([&] {
        qunsetenv("SLURM_JOB_ID");
        qunsetenv("SLURM_JOB_NODELIST");
        cluster_.command("scancel", {job});
    });
    const RunSpec s = spec("in-allocation", R"("partition":"main","nodes":1,"tasks_per_node":2)",
                           R"("epochs":1000,"batch":8,"threads":1)", "slow.json", "big.csv");
    LaunchOptions opt = options();
    opt.slurm.mode = SlurmLaunchOptions::Mode::Step;
    SlurmLauncher l(opt);
    Outcome o;
    start(l, s, o);
    QVERIFY2(wait_started(o, 2, 60000), qPrintable(o.text()));
    QCOMPARE(l.job_id(), job);
    QElapsedTimer t;
    t.start();
    while (l.step_id().isEmpty() && t.elapsed() < 10000) QTest::qWait(50);
    QVERIFY2(l.step_id().startsWith(job + "."), qPrintable(o.text()));
    const QString marker = l.run_dir() + "/secret";
    QCOMPARE(engines_with(marker), 2);
    l.stop();  // scancel JOB.STEP: the allocation stays
    QVERIFY2(wait_finished(o, 30000), qPrintable(o.text()));
    QVERIFY2(o.code == kExitStopped, qPrintable(o.text()));
    QVERIFY2(pids_with_cmdline(marker).isEmpty(), "engines outlived stop()");
    QString state;
    QVERIFY(cluster_.command("squeue", {"-h", "-j", job, "-o", "%T"}, &state));
    QCOMPARE(state.trimmed(), QString("RUNNING"));  // the user's allocation is theirs to end
}

void TestSlurmLauncher::pending_job_shows_its_reason() {
    const RunSpec s = spec("waiting", QString(R"("partition":"%1","nodes":1,"tasks_per_node":2)").arg(SlurmCluster::kDownPartition),
                           R"("epochs":1)");
    SlurmLauncher l(options());
    Outcome o;
    start(l, s, o);
    QElapsedTimer t;
    t.start();
    // Slurm's reason can first be Resources (an earlier test's job still completing on the node)
    // and becomes PartitionDown at its next scheduling pass.
    const auto pending = [&] {
        for (const auto& e : o.of("job_state"))
            if (e.value("state").toString() == "PENDING" && e.value("reason").toString() == "PartitionDown") return e;
        return QJsonObject();
    };
    while (pending().isEmpty() && !o.finished && t.elapsed() < 30000) QTest::qWait(50);
    const QJsonObject e = pending();
    QVERIFY2(!e.isEmpty(), qPrintable(o.text()));
    QCOMPARE(e.value("job").toString(), l.job_id());
    // sbatch read the quoted #SBATCH values as values (no quotes left in them).
    QString name;
    QVERIFY(cluster_.command("squeue", {"-h", "-j", l.job_id(), "-o", "%j|%P|%D|%C"}, &name));
    QCOMPARE(name.trimmed(), QString("thresher-waiting|%1|1|2").arg(SlurmCluster::kDownPartition));
    l.stop();
    QVERIFY2(wait_finished(o, 30000), qPrintable(o.text()));
    QCOMPARE(o.code, kExitStopped);
    QVERIFY2(!cluster_.jobs().contains(l.job_id()) || [&] {
        QString out;
        cluster_.command("squeue", {"-h", "-j", l.job_id(), "-t", "all", "-o", "%T"}, &out);
        return out.trimmed() == "CANCELLED";
    }(), "the pending job is still queued");
}

void TestSlurmLauncher::bad_partition_is_a_clear_error() {
    const RunSpec s = spec("nowhere", R"("partition":"nope","nodes":1,"tasks_per_node":2)", R"("epochs":1)");
    SlurmLauncher l(options());
    Outcome o;
    start(l, s, o);
    QVERIFY2(wait_finished(o, 30000), qPrintable(o.text()));
    QCOMPARE(o.code, kExitCouldNotStart);
    QVERIFY2(o.summary.startsWith("sbatch: error:"), qPrintable(o.summary));
    QVERIFY2(o.summary.contains("partition", Qt::CaseInsensitive), qPrintable(o.summary));
}

QTEST_GUILESS_MAIN(TestSlurmLauncher)
#include "test_slurm_launcher.moc"
