// Runs thresher-engine as a child process and splits what it printed: the JSON-lines events of
// stdout (checked against the event contract as they are parsed) and the log on stderr.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

struct EngineRun {
    int exit_code = -1;
    bool finished = false;
    QString stdout_text, stderr_text;
    QList<QJsonObject> events;   // every stdout line, parsed
    QStringList contract_errors;  // stdout lines that are not contract events

    QList<QJsonObject> of(const QString& event) const;
    QString summary() const;  // for failure messages
};

QString engine_binary();
QString source_dir();
EngineRun run_engine(const QStringList& args, int timeout_ms = 120000);
// Fills events/contract_errors from stdout_text (run_engine does this itself).
void parse_events(EngineRun& r);
