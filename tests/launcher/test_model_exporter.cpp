// ModelExporter (launcher/model_exporter.h), the app's File ▸ Export model… without the window:
// the argument list it gives thresher-engine, how it reads the engine's record and errors, and
// the real engine (THRESHER_BIN_DIR) exporting a model it trained to ONNX — the record read back
// matches the file written; a model ONNX cannot express (a pooling pad as large as its window)
// comes back as the engine's error naming the layer, and no file; an engine that hangs is killed
// at the deadline; an engine that is not there is reported, not thrown.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "launch_fixture.h"
#include "model_exporter.h"

using namespace launch_fixture;
using thresher::launcher::ExportRequest;
using thresher::launcher::ExportResult;
using thresher::launcher::ModelExporter;

Q_DECLARE_METATYPE(thresher::launcher::ExportResult)

namespace {

// 1×8×8 images as 64 CSV features and 2 classes, for the convolutional model below.
QByteArray image_csv(int rows) {
    QByteArray text;
    for (int r = 0; r < rows; ++r) {
        for (int f = 0; f < 64; ++f) text += QByteArray::number(((r * 7 + f * 13) % 17) / 17.0, 'g', 4) + ',';
        text += QByteArray::number(r % 2) + '\n';
    }
    return text;
}

// Thresher pools over windows wholly in the padding (-inf, which the relu turns into 0, so it
// trains); ONNX refuses a pad as large as the window.
const char* const kPaddedPoolModel = R"({"name":"padded","input":{"channels":1,"height":8,"width":8},
  "layers":[{"type":"convolution","name":"conv","filters":2,"kernel":[3,3]},
            {"type":"subsampling","name":"pool1","pooling":"max","kernel":[2,2],"stride":[2,2],"padding":[2,2]},
            {"type":"activation","activation":"relu"},
            {"type":"output","units":2,"loss":"mcxent"}]})";

}  // namespace

class TestModelExporter : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void arguments_data();
    void arguments();
    void reads_engine_output_data();
    void reads_engine_output();
    void class_names_of_known_data();
    void format_of_a_file_name();
    void saved_model_of_a_history_spec();
    void exports_a_trained_model();
    void refusal_names_the_layer_and_writes_nothing();
    void deadline_kills_a_hung_engine();
    void missing_engine_is_reported();

private:
    // Trains `model` (JSON text) on `csv` and saves it as DIR/NAME.thr; the saved path.
    QString train(const QByteArray& model, const QByteArray& csv, const QString& name);
    ExportResult run_export(ModelExporter& exporter, const ExportRequest& request);
    QTemporaryDir dir_;
};

void TestModelExporter::initTestCase() {
    qRegisterMetaType<ExportResult>();
    QVERIFY(dir_.isValid());
}

void TestModelExporter::arguments_data() {
    QTest::addColumn<QStringList>("names");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("no class names") << QStringList{}
                                    << QStringList{"export-model", "/r/m.thr", "--format", "onnx", "--out", "/r/m.onnx"};
    QTest::newRow("class names") << QStringList{"T-shirt/top", "Trouser", "Ankle boot"}
                                 << QStringList{"export-model", "/r/m.thr", "--format", "onnx", "--out", "/r/m.onnx",
                                                "--class-names", "T-shirt/top,Trouser,Ankle boot"};
}

void TestModelExporter::arguments() {
    QFETCH(QStringList, names);
    QFETCH(QStringList, expected);
    ExportRequest r;
    r.model = "/r/m.thr";
    r.out = "/r/m.onnx";
    r.class_names = names;
    QCOMPARE(thresher::launcher::export_arguments(r), expected);
}

void TestModelExporter::reads_engine_output_data() {
    QTest::addColumn<int>("code");
    QTest::addColumn<QByteArray>("out");
    QTest::addColumn<QByteArray>("err");
    QTest::addColumn<bool>("ok");
    QTest::addColumn<QString>("text");  // the file (ok) or the error
    QTest::newRow("record") << 0
                            << QByteArray(R"({"bytes":1234,"exported":"/r/m.onnx","format":"onnx","layers":6,"nodes":14,"params":44426})" "\n")
                            << QByteArray("export-model: wrote /r/m.onnx (onnx, 6 layers, 44426 parameters, 1234 bytes)\n") << true
                            << "/r/m.onnx";
    QTest::newRow("refusal") << 1 << QByteArray()
                             << QByteArray("thresher-engine: error: m.thr: layers[1] (subsampling \"pool1\"): ONNX cannot express "
                                           "this layer; nothing was written\n")
                             << false << "m.thr: layers[1] (subsampling \"pool1\"): ONNX cannot express this layer; nothing was written";
    QTest::newRow("exit 0, no record") << 0 << QByteArray("hello\n") << QByteArray() << false
                                       << "thresher-engine export-model exited 0 but printed no export record: \"hello\"";
    QTest::newRow("usage error") << 106 << QByteArray() << QByteArray("A subcommand is required\n") << false
                                 << "A subcommand is required (thresher-engine exit code 106)";
    QTest::newRow("silent failure") << 3 << QByteArray() << QByteArray() << false
                                    << "thresher-engine export-model failed with exit code 3 and printed nothing";
}

