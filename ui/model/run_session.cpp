#include "run_session.h"

#include "run_history.h"
#include "sweep_runner.h"

namespace thresher::ui {

namespace {

// The spec as history keeps it: every path absolute, so "Open its spec" works from anywhere.
QJsonObject for_history(const launcher::RunSpec& spec) {
    launcher::RunSpec s = spec;
    if (!s.model_is_inline()) s.model_path = s.model_file();
    s.data = s.data_argument();
    s.save = s.save_file();
    if (!s.cluster.hostfile.isEmpty()) s.cluster.hostfile = s.resolve(s.cluster.hostfile);
    return s.to_json();
}

}  // namespace

RunSession::RunSession(const QString& history_path, launcher::LaunchOptions options, QObject* parent)
    : QObject(parent), options_(std::move(options)) {
    try {
        history_ = std::make_unique<RunHistory>(history_path.isEmpty() ? RunHistory::default_path() : history_path);
    } catch (const HistoryError& e) {
        // The app stays usable; this session's runs are kept in memory only.
        history_ = std::make_unique<RunHistory>(":memory:");
        open_error_ = QString::fromUtf8(e.what()) + " — run history is kept in memory for this session only";
    }
    // Flushes nobody asked for (the history's timer, a full buffer) report here, never by throwing.
    connect(history_.get(), &RunHistory::error, this, &RunSession::error);
}

RunSession::~RunSession() { shutdown(); }

bool RunSession::running() const { return launcher_ != nullptr || (experiment_ && experiment_->running()); }

void RunSession::begin_record(const QString& name, const launcher::RunSpec& spec) {
    summary_.clear();
    recording_ = false;
    try {
        run_id_ = history_->begin_run(name, for_history(spec));
        recording_ = true;
    } catch (const HistoryError& e) {
        run_id_ = 0;
        Q_EMIT error(QString::fromUtf8(e.what()));
    }
}

void RunSession::record(const QJsonObject& e) {
    summary_.add(e);
    if (recording_) history_->add_event(run_id_, e);
    Q_EMIT event(e);
}

void RunSession::end_record(const QString& status, int exit_code, const QString& summary, bool quiet) {
    if (!recording_) return;
    recording_ = false;
    RunResult r{status, exit_code, summary, summary_.wall_s(), summary_.final_accuracy(), summary_.samples_per_s()};
    try {
        history_->finish_run(run_id_, r);
    } catch (const HistoryError& e) {
        if (!quiet) Q_EMIT error(QString::fromUtf8(e.what()));
    }
}

bool RunSession::start(const launcher::RunSpec& spec) {
    if (running()) return false;
    launcher_ = launcher::create_launcher(spec, options_);
    connect(launcher_.get(), &launcher::Launcher::event, this, &RunSession::record);
    connect(launcher_.get(), &launcher::Launcher::logLine, this, &RunSession::logLine);
    // Queued: the launcher may report from inside start(), and is destroyed in the handler.
    connect(launcher_.get(), &launcher::Launcher::finished, this, &RunSession::launcher_finished, Qt::QueuedConnection);
    begin_record(spec.name, spec);
    Q_EMIT runStarted(spec.name);
    launcher_->start(spec);
    return true;
}

void RunSession::launcher_finished(int exit_code, const QString& summary) {
    launcher_.reset();
    const QString status = exit_code == 0 ? "ok" : exit_code == launcher::kExitStopped ? "stopped" : "failed";
    end_record(status, exit_code, summary);
    Q_EMIT finished(exit_code, summary);
}

launcher::sweep::SweepRunner* RunSession::start_sweep(const launcher::sweep::SweepSpec& sweep, const QString& out_dir) {
    using launcher::sweep::SweepRunner;
    if (running()) return nullptr;
    delete experiment_;
    experiment_ = new SweepRunner(options_, this);
    connect(experiment_, &SweepRunner::runStarted, this,
            [this](int, int, const launcher::sweep::SweepPoint& point, int, const launcher::RunSpec& spec) {
                // History names each run by its sweep and point, so an experiment's runs read as one.
                begin_record(QString("%1: %2").arg(spec.name, point.label), spec);
                Q_EMIT runStarted(spec.name);
            });
    connect(experiment_, &SweepRunner::event, this, &RunSession::record);
    connect(experiment_, &SweepRunner::logLine, this, &RunSession::logLine);
    connect(experiment_, &SweepRunner::rowReady, this, [this](const launcher::sweep::SweepRow& row) {
        const bool ok = row.status == "ok";
        end_record(row.status, ok ? 0 : 1, ok ? QString("sweep run") : row.summary);
    });
    // A run cut by stop() has no row: it ends with the sweep.
    connect(experiment_, &SweepRunner::finished, this, [this](bool ok, const QString& summary) {
        end_record(ok ? "ok" : "stopped", ok ? 0 : launcher::kExitStopped, summary);
    });
    experiment_->start(sweep, out_dir);
    return experiment_;
}

void RunSession::stop() {
    if (launcher_) launcher_->stop();
    if (experiment_ && experiment_->running()) experiment_->stop();
}

void RunSession::shutdown() {
    const QSignalBlocker quiet(this);
    launcher_.reset();  // kills the engines now
    delete experiment_;  // and the sweep's
    experiment_ = nullptr;
    end_record("interrupted", launcher::kExitStopped, "interrupted: the app ended while this run was recording", true);
    try {
        history_->flush();
    } catch (const HistoryError&) {
        // Quitting anyway: the file refuses writes, and error() has said so since it began.
    }
}

}  // namespace thresher::ui
