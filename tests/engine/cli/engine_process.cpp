#include "engine_process.h"

#include <QJsonDocument>
#include <QProcess>

QString engine_binary() { return qEnvironmentVariable("THRESHER_BIN_DIR") + "/thresher-engine"; }
QString source_dir() { return qEnvironmentVariable("THRESHER_SOURCE_DIR"); }

QList<QJsonObject> EngineRun::of(const QString& event) const {
    QList<QJsonObject> out;
    for (const auto& e : events)
        if (e.value("event").toString() == event) out.append(e);
    return out;
}

QString EngineRun::summary() const {
    return QString("exit %1; stderr: %2; stdout tail: %3")
        .arg(exit_code)
        .arg(stderr_text.right(1500))
        .arg(stdout_text.right(600));
}

EngineRun run_engine(const QStringList& args, int timeout_ms) {
    EngineRun r;
    QProcess p;
    p.start(engine_binary(), args);
    if (!p.waitForStarted(10000)) {
        r.stderr_text = "could not start " + engine_binary();
        return r;
    }
    r.finished = p.waitForFinished(timeout_ms);
    if (!r.finished) {
        p.kill();
        p.waitForFinished();
    }
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.stdout_text = QString::fromUtf8(p.readAllStandardOutput());
    r.stderr_text = QString::fromUtf8(p.readAllStandardError());
    parse_events(r);
    return r;
}

void parse_events(EngineRun& r) {
    for (const auto& line : r.stdout_text.split('\n', Qt::SkipEmptyParts)) {
        QJsonParseError err;
        const auto doc = QJsonDocument::fromJson(line.toUtf8(), &err);
        if (err.error != QJsonParseError::NoError || !doc.isObject()) {
            r.contract_errors << "not a JSON object: " + line.left(200);
            continue;
        }
        const auto o = doc.object();
        r.events.append(o);
        // Training events carry event/t/node (DESIGN.md); other subcommands print plain records.
        if (o.contains("event") && o.value("event").toString() != "evaluation" &&
            (!o.value("t").isDouble() || !o.value("node").isDouble()))
            r.contract_errors << "event without t/node: " + line.left(200);
    }
}
