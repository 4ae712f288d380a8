// The app on a real one-node Slurm (tests/support/slurm_cluster.h): a spec with "Where: Slurm"
//   - on a DOWN partition: Launch submits the job, and the Run page shows its id, PENDING and
//     Slurm's reason (PartitionDown) while it waits; Stop cancels it;
//   - on partition main: the job runs, both nodes' events reach the charts, and it finishes.
// THRESHER_SCREENSHOTS=DIR keeps pictures of both (slurm-pending.png, slurm-finished.png).
#include <QtTest>

#include <QProgressBar>
#include <QSignalSpy>

#include "free_ports.h"
#include "launch_fixture.h"
#include "main_window.h"
#include "run_page.h"
#include "run_metrics.h"
#include "slurm_cluster.h"
#include "slurm_launcher.h"

using namespace launch_fixture;
using test_support::SlurmCluster;
using thresher::ui::MainWindow;
using thresher::ui::WindowOptions;

class TestSlurmRunPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void queued_job_shows_its_state();
    void job_runs_from_the_app();

private:
    QString spec(const QString& name, const QString& partition, const QString& training);
    WindowOptions options() const;
    void keep_screenshot(MainWindow& w, const QString& name) {
        const QString dir = qEnvironmentVariable("THRESHER_SCREENSHOTS");
        if (!dir.isEmpty()) w.save_screenshot(dir + "/" + name + ".png");
    }

    SlurmCluster cluster_;
    QTemporaryDir dir_;
};

void TestSlurmRunPage::initTestCase() {
    if (const QString why = SlurmCluster::unavailable(); !why.isEmpty()) QSKIP(qPrintable("no real Slurm here: " + why));
    thresher::launcher::slurm::register_slurm_launcher();
    QVERIFY(dir_.isValid());
    QString error;
    QVERIFY2(cluster_.start(error), qPrintable(error));
    QVERIFY(write_file(dir_.filePath("tiny.json"), kTinyModel));
    QVERIFY(write_file(dir_.filePath("data.csv"), three_class_csv(480)));
}

void TestSlurmRunPage::cleanupTestCase() { cluster_.stop(); }

QString TestSlurmRunPage::spec(const QString& name, const QString& partition, const QString& training) {
    const QString text = QString(R"({"format":"thresher-run","version":1,"name":"%1","model":"%2","data":"%3",
        "training":{%4},"cluster":{"kind":"slurm","partition":"%5","nodes":1,"tasks_per_node":2},"udp_port":%6})")
                             .arg(name, dir_.filePath("tiny.json"), dir_.filePath("data.csv"), training, partition)
                             .arg(test_support::free_node_ports(2).first());
    const QString file = dir_.filePath(name + ".json");
    if (!write_file(file, text.toUtf8())) qFatal("cannot write %s", qPrintable(file));
    return file;
}

WindowOptions TestSlurmRunPage::options() const {
    WindowOptions o;
    o.history_path = dir_.filePath("history.sqlite");
    o.launch.engine = bin("thresher-engine");
    o.launch.grace_ms = 3000;
    o.launch.slurm.mode = thresher::launcher::SlurmLaunchOptions::Mode::Submit;
    o.launch.slurm.run_root = dir_.filePath("runs");
    o.launch.slurm.poll_ms = 200;
    return o;
}

void TestSlurmRunPage::queued_job_shows_its_state() {
    MainWindow w(options());
    w.show();
    QVERIFY2(w.open_spec(spec("queued", SlurmCluster::kDownPartition, R"("epochs":1)")), qPrintable(w.last_error()));
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY2(w.launch(), qPrintable(w.last_error()));
    auto* bar = w.run_page()->findChild<QProgressBar*>();
    QVERIFY(bar);
    QTRY_VERIFY_WITH_TIMEOUT(bar->format().contains("PENDING (PartitionDown)"), 30000);
    QVERIFY2(bar->format().startsWith("Slurm job "), qPrintable(bar->format()));
    w.show_tab("run");
    keep_screenshot(w, "slurm-pending");
    w.stop();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QCOMPARE(finished[0][0].toInt(), thresher::launcher::kExitStopped);
}

void TestSlurmRunPage::job_runs_from_the_app() {
    MainWindow w(options());
    w.show();
    QVERIFY2(w.open_spec(spec("ran", SlurmCluster::kPartition, R"("epochs":3,"batch":16,"threads":1)")),
             qPrintable(w.last_error()));
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY2(w.launch(), qPrintable(w.last_error()));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 90000);
    QVERIFY2(finished[0][0].toInt() == 0, qPrintable(finished[0][1].toString()));
    QCOMPARE(w.run_page()->metrics().iteration_ms().size(), 2);  // both nodes' workers reported
    w.show_tab("run");
    keep_screenshot(w, "slurm-finished");
}

QTEST_MAIN(TestSlurmRunPage)
#include "test_slurm_run_page.moc"
