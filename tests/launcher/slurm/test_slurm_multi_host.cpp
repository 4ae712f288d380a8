// `thresher-launch` on a real Slurm of two hosts: each host's slurmd in a network namespace of its
// own, the controller and the login node in another (tests/support/slurm_cluster.h), so engines
// on different hosts reach each other only over the addresses Slurm has for the nodes.
//   - inside `salloc -N2` (step mode), 2 hosts × 1 task: one srun step across both hosts, the
//     engine nodes at 10.201.0.2 and 10.201.0.3, both finish, replicas equal;
//   - submitted (sbatch), 2 hosts × 2 tasks: ranks go host by host (a:p, a:p+1, b:p, b:p+1), all
//     four finish, replicas equal;
//   - the engine on host 2 killed mid-run (as a failing node): the run ends at once with a
//     failure naming Slurm's job and the task, and no engine is left on either host.
#include <QtTest>

#include <csignal>

#include "free_ports.h"
#include "launch_fixture.h"
#include "netns_pair.h"
#include "slurm_cluster.h"

using namespace launch_fixture;
using test_support::SlurmCluster;

class TestSlurmMultiHost : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void step_across_two_hosts();
    void job_of_two_hosts_by_two_tasks();
    void engine_killed_on_one_host_ends_the_run();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    // A spec for `hosts` × `tasks` engines on the tiny model, saving every replica.
    QString spec(const QString& name, int hosts, int tasks, int port, const QString& training = R"("epochs":2,"batch":16,"seed":5)",
                 const QString& model = "tiny.json");
    // Every replica equals node 0's (thresher-engine compare: max_abs_diff 0).
    void replicas_equal(const QString& name, int nodes);
    // The login node's `program args`, to the end.
    Finished on_login(const QString& program, const QStringList& args, int timeout_ms) const;

    SlurmCluster cluster_;
    QTemporaryDir dir_;
};

void TestSlurmMultiHost::initTestCase() {
    if (const QString why = SlurmCluster::unavailable(); !why.isEmpty()) QSKIP(qPrintable("no real Slurm here: " + why));
    QVERIFY(dir_.isValid());
    QString error;
    QVERIFY2(cluster_.start(error, {.hosts = 2, .accounts = {}}), qPrintable(error));
    QVERIFY(write_file(path("tiny.json"), kTinyModel));
    QVERIFY(write_file(path("data.csv"), three_class_csv(960)));
    QVERIFY(write_file(path("slow.json"), kSlowModel));
}

void TestSlurmMultiHost::cleanupTestCase() { cluster_.stop(); }

QString TestSlurmMultiHost::spec(const QString& name, int hosts, int tasks, int port, const QString& training,
                                 const QString& model) {
    const QString text = QString(R"({"format":"thresher-run","version":1,"name":"%1","model":"%2","data":"%3",
        "training":{%4},
        "cluster":{"kind":"slurm","partition":"main","nodes":%5,"tasks_per_node":%6},"udp_port":%7,"save":"%8"})")
                             .arg(name, path(model), path("data.csv"), training).arg(hosts).arg(tasks).arg(port)
                             .arg(path(name + ".thr"));
    const QString file = path(name + ".json");
    if (!write_file(file, text.toUtf8())) qFatal("cannot write %s", qPrintable(file));
    return file;
}

Finished TestSlurmMultiHost::on_login(const QString& program, const QStringList& args, int timeout_ms) const {
    const auto [exe, argv] = cluster_.on_login_node(program, args);
    return run_to_end(exe, argv, timeout_ms);
}

void TestSlurmMultiHost::replicas_equal(const QString& name, int nodes) {
    for (int r = 1; r < nodes; ++r) {
        const Finished c = run_to_end(bin("thresher-engine"),
                                      {"compare", path(name + ".thr"), path(QString("%1.node-%2.thr").arg(name).arg(r))}, 30000);
        QVERIFY2(c.code == 0 && c.out.contains("\"max_abs_diff\":0.0"), qPrintable(QString("node %1: ").arg(r) + c.text()));
    }
}

void TestSlurmMultiHost::step_across_two_hosts() {
    const int port = test_support::free_node_ports(1).first();  // each host has its own addresses: one port will do
    const QString file = spec("step2", 2, 1, port);
    const Finished r = on_login(test_support::find_tool("salloc"),
                                {"--partition=main", "--nodes=2", "--ntasks=2", "--time=5", bin("thresher-launch"), "run", file,
                                 "--events", "--verbose", "--slurm-mode=step", "--save-every-node", "--run-root=" + path("runs")},
                                180000);
    QVERIFY2(r.code == 0, qPrintable(r.text()));
    QVERIFY2(r.err.contains(QString("engine nodes 10.201.0.2:%1,10.201.0.3:%1").arg(port).toUtf8()), qPrintable(r.text()));
    for (int node : {0, 1}) QVERIFY2(event_count(r.out, "run_finished", node) == 1, qPrintable(r.text()));
    replicas_equal("step2", 2);
}

