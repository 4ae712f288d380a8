// RunDocument without a window, on real files: the default run; a spec opened, edited through a
// form hook and saved elsewhere keeps naming its model and data files (paths re-expressed from
// the new folder) and reads back as `thresher-launch` reads it; a form the spec refuses is not
// saved and the error names the file and field; open errors name the file and change nothing; an
// imported file with weights stays the spec's model until the model is edited; a run refuses an
// invalid model; history's JSON opens as a new run; sweep files over worker counts; the built-in
// templates (ResNet a graph) and an unknown one refused.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "file_test_support.h"
#include "model_document.h"
#include "run_document.h"
#include "sweep_spec.h"
#include "weight_files.h"

using thresher::launcher::RunSpec;
using thresher::ui::RunDocument;

using file_test_support::error_of;
using file_test_support::write;

namespace {

QString source(const QString& rel) { return qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/" + rel; }

// DIR/runs/run.json naming ../models/mlp.json (a copy of the reference MLP) and ../data/train.csv.
QString spec_with_files(const QTemporaryDir& dir) {
    QDir().mkpath(dir.filePath("models"));
    QFile::copy(source("resources/models/mlp.json"), dir.filePath("models/mlp.json"));
    write(dir.filePath("data/train.csv"), "0,1\n");
    const QString path = dir.filePath("runs/run.json");
    write(path, R"({"format":"thresher-run","version":1,"name":"files","model":"../models/mlp.json",
                   "data":"../data/train.csv","training":{"epochs":2,"batch":16},
                   "cluster":{"kind":"local","nodes":2}})");
    return path;
}

}  // namespace

class TestRunDocument : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void default_run_is_lenet_on_two_nodes();
    void open_edit_save_elsewhere();
    void form_the_spec_refuses_is_not_saved();
    void open_errors_name_the_file_and_change_nothing();
    void imported_weights_stay_the_specs_model();
    void invalid_model_cannot_run();
    void history_json_opens_as_a_new_run();
    void sweep_file_over_counts();
    void built_in_templates();
};

void TestRunDocument::default_run_is_lenet_on_two_nodes() {
    RunDocument doc;
    const RunSpec s = doc.current_spec();
    QCOMPARE(s.name, QString("lenet-local"));
    QCOMPARE(s.cluster.nodes, 2);
    QCOMPARE(s.data, QString("fashion-mnist"));
    QVERIFY(s.model_is_inline());
    QCOMPARE(s.model_inline.value("name").toString(), QString("lenet"));
    QVERIFY(doc.model()->valid());
    QVERIFY(doc.path().isEmpty());
    QVERIFY(!doc.modified());
    QCOMPARE(doc.title(), QString("Thresher — lenet-local (unsaved run) — %1 parameters")
                              .arg(QLocale().toString(doc.model()->param_count())));
    QVERIFY(doc.model()->param_count() > 0);
    doc.runnable_spec();  // valid as it stands
}

void TestRunDocument::open_edit_save_elsewhere() {
    QTemporaryDir dir;
    const QString in = spec_with_files(dir);
    RunDocument doc;
    QSignalSpy changed(&doc, &RunDocument::changed);
    doc.open(in);
    QVERIFY(changed.count() >= 1);
    QCOMPARE(doc.path(), QFileInfo(in).absoluteFilePath());
    QVERIFY(!doc.modified());
    QVERIFY(doc.title().startsWith("Thresher — files (run.json) — "));
    // The model still equals its file: the spec names the file, as written.
    RunSpec s = doc.current_spec();
    QCOMPARE(s.model_path, QString("../models/mlp.json"));
    QCOMPARE(s.training.epochs, 2);

    // The form's edits come in through its hook.
    doc.set_form([](RunSpec& spec) { spec.training.epochs = 3; });
    QCOMPARE(doc.current_spec().training.epochs, 3);
    QVERIFY(doc.modified());

    // Saved one folder deeper elsewhere: relative paths still reach the same files.
    const QString out = dir.filePath("elsewhere/deeper/saved.json");
    QVERIFY(QDir().mkpath(QFileInfo(out).absolutePath()));
    doc.save(out);
    QCOMPARE(doc.path(), QFileInfo(out).absoluteFilePath());
    QVERIFY(!doc.modified());
    QCOMPARE(doc.title().section(" — ", 1, 1), QString("files (saved.json)"));
    const RunSpec read = RunSpec::load(out);
    QCOMPARE(read.model_path, QString("../../models/mlp.json"));
    QCOMPARE(QFileInfo(read.model_file()).canonicalFilePath(), QFileInfo(dir.filePath("models/mlp.json")).canonicalFilePath());
    QCOMPARE(QFileInfo(read.data_argument()).canonicalFilePath(), QFileInfo(dir.filePath("data/train.csv")).canonicalFilePath());
    QCOMPARE(read.training.epochs, 3);

    // An edited model no longer is its file: it travels inline, and the document is modified.
    doc.model()->set_field("name", "edited");
    QVERIFY(doc.modified());
    s = doc.current_spec();
    QVERIFY(s.model_is_inline());
    QCOMPARE(s.model_inline.value("name").toString(), QString("edited"));
    doc.save(out);
    QCOMPARE(RunSpec::load(out).model_inline.value("name").toString(), QString("edited"));
}

