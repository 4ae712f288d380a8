// The desktop app under QT_QPA_PLATFORM=offscreen, driven as a user would: import a Keras model
// → launch a local 2-node run on Fashion-MNIST → the charts receive points → Stop → the run is in
// the SQLite history as stopped, with its events; editing a layer in its form changes the table;
// a spec saved by the window is one `thresher-launch run` completes; charts redraw at most ~25
// times a second however fast events arrive; `thresher --screenshot` writes a real picture and
// fails, naming the file, on a spec that does not exist.
#include <QtTest>

#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QInputDialog>
#include <QJsonArray>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QImage>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTableWidget>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <qcustomplot_include.h>

#include "charts_panel.h"
#include "history_page.h"
#include "launch_fixture.h"
#include "layer_form.h"
#include "main_window.h"
#include "model_exporter.h"
#include "sample_text_dialog.h"
#include "weight_files.h"
#include "window_fixture.h"
#include "model_document.h"
#include "model_page.h"
#include "run_document.h"
#include "run_history.h"
#include "run_page.h"
#include "scalability_page.h"
#include "ssh_launcher.h"

using namespace launch_fixture;
using thresher::ui::MainWindow;

namespace {

QString source(const QString& rel) { return qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/" + rel; }

using window_fixture::options;

// A 2-node local MLP spec on fresh ports, written to DIR/NAME; `training` is its training body.
QString mlp_spec(const QTemporaryDir& dir, const QString& name, const QString& training, int* port = nullptr) {
    const int p = free_ports(2);
    if (port) *port = p;
    const QString path = dir.filePath(name);
    write_file(path, local_spec(source("resources/models/mlp.json"), "fashion-mnist", 2, p, training));
    return path;
}

int points(QCustomPlot* plot) {
    int n = 0;
    for (int i = 0; i < plot->graphCount(); ++i) n += plot->graph(i)->data()->size();
    return n;
}

// Set THRESHER_SCREENSHOTS=DIR to keep pictures of the windows these tests drive, to look at.
void keep_screenshot(MainWindow& w, const QString& name) {
    const QString dir = qEnvironmentVariable("THRESHER_SCREENSHOTS");
    if (!dir.isEmpty()) w.save_screenshot(dir + "/" + name + ".png");
}

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { thresher::launcher::ssh::register_ssh_launcher(); }
    void import_launch_watch_stop_history();
    void layer_form_edits_the_model();
    void imported_weights_stay_with_the_spec();
    void open_steps_asked_and_kept();
    void saved_spec_runs_in_the_cli();
    void redraws_are_batched();
    void invalid_model_does_not_launch();
    void form_errors_are_the_specs();
    void empty_charts_keep_their_width();
    void scalability_experiment_runs_each_count();
    void screenshot_cli();
    void replay_shows_a_recorded_run();
    void export_model_of_a_saved_run();
    void sample_text_of_a_character_run();
};

void TestMainWindow::import_launch_watch_stop_history() {
    QTemporaryDir dir;
    int port = 0;
    // Many epochs of a small slice: the run lasts until Stop.
    const QString spec = mlp_spec(dir, "run.json", R"("epochs":200,"batch":32,"limit":1024,"threads":1)", &port);
    MainWindow w(options(dir));
    w.show();
    QVERIFY2(w.open_spec(spec), qPrintable(w.last_error()));
    QVERIFY2(w.import_model(source("tests/engine/config/data/keras3_mlp.json")), qPrintable(w.last_error()));
    QVERIFY(w.document()->valid());
    QVERIFY(w.current_spec().model_is_inline());  // the imported model travels inside the spec

    QSignalSpy finished(&w, &MainWindow::runFinished);
    QTest::mouseClick(w.run_page()->launch_button(), Qt::LeftButton);
    QVERIFY2(w.running(), qPrintable(w.last_error()));
    QVERIFY(!w.run_page()->launch_button()->isEnabled());
    auto charts = w.run_page()->charts()->charts();
    // Loss and iteration-time points from both nodes' workers.
    QTRY_VERIFY_WITH_TIMEOUT(points(charts[0]) >= 20 && w.run_page()->metrics().iteration_ms().size() == 2, 60000);
    QVERIFY(points(charts[1]) > 0);
    QTRY_VERIFY_WITH_TIMEOUT(points(charts[2]) > 0, 30000);  // traffic needs half a second of counters
    QVERIFY(points(charts[3]) > 0);                          // threshold and density

    const qint64 run = w.current_run_id();
    QVERIFY(run > 0);
    keep_screenshot(w, "run-live");
    QVERIFY(w.run_page()->stop_button()->isEnabled());
    QTest::mouseClick(w.run_page()->stop_button(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    QCOMPARE(finished[0][0].toInt(), thresher::launcher::kExitStopped);
    QVERIFY(!w.running());
    QVERIFY(pids_with_cmdline(QString::number(port)).isEmpty());

    const auto record = w.history()->run(run);
    QVERIFY(record);
    QCOMPARE(record->status, QString("stopped"));
    QVERIFY(w.history()->events(run).size() >= 20);
    QCOMPARE(w.history()->spec(run).value("udp_port").toInt(), port);
    QCOMPARE(w.history_page()->table()->rowCount(), 1);
}

// Importing a file with weights (here a DL4J model zip) keeps the spec pointing at that file, so
// the engine's `train --model` fine-tunes from its parameters; a saved spec still names it; an
// edited model travels inline instead (its architecture no longer matches the weights).
void TestMainWindow::imported_weights_stay_with_the_spec() {
    QTemporaryDir dir;
    const QString zip = dir.filePath("tuned_model.zip");
    QFile config(source("tests/engine/config/data/dl4j_1.0.0_swish_gelu_prelu.json"));
    QVERIFY(config.open(QIODevice::ReadOnly));
    const QByteArray text = config.readAll();
    std::vector<float> params(106);  // the fixture's parameter count
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
    test_support::write_zip(zip.toStdString(), {{"configuration.json", test_support::text_bytes(text.toStdString())},
                                                {"coefficients.bin", test_support::nd4j_row(params, false, false)}});
    MainWindow w(options(dir));
    QVERIFY2(w.import_model(zip), qPrintable(w.last_error()));
    QVERIFY(w.document()->loaded_weights());
    const auto spec = w.current_spec();
    QVERIFY(!spec.model_is_inline());
    QCOMPARE(spec.model_file(), QFileInfo(zip).absoluteFilePath());
    // What the launcher hands the engine: the zip itself.
    const QString saved = dir.filePath("sub/run.json");
    QVERIFY(QDir().mkpath(dir.filePath("sub")));
    QVERIFY2(w.save_spec(saved), qPrintable(w.last_error()));
    const auto reread = thresher::launcher::RunSpec::load(saved);
    QCOMPARE(QFileInfo(reread.model_file()).canonicalFilePath(), QFileInfo(zip).canonicalFilePath());
    // A JSON architecture has no weights: it travels inline, as before.
    QVERIFY2(w.import_model(source("tests/engine/config/data/keras3_mlp.json")), qPrintable(w.last_error()));
    QVERIFY(!w.document()->loaded_weights());
    QVERIFY(w.current_spec().model_is_inline());
    // Back to the zip, then an edit: the model no longer fits the weights and goes inline.
    QVERIFY2(w.import_model(zip), qPrintable(w.last_error()));
    QVERIFY(!w.current_spec().model_is_inline());
    w.document()->remove_layer(1);
    QVERIFY(w.current_spec().model_is_inline());
}

namespace {
// Answers the next modal QInputDialog as a user would (value, then OK; or Cancel), counting them.
struct StepsAnswerer {
    int value = 0;
    bool accept = true;
    int asked = 0;
    QTimer timer;
    StepsAnswerer() {
        timer.setInterval(10);
        QObject::connect(&timer, &QTimer::timeout, [this] {
            auto* dialog = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
            if (!dialog) return;
            ++asked;
            dialog->setIntValue(value);
            accept ? dialog->accept() : dialog->reject();
        });
        timer.start();
    }
};
}  // namespace

// A DL4J zip whose recurrent input has no timeSeriesLength: the window asks for the time steps,
// imports with them, and the spec carries them (model_steps, the engine's --steps) because the
// engine reads the zip again; a saved spec reopens without asking.
void TestMainWindow::open_steps_asked_and_kept() {
    QTemporaryDir dir;
    QFile config_file(source("tests/engine/config/data/sequences/dl4j_seq_lstm_rnnoutput.json"));
    QVERIFY(config_file.open(QIODevice::ReadOnly));
    QJsonObject config = QJsonDocument::fromJson(config_file.readAll()).object();
    auto types = config["networkInputTypes"].toArray();
    auto type = types[0].toObject();
    type["timeSeriesLength"] = -1;  // InputType.recurrent(size)
    types[0] = type;
    config["networkInputTypes"] = types;
    QFile coefficients_file(source("tests/engine/config/data/sequences/dl4j_seq_lstm_rnnoutput.coefficients.json"));
    QVERIFY(coefficients_file.open(QIODevice::ReadOnly));
    std::vector<float> params;
    for (const auto& v : QJsonDocument::fromJson(coefficients_file.readAll()).object()["coefficients"].toArray())
        params.push_back(float(v.toDouble()));
    const QString zip = dir.filePath("open_steps.zip");
    test_support::write_zip(zip.toStdString(),
                            {{"configuration.json", test_support::text_bytes(QJsonDocument(config).toJson().toStdString())},
                             {"coefficients.bin", test_support::nd4j_row(params, false, false)}});
    MainWindow w(options(dir));
    {
        StepsAnswerer cancel;
        cancel.accept = false;
        QVERIFY(!w.import_model(zip));
        QCOMPARE(cancel.asked, 1);
        QVERIFY2(w.last_error().contains("no time steps given"), qPrintable(w.last_error()));
    }
    StepsAnswerer answer;
    answer.value = 9;
    QVERIFY2(w.import_model(zip), qPrintable(w.last_error()));
    QCOMPARE(answer.asked, 1);
    QCOMPARE(w.document()->model()["input"].toObject()["steps"].toInt(), 9);
    auto spec = w.current_spec();
    QVERIFY(!spec.model_is_inline());
    QCOMPARE(spec.model_steps, std::optional<int>(9));
    const QString saved = dir.filePath("run.json");
    QVERIFY2(w.save_spec(saved), qPrintable(w.last_error()));
    QCOMPARE(thresher::launcher::RunSpec::load(saved).model_steps, std::optional<int>(9));
    MainWindow reopened(options(dir));
    QVERIFY2(reopened.open_spec(saved), qPrintable(reopened.last_error()));
    QCOMPARE(answer.asked, 1);  // not asked again
    QCOMPARE(reopened.document()->model()["input"].toObject()["steps"].toInt(), 9);
    // A file that fixes its steps is never asked about; the spec then carries none.
    QVERIFY2(w.import_model(source("tests/engine/config/data/keras3_mlp.json")), qPrintable(w.last_error()));
    QCOMPARE(answer.asked, 1);
    QVERIFY(!w.current_spec().model_steps);
}

void TestMainWindow::layer_form_edits_the_model() {
    QTemporaryDir dir;
    MainWindow w(options(dir));
    w.show();
    w.load_template("lenet");
    w.model_page()->select_row(0);
    auto* filters = w.model_page()->findChild<QSpinBox*>("field_filters");
    QVERIFY(filters);
    QCOMPARE(filters->value(), 20);
    filters->setValue(10);  // as if typed: 10 × 1 × 5 × 5 + 10
    QCOMPARE(w.document()->layer(0).value("filters").toInt(), 10);
    QCOMPARE(w.document()->layer_params(0), 260);
    QCOMPARE(w.document()->output_shape(0), QString("10×24×24"));
    // The table's cell says the same.
    const auto* table = w.model_page()->table();
    QCOMPARE(table->model()->data(table->model()->index(0, thresher::ui::ModelDocument::ColParams)).toString(),
             QLocale().toString(260));
}

void TestMainWindow::saved_spec_runs_in_the_cli() {
    QTemporaryDir dir;
    const QString in = mlp_spec(dir, "in.json", R"("epochs":1,"batch":64,"limit":512,"threads":1)");
    MainWindow w(options(dir));
    QVERIFY2(w.open_spec(in), qPrintable(w.last_error()));
    // The Training page shows the spec as read: nothing is modified until something is edited.
    QVERIFY(!w.run_document()->modified());
    w.document()->set_field("name", "edited-in-gui");  // an edit: the model is saved inline
    QVERIFY(w.run_document()->modified());
    // The cluster's topology: a tree with fanout 1 (the chain 0 - 1) shows its fanout and is saved.
    auto* topology = w.findChild<QComboBox*>("topology");
    auto* fanout = w.findChild<QSpinBox*>("fanout");
    QVERIFY(topology && fanout);
    topology->setCurrentIndex(topology->findData("tree"));
    QVERIFY(!fanout->isHidden());
    fanout->setValue(1);
    QDir().mkpath(dir.filePath("elsewhere"));
    const QString out = dir.filePath("elsewhere/saved.json");
    QVERIFY2(w.save_spec(out), qPrintable(w.last_error()));
    QVERIFY(!w.run_document()->modified());
    QCOMPARE(w.windowTitle().section(" — ", 1, 1), QString("%1 (saved.json)").arg(w.run_document()->spec().name));

    QProcess cli;
    cli.start(bin("thresher-launch"), {"run", out, "--events"});
    QVERIFY(cli.waitForFinished(120000));
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    const QByteArray events = cli.readAllStandardOutput();
    QVERIFY(events.contains("\"run\":\"edited-in-gui\""));
    QVERIFY(events.contains("\"status\":\"ok\""));
    QFile saved(out);
    QVERIFY(saved.open(QIODevice::ReadOnly));
    const QJsonObject cluster = QJsonDocument::fromJson(saved.readAll()).object().value("cluster").toObject();
    QCOMPARE(cluster.value("topology").toString(), QString("tree"));
    QCOMPARE(cluster.value("fanout").toInt(), 1);
}

void TestMainWindow::redraws_are_batched() {
    QTemporaryDir dir;
    MainWindow w(options(dir));
    w.show();
    auto* page = w.run_page();
    page->begin("synthetic");
    const int before = page->charts()->redraw_count();
    QElapsedTimer clock;
    clock.start();
    // 3000 events as fast as they come, with the event loop turning between bursts.
    for (int i = 0; i < 3000; ++i) {
        page->add_event({{"event", "iteration"}, {"node", 0}, {"worker", 0}, {"iter", i + 1}, {"t", i * 0.01},
                         {"loss", 1.0 / (i + 1)}, {"iter_ms", 5.0}, {"bytes_tx", i * 100}, {"bytes_rx", i * 100},
                         {"samples", (i + 1) * 64}});
        if (i % 100 == 0) QCoreApplication::processEvents();
    }
    QTest::qWait(100);
    const double elapsed_s = clock.elapsed() / 1000.0;
    const int redraws = page->charts()->redraw_count() - before;
    qInfo("%d events → %d redraws in %.2f s", 3000, redraws, elapsed_s);
    QVERIFY(redraws >= 1);
    QVERIFY2(redraws <= 25 * elapsed_s + 2, qPrintable(QString("%1 redraws in %2 s").arg(redraws).arg(elapsed_s)));
    QCOMPARE(points(page->charts()->charts()[0]), 2 * 3000);  // raw and smoothed: nothing dropped
}

void TestMainWindow::invalid_model_does_not_launch() {
    QTemporaryDir dir;
    MainWindow w(options(dir));
    auto layer = w.document()->layer(0);
    layer["kernel"] = QJsonArray{5, 0};
    w.document()->set_layer(0, layer);
    QVERIFY(!w.launch());
    QVERIFY(!w.running());
    QVERIFY2(w.last_error().contains("kernel"), qPrintable(w.last_error()));
    QCOMPARE(w.history()->runs().size(), 0);
}

// A form the engine would refuse (fixed threshold, no τ) neither launches nor saves, and the
// window shows RunSpec::validate()'s words, which are also those reading the saved file would give.
void TestMainWindow::form_errors_are_the_specs() {
    QTemporaryDir dir;
    const QString in = mlp_spec(dir, "in.json", R"("strategy":"gradient-sharing","epochs":1,"limit":64)");
    MainWindow w(options(dir));
    QVERIFY2(w.open_spec(in), qPrintable(w.last_error()));
    auto* algorithm = w.findChild<QComboBox*>("threshold_algorithm");
    auto* threshold = w.findChild<QLineEdit*>("threshold");
    QVERIFY(algorithm && threshold);
    algorithm->setCurrentIndex(algorithm->findData("fixed"));
    threshold->clear();

    const thresher::launcher::RunSpec spec = w.current_spec();
    QString validated, read;
    try {
        spec.validate();
    } catch (const thresher::launcher::SpecError& e) {
        validated = QString::fromStdString(e.what());
    }
    try {
        (void)thresher::launcher::RunSpec::from_json(spec.to_json(), spec.source, spec.base_dir);
    } catch (const thresher::launcher::SpecError& e) {
        read = QString::fromStdString(e.what());
    }
    QCOMPARE(validated, in + ": training.threshold_algorithm: \"fixed\" needs its threshold: fixed:<τ>, or training.threshold");
    QCOMPARE(read, validated);

    QVERIFY(!w.launch());
    QVERIFY(!w.running());
    QCOMPARE(w.last_error(), validated);
    const QString out = dir.filePath("out.json");
    QVERIFY(!w.save_spec(out));
    QCOMPARE(w.last_error(), out + ": training.threshold_algorithm: \"fixed\" needs its threshold: fixed:<τ>, or training.threshold");
    QVERIFY(!QFile::exists(out));

    // With a τ the same form launches nothing wrong: it saves, and the file reads back as typed.
    threshold->setText("0.01");
    QVERIFY2(w.save_spec(out), qPrintable(w.last_error()));
    const auto saved = thresher::launcher::RunSpec::load(out);
    QCOMPARE(QString::fromStdString(thresher::dist::to_text(saved.training.threshold_algorithm)), QString("fixed"));
    QCOMPARE(saved.training.threshold, std::optional<double>(0.01));
    QCOMPARE(w.history()->runs().size(), 0);
}

// Before any run every chart is empty, and so is its legend (in a row under the plot): the plot
// area must still take the chart's width, not the width of an empty legend.
void TestMainWindow::empty_charts_keep_their_width() {
    QTemporaryDir dir;
    MainWindow w(options(dir));
    w.resize(1280, 860);
    w.show();
    int checked = 0;
    for (const char* tab : {"run", "scalability"}) {
        w.show_tab(tab);
        QCoreApplication::processEvents();
        for (QCustomPlot* plot : w.findChildren<QCustomPlot*>()) {
            if (!plot->isVisible()) continue;
            plot->replot();
            QVERIFY2(plot->axisRect()->width() > plot->width() / 2,
                     qPrintable(QString("%1 tab: a chart %2 px wide draws its plot area %3 px wide")
                                    .arg(tab).arg(plot->width()).arg(plot->axisRect()->width())));
            ++checked;
        }
    }
    QVERIFY(checked >= 9);  // 6 on the Run tab, 3 on Scalability
}

void TestMainWindow::scalability_experiment_runs_each_count() {
    QTemporaryDir dir;
    const QString spec = mlp_spec(dir, "run.json", R"("epochs":1,"batch":32,"limit":1024,"threads":1)");
    MainWindow w(options(dir));
    w.show();
    QVERIFY2(w.open_spec(spec), qPrintable(w.last_error()));
    w.show_tab("scalability");
    QCOMPARE(w.scalability_page()->counts(), (QList<int>{1, 2, 4}));
    auto* counts = w.scalability_page()->findChild<QLineEdit*>("counts");
    QVERIFY(counts);
    counts->setText("1, 2");
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QMetaObject::invokeMethod(w.scalability_page(), "startRequested");
    QVERIFY2(w.running(), qPrintable(w.last_error()));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QVERIFY2(finished[0][0].toInt() == 0, qPrintable(finished[0][1].toString()));
    // One row per count, the baseline first; every run in history.
    auto* table = w.scalability_page()->table();
    // Columns: #, nodes (the sweep's axis), workers, samples/s, speedup, efficiency, DL4J estimate, …
    QCOMPARE(table->rowCount(), 2);
    QCOMPARE(table->item(0, 2)->text(), QString("1"));
    QCOMPARE(table->item(0, 4)->text(), QString("1.00"));
    QVERIFY(table->item(1, 3)->text().toDouble() > 0);
    QVERIFY(table->item(1, 6)->text() != "—");  // the DL4J estimate, from measured times
    const auto runs = w.history()->runs();
    QCOMPARE(runs.size(), 2);
    for (const auto& r : runs) QCOMPARE(r.status, QString("ok"));
    keep_screenshot(w, "scalability");
    w.show_tab("history");
    keep_screenshot(w, "history");

    // Ticking a run draws it dashed on the loss and accuracy charts; unticking removes it.
    auto graph_names = [&w] {
        QStringList names;
        auto* loss = w.run_page()->charts()->charts()[0];
        for (int i = 0; i < loss->graphCount(); ++i) names << loss->graph(i)->name();
        return names;
    };
    auto* tick = w.history_page()->table()->item(1, 0);  // the oldest run: the 1-worker baseline
    tick->setCheckState(Qt::Checked);
    QVERIFY2(graph_names().contains(QString("#%1 run-scaling-1: nodes = 1").arg(runs[1].id)), qPrintable(graph_names().join(", ")));
    auto* loss = w.run_page()->charts()->charts()[0];
    QVERIFY(points(loss) > 0);
    tick->setCheckState(Qt::Unchecked);
    QVERIFY(!graph_names().join(",").contains("run-scaling-1"));
}

void TestMainWindow::screenshot_cli() {
    QTemporaryDir dir;
    const QString png = dir.filePath("window.png");
    QProcess app;
    app.start(bin("thresher"), {"--history", dir.filePath("h.sqlite"), "--tab", "model", "--screenshot", png});
    QVERIFY(app.waitForFinished(60000));
    QVERIFY2(app.exitCode() == 0, app.readAllStandardError().constData());
    QImage image(png);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() >= 1000 && image.height() >= 700);
    // A real picture, not a blank: many distinct colours.
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 7)
        for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
    QVERIFY2(colours.size() > 20, qPrintable(QString::number(colours.size())));

    QProcess bad;
    bad.start(bin("thresher"), {"--history", dir.filePath("h.sqlite"), "--open", "/nonexistent/run.json",
                                "--screenshot", dir.filePath("bad.png")});
    QVERIFY(bad.waitForFinished(60000));
    QCOMPARE(bad.exitCode(), 1);
    QVERIFY(bad.readAllStandardError().contains("/nonexistent/run.json"));
}

// --replay: a recorded two-node run through the launcher's event parser. Both nodes' points reach
// the charts, a broken line shows as a warning naming its line, and a file without a single
// event is refused.
void TestMainWindow::replay_shows_a_recorded_run() {
    QTemporaryDir dir;
    MainWindow w(options(dir));
    QByteArray recording =
        R"({"event":"run_started","t":0.01,"node":0,"run":"mlp","nodes":2,"workers":2,"params":100,"strategy":"gradient-sharing","backend":"cpu"})" "\n";
    for (int i = 1; i <= 20; ++i)
        for (int node = 0; node < 2; ++node)
            recording += QString(R"({"event":"iteration","t":%1,"node":%2,"worker":%2,"epoch":0,"iter":%3,"loss":%4,"samples":%5})" "\n")
                             .arg(0.1 * i).arg(node).arg(i).arg(2.0 / i).arg(64 * i).toUtf8();
    recording.insert(recording.indexOf('\n') + 1, "garbage in the middle\n");
    QFile file(dir.filePath("run.jsonl"));
    QVERIFY(file.open(QIODevice::WriteOnly) && file.write(recording) == recording.size());
    file.close();
    QVERIFY2(w.replay_events(file.fileName()), qPrintable(w.last_error()));
    QVERIFY2(w.run_page()->log()->toPlainText().contains("line 2: the line is not a JSON event: garbage in the middle"),
             qPrintable(w.run_page()->log()->toPlainText().left(2000)));
    QTRY_VERIFY(points(w.run_page()->charts()->charts()[0]) >= 20);

    QFile empty(dir.filePath("empty.jsonl"));
    QVERIFY(empty.open(QIODevice::WriteOnly) && empty.write("hello\nworld\n") > 0);
    empty.close();
    QVERIFY(!w.replay_events(empty.fileName()));
    QVERIFY2(w.last_error().contains("no events"), qPrintable(w.last_error()));
}

// File ▸ Export model… (issue 25): disabled until a run saved a model; then the engine's
// export-model writes the ONNX file without the window waiting (the status bar names it); a run
// picked on the History tab is exported the same way; a model ONNX cannot express comes back as a
// message box with the engine's words naming the layer, and no file.
void TestMainWindow::export_model_of_a_saved_run() {
    QTemporaryDir dir;
    const QString data = dir.filePath("rows.csv"), saved = dir.filePath("tiny.thr"), spec = dir.filePath("run.json");
    QVERIFY(write_file(data, three_class_csv(200)));
    QVERIFY(write_file(spec, local_spec(kTinyModel, data, 1, free_ports(1), R"("epochs":1,"batch":16,"threads":1)",
                                        "\"save\":\"" + saved + "\"")));
    MainWindow w(options(dir));
    w.show();
    QAction* action = nullptr;
    QMenu* file = nullptr;
    for (QAction* menu : w.menuBar()->actions())
        if (menu->menu() && menu->text() == "&File") file = menu->menu();
    QVERIFY(file);
    for (QAction* a : file->actions())
        if (a->objectName() == "export_model") action = a;
    QVERIFY(action);
    QCOMPARE(action, w.export_action());
    QCOMPARE(action->text(), QString("E&xport model…"));
    QVERIFY(!action->isEnabled());  // no run yet
    QVERIFY(w.exportable_model().isEmpty());

    QVERIFY2(w.open_spec(spec), qPrintable(w.last_error()));
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY2(w.launch(), qPrintable(w.last_error()));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QCOMPARE(finished[0][0].toInt(), 0);
    QVERIFY(action->isEnabled());
    QCOMPARE(w.exportable_model(), saved);
    const QString shots = qEnvironmentVariable("THRESHER_SCREENSHOTS");
    if (!shots.isEmpty()) {  // the File menu as the user sees it now
        file->popup(w.mapToGlobal(QPoint(0, w.menuBar()->height())));
        QTRY_VERIFY(file->isVisible());
        file->grab().save(shots + "/export-model-menu.png", "PNG");
        file->hide();
    }

    QSignalSpy exported(&w, &MainWindow::modelExported);
    const QString onnx = dir.filePath("tiny.onnx");
    QVERIFY(w.export_model(onnx));
    QVERIFY(!action->isEnabled());  // one export at a time
    QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 1, 130000);
    QVERIFY2(exported[0][0].toBool(), qPrintable(exported[0][1].toString()));
    QVERIFY(QFileInfo(onnx).size() > 0);
    QVERIFY2(w.statusBar()->currentMessage().startsWith("Exported " + onnx + " (ONNX, 2 layers"),
             qPrintable(w.statusBar()->currentMessage()));
    QVERIFY(action->isEnabled());
    keep_screenshot(w, "export-model-done");

