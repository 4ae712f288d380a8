// RunSession: the app's runs and their record. It owns the run history (RunHistory, one SQLite
// file) and starts runs through the launcher (create_launcher: local, SSH or Slurm, as the spec
// says), one at a time: a single run from start(), or a sweep's runs one after another from
// start_sweep() (launcher/sweep/sweep_runner.h). Every run is recorded as it goes: begun in
// history with its spec (every path absolute, so "Open its spec" works from anywhere), each event
// buffered into it (RunHistory writes them in batches, a timer flushing every second), and
// finished with its status, exit code, summary and the figures of its RunSummary.
//
//   single run:  runStarted(title), event()/logLine() …, finished(exitCode, summary)
//                status "ok" (exit code 0), "stopped" (stop(): kExitStopped) or "failed"
//   sweep:       runStarted(title) and event()/logLine() for each run; the SweepRunner that
//                start_sweep() returns says the rest (rowReady, finished) after the session has
//                recorded the run ("ok"/"failed" per row; a run cut by stop() "stopped")
//   ended with the session (the app quits mid-run): the engines are killed at once and the run
//                recorded "interrupted"; a run of an app that crashed is marked so by the next
//                instance that opens the file (RunHistory).
//
// The history never throws out of a signal: what it cannot write (a locked or read-only file, a
// full disk) arrives as error(), events stay buffered and the next flush retries; a run goes on
// without its record rather than not at all. A history file that cannot be opened at all leaves
// the session recording in memory, and open_error() says why.
//
// Runs start from the thread that owns the session (the GUI thread): the local launcher's
// engines ask for SIGKILL when that thread ends.
#pragma once

#include <QJsonObject>
#include <QObject>
#include <QString>
#include <memory>

#include "launcher.h"
#include "run_spec.h"
#include "run_summary.h"
#include "sweep_spec.h"

namespace thresher::launcher::sweep {
class SweepRunner;
}

namespace thresher::ui {

class RunHistory;

class RunSession : public QObject {
    Q_OBJECT
public:
    // `history_path` empty: RunHistory::default_path().
    explicit RunSession(const QString& history_path, launcher::LaunchOptions options, QObject* parent = nullptr);
    // A run still going is killed at once and recorded "interrupted"; emits nothing.
    ~RunSession() override;
    RunSession(const RunSession&) = delete;
    RunSession& operator=(const RunSession&) = delete;

    RunHistory* history() const { return history_.get(); }
    // Why the history file could not be used (runs are then kept in memory); empty when it could.
    const QString& open_error() const { return open_error_; }

    // Starts a run of `spec` (the caller validated it: RunDocument::runnable_spec()). Throws
    // launcher::LaunchError when no launcher can run its cluster; every other outcome, a failure
    // to start included, arrives through finished(). False (nothing done) while a run goes.
    bool start(const launcher::RunSpec& spec);
    // Starts a sweep's runs into `out_dir` (resuming what it holds) and returns its runner, whose
    // signals say how it goes. Throws what SweepRunner::start() throws; null while a run goes.
    launcher::sweep::SweepRunner* start_sweep(const launcher::sweep::SweepSpec& sweep, const QString& out_dir);
    // Ends the run (or the sweep): gracefully, then at once on a second call; finished() follows.
    void stop();
    bool running() const;
    // The run being recorded, or the last one; 0 before any (or when history refused it).
    qint64 run_id() const { return run_id_; }
    // The figures of the current (or last) run, from its events.
    const launcher::sweep::RunSummary& summary() const { return summary_; }
    // Kills what runs now (the app is quitting), records it "interrupted", writes what is
    // buffered; emits nothing.
    void shutdown();

Q_SIGNALS:
    // A run begins (a single run, or a sweep's next run): `title` is its spec's name.
    void runStarted(const QString& title);
    void event(const QJsonObject& event);
    void logLine(const QString& line);
    // A single run ended and was recorded.
    void finished(int exitCode, const QString& summary);
    // The history could not record something (the run goes on).
    void error(const QString& message);

private:
    void begin_record(const QString& name, const launcher::RunSpec& spec);
    void record(const QJsonObject& event);
    void end_record(const QString& status, int exit_code, const QString& summary, bool quiet = false);
    void launcher_finished(int exit_code, const QString& summary);

    launcher::LaunchOptions options_;
    std::unique_ptr<RunHistory> history_;
    QString open_error_;
    std::unique_ptr<launcher::Launcher> launcher_;
    launcher::sweep::SweepRunner* experiment_ = nullptr;
    launcher::sweep::RunSummary summary_;
    qint64 run_id_ = 0;
    bool recording_ = false;  // run_id_'s row is still "running"
};

}  // namespace thresher::ui
