#include "model_exporter.h"

#include <QFileInfo>

namespace thresher::launcher {

QStringList export_arguments(const ExportRequest& request) {
    QStringList args{"export-model", request.model, "--format", request.format, "--out", request.out};
    if (!request.class_names.isEmpty()) args << "--class-names" << request.class_names.join(',');
    return args;
}

namespace {

const EngineJob::Kind kExport{"export-model", "exported", "export record", "nothing was exported"};

ExportResult from_job(const EngineJobResult& job) {
    ExportResult r;
    r.ok = job.ok;
    r.error = job.error;
    if (!job.ok) return r;
    const QJsonObject& o = job.record;
    r.file = o.value("exported").toString();
    r.format = o.value("format").toString();
    r.bytes = o.value("bytes").toInteger();
    r.nodes = o.value("nodes").toInteger();
    r.layers = o.value("layers").toInteger();
    r.params = o.value("params").toInteger();
    return r;
}

}  // namespace

ExportResult read_export_output(int exit_code, const QByteArray& out, const QByteArray& err) {
    return from_job(read_engine_record(exit_code, out, err, kExport.subcommand, kExport.record_key, kExport.record_name));
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

ModelExporter::ModelExporter(QString engine, QObject* parent)
    : QObject(parent), job_(std::move(engine), kExport, kDefaultDeadline) {
    connect(&job_, &EngineJob::finished, this, [this](const EngineJobResult& r) { Q_EMIT finished(from_job(r)); });
}

bool ModelExporter::start(const ExportRequest& request) { return job_.start(export_arguments(request)); }

}  // namespace thresher::launcher