void TestRunDocument::form_the_spec_refuses_is_not_saved() {
    QTemporaryDir dir;
    const QString in = spec_with_files(dir);
    RunDocument doc;
    doc.open(in);
    doc.set_form([](RunSpec& spec) { spec.training.epochs = 0; });
    const QString out = dir.filePath("out.json");
    const QString error = error_of([&] { doc.save(out); });
    // The words `thresher-launch` would use reading the file it was about to write.
    QVERIFY2(error.startsWith(out + ": training.epochs"), qPrintable(error));
    QVERIFY(!QFile::exists(out));
    QCOMPARE(doc.path(), QFileInfo(in).absoluteFilePath());
    QVERIFY(doc.modified());
    QVERIFY2(error_of([&] { doc.runnable_spec(); }).contains("training.epochs"), "a run refuses it too");
}

void TestRunDocument::open_errors_name_the_file_and_change_nothing() {
    QTemporaryDir dir;
    RunDocument doc;
    const QJsonObject before = doc.model()->model();
    QString error = error_of([&] { doc.open(dir.filePath("missing.json")); });
    QVERIFY2(error.contains(dir.filePath("missing.json")), qPrintable(error));

    const QString no_model = dir.filePath("no_model.json");
    write(no_model, R"({"format":"thresher-run","version":1,"name":"x","model":"nowhere.json","data":"fashion-mnist"})");
    error = error_of([&] { doc.open(no_model); });
    QVERIFY2(error.contains("nowhere.json"), qPrintable(error));

    const QString broken = dir.filePath("broken.json");
    write(broken, R"({"format":"thresher-run","version":1,"name":"x","model":)");
    error = error_of([&] { doc.open(broken); });
    QVERIFY2(error.contains(broken), qPrintable(error));

    QCOMPARE(doc.spec().name, QString("lenet-local"));
    QVERIFY(doc.path().isEmpty());
    QCOMPARE(doc.model()->model(), before);
}

// A DL4J zip carries weights: the spec names the zip (the engine fine-tunes from it); a JSON
// architecture travels inline; an edit to the zip's model makes it inline too.
void TestRunDocument::imported_weights_stay_the_specs_model() {
    QTemporaryDir dir;
    const QString zip = dir.filePath("tuned.zip");
    QFile config(source("tests/engine/config/data/dl4j_1.0.0_swish_gelu_prelu.json"));
    QVERIFY(config.open(QIODevice::ReadOnly));
    std::vector<float> params(106);  // the fixture's parameter count
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = 0.01f * static_cast<float>(i % 13) - 0.05f;
    test_support::write_zip(zip.toStdString(), {{"configuration.json", test_support::text_bytes(config.readAll().toStdString())},
                                                {"coefficients.bin", test_support::nd4j_row(params, false, false)}});
    RunDocument doc;
    QStringList notes;
    QCOMPARE(doc.import_model(zip, &notes), QString("dl4j"));
    QVERIFY(doc.model()->loaded_weights());
    QCOMPARE(doc.current_spec().model_file(), QFileInfo(zip).absoluteFilePath());
    const QString saved = dir.filePath("sub/run.json");
    QVERIFY(QDir().mkpath(dir.filePath("sub")));
    doc.save(saved);
    QCOMPARE(QFileInfo(RunSpec::load(saved).model_file()).canonicalFilePath(), QFileInfo(zip).canonicalFilePath());

    QCOMPARE(doc.import_model(source("tests/engine/config/data/keras3_mlp.json")), QString("keras"));
    QVERIFY(doc.current_spec().model_is_inline());

    doc.import_model(zip);
    QVERIFY(!doc.current_spec().model_is_inline());
    doc.model()->remove_layer(1);
    QVERIFY(doc.current_spec().model_is_inline());

    const QString error = error_of([&] { doc.import_model(dir.filePath("none.h5")); });
    QVERIFY2(error.contains("none.h5"), qPrintable(error));
}

