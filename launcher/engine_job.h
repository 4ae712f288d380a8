// EngineJob: one thresher-engine subcommand that answers with one JSON record on stdout
// (export-model, predict --sample), run as a process of its own with a deadline so the caller's
// thread never waits on it. Every outcome — started or not, refused, killed, crashed — arrives
// as one finished(), as an EngineJobResult: the record, or the error in the engine's own words.
//
//   the engine, on success: exit 0, its record as the last non-empty stdout line
//   on refusal: exit 1, stderr "thresher-engine: error: <what>" (the prefix is dropped)
#pragma once

#include <QJsonObject>
#include <QObject>
#include <QString>
#include <QStringList>
#include <chrono>
#include <memory>

#include "command.h"

namespace thresher::launcher {

struct EngineJobResult {
    bool ok = false;
    QJsonObject record;  // ok only
    QString error;       // not ok: the engine's error text, or why it could not run or finish
};

// What the engine printed and how it exited. `subcommand` names it in messages
// ("export-model"); `record_key` is a field the record must have ("exported"), `record_name`
// what the record is called when it is missing ("export record"). A zero exit without a readable
// record is a failure naming what was printed.
EngineJobResult read_engine_record(int exit_code, const QByteArray& out, const QByteArray& err, const QString& subcommand,
                                   const QString& record_key, const QString& record_name);

class EngineJob : public QObject {
    Q_OBJECT
public:
    struct Kind {
        QString subcommand;   // "export-model"
        QString record_key;   // "exported"
        QString record_name;  // "export record"
        QString on_timeout;   // appended when the deadline stops it: "nothing was exported"
    };

    // `engine`: the thresher-engine program (LocalLauncher::find_engine's answer).
    EngineJob(QString engine, Kind kind, std::chrono::milliseconds deadline, QObject* parent = nullptr);
    // A process still going is killed (with its command); emits nothing.
    ~EngineJob() override = default;
    EngineJob(const EngineJob&) = delete;
    EngineJob& operator=(const EngineJob&) = delete;

    void set_deadline(std::chrono::milliseconds deadline) { deadline_ = deadline; }
    // Starts the engine with `args` (the subcommand first); false (nothing done) while one runs.
    // finished() follows from the event loop.
    bool start(const QStringList& args);
    bool busy() const { return command_ != nullptr; }
    // The deadline now (tests: a deadline on a clock the test controls); nothing when idle.
    void time_out() {
        if (command_) command_->time_out();
    }

Q_SIGNALS:
    void finished(const thresher::launcher::EngineJobResult& result);

private:
    EngineJobResult result_of(const CommandResult& r) const;

    QString engine_;
    Kind kind_;
    std::chrono::milliseconds deadline_;
    std::unique_ptr<AsyncCommand> command_;  // the job in flight
};

}  // namespace thresher::launcher
