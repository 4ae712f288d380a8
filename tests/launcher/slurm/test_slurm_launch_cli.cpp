// `thresher-launch` against a real one-node Slurm (tests/support/slurm_cluster.h):
//   - inside `salloc` (step mode): a 2-task run is one srun step and prints both nodes' events;
//   - SIGKILL of thresher-launch inside salloc mid-run: srun dies with it (its parent-death
//     signal) and Slurm ends the step: no engine is left within seconds;
//   - `script`: the batch script of a Slurm spec (sbatch lines from the spec, one srun step); a
//     local spec is refused;
//   - staging: a launcher in a private mount namespace (its engine and HDF5 reader, a Keras .h5
//     model, data and run folder on a tmpfs slurmd cannot see): with "stage": "never" the run
//     fails naming the engine's path; with "auto" the probe finds all four missing, sbcast copies
//     them and the reader beside the engine, the run (reading the .h5 there) finishes, and the
//     copies are gone from the node afterwards;
//   - `check`: ready on partition main; NOT ready on a DOWN partition and on one that does not
//     exist, each saying why.
#include <QtTest>

#include <QJsonDocument>
#include <csignal>

#include "launch_fixture.h"
#include "free_ports.h"
#include "netns_pair.h"
#include "weight_files.h"
#include "slurm_cluster.h"

using namespace launch_fixture;
using test_support::SlurmCluster;

namespace {

using Run = Finished;
Run run(const QString& program, const QStringList& args, int timeout_ms) { return run_to_end(program, args, timeout_ms); }

// thresher-engine processes whose command line holds `marker` (srun's holds it too).
int engines_with(const QString& marker) {
    int n = 0;
    for (qint64 pid : pids_with_cmdline(marker))
        for (const Proc& p : processes()) n += p.pid == pid && p.comm == "thresher-engine";
    return n;
}

int count(const QByteArray& out, const QString& event, int node) { return event_count(out, event, node); }

}  // namespace

class TestSlurmLaunchCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void step_inside_salloc();
    void files_the_nodes_cannot_see_are_staged();
    void killed_launcher_ends_the_step();
    void killed_launcher_cancels_its_job();
    void script_prints_the_batch_script();
    void check_asks_slurm();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    QString spec(const QString& name, const QString& cluster, const QString& training, const QString& model = "tiny.json",
                 const QString& data = "data.csv");

    SlurmCluster cluster_;
    QTemporaryDir dir_;
};

void TestSlurmLaunchCli::initTestCase() {
    if (const QString why = SlurmCluster::unavailable(); !why.isEmpty()) QSKIP(qPrintable("no real Slurm here: " + why));
    QVERIFY(dir_.isValid());
    QVERIFY2(QFileInfo(bin("thresher-launch")).isExecutable(), qPrintable(bin("thresher-launch")));
    QString error;
    QVERIFY2(cluster_.start(error), qPrintable(error));
    QVERIFY(write_file(path("tiny.json"), kTinyModel));
    QVERIFY(write_file(path("slow.json"), kSlowModel));
    QVERIFY(write_file(path("data.csv"), three_class_csv(480)));
    QVERIFY(write_file(path("big.csv"), three_class_csv(4800)));
}

void TestSlurmLaunchCli::cleanupTestCase() { cluster_.stop(); }

QString TestSlurmLaunchCli::spec(const QString& name, const QString& cluster, const QString& training,
                                 const QString& model, const QString& data) {
    const QString text = QString(R"({"format":"thresher-run","version":1,"name":"%1","model":"%2","data":"%3",
        "training":{%4},"cluster":{"kind":"slurm",%5},"udp_port":%6})")
                             .arg(name, path(model), path(data), training, cluster)
                             .arg(test_support::free_node_ports(2).first());
    const QString file = path(name + ".json");
    if (!write_file(file, text.toUtf8())) qFatal("cannot write %s", qPrintable(file));
    return file;
}