void TestRunDocument::invalid_model_cannot_run() {
    RunDocument doc;
    auto layer = doc.model()->layer(0);
    layer["kernel"] = QJsonArray{5, 0};
    doc.model()->set_layer(0, layer);
    QVERIFY(doc.title().endsWith("model has an error"));
    const QString error = error_of([&] { doc.runnable_spec(); });
    QVERIFY2(error.startsWith("The model is not valid, so the run cannot start: "), qPrintable(error));
    QVERIFY2(error.contains("kernel"), qPrintable(error));
}

void TestRunDocument::history_json_opens_as_a_new_run() {
    QTemporaryDir dir;
    RunDocument saved;
    saved.open(spec_with_files(dir));
    // As RunSession keeps it: every path absolute.
    RunSpec s = saved.current_spec();
    s.model_path = s.model_file();
    s.data = s.data_argument();
    RunDocument doc;
    doc.open_json(s.to_json(), "history run #7");
    QVERIFY(doc.path().isEmpty());
    QCOMPARE(doc.spec().source, QString("history run #7"));
    QCOMPARE(doc.spec().name, QString("files"));
    QCOMPARE(doc.model()->model().value("name").toString(), QString("mlp"));
    QVERIFY(doc.title().contains("(unsaved run)"));
    QVERIFY(doc.modified());  // never saved
    const QString error = error_of([&] { doc.open_json(QJsonObject{{"format", "thresher-run"}}, "history run #8"); });
    QVERIFY2(error.contains("history run #8"), qPrintable(error));
    QCOMPARE(doc.spec().name, QString("files"));
}

void TestRunDocument::sweep_file_over_counts() {
    QTemporaryDir dir;
    RunDocument doc;
    doc.open(spec_with_files(dir));
    const QString out = dir.filePath("sweeps/my-sweep.json");
    QVERIFY(QDir().mkpath(dir.filePath("sweeps")));
    QString error = error_of([&] { doc.save_sweep(out, {}, true); });
    QVERIFY2(error.startsWith("Worker counts:"), qPrintable(error));
    QVERIFY(!QFile::exists(out));

    doc.save_sweep(out, {1, 2}, true);
    const auto sweep = thresher::launcher::sweep::SweepSpec::load(out);
    QCOMPARE(sweep.name, QString("my-sweep"));
    QCOMPARE(sweep.points.size(), 2);
    QCOMPARE(sweep.points[0].spec.cluster.nodes, 1);
    QCOMPARE(sweep.points[1].spec.cluster.nodes, 2);
    // Its files by absolute paths: the sweep file lives in another folder than the spec.
    QCOMPARE(QFileInfo(sweep.points[0].spec.model_file()).canonicalFilePath(),
             QFileInfo(dir.filePath("models/mlp.json")).canonicalFilePath());

    const auto workers = doc.counts_sweep({1, 3}, false);
    QCOMPARE(workers.points.size(), 2);
    QCOMPARE(workers.points[1].spec.cluster.nodes, 1);
    QCOMPARE(workers.points[1].spec.cluster.workers_per_node, 3);

    error = error_of([&] { doc.save_sweep(dir.filePath("no/such/folder/s.json"), {1}, true); });
    QVERIFY2(error.contains("no/such/folder/s.json"), qPrintable(error));
}

void TestRunDocument::built_in_templates() {
    RunDocument doc;
    doc.load_template("mlp");
    QCOMPARE(doc.model()->model().value("name").toString(), QString("mlp"));
    // The ResNet template is a graph: its adds read two layers each.
    doc.load_template("resnet");
    QVERIFY2(doc.model()->valid(), qPrintable(doc.model()->error()));
    QCOMPARE(doc.model()->layer_count(), 28);
    QCOMPARE(doc.model()->graph().edges.size(), 31);
    doc.load_template("mlp");
    const QString error = error_of([&] { doc.load_template("nope"); });
    QCOMPARE(error, QString("no built-in template nope"));
    QCOMPARE(doc.model()->model().value("name").toString(), QString("mlp"));
}

QTEST_GUILESS_MAIN(TestRunDocument)
#include "test_run_document.moc"
