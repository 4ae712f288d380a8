// Accounts, on a real Slurm that keeps accounting (tests/support/slurm_cluster.h: a private
// MariaDB and slurmdbd, AccountingStorageEnforce=associations, account "lab" for root):
//   - `thresher-launch check`: account "lab" is ok; "nosuch" fails, saying there is no such
//     account for the user, and the verdict is NOT ready;
//   - `thresher-launch run` with "nosuch": sbatch refuses the job, and the launcher ends at once
//     with Slurm's own words and a non-zero exit;
//   - with "lab" the same run finishes.
#include <QtTest>

#include "free_ports.h"
#include "launch_fixture.h"
#include "slurm_cluster.h"

using namespace launch_fixture;
using test_support::SlurmCluster;

class TestSlurmAccounting : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void check_names_a_missing_account();
    void sbatch_refusal_is_a_clear_error();
    void known_account_runs();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    QString spec(const QString& name, const QString& account);

    SlurmCluster cluster_;
    QTemporaryDir dir_;
};

void TestSlurmAccounting::initTestCase() {
    if (const QString why = SlurmCluster::accounting_unavailable(); !why.isEmpty())
        QSKIP(qPrintable("no Slurm with accounting here: " + why));
    QVERIFY(dir_.isValid());
    QString error;
    QVERIFY2(cluster_.start(error, {.hosts = 1, .accounts = {"lab"}}), qPrintable(error));
    QVERIFY(write_file(path("tiny.json"), kTinyModel));
    QVERIFY(write_file(path("data.csv"), three_class_csv(480)));
}

void TestSlurmAccounting::cleanupTestCase() { cluster_.stop(); }

QString TestSlurmAccounting::spec(const QString& name, const QString& account) {
    const QString text = QString(R"({"format":"thresher-run","version":1,"name":"%1","model":"%2","data":"%3",
        "training":{"epochs":1,"batch":16},"cluster":{"kind":"slurm","partition":"main","nodes":1,"tasks_per_node":2,
        "account":"%4"},"udp_port":%5})")
                             .arg(name, path("tiny.json"), path("data.csv"), account)
                             .arg(test_support::free_node_ports(2).first());
    const QString file = path(name + ".json");
    if (!write_file(file, text.toUtf8())) qFatal("cannot write %s", qPrintable(file));
    return file;
}

void TestSlurmAccounting::check_names_a_missing_account() {
    const Finished ok = run_to_end(bin("thresher-launch"), {"check", spec("known", "lab")}, 90000);
    QVERIFY2(ok.code == 0, qPrintable(ok.text()));
    QVERIFY2(ok.out.contains("account    ok") && ok.out.contains("\"lab\": user root has an association"), qPrintable(ok.text()));

    const Finished missing = run_to_end(bin("thresher-launch"), {"check", spec("unknown", "nosuch")}, 90000);
    QCOMPARE(missing.code, 1);
    QVERIFY2(missing.out.contains("account    FAILED") && missing.out.contains("no such account for user root: \"nosuch\"") &&
                 missing.out.contains("verdict: NOT ready"),
             qPrintable(missing.text()));
}

void TestSlurmAccounting::sbatch_refusal_is_a_clear_error() {
    const Finished r = run_to_end(bin("thresher-launch"),
                                  {"run", spec("refused", "nosuch"), "--slurm-mode=submit", "--run-root=" + path("runs")}, 90000);
    QVERIFY2(r.code != 0, qPrintable(r.text()));
    QVERIFY2(r.err.contains("sbatch: error: Batch job submission failed: Invalid account"), qPrintable(r.text()));
    QString jobs;
    QVERIFY(cluster_.command("squeue", {"-h", "-t", "all", "-n", "thresher-refused", "-o", "%i"}, &jobs));
    QVERIFY2(jobs.trimmed().isEmpty(), qPrintable("a refused submission left a job: " + jobs));
}

void TestSlurmAccounting::known_account_runs() {
    const Finished r = run_to_end(bin("thresher-launch"),
                                  {"run", spec("accepted", "lab"), "--events", "--slurm-mode=submit", "--run-root=" + path("runs")},
                                  120000);
    QVERIFY2(r.code == 0, qPrintable(r.text()));
    for (int node : {0, 1}) QVERIFY2(event_count(r.out, "run_finished", node) == 1, qPrintable(r.text()));
}

QTEST_GUILESS_MAIN(TestSlurmAccounting)
#include "test_slurm_accounting.moc"