void TestSlurmLaunchCli::step_inside_salloc() {
    const QString file = spec("inside", R"("partition":"main","nodes":1,"tasks_per_node":2,"network_mask":"127.0.0.0/8")",
                              R"("epochs":2,"batch":16)");
    const Run r = run(test_support::find_tool("salloc"),
                      {"--partition=main", "--nodes=1", "--ntasks=2", "--time=5", bin("thresher-launch"), "run", file,
                       "--events", "--verbose", "--slurm-mode=step", "--run-root=" + path("runs")},
                      120000);
    QVERIFY2(r.code == 0, qPrintable(r.text()));
    for (int node : {0, 1}) {
        QVERIFY2(count(r.out, "run_started", node) == 1, qPrintable(r.text()));
        QVERIFY2(count(r.out, "run_finished", node) == 1, qPrintable(r.text()));
    }
    QVERIFY2(r.err.contains("engines running as Slurm step"), qPrintable(r.text()));
    QVERIFY2(r.err.contains("127.0.0.1:"), qPrintable(r.text()));  // the address inside network_mask
}

// Files only the launcher sees: a tmpfs mounted in a mount namespace of the launcher's own, so
// slurmd (outside it) and the tasks it starts see an empty folder — as on nodes that do not share
// the launcher's disk.
void TestSlurmLaunchCli::files_the_nodes_cannot_see_are_staged() {
    const QString unshare = test_support::find_tool("unshare");
    if (unshare.isEmpty()) QSKIP("needs unshare (util-linux)");
    const QString hidden = path("hidden");
    QVERIFY(QDir().mkpath(hidden));
    const QDir tmp("/tmp");
    const QStringList stages_before = tmp.entryList({"thresher-stage-*"}, QDir::Dirs);
    // The model is a Keras .h5 (one Dense 16 -> 3 softmax): the staged engine reads it through the
    // thresher-hdf5-reader staged beside it.
    {
        test_support::H5Writer w(path("tiny.h5").toStdString());
        w.strings("/", "model_config",
                  {R"({"class_name": "Sequential", "config": {"name": "tiny", "layers": [{"class_name": "Dense", "config": )"
                   R"({"name": "out", "units": 3, "activation": "softmax", "use_bias": true, "batch_input_shape": [null, 16]}}]}})"},
                  true);
        w.group("/model_weights");
        w.strings("/model_weights", "layer_names", {"out"}, false);
        w.keras_layer("/model_weights/out", "out", {{"kernel", {{16, 3}, std::vector<float>(48, 0.01f)}}, {"bias", {{3}, {0, 0, 0}}}});
    }
    const auto launch = [&](const QString& stage) {
        const QString file = spec("hidden-" + stage, QString(R"("partition":"main","nodes":1,"tasks_per_node":2,"stage":"%1")").arg(stage),
                                  R"("epochs":1,"batch":16)", "hidden/tiny.h5", "hidden/data.csv");
        const QString inside =
            "set -e; mount -t tmpfs -o mode=700 thresher-hidden \"$1\"; cp \"$2\" \"$3\" \"$4\" \"$8\" \"$1\"/; mkdir \"$1/runs\"; "
            "exec \"$5\" --partition=main --nodes=1 --ntasks=2 --time=5 \"$6\" run \"$7\" --events --verbose --slurm-mode=step "
            "--engine \"$1/thresher-engine\" --run-root \"$1/runs\"";
        return run(unshare, {"--mount", "--propagation", "private", "bash", "-c", inside, "thresher-test", hidden,
                             bin("thresher-engine"), path("tiny.h5"), path("data.csv"), test_support::find_tool("salloc"),
                             bin("thresher-launch"), file, bin("thresher-hdf5-reader")},
                   180000);
    };
    // The control: the nodes really cannot see these files.
    const Run blind = launch("never");
    QVERIFY2(blind.code != 0, qPrintable(blind.text()));
    QVERIFY2(blind.err.contains(hidden.toUtf8() + "/thresher-engine"), qPrintable(blind.text()));

    const Run r = launch("auto");
    QVERIFY2(r.code == 0, qPrintable(r.text()));
    for (const QString& what : {hidden + "/thresher-engine", hidden + "/thresher-hdf5-reader", hidden + "/tiny.h5",
                                hidden + "/data.csv", QString("/secret")})
        QVERIFY2(r.err.contains("staged ") && r.err.contains(what.toUtf8() + " with sbcast"), qPrintable(what + "\n" + r.text()));
    for (int node : {0, 1}) QVERIFY2(count(r.out, "run_finished", node) == 1, qPrintable(r.text()));
    // The copies went with the step (the launcher finishes after the script's cleanup).
    QCOMPARE(tmp.entryList({"thresher-stage-*"}, QDir::Dirs), stages_before);
}