    // The same run picked on the History tab.
    w.show_tab("history");
    QCOMPARE(w.history_page()->table()->rowCount(), 1);
    w.history_page()->table()->selectRow(0);
    QCOMPARE(w.exportable_model(), saved);
    QVERIFY(action->isEnabled());

    // A model ONNX cannot express, in the run's place: the engine's refusal, word for word.
    const QString padded_model = dir.filePath("padded.json"), images = dir.filePath("images.csv");
    QVERIFY(write_file(padded_model, R"({"name":"padded","input":{"channels":1,"height":8,"width":8},
      "layers":[{"type":"convolution","name":"conv","filters":2,"kernel":[3,3]},
                {"type":"subsampling","name":"pool1","pooling":"max","kernel":[2,2],"stride":[2,2],"padding":[2,2]},
            {"type":"activation","activation":"relu"},
                {"type":"output","units":2,"loss":"mcxent"}]})"));
    QByteArray rows;
    for (int r = 0; r < 40; ++r) {
        for (int f = 0; f < 64; ++f) rows += QByteArray::number(((r * 7 + f * 13) % 17) / 17.0, 'g', 4) + ',';
        rows += QByteArray::number(r % 2) + '\n';
    }
    QVERIFY(write_file(images, rows));
    QVERIFY(QFile::remove(saved));
    const auto trained = run_to_end(bin("thresher-engine"), {"train", "--model", padded_model, "--data", images, "--epochs", "1",
                                                              "--batch", "8", "--threads", "1", "--save", saved},
                                    120000);
    QVERIFY2(trained.code == 0, qPrintable(trained.text()));
    const QString refused = dir.filePath("padded.onnx");
    QVERIFY(w.export_model(refused));
    QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 2, 130000);
    QVERIFY(!exported[1][0].toBool());
    auto* box = w.findChild<QMessageBox*>("export_error");
    QVERIFY(box);
    QTRY_VERIFY(box->isVisible());
    QVERIFY2(box->informativeText().startsWith("tiny.thr: layers[1] (subsampling \"pool1\"): ONNX cannot express this layer"),
             qPrintable(box->informativeText()));
    QVERIFY(!QFileInfo::exists(refused));
    if (!shots.isEmpty()) box->grab().save(shots + "/export-model-refused.png", "PNG");
    box->accept();
    QVERIFY(w.isVisible());  // the window goes on
}

