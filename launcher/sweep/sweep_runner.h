// SweepRunner: runs a sweep's points one after another through the launcher (create_launcher:
// local, SSH or Slurm, as each point's spec says), records each run's RunSummary as a row, and
// after every run rewrites results.json, results.csv and report.html in the results folder, so
// a sweep cut short still leaves its results. A run already recorded "ok" for the same point,
// repeat and run spec is skipped: running the same sweep into the same folder resumes it. A
// failed run is recorded and the sweep goes on (the next resume retries it); stop() ends the
// current run and the sweep, recording nothing for that run.
//
// Runs start from the thread that calls start() (the main thread: LocalLauncher's engines ask
// for SIGKILL when that thread ends).
#pragma once

#include <QJsonObject>
#include <QObject>
#include <memory>

#include "launcher.h"
#include "run_summary.h"
#include "sweep_results.h"

namespace thresher::launcher::sweep {

class SweepRunner : public QObject {
    Q_OBJECT
public:
    explicit SweepRunner(launcher::LaunchOptions options = {}, QObject* parent = nullptr);
    ~SweepRunner() override;

    // Loads earlier results from `out_dir` and starts the first run not yet done (queued: the
    // signals come from the event loop). Throws SpecError when the results folder is unusable.
    void start(const SweepSpec& sweep, const QString& out_dir);
    void stop();
    bool running() const { return running_; }
    const SweepResults& results() const { return *results_; }
    int skipped() const { return skipped_; }    // runs found done at start
    int remaining() const { return int(queue_.size()) - next_; }

Q_SIGNALS:
    // run: 1-based among the runs this start() will do; total: how many it will do.
    void runStarted(int run, int total, const thresher::launcher::sweep::SweepPoint& point, int repeat,
                    const thresher::launcher::RunSpec& spec);
    void event(const QJsonObject& event);
    void logLine(const QString& line);
    void rowReady(const thresher::launcher::sweep::SweepRow& row);
    // ok: every run finished ok; `summary` says what ran, what failed, where the results are.
    void finished(bool ok, const QString& summary);

private:
    void start_next();
    void run_finished(int exit_code, const QString& summary);
    void save();
    void finish(bool ok, const QString& summary);

    launcher::LaunchOptions options_;
    std::unique_ptr<SweepResults> results_;
    QString out_dir_;
    QList<std::pair<int, int>> queue_;  // (point, repeat) still to run
    int next_ = 0;
    int skipped_ = 0, failed_ = 0, ran_ = 0;
    std::unique_ptr<launcher::Launcher> launcher_;
    RunSummary summary_;
    bool running_ = false, stopped_ = false;
    QString save_error_;
};

}  // namespace thresher::launcher::sweep