void TestSlurmLaunchCli::killed_launcher_ends_the_step() {
    const QString file = spec("killed", R"("partition":"main","nodes":1,"tasks_per_node":2)",
                              R"("epochs":1000,"batch":8,"threads":1)", "slow.json", "big.csv");
    QProcess salloc;
    salloc.start(test_support::find_tool("salloc"),
                 {"--partition=main", "--nodes=1", "--ntasks=2", "--time=5", bin("thresher-launch"), "run", file,
                  "--events", "--slurm-mode=step", "--run-root=" + path("runs")});
    QVERIFY(salloc.waitForStarted(10000));
    QByteArray out;
    QElapsedTimer t;
    t.start();
    while ((count(out, "run_started", 0) < 1 || count(out, "run_started", 1) < 1) && t.elapsed() < 60000 &&
           salloc.state() != QProcess::NotRunning) {
        salloc.waitForReadyRead(200);
        out += salloc.readAllStandardOutput();
    }
    QVERIFY2(count(out, "run_started", 1) == 1, qPrintable(out + salloc.readAllStandardError()));
    const QString marker = path("slow.json");
    QCOMPARE(engines_with(marker), 2);
    // thresher-launch itself (salloc's child), not salloc.
    QList<qint64> launchers;
    for (qint64 pid : pids_with_cmdline(file))
        for (const Proc& p : processes())
            if (p.pid == pid && p.comm == "thresher-launch") launchers << pid;
    QCOMPARE(launchers.size(), 1);
    QVERIFY(::kill(pid_t(launchers.first()), SIGKILL) == 0);
    t.restart();
    while (!pids_with_cmdline(marker).isEmpty() && t.elapsed() < 15000) QTest::qWait(100);
    QVERIFY2(pids_with_cmdline(marker).isEmpty(), "engines still running 15 s after SIGKILL of thresher-launch");
    qInfo("every engine gone %.1f s after SIGKILL of the launcher", t.elapsed() / 1000.0);
    QVERIFY(salloc.state() == QProcess::NotRunning || salloc.waitForFinished(30000));
}

void TestSlurmLaunchCli::killed_launcher_cancels_its_job() {
    // Submit mode: the job runs on its own, so it watches the launcher's heartbeat file and
    // cancels itself when the launcher is gone.
    const QString file = spec("orphan", R"("partition":"main","nodes":1,"tasks_per_node":2)",
                              R"("epochs":1000,"batch":8,"threads":1)", "slow.json", "big.csv");
    QProcess launcher;
    launcher.start(bin("thresher-launch"), {"run", file, "--events", "--slurm-mode=submit", "--poll=0.2",
                                            "--heartbeat-timeout=3", "--run-root=" + path("runs")});
    QVERIFY(launcher.waitForStarted(10000));
    QByteArray out;
    QElapsedTimer t;
    t.start();
    while (count(out, "run_started", 1) < 1 && t.elapsed() < 60000 && launcher.state() != QProcess::NotRunning) {
        launcher.waitForReadyRead(200);
        out += launcher.readAllStandardOutput();
    }
    QVERIFY2(count(out, "run_started", 1) == 1, qPrintable(out + launcher.readAllStandardError()));
    QString job;
    for (const QByteArray& line : out.split('\n')) {
        const QJsonObject e = QJsonDocument::fromJson(line).object();
        if (e.value("event").toString() == "job_state") job = e.value("job").toString();
    }
    QVERIFY(!job.isEmpty());
    const QString marker = path("slow.json");
    QCOMPARE(engines_with(marker), 2);
    QVERIFY(::kill(pid_t(launcher.processId()), SIGKILL) == 0);
    QVERIFY(launcher.waitForFinished(10000));
    t.restart();
    while (!pids_with_cmdline(marker).isEmpty() && t.elapsed() < 30000) QTest::qWait(200);
    QVERIFY2(pids_with_cmdline(marker).isEmpty(), "engines still running 30 s after the launcher was killed");
    qInfo("every engine gone %.1f s after SIGKILL of the launcher (heartbeat timeout 3 s)", t.elapsed() / 1000.0);
    QString state;  // COMPLETING while Slurm cleans up, then CANCELLED
    t.restart();
    while (cluster_.command("squeue", {"-h", "-j", job, "-t", "all", "-o", "%T"}, &state) &&
           state.trimmed() != "CANCELLED" && t.elapsed() < 15000)
        QTest::qWait(200);
    QCOMPARE(state.trimmed(), QString("CANCELLED"));
}

