#include "engine_job.h"

#include <QJsonDocument>

namespace thresher::launcher {

namespace {

constexpr char kErrorPrefix[] = "thresher-engine: error: ";

// The engine's own words: its "error:" lines, prefix removed; else what it printed (a usage
// error: "--model-file: File does not exist: …"), without CLI11's "Run with --help" hint.
QString engine_error(const QByteArray& err, int exit_code, const QString& subcommand) {
    QStringList errors, said;
    for (const QString& raw : QString::fromUtf8(err).split('\n')) {
        const QString line = raw.trimmed();
        if (line.isEmpty() || line == "Run with --help for more information.") continue;
        said << line;
        if (line.startsWith(kErrorPrefix)) errors << line.mid(int(sizeof kErrorPrefix) - 1);
    }
    if (!errors.isEmpty()) return errors.join('\n');
    if (!said.isEmpty()) return said.join('\n') + QString(" (thresher-engine exit code %1)").arg(exit_code);
    return QString("thresher-engine %1 failed with exit code %2 and printed nothing").arg(subcommand).arg(exit_code);
}

}  // namespace

EngineJobResult read_engine_record(int exit_code, const QByteArray& out, const QByteArray& err, const QString& subcommand,
                                   const QString& record_key, const QString& record_name) {
    EngineJobResult r;
    if (exit_code != 0) {
        r.error = engine_error(err, exit_code, subcommand);
        return r;
    }
    // The record is the last non-empty line of stdout.
    QByteArray line;
    for (const QByteArray& l : out.split('\n'))
        if (!l.trimmed().isEmpty()) line = l.trimmed();
    QJsonParseError parse{};
    const QJsonDocument doc = QJsonDocument::fromJson(line, &parse);
    if (parse.error != QJsonParseError::NoError || !doc.isObject() || !doc.object().contains(record_key)) {
        r.error = QString("thresher-engine %1 exited 0 but printed no %2: \"%3\"")
                      .arg(subcommand, record_name, QString::fromUtf8(line.left(200)));
        return r;
    }
    r.ok = true;
    r.record = doc.object();
    return r;
}

EngineJob::EngineJob(QString engine, Kind kind, std::chrono::milliseconds deadline, QObject* parent)
    : QObject(parent), engine_(std::move(engine)), kind_(std::move(kind)), deadline_(deadline) {}

bool EngineJob::start(const QStringList& args) {
    if (command_) return false;
    // An empty program fails to start, which reports it like any other failure. `done` comes
    // from the event loop, so releasing the command there is safe.
    command_ = std::make_unique<AsyncCommand>(engine_, args, static_cast<int>(deadline_.count()), [this](const CommandResult& r) {
        const EngineJobResult result = result_of(r);
        command_.reset();
        Q_EMIT finished(result);
    });
    return true;
}

EngineJobResult EngineJob::result_of(const CommandResult& r) const {
    EngineJobResult result;
    if (!r.started) {
        result.error = "cannot start " +
                       (engine_.isEmpty() ? QString("thresher-engine (not found next to this program or on $PATH)") : engine_);
    } else if (r.timed_out) {
        result.error = QString("thresher-engine %1 did not finish within %2 s and was stopped; %3")
                           .arg(kind_.subcommand)
                           .arg(double(deadline_.count()) / 1000.0)
                           .arg(kind_.on_timeout);
    } else if (r.crashed()) {
        result.error = QString("thresher-engine %1 crashed: ").arg(kind_.subcommand) + engine_error(r.err.toUtf8(), -1, kind_.subcommand);
    } else {
        result = read_engine_record(r.exit_code, r.out.toUtf8(), r.err.toUtf8(), kind_.subcommand, kind_.record_key,
                                    kind_.record_name);
    }
    return result;
}

}  // namespace thresher::launcher