void TestModelExporter::reads_engine_output() {
    QFETCH(int, code);
    QFETCH(QByteArray, out);
    QFETCH(QByteArray, err);
    QFETCH(bool, ok);
    QFETCH(QString, text);
    const auto r = thresher::launcher::read_export_output(code, out, err);
    QCOMPARE(r.ok, ok);
    QCOMPARE(ok ? r.file : r.error, text);
    if (ok) {
        QCOMPARE(r.format, QString("onnx"));
        QCOMPARE(r.bytes, 1234);
        QCOMPARE(r.nodes, 14);
        QCOMPARE(r.layers, 6);
        QCOMPARE(r.params, 44426);
    }
}

void TestModelExporter::class_names_of_known_data() {
    const QStringList names = thresher::launcher::class_names_for_data("fashion-mnist");
    QCOMPARE(names.size(), 10);
    QCOMPARE(names.first(), QString("T-shirt/top"));
    QCOMPARE(names.last(), QString("Ankle boot"));
    QVERIFY(thresher::launcher::class_names_for_data("/data/rows.csv").isEmpty());
}

void TestModelExporter::format_of_a_file_name() {
    using thresher::launcher::export_format_for_file;
    QCOMPARE(export_format_for_file("/r/m.onnx"), QString("onnx"));
    QCOMPARE(export_format_for_file("/r/m.H5"), QString("keras-h5"));
    QCOMPARE(export_format_for_file("/r/m.keras"), QString("keras"));
    QCOMPARE(export_format_for_file("/r/m.zip"), QString("dl4j"));
    QCOMPARE(export_format_for_file("/r/model"), QString("onnx"));
    QStringList formats;
    for (const auto& c : thresher::launcher::export_format_choices()) formats << c.format;
    QCOMPARE(formats, (QStringList{"onnx", "keras-h5", "keras", "dl4j"}));
}

void TestModelExporter::saved_model_of_a_history_spec() {
    const QString file = dir_.filePath("saved.thr");
    QVERIFY(write_file(file, "x"));
    using thresher::launcher::saved_model_file;
    QCOMPARE(saved_model_file(QJsonObject{{"save", file}}), file);
    QCOMPARE(saved_model_file(QJsonObject{}), QString());                                      // did not save
    QCOMPARE(saved_model_file(QJsonObject{{"save", dir_.filePath("gone.thr")}}), QString());  // not (yet) there
}

QString TestModelExporter::train(const QByteArray& model, const QByteArray& csv, const QString& name) {
    const QString model_path = dir_.filePath(name + ".json"), csv_path = dir_.filePath(name + ".csv");
    const QString saved = dir_.filePath(name + ".thr");
    if (!write_file(model_path, model) || !write_file(csv_path, csv)) return {};
    const auto r = run_to_end(bin("thresher-engine"), {"train", "--model", model_path, "--data", csv_path, "--epochs", "1",
                                                        "--batch", "8", "--limit", "200", "--threads", "1", "--save", saved},
                              120000);
    if (r.code != 0 || !QFileInfo::exists(saved)) {
        qWarning("training %s failed: %s", qPrintable(name), qPrintable(r.text()));
        return {};
    }
    return saved;
}

ExportResult TestModelExporter::run_export(ModelExporter& exporter, const ExportRequest& request) {
    QSignalSpy finished(&exporter, &ModelExporter::finished);
    if (!exporter.start(request)) return {};
    [&] { QVERIFY(exporter.busy()); }();
    if (!finished.wait(130000) || finished.count() != 1) return {};
    return finished[0][0].value<ExportResult>();
}