void TestSlurmLaunchCli::script_prints_the_batch_script() {
    const QString file = spec("scripted", R"("partition":"main","nodes":1,"tasks_per_node":2,"time":"90",
        "account":"lab","sbatch_args":["--mem=1G"])", R"("epochs":1)");
    const Run r = run(bin("thresher-launch"), {"script", file}, 30000);
    QVERIFY2(r.code == 0, qPrintable(r.text()));
    const QString s = QString::fromUtf8(r.out);
    for (const char* line : {"#!/bin/bash\n", "#SBATCH --partition='main'\n", "#SBATCH --nodes=1\n",
                             "#SBATCH --ntasks-per-node=2\n", "#SBATCH --time=0-01:30:00\n", "#SBATCH --account='lab'\n",
                             "#SBATCH --mem=1G\n", "scontrol show hostnames", "set +e\nsrun ", "rc=$?\n", "--kill-on-bad-exit=1",
                             "'--secret-file'\n  \"$run_dir/secret\""})
        QVERIFY2(s.contains(line), qPrintable(QString(line) + " not in\n" + s));
    QVERIFY2(!s.contains("--output="), "a script for sbatch by hand keeps Slurm's default output file");
    // bash accepts it.
    QVERIFY(write_file(path("scripted.sh"), r.out));
    const Run syntax = run("bash", {"-n", path("scripted.sh")}, 10000);
    QVERIFY2(syntax.code == 0, qPrintable(syntax.text()));

    const QString local = path("local.json");
    QVERIFY(write_file(local, local_spec(path("tiny.json"), path("data.csv"), 1, 40000, R"("epochs":1)")));
    const Run refused = run(bin("thresher-launch"), {"script", local}, 30000);
    QCOMPARE(refused.code, 2);
    QVERIFY2(refused.err.contains("a batch script is for \"slurm\" clusters"), qPrintable(refused.text()));
}

void TestSlurmLaunchCli::check_asks_slurm() {
    const Run ok = run(bin("thresher-launch"), {"check", spec("ready", R"("partition":"main","nodes":1,"tasks_per_node":2,"time":"10",
                                                             "account":"lab")", R"("epochs":1)")}, 90000);
    QVERIFY2(ok.code == 0, qPrintable(ok.text()));
    // This test cluster keeps no accounting (no slurmdbd): the account is reported unchecked.
    for (const char* part : {"partition  ok", "nodes      ok", "time       ok", "engine     ok", "verdict: ready",
                             "\"lab\" not checked: this cluster keeps no accounting"})
        QVERIFY2(ok.out.contains(part), qPrintable(QString(part) + " not in\n" + ok.text()));

    const Run down = run(bin("thresher-launch"), {"check", spec("down", QString(R"("partition":"%1","nodes":1)")
                                                                         .arg(SlurmCluster::kDownPartition), R"("epochs":1)")}, 90000);
    QCOMPARE(down.code, 1);
    QVERIFY2(down.out.contains("State=DOWN") && down.out.contains("verdict: NOT ready"), qPrintable(down.text()));

    const Run missing = run(bin("thresher-launch"), {"check", spec("missing", R"("partition":"nope","nodes":1)", R"("epochs":1)")}, 90000);
    QCOMPARE(missing.code, 1);
    QVERIFY2(missing.out.contains("partition \"nope\" does not exist"), qPrintable(missing.text()));

    const Run too_long = run(bin("thresher-launch"), {"check", spec("long", QString(R"("partition":"%1","nodes":1,"time":"10")")
                                                                              .arg(SlurmCluster::kShortPartition), R"("epochs":1)")}, 90000);
    QCOMPARE(too_long.code, 1);
    QVERIFY2(too_long.out.contains("0-00:10:00 asked, partition MaxTime 00:01:00"), qPrintable(too_long.text()));

    const Run too_many = run(bin("thresher-launch"), {"check", spec("big", R"("partition":"main","nodes":3)", R"("epochs":1)")}, 90000);
    QCOMPARE(too_many.code, 1);
    QVERIFY2(too_many.out.contains("the run needs 3"), qPrintable(too_many.text()));
}

QTEST_GUILESS_MAIN(TestSlurmLaunchCli)
#include "test_slurm_launch_cli.moc"
