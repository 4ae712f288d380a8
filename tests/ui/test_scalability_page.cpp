// The Scalability page runs a sweep file end to end, offscreen, on real engines and the real
// Fashion-MNIST: strategy × nodes 1, 2 (the MLP on 256 samples) gives a table row and a chart point
// per point, the what-if curves (10 / 25 / 100 Gbit/s to 64 workers, DL4J's estimate) and the
// scaling model in words, the results files and the HTML report in the results folder, every run in history;
// run again it skips every finished point (nothing runs, history unchanged); a bad sweep file is
// an error on the window, and nothing runs.
#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QLabel>
#include <QJsonDocument>
#include <QLineEdit>
#include <QTableWidget>
#include <QTemporaryDir>

#include "launch_fixture.h"
#include "main_window.h"
#include "window_fixture.h"
#include "qcustomplot_include.h"
#include "run_history.h"
#include "scalability_page.h"
#include "sweep_spec.h"

using namespace launch_fixture;
using thresher::ui::MainWindow;

namespace {

using window_fixture::options;

int points(QCustomPlot* plot) {
    int n = 0;
    for (int i = 0; i < plot->graphCount(); ++i)
        if (plot->graph(i)->scatterStyle().shape() != QCPScatterStyle::ssNone) n += plot->graph(i)->data()->size();
    return n;
}

}  // namespace

class TestScalabilityPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sweep_runs_then_resumes();
    void bad_sweep_file_is_an_error();
    void current_spec_saved_as_a_sweep();
};

