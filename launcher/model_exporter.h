// ModelExporter: a run's saved model written out for other tools (ONNX, Keras) by
// `thresher-engine export-model MODEL --format onnx|keras-h5|keras|dl4j --out FILE [--class-names A,B,...]`, run as a
// process of its own so the caller's thread never waits on it (the app's File ▸ Export model…).
//
//   export_arguments({model "/r/lenet.thr", out "/r/lenet.onnx", class names of fashion-mnist})
//     → export-model /r/lenet.thr --format onnx --out /r/lenet.onnx --class-names T-shirt/top,…
//   the engine, on success: exit 0, one JSON record on stdout
//     {"exported":"/r/lenet.onnx","format":"onnx","bytes":…,"nodes":…,"layers":6,"params":…}
//   on refusal: exit 1, stdout empty, stderr "thresher-engine: error: lenet.thr: layers[1]
//     (subsampling "pool1"): ONNX cannot express this layer: …; nothing was written"
//
// read_export_output() turns what the engine printed into an ExportResult: the record's fields,
// or the engine's error text without its "thresher-engine: error: " prefix. ModelExporter runs
// the process as an EngineJob (engine_job.h) with a deadline (120 s unless set): past it the
// process is killed and finished() says so. Every outcome — started or not, refused, killed —
// arrives as one finished().
#pragma once

#include <QJsonObject>
#include <QObject>
#include <QString>
#include <QStringList>
#include <chrono>
#include <memory>

#include "engine_job.h"

namespace thresher::launcher {

struct ExportRequest {
    QString model;  // the model file with weights (Thresher .thr, DL4J zip, Keras .h5)
    QString out;    // the file to write
    QString format = "onnx";  // onnx, keras-h5, keras or dl4j (export_format_for_file)
    QStringList class_names;  // empty: none passed (the exported model then has no label list)
};

struct ExportResult {
    bool ok = false;
    // The engine's record (ok only).
    QString file, format;
    qint64 bytes = 0, nodes = 0, layers = 0, params = 0;
    // Why not (not ok): the engine's error text, or why the engine could not run or finish.
    QString error;
};

// The engine's argument list (without the program).
QStringList export_arguments(const ExportRequest& request);
// What the engine printed and how it exited, read as above. A zero exit without a readable
// record is a failure naming what was printed.
ExportResult read_export_output(int exit_code, const QByteArray& out, const QByteArray& err);

// The formats File ▸ Export model… offers: the engine's name, the save dialog's filter, the suffix.
struct ExportFormatChoice {
    QString format, filter, suffix;
};
const QList<ExportFormatChoice>& export_format_choices();
// The format of a file the user named, by its suffix: .h5 → keras-h5, .keras → keras, .zip → dl4j,
// else onnx.
QString export_format_for_file(const QString& path);

// The class names a built-in data set is known by (Fashion-MNIST's ten, in label order); empty
// for a CSV or anything else (its labels are numbers only).
QStringList class_names_for_data(const QString& data);
// The model file a run saved (a spec as the run history keeps it: `save` absolute), when the
// spec asked for one and the file exists; empty otherwise.
QString saved_model_file(const QJsonObject& history_spec);

class ModelExporter : public QObject {
    Q_OBJECT
public:
    static constexpr std::chrono::milliseconds kDefaultDeadline{120000};

    // `engine`: the thresher-engine program (LocalLauncher::find_engine's answer).
    explicit ModelExporter(QString engine, QObject* parent = nullptr);
    // A process still going is killed (with its command); emits nothing.
    ~ModelExporter() override = default;
    ModelExporter(const ModelExporter&) = delete;
    ModelExporter& operator=(const ModelExporter&) = delete;

    void set_deadline(std::chrono::milliseconds deadline) { job_.set_deadline(deadline); }
    // Starts the export; false (nothing done) while one runs. finished() follows from the event loop.
    bool start(const ExportRequest& request);
    bool busy() const { return job_.busy(); }
    // The deadline now (tests: a deadline on a clock the test controls); nothing when idle.
    void time_out() { job_.time_out(); }

Q_SIGNALS:
    void finished(const thresher::launcher::ExportResult& result);

private:
    EngineJob job_;  // the engine process, its deadline and how its answer is read
};

}  // namespace thresher::launcher
