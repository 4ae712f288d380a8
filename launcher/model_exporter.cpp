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

ModelExporter::ModelExporter(QString engine, QObject* parent) : QObject(parent), engine_(std::move(engine)) {
    timer_.setSingleShot(true);
    process_.setStandardInputFile(QProcess::nullDevice());
    connect(&process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
        if (!busy_) return;
        if (status == QProcess::CrashExit) {
            ExportResult r;
            r.error = "thresher-engine export-model crashed: " + engine_error(process_.readAllStandardError(), -1);
            return complete(std::move(r));
        }
        complete(read_export_output(code, process_.readAllStandardOutput(), process_.readAllStandardError()));
    });
    connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (!busy_ || e != QProcess::FailedToStart) return;
        ExportResult r;
        r.error = "cannot start " + (engine_.isEmpty() ? QString("thresher-engine (not found next to this program or on $PATH)") : engine_) +
                  ": " + process_.errorString();
        // Qt may report this inside start(); the caller hears of it from the event loop, as promised.
        QMetaObject::invokeMethod(this, [this, r] { complete(r); }, Qt::QueuedConnection);
    });
    connect(&timer_, &QTimer::timeout, this, [this] {
        if (!busy_) return;
        busy_ = false;  // the finished() the kill causes (inside waitForFinished) is not the answer
        process_.kill();
        process_.waitForFinished(5000);
        ExportResult r;
        r.error = QString("thresher-engine export-model did not finish within %1 s and was stopped; nothing was exported")
                      .arg(double(deadline_.count()) / 1000.0);
        busy_ = true;
        complete(std::move(r));
    });
}

ModelExporter::~ModelExporter() {
    busy_ = false;
    QObject::disconnect(&process_, nullptr, this, nullptr);
    if (process_.state() != QProcess::NotRunning) {
        process_.kill();
        process_.waitForFinished(5000);
    }
}

bool ModelExporter::start(const ExportRequest& request) {
    if (busy_) return false;
    busy_ = true;
    timer_.start(deadline_);
    // An empty program fails to start (errorOccurred), which reports it like any other failure.
    process_.start(engine_, export_arguments(request));
    return true;
}

void ModelExporter::complete(ExportResult result) {
    if (!busy_) return;
    busy_ = false;
    timer_.stop();
    Q_EMIT finished(result);
}

}  // namespace thresher::launcher