// Run ▸ Sample text… (issue 23): a run that trained a character model on a text file and saved
// it; the dialog asks the engine (predict --sample) without the window waiting and shows the
// start text and what the model wrote. The corpus repeats "abcd\n", so greedy text from "abcd"
// is known. A model file that is not there comes back as the engine's words in the dialog.
void TestMainWindow::sample_text_of_a_character_run() {
    QTemporaryDir dir;
    const QString data = dir.filePath("abcd.txt"), saved = dir.filePath("chars.thr"), spec = dir.filePath("run.json");
    QByteArray text;
    for (int i = 0; i < 60; ++i) text += "abcd\n";
    QVERIFY(write_file(data, text));
    const QString model = R"({"name":"chars","seed":1,"input":{"steps":10,"features":5},"updater":{"type":"adam","learning_rate":0.05},
      "layers":[{"type":"lstm","units":16,"return_sequences":true},{"type":"output","units":5,"activation":"softmax","loss":"mcxent"}]})";
    QVERIFY(write_file(spec, local_spec(model, data, 1, free_ports(1), R"("epochs":15,"batch":8,"threads":1)",
                                        "\"save\":\"" + saved + "\"")));
    MainWindow w(options(dir));
    w.show();
    QVERIFY(w.sample_text_action());
    QCOMPARE(w.sample_text_action()->text(), QString("Sample &text…"));
    QVERIFY(w.sample_text() == nullptr);  // nothing saved yet
    QVERIFY2(w.last_error().contains("no saved model"), qPrintable(w.last_error()));

    QVERIFY2(w.open_spec(spec), qPrintable(w.last_error()));
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY2(w.launch(), qPrintable(w.last_error()));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QCOMPARE(finished[0][0].toInt(), 0);
    auto* dialog = w.sample_text();
    QVERIFY(dialog);
    dialog->findChild<QLineEdit*>("prime")->setText("abcd");
    dialog->findChild<QDoubleSpinBox*>("temperature")->setValue(0);
    // 6 characters: the window (10 steps) never slides, so every context starts as the training
    // windows did (at a multiple of 10 characters, "abcd\n"), which the model knows.
    dialog->findChild<QSpinBox*>("length")->setValue(6);
    QCOMPARE(dialog->request().model, saved);
    QTest::mouseClick(dialog->findChild<QPushButton*>("sample"), Qt::LeftButton);
    QCOMPARE(dialog->status(), QString("Sampling…"));
    QTRY_VERIFY_WITH_TIMEOUT(!dialog->job().busy(), 60000);
    QVERIFY2(dialog->status().isEmpty(), qPrintable(dialog->status()));
    QCOMPARE(dialog->text(), QString("abcd\nabcd\n"));
    // Temperature 1 with a seed: text of the asked length, the same again for the same seed.
    dialog->findChild<QDoubleSpinBox*>("temperature")->setValue(1);
    dialog->findChild<QSpinBox*>("length")->setValue(40);
    dialog->sample();
    QTRY_VERIFY_WITH_TIMEOUT(!dialog->job().busy(), 60000);
    const QString once = dialog->text();
    QCOMPARE(once.size(), 44);
    dialog->sample();
    QTRY_VERIFY_WITH_TIMEOUT(!dialog->job().busy(), 60000);
    QCOMPARE(dialog->text(), once);
    const QString shots = qEnvironmentVariable("THRESHER_SCREENSHOTS");
    if (!shots.isEmpty()) dialog->grab().save(shots + "/sample-text.png", "PNG");

    thresher::ui::SampleTextDialog missing(bin("thresher-engine"), dir.filePath("gone.thr"));
    missing.sample();
    QTRY_VERIFY_WITH_TIMEOUT(!missing.job().busy(), 60000);
    QVERIFY2(missing.status().contains("gone.thr"), qPrintable(missing.status()));
}

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