void TestSlurmMultiHost::job_of_two_hosts_by_two_tasks() {
    const int port = test_support::free_node_ports(2).first();
    const QString file = spec("job4", 2, 2, port);
    const Finished r = on_login(bin("thresher-launch"), {"run", file, "--events", "--verbose", "--slurm-mode=submit",
                                                         "--save-every-node", "--run-root=" + path("runs")},
                                180000);
    QVERIFY2(r.code == 0, qPrintable(r.text()));
    QVERIFY2(r.err.contains(QString("engine nodes 10.201.0.2:%1,10.201.0.2:%2,10.201.0.3:%1,10.201.0.3:%2")
                                .arg(port).arg(port + 1).toUtf8()),
             qPrintable(r.text()));
    for (int node : {0, 1, 2, 3}) QVERIFY2(event_count(r.out, "run_finished", node) == 1, qPrintable(r.text()));
    replicas_equal("job4", 4);
}

void TestSlurmMultiHost::engine_killed_on_one_host_ends_the_run() {
    const int port = test_support::free_node_ports(1).first();
    const QString file = spec("fails", 2, 1, port, R"("epochs":1000,"batch":8,"threads":1)", "slow.json");
    const auto [exe, argv] = cluster_.on_login_node(bin("thresher-launch"),
                                                    {"run", file, "--events", "--verbose", "--slurm-mode=submit", "--run-root=" + path("runs")});
    QProcess launch;
    launch.start(exe, argv);
    QVERIFY(launch.waitForStarted(10000));
    QByteArray out, err;
    QElapsedTimer t;
    t.start();
    while ((event_count(out, "run_started", 0) < 1 || event_count(out, "run_started", 1) < 1) && t.elapsed() < 90000 &&
           launch.state() != QProcess::NotRunning) {
        launch.waitForReadyRead(200);
        out += launch.readAllStandardOutput();
        err += launch.readAllStandardError();  // never let the launcher block on a full stderr pipe
    }
    if (event_count(out, "run_started", 1) != 1) {
        QString queue;
        cluster_.command("squeue", {"-t", "all", "-o", "%i %T %r %N"}, &queue);
        QString job_files;
        for (const QString& f : QDir(path("runs")).entryList({"run-*"}, QDir::Dirs))
            for (const QString& o : QDir(path("runs/" + f)).entryList({"job-*"}, QDir::Files)) {
                QFile j(path("runs/" + f + "/" + o));
                if (j.open(QIODevice::ReadOnly)) job_files += "--- " + o + "\n" + QString::fromUtf8(j.read(4000)) + "\n";
            }
        QFAIL(qPrintable(QString("no run_started from both nodes within %1 s\n--- stdout:\n%2\n--- stderr:\n%3\n--- squeue:\n%4\n%5%6")
                             .arg(t.elapsed() / 1000).arg(QString::fromUtf8(out.left(4000)), QString::fromUtf8(err), queue,
                                  job_files, cluster_.log_tail())));
    }
    // The engine of rank 1 (host 2; same pid namespace, other network namespace).
    const QString marker = path("slow.json");
    qint64 victim = 0;
    for (qint64 pid : pids_with_cmdline(marker)) {
        QFile cmdline(QString("/proc/%1/cmdline").arg(pid));
        if (!cmdline.open(QIODevice::ReadOnly)) continue;
        const QList<QByteArray> words = cmdline.readAll().split('\0');
        const qsizetype at = words.indexOf("--node-rank");
        if (QFileInfo(QString::fromUtf8(words.value(0))).fileName() == "thresher-engine" && at >= 0 && words.value(at + 1) == "1")
            victim = pid;
    }
    QVERIFY2(victim > 0, "no engine of rank 1 found");
    QVERIFY(::kill(pid_t(victim), SIGKILL) == 0);
    QVERIFY2(launch.waitForFinished(60000), "the launcher did not end within 60 s of a failed node");
    err += launch.readAllStandardError();
    QVERIFY2(launch.exitCode() != 0, err.constData());
    QVERIFY2(err.contains("Slurm job") && err.contains("task 1"), err.constData());
    t.restart();
    while (!pids_with_cmdline(marker).isEmpty() && t.elapsed() < 20000) QThread::msleep(100);
    QVERIFY2(pids_with_cmdline(marker).isEmpty(), "engines left after the failed node");
}

QTEST_GUILESS_MAIN(TestSlurmMultiHost)
#include "test_slurm_multi_host.moc"