void TestScalabilityPage::sweep_runs_then_resumes() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString mlp = qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/resources/models/mlp.json";
    QVERIFY(write_file(dir.filePath("sweep.json"), QString(R"({"format": "thresher-sweep", "version": 1, "name": "page",
        "base": {"format": "thresher-run", "version": 1, "model": "%1", "data": "fashion-mnist",
                 "training": {"epochs": 1, "batch": 32, "limit": 256, "threads": 1, "seed": 3, "averaging_frequency": 2},
                 "udp_port": %2},
        "axes": [{"field": "strategy", "values": ["gradient-sharing", "parameter-averaging"]},
                 {"field": "nodes", "values": [1, 2]}]})").arg(mlp).arg(free_ports(2)).toUtf8()));
    MainWindow w(options(dir));
    w.resize(1400, 900);
    w.show();
    w.show_tab("scalability");
    auto* page = w.scalability_page();
    // Before any run: each chart says what it will show, and no empty legend box is drawn.
    for (auto* chart : page->charts()) {
        auto* title = qobject_cast<QCPTextElement*>(chart->plotLayout()->element(0, 0));
        QVERIFY(title && title->text().contains("no runs yet"));
        QVERIFY(!chart->legend->visible());
    }
    page->set_sweep_file(dir.filePath("sweep.json"));
    page->set_results_folder(dir.filePath("results"));
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QMetaObject::invokeMethod(page, "startRequested");
    // A sweep that cannot start says so at once (last_error): fail with it rather than wait.
    QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1 || !w.last_error().isEmpty(), 240000);
    QVERIFY2(w.last_error().isEmpty(), qPrintable(w.last_error()));
    QVERIFY2(finished[0][0].toInt() == 0, qPrintable(finished[0][1].toString()));

    // A row per point: #, strategy, nodes, workers, samples/s, speedup, …
    auto* table = page->table();
    if (table->rowCount() != 4) {
        // Say which run left its point out (a point needs an "ok" run with a throughput).
        QFile f(dir.filePath("results/results.json"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        QStringList runs;
        for (const auto& v : QJsonDocument::fromJson(f.readAll()).object().value("runs").toArray()) {
            const QJsonObject r = v.toObject();
            runs << QString("point %1: %2, samples/s %3, iterations %4, %5")
                        .arg(r.value("point").toInt()).arg(r.value("status").toString())
                        .arg(r.contains("samples_per_s") ? QString::number(r.value("samples_per_s").toDouble()) : QString("none"))
                        .arg(r.value("iterations").toInteger()).arg(r.value("summary").toString());
        }
        QFAIL(qPrintable(QString("%1 rows, not 4; runs:\n%2").arg(table->rowCount()).arg(runs.join("\n"))));
    }
    QCOMPARE(table->horizontalHeaderItem(1)->text(), QString("strategy"));
    QCOMPARE(table->horizontalHeaderItem(2)->text(), QString("nodes"));
    for (int r = 0; r < 4; ++r) QVERIFY2(table->item(r, 4)->text().toDouble() > 0, qPrintable(table->item(r, 4)->text()));
    QCOMPARE(table->item(2, 1)->text(), QString("parameter-averaging"));
    QCOMPARE(table->item(0, 5)->text(), QString("1.00"));  // each strategy's 1-node point is its baseline
    QCOMPARE(table->item(2, 5)->text(), QString("1.00"));
    // Charts with points: throughput and speedup, a point per measured point; time per
    // iteration: the measured points (the model's lines carry no markers).
    QCOMPARE(points(page->charts()[0]), 4);
    QVERIFY(page->charts()[0]->legend->visible());
    QCOMPARE(points(page->charts()[1]), 4);
    QCOMPARE(points(page->charts()[2]), 4);
    QVERIFY(page->charts()[2]->graphCount() > 2);  // with the model's dashed lines
    // What if (one node per machine): per strategy a dashed curve per link rate to 64 workers (7
    // points); DL4J's estimate beside gradient sharing's.
    QCustomPlot* what_if = page->charts()[3];
    QStringList names;
    for (int i = 0; i < what_if->graphCount(); ++i) {
        QCPGraph* g = what_if->graph(i);
        names << g->name();
        if (g->name().contains("Gbit/s") || g->name().contains("DL4J")) {
            QCOMPARE(g->data()->size(), 7);
            QCOMPARE(g->data()->at(6)->key, 64.0);
            QVERIFY2(g->data()->at(6)->value > 0, qPrintable(g->name()));
            QCOMPARE(g->pen().style(), Qt::DashLine);
        }
    }
    for (const QString rate : {"10", "25", "100"})
        for (const QString strategy : {"gradient-sharing", "parameter-averaging"})
            QVERIFY2(names.contains(strategy + ", " + rate + " Gbit/s"), qPrintable(names.join("; ")));
    QVERIFY2(names.contains("gradient-sharing: DL4J's estimate"), qPrintable(names.join("; ")));
    QCOMPARE(points(what_if), 2 * 3 * 7 + 7);
    // The model in words, and its leave-one-out test.
    const QString model = page->model_text()->text();
    QVERIFY2(model.contains("gradient-sharing: time per iteration = compute"), qPrintable(model));
    QVERIFY2(model.contains("parameter-averaging: time per iteration = compute"), qPrintable(model));
    QVERIFY2(model.contains("Leave-one-out"), qPrintable(model));
    QVERIFY2(model.contains("gradient-sharing at 64 workers, one node per machine: speedup "), qPrintable(model));
    QFile report(dir.filePath("results/report.html"));
    QVERIFY(report.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(report.readAll());
    QVERIFY(html.contains("gradient-sharing, 100 Gbit/s"));
    QVERIFY(html.contains("DL4J's estimate"));
    QCOMPARE(html.count("<li class=\"model\">"), 2);
    for (const QString f : {"results.json", "results.csv", "report.html"})
        QVERIFY2(QFileInfo(dir.filePath("results/" + f)).size() > 0, qPrintable(f));
    QCOMPARE(w.history()->runs().size(), 4);
    for (const auto& r : w.history()->runs()) {
        QCOMPARE(r.status, QString("ok"));
        QVERIFY2(r.name.startsWith("page-"), qPrintable(r.name));
    }
    const QString dir_shots = qEnvironmentVariable("THRESHER_SCREENSHOTS");
    if (!dir_shots.isEmpty()) w.save_screenshot(dir_shots + "/scalability-sweep.png");

    // Again into the same folder: every point is done, nothing runs.
    QFile results(dir.filePath("results/results.json"));
    QVERIFY(results.open(QIODevice::ReadOnly));
    const QJsonArray runs = QJsonDocument::fromJson(results.readAll()).object().value("runs").toArray();
    results.close();
    QCOMPARE(runs.size(), 4);
    QMetaObject::invokeMethod(page, "startRequested");
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 30000);
    QVERIFY2(finished[1][0].toInt() == 0, qPrintable(finished[1][1].toString()));
    QVERIFY2(finished[1][1].toString().contains("0 run(s) finished, 0 failed, 4 already done"), qPrintable(finished[1][1].toString()));
    QCOMPARE(w.history()->runs().size(), 4);
    QCOMPARE(table->rowCount(), 4);
    QCOMPARE(points(page->charts()[0]), 4);
    QVERIFY(results.open(QIODevice::ReadOnly));
    QCOMPARE(QJsonDocument::fromJson(results.readAll()).object().value("runs").toArray(), runs);
}

void TestScalabilityPage::bad_sweep_file_is_an_error() {
    QTemporaryDir dir;
    QVERIFY(write_file(dir.filePath("bad.json"), R"({"format": "thresher-sweep", "version": 1, "axes": []})"));
    MainWindow w(options(dir));
    w.show_tab("scalability");
    w.scalability_page()->set_sweep_file(dir.filePath("bad.json"));
    QMetaObject::invokeMethod(w.scalability_page(), "startRequested");
    QVERIFY(!w.running());
    QVERIFY2(w.last_error().contains("bad.json: base: must be a run spec"), qPrintable(w.last_error()));
    QCOMPARE(w.history()->runs().size(), 0);
}

void TestScalabilityPage::current_spec_saved_as_a_sweep() {
    QTemporaryDir dir;
    const QString mlp = qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/resources/models/mlp.json";
    QVERIFY(write_file(dir.filePath("run.json"), local_spec(mlp, "fashion-mnist", 2, 40500, R"("batch":16)")));
    MainWindow w(options(dir));
    QVERIFY2(w.open_spec(dir.filePath("run.json")), qPrintable(w.last_error()));
    w.scalability_page()->findChild<QLineEdit*>("counts")->setText("1, 2, 4");
    QDir(dir.path()).mkpath("elsewhere");
    const QString path = dir.filePath("elsewhere/mine.json");
    QVERIFY2(w.save_sweep(path), qPrintable(w.last_error()));
    QCOMPARE(w.scalability_page()->sweep_file(), path);
    // The file is a sweep that loads from its own folder: the model path went absolute.
    const auto sweep = thresher::launcher::sweep::SweepSpec::load(path);
    QCOMPARE(sweep.name, QString("mine"));
    QCOMPARE(sweep.points.size(), 3);
    QCOMPARE(sweep.points[2].spec.cluster.nodes, 4);
    QCOMPARE(sweep.points[2].spec.training.batch, 16);
    QCOMPARE(QFileInfo(sweep.points[0].spec.model_file()).canonicalFilePath(), QFileInfo(mlp).canonicalFilePath());
    // No counts: an error, no file.
    w.scalability_page()->findChild<QLineEdit*>("counts")->setText("two");
    QVERIFY(!w.save_sweep(dir.filePath("none.json")));
    QVERIFY(w.last_error().contains("Worker counts"));
    QVERIFY(!QFileInfo::exists(dir.filePath("none.json")));
}

QTEST_MAIN(TestScalabilityPage)
#include "test_scalability_page.moc"
