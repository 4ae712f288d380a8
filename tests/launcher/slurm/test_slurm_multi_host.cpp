// `thresher-launch` on a real Slurm of two hosts: each host's slurmd in a network namespace of its
// own, the controller and the login node in another (tests/support/slurm_cluster.h), so engines
// on different hosts reach each other only over the addresses Slurm has for the nodes.
//   - inside `salloc -N2` (step mode), 2 hosts × 1 task: one srun step across both hosts, the
//     engine nodes at 10.201.0.2 and 10.201.0.3, both finish, replicas equal;
//   - submitted (sbatch), 2 hosts × 2 tasks: ranks go host by host (a:p, a:p+1, b:p, b:p+1), all
//     four finish, replicas equal.
#include <QtTest>

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

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    // A spec for `hosts` × `tasks` engines on the tiny model, saving every replica.
    QString spec(const QString& name, int hosts, int tasks, int port);
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
    QVERIFY2(cluster_.start(error, 2), qPrintable(error));
    QVERIFY(write_file(path("tiny.json"), kTinyModel));
    QVERIFY(write_file(path("data.csv"), three_class_csv(960)));
}

void TestSlurmMultiHost::cleanupTestCase() { cluster_.stop(); }

QString TestSlurmMultiHost::spec(const QString& name, int hosts, int tasks, int port) {
    const QString text = QString(R"({"format":"thresher-run","version":1,"name":"%1","model":"%2","data":"%3",
        "training":{"epochs":2,"batch":16,"seed":5},
        "cluster":{"kind":"slurm","partition":"main","nodes":%4,"tasks_per_node":%5},"udp_port":%6,"save":"%7"})")
                             .arg(name, path("tiny.json"), path("data.csv")).arg(hosts).arg(tasks).arg(port)
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

QTEST_GUILESS_MAIN(TestSlurmMultiHost)
#include "test_slurm_multi_host.moc"