void TestModelExporter::exports_a_trained_model() {
    const QString model = train(kTinyModel, three_class_csv(200), "tiny");
    QVERIFY(!model.isEmpty());
    ModelExporter exporter(bin("thresher-engine"));
    ExportRequest request;
    request.model = model;
    request.out = dir_.filePath("tiny.onnx");
    request.class_names = {"setosa", "versicolor", "virginica"};
    const ExportResult r = run_export(exporter, request);
    QVERIFY2(r.ok, qPrintable(r.error));
    QVERIFY(!exporter.busy());
    QCOMPARE(r.file, request.out);
    QCOMPARE(r.format, QString("onnx"));
    QCOMPARE(r.layers, 2);
    QCOMPARE(r.params, 16 * 12 + 12 + 12 * 3 + 3);
    QVERIFY(r.nodes > 0);
    QVERIFY(QFileInfo::exists(request.out));
    QCOMPARE(r.bytes, QFileInfo(request.out).size());
    QFile onnx(request.out);
    QVERIFY(onnx.open(QIODevice::ReadOnly));
    QVERIFY(onnx.readAll().contains("versicolor"));  // the class names travel in the file

    // The same model as Keras files: the format by the file's name, as the app picks it.
    for (const QString name : {"tiny.h5", "tiny.keras"}) {
        request.out = dir_.filePath(name);
        request.format = thresher::launcher::export_format_for_file(request.out);
        const ExportResult k = run_export(exporter, request);
        QVERIFY2(k.ok, qPrintable(k.error));
        QCOMPARE(k.format, request.format);
        QCOMPARE(k.params, r.params);
        QCOMPARE(k.bytes, QFileInfo(request.out).size());
    }
}

void TestModelExporter::refusal_names_the_layer_and_writes_nothing() {
    const QString model = train(kPaddedPoolModel, image_csv(40), "padded");
    QVERIFY(!model.isEmpty());
    QTemporaryDir out;
    ModelExporter exporter(bin("thresher-engine"));
    ExportRequest request;
    request.model = model;
    request.out = out.filePath("padded.onnx");
    const ExportResult r = run_export(exporter, request);
    QVERIFY(!r.ok);
    QVERIFY2(r.error.startsWith("padded.thr: layers[1] (subsampling \"pool1\"): ONNX cannot express this layer: padding 2x2 "
                                "is not smaller than its 2x2 window"),
             qPrintable(r.error));
    QVERIFY2(r.error.contains("nothing was written"), qPrintable(r.error));
    QCOMPARE(QDir(out.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{});
}

void TestModelExporter::deadline_kills_a_hung_engine() {
    // An "engine" that never answers: exec keeps the shell's pid, so the kill reaches the sleep.
    const QString fake = dir_.filePath("hung-engine");
    QVERIFY(write_file(fake, "#!/bin/sh\nexec sleep 60.125\n"));
    QVERIFY(QFile::setPermissions(fake, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    // The deadline comes when the test says (time_out(), what the deadline's timer calls), not
    // after a real wait: an hour on the exporter's own timer, which never fires here.
    ModelExporter exporter(fake);
    exporter.set_deadline(std::chrono::hours(1));
    ExportRequest request;
    request.model = dir_.filePath("any.thr");
    request.out = dir_.filePath("never.onnx");
    QElapsedTimer clock;
    clock.start();
    QSignalSpy finished(&exporter, &ModelExporter::finished);
    QVERIFY(exporter.start(request));
    exporter.time_out();
    QVERIFY(finished.wait(10000));
    QCOMPARE(finished.count(), 1);
    const ExportResult r = finished[0][0].value<ExportResult>();
    QVERIFY(!r.ok);
    QVERIFY2(r.error.contains("did not finish within 3600 s and was stopped"), qPrintable(r.error));
    QVERIFY(clock.elapsed() < 10000);
    QVERIFY(!exporter.busy());
    QVERIFY(pids_with_cmdline("60.125").isEmpty());  // killed and reaped, not left sleeping
    QVERIFY(!QFileInfo::exists(request.out));
}

void TestModelExporter::missing_engine_is_reported() {
    ModelExporter exporter(dir_.filePath("no-such-engine"));
    ExportRequest request;
    request.model = dir_.filePath("any.thr");
    request.out = dir_.filePath("never.onnx");
    const ExportResult r = run_export(exporter, request);
    QVERIFY(!r.ok);
    QVERIFY2(r.error.startsWith("cannot start " + dir_.filePath("no-such-engine")), qPrintable(r.error));
    QVERIFY(!exporter.busy());
}

QTEST_GUILESS_MAIN(TestModelExporter)
#include "test_model_exporter.moc"
