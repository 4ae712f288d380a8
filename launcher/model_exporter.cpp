#include "model_exporter.h"

#include <QFileInfo>
#include <QJsonDocument>

namespace thresher::launcher {

namespace {

constexpr char kErrorPrefix[] = "thresher-engine: error: ";

// The engine's own words: its "error:" lines, prefix removed; else the last line it printed.
QString engine_error(const QByteArray& err, int exit_code) {
    QStringList errors;
    QString last;
    for (const QString& raw : QString::fromUtf8(err).split('\n')) {
        const QString line = raw.trimmed();
        if (line.isEmpty()) continue;
        last = line;
        if (line.startsWith(kErrorPrefix)) errors << line.mid(int(sizeof kErrorPrefix) - 1);
    }
    if (!errors.isEmpty()) return errors.join('\n');
    if (!last.isEmpty()) return last + QString(" (thresher-engine exit code %1)").arg(exit_code);
    return QString("thresher-engine export-model failed with exit code %1 and printed nothing").arg(exit_code);
}

}  // namespace

QStringList export_arguments(const ExportRequest& request) {
    QStringList args{"export-model", request.model, "--format", request.format, "--out", request.out};
    if (!request.class_names.isEmpty()) args << "--class-names" << request.class_names.join(',');
    return args;
}

ExportResult read_export_output(int exit_code, const QByteArray& out, const QByteArray& err) {
    ExportResult r;
    if (exit_code != 0) {
        r.error = engine_error(err, exit_code);
        return r;
    }
    // The record is the last non-empty line of stdout.
    QByteArray line;
    for (const QByteArray& l : out.split('\n'))
        if (!l.trimmed().isEmpty()) line = l.trimmed();
    QJsonParseError parse{};
    const QJsonDocument doc = QJsonDocument::fromJson(line, &parse);
    const QJsonObject o = doc.object();
    if (parse.error != QJsonParseError::NoError || !doc.isObject() || !o.value("exported").isString()) {
        r.error = "thresher-engine export-model exited 0 but printed no export record: \"" + QString::fromUtf8(line.left(200)) + "\"";
        return r;
    }
    r.ok = true;
    r.file = o.value("exported").toString();
    r.format = o.value("format").toString();
    r.bytes = o.value("bytes").toInteger();
    r.nodes = o.value("nodes").toInteger();
    r.layers = o.value("layers").toInteger();
    r.params = o.value("params").toInteger();
    return r;
}

const QList<ExportFormatChoice>& export_format_choices() {
    static const QList<ExportFormatChoice> choices{{"onnx", "ONNX model (*.onnx)", "onnx"},
                                                   {"keras-h5", "Keras 2 HDF5 model (*.h5)", "h5"},
                                                   {"keras", "Keras 3 model (*.keras)", "keras"},
                                                   {"dl4j", "DL4J model zip (*.zip)", "zip"}};
    return choices;
}

QString export_format_for_file(const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    for (const auto& c : export_format_choices())
        if (c.suffix == suffix) return c.format;
    return "onnx";
}

QStringList class_names_for_data(const QString& data) {
    if (data == "fashion-mnist")
        return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
    return {};
}

QString saved_model_file(const QJsonObject& history_spec) {
    const QString save = history_spec.value("save").toString();
    if (save.isEmpty()) return {};
    const QFileInfo info(save);
    return info.isAbsolute() && info.isFile() ? save : QString();
}

ModelExporter::ModelExporter(QString engine, QObject* parent) : QObject(parent), engine_(std::move(engine)) {}

bool ModelExporter::start(const ExportRequest& request) {
    if (command_) return false;
    // An empty program fails to start, which reports it like any other failure. `done` comes
    // from the event loop, so releasing the command there is safe.
    command_ = std::make_unique<AsyncCommand>(engine_, export_arguments(request), static_cast<int>(deadline_.count()),
                                              [this](const CommandResult& r) {
                                                  const ExportResult result = result_of(r);
                                                  command_.reset();
                                                  Q_EMIT finished(result);
                                              });
    return true;
}

ExportResult ModelExporter::result_of(const CommandResult& r) const {
    ExportResult result;
    if (!r.started) {
        result.error = "cannot start " +
                       (engine_.isEmpty() ? QString("thresher-engine (not found next to this program or on $PATH)") : engine_);
    } else if (r.timed_out) {
        result.error = QString("thresher-engine export-model did not finish within %1 s and was stopped; nothing was exported")
                           .arg(double(deadline_.count()) / 1000.0);
    } else if (r.crashed()) {
        result.error = "thresher-engine export-model crashed: " + engine_error(r.err.toUtf8(), -1);
    } else {
        result = read_export_output(r.exit_code, r.out.toUtf8(), r.err.toUtf8());
    }
    return result;
}

}  // namespace thresher::launcher
