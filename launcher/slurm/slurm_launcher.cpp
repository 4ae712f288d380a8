// SlurmLauncher: one srun step for the whole run, in an allocation or as a submitted job; see
// slurm_launcher.h.
#include "slurm_launcher.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <sys/prctl.h>
#include <unistd.h>

#include "batch_script.h"
#include "local_launcher.h"
#include "run_secret.h"

namespace thresher::launcher::slurm {

namespace {

constexpr int kTailLines = 8;  // stderr lines a failure summary quotes
// After srun ends (step mode), the most the run script's cleanup (one short srun step) may take.
constexpr std::chrono::milliseconds kCleanupLimit{60000};

const QStringList kEndStates{"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                             "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED"};

void signal_group(qint64 pgid, int sig) {
    if (pgid <= 0) return;
    if (::kill(-static_cast<pid_t>(pgid), sig) != 0 && errno == ESRCH) ::kill(static_cast<pid_t>(pgid), sig);
}

// "ExitCode=1:0" of `scontrol -o show job ID`: the batch script's exit code and signal.
QString exit_code_of(const QString& job, int timeout_ms) {
    const CommandResult r = run_command("scontrol", {"-o", "show", "job", job}, timeout_ms);
    if (!r.ok()) return {};
    const auto m = QRegularExpression(R"((?:^|\s)ExitCode=(\S+))").match(r.out);
    return m.hasMatch() ? m.captured(1) : QString();
}

}  // namespace

SlurmLauncher::SlurmLauncher(LaunchOptions options, QObject* parent) : Launcher(parent), options_(std::move(options)) {
    grace_.setSingleShot(true);
    connect(&grace_, &QTimer::timeout, this, [this] { cancel(true); });
    connect(&poll_timer_, &QTimer::timeout, this, &SlurmLauncher::poll);
    give_up_.setSingleShot(true);
    connect(&give_up_, &QTimer::timeout, this, [this] {
        finish(kExitStopped, QString("stopped, but Slurm did not confirm within %1 s that job %2 ended (see squeue)")
                                 .arg(give_up_.interval() / 1000).arg(step_id_.isEmpty() ? job_id_ : step_id_));
    });
}

SlurmLauncher::~SlurmLauncher() {
    poll_timer_.stop();
    grace_.stop();
    give_up_.stop();
    cleanup_poll_.stop();
    query_.reset();
    if (step_) {
        QObject::disconnect(step_.get(), nullptr, this, nullptr);
        if (step_->state() != QProcess::NotRunning) {
            signal_group(step_pgid_, SIGKILL);  // srun gone: Slurm ends the step
            step_->waitForFinished(5000);
        }
    }
    if (running() && submit_mode_ && !job_id_.isEmpty())
        run_command("scancel", {job_id_}, timeout_ms());
}

QString SlurmLauncher::run_dir() const { return dir_ ? dir_->path() : QString(); }

void SlurmLauncher::launch(const RunSpec& spec) {
    spec_ = spec;
    killed_ = false;
    job_id_.clear();
    step_id_.clear();
    state_.clear();
    reason_.clear();
    streams_.clear();
    announced_.clear();
    finished_status_.clear();
    err_tail_.clear();
    out_lines_ = {};
    err_lines_ = {};
    out_offset_ = err_offset_ = 0;

    if (spec.cluster.kind != ClusterSettings::Kind::Slurm)
        return fail_now(kExitCouldNotStart, spec.source + ": cluster.kind is not \"slurm\"");
    QString engine = LocalLauncher::find_engine(options_.engine);
    if (engine.isEmpty())
        return fail_now(kExitCouldNotStart, "thresher-engine not found next to this program or on $PATH; name it with --engine");
    engine = QFileInfo(engine).absoluteFilePath();

    using Mode = SlurmLaunchOptions::Mode;
    const bool in_allocation = qEnvironmentVariableIsSet("SLURM_JOB_ID");
    if (options_.slurm.mode == Mode::Step && !in_allocation)
        return fail_now(kExitCouldNotStart, "Slurm step mode needs an allocation, and SLURM_JOB_ID is not set: run "
                                            "inside salloc, or let the launcher submit a job");
    submit_mode_ = options_.slurm.mode == Mode::Submit || (options_.slurm.mode == Mode::Auto && !in_allocation);

    // The run folder: private, and where the nodes see it too (the script, secret, output).
    const QString root = options_.slurm.run_root.isEmpty() ? QDir::homePath() + "/.cache/thresher/slurm"
                                                           : options_.slurm.run_root;
    if (!QDir().mkpath(root)) return fail_now(kExitCouldNotStart, "cannot create the run folder root " + root);
    dir_ = std::make_unique<QTemporaryDir>(QDir(root).absoluteFilePath("run-XXXXXX"));
    if (!dir_->isValid()) return fail_now(kExitCouldNotStart, "cannot create a run folder in " + root + ": " + dir_->errorString());
    const QString script_path = dir_->filePath("run.sh");
    try {
        if (spec.node_count() > 1) {
            secret_path_ = dir_->filePath("secret");
            write_secret_file(secret_path_, make_run_secret());
        }
        ScriptOptions so;
        so.engine = engine;
        so.run_dir = dir_->path();
        so.heartbeat_timeout_s = submit_mode_ ? options_.slurm.heartbeat_timeout_s : 0;
        so.save_every_node = options_.slurm.save_every_node && !spec.save.isEmpty();
        so.exec_srun = !submit_mode_;
        const QByteArray script = batch_script(spec, so).toUtf8();
        QFile f(script_path);
        if (!f.open(QIODevice::WriteOnly) || f.write(script) != script.size() || !f.flush())
            return fail_now(kExitCouldNotStart, "cannot write " + script_path + ": " + f.errorString());
        f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    } catch (const std::exception& e) {
        return fail_now(kExitCouldNotStart, QString::fromStdString(e.what()));
    }
    Q_EMIT logLine("[launcher] run folder " + dir_->path());
    if (submit_mode_)
        submit(script_path);
    else
        start_step(script_path);
}

void SlurmLauncher::start_step(const QString& script) {
    job_id_ = qEnvironmentVariable("SLURM_JOB_ID");
    step_ = std::make_unique<QProcess>();
    step_->setWorkingDirectory(dir_->path());
    step_->setStandardInputFile(QProcess::nullDevice());
    const pid_t parent = ::getpid();
    // In the child, between fork and exec (async-signal-safe calls only): a group of its own for
    // stop(), and SIGKILL when this launcher dies. The script's last line execs srun, which
    // keeps both; srun killed, Slurm ends the step's tasks.
    step_->setChildProcessModifier([parent] {
        ::setsid();
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(kExitCouldNotStart);
    });
    connect(step_.get(), &QProcess::readyReadStandardOutput, this,
            [this] { take_stdout(out_lines_.feed(step_->readAllStandardOutput())); });
    connect(step_.get(), &QProcess::readyReadStandardError, this,
            [this] { take_stderr(err_lines_.feed(step_->readAllStandardError())); });
    connect(step_.get(), &QProcess::finished, this,
            [this](int code, QProcess::ExitStatus status) { step_exited(code, status == QProcess::CrashExit); });
    step_->start("bash", {script});
    if (!step_->waitForStarted(30000))
        return fail_now(kExitCouldNotStart, "cannot start bash " + script + ": " + step_->errorString());
    step_pgid_ = step_->processId();
    Q_EMIT logLine(QString("[launcher] inside Slurm allocation %1: starting the engines as one srun step").arg(job_id_));
    emit_event({{"event", "job_state"}, {"scheduler", "slurm"}, {"job", job_id_}, {"state", "RUNNING"},
                {"reason", "inside the allocation"}});
}

void SlurmLauncher::submit(const QString& script) {
    const QStringList args{"--parsable", "--chdir=" + dir_->path(), script};
    query_ = std::make_unique<AsyncCommand>("sbatch", args, timeout_ms(), [this](const CommandResult& r) {
        query_.release()->deleteLater();
        if (!running()) return;
        if (!r.ok()) return fail_now(kExitCouldNotStart, r.error());
        job_id_ = r.out.trimmed().section(';', 0, 0);  // "ID" or "ID;cluster"
        Q_EMIT logLine(QString("[launcher] submitted Slurm job %1 (%2)").arg(job_id_, dir_->filePath("run.sh")));
        state_ = "SUBMITTED";
        emit_event({{"event", "job_state"}, {"scheduler", "slurm"}, {"job", job_id_}, {"state", state_}, {"reason", ""}});
        if (stopping()) cancel(killed_);  // stop() came while sbatch ran
        poll_timer_.start(std::max(100, options_.slurm.poll_ms));
        poll();
    });
}

void SlurmLauncher::poll() {
    if (!running() || job_id_.isEmpty()) return;
    // The job's watchdog cancels it when this stops being touched (a launcher that is gone).
    if (QFile hb(dir_->filePath("heartbeat")); hb.open(QIODevice::WriteOnly)) hb.write(".");
    read_output();
    if (query_) return;  // the last squeue is still running
    query_ = std::make_unique<AsyncCommand>("squeue", QStringList{"-h", "-j", job_id_, "-t", "all", "-o", "%T|%r|%N"},
                                            timeout_ms(), [this](const CommandResult& r) { on_job_state(r); });
}

void SlurmLauncher::on_job_state(const CommandResult& r) {
    query_.release()->deleteLater();
    if (!running()) return;
    const QString line = r.out.trimmed().section('\n', 0, 0);
    if (!r.ok() || line.isEmpty()) {
        // Gone from the queue (purged after MinJobAge, or never known): decide from the engines.
        if (r.err.contains("Invalid job id") || (r.ok() && line.isEmpty())) return job_ended("GONE", {});
        // Said once per new message: squeue runs every poll while slurmctld may be away a while.
        if (r.error() != last_query_error_) Q_EMIT logLine("[launcher] " + r.error() + " (will ask again)");
        last_query_error_ = r.error();
        return;
    }
    const QString state = line.section('|', 0, 0), reason = line.section('|', 1, 1), nodes = line.section('|', 2, 2);
    if (state != state_ || reason != reason_) {
        state_ = state;
        reason_ = reason;
        emit_event({{"event", "job_state"}, {"scheduler", "slurm"}, {"job", job_id_}, {"state", state},
                    {"reason", reason == "None" ? QString() : reason}, {"nodes", nodes}});
    }
    if (kEndStates.contains(state)) job_ended(state, reason);
}

void SlurmLauncher::read_output() {
    if (!dir_ || job_id_.isEmpty()) return;
    const auto read_from = [this](const QString& name, qint64& offset) {
        QFile f(dir_->filePath(name));
        if (!f.open(QIODevice::ReadOnly) || !f.seek(offset)) return QByteArray();
        const QByteArray bytes = f.readAll();
        offset += bytes.size();
        return bytes;
    };
    take_stdout(out_lines_.feed(read_from("job-" + job_id_ + ".out", out_offset_)));
    take_stderr(err_lines_.feed(read_from("job-" + job_id_ + ".err", err_offset_)));
}

void SlurmLauncher::emit_event(const QJsonObject& e) {
    QJsonObject out = e;
    if (!out.contains("t")) out["t"] = elapsed_ms() / 1000.0;
    if (!out.contains("node")) out["node"] = 0;
    Q_EMIT event(out);
}

void SlurmLauncher::take_stdout(const QList<TaskLine>& lines) {
    const int tasks = spec_.node_count();
    for (const TaskLine& l : lines) {
        if (l.task < 0 || l.task >= tasks) {
            if (!l.text.trimmed().isEmpty()) Q_EMIT logLine("[slurm] " + QString::fromUtf8(l.text));
            continue;
        }
        auto& stream = streams_[l.task];
        if (!stream) stream = std::make_unique<EventStream>(l.task);
        for (const QJsonObject& e : stream->feed(l.text + '\n')) {
            const QString kind = e.value("event").toString();
            if (kind == "run_started") announced_[l.task] = true;
            if (kind == "run_finished") finished_status_[l.task] = e.value("status").toString();
            Q_EMIT event(e);
        }
    }
    // Every engine read the secret before it announced the run: the file goes now.
    if (!secret_path_.isEmpty() && int(announced_.size()) == tasks) {
        QFile::remove(secret_path_);
        secret_path_.clear();
    }
}

void SlurmLauncher::take_stderr(const QList<TaskLine>& lines) {
    for (const TaskLine& l : lines) {
        const QString text = QString::fromUtf8(l.text);
        if (l.task == 0 && text.startsWith("thresher-step ")) {
            step_id_ = text.mid(14).trimmed();
            Q_EMIT logLine("[launcher] engines running as Slurm step " + step_id_);
            if (stopping()) cancel(killed_);
            continue;
        }
        if (text.trimmed().isEmpty()) continue;
        const QString line = l.task >= 0 ? QString("[node %1] %2").arg(l.task).arg(text) : "[slurm] " + text;
        err_tail_ << line;
        if (err_tail_.size() > kTailLines) err_tail_.removeFirst();
        Q_EMIT logLine(line);
    }
}

void SlurmLauncher::step_exited(int code, bool crashed) {
    take_stdout(out_lines_.feed(step_->readAllStandardOutput()) + out_lines_.finish());
    take_stderr(err_lines_.feed(step_->readAllStandardError()) + err_lines_.finish());
    // srun is gone; the script's watcher (same process group) now removes the secret and the
    // staged copies with one more step. Finish once it has: under salloc, the allocation ends
    // with this launcher and would take the cleanup step with it.
    cleanup_clock_.start();
    cleanup_poll_.setInterval(100);
    cleanup_poll_.disconnect();
    connect(&cleanup_poll_, &QTimer::timeout, this, [this, code, crashed] {
        const bool group_gone = ::kill(-pid_t(step_pgid_), 0) != 0 && errno == ESRCH;
        if (!group_gone && cleanup_clock_.elapsed() < kCleanupLimit.count()) return;
        cleanup_poll_.stop();
        if (!group_gone) {
            Q_EMIT logLine(QString("[launcher] the run script's cleanup did not end within %1 s; stopping it (staged files may "
                                   "remain in /tmp/thresher-stage-%2-* on the nodes)").arg(kCleanupLimit.count() / 1000).arg(job_id_));
            signal_group(step_pgid_, SIGKILL);
        }
        step_ended(code, crashed);
    });
    cleanup_poll_.start();
}

void SlurmLauncher::step_ended(int code, bool crashed) {
    const QString elapsed = elapsed_s();
    if (stop_requested())
        return finish(kExitStopped, QString("stopped after %1 s: Slurm step %2 ended").arg(elapsed, step_id_.isEmpty() ? job_id_ : step_id_));
    if (!crashed && code == 0)
        return finish(0, QString("%1 node(s) finished in %2 s (Slurm step %3)").arg(spec_.node_count()).arg(elapsed, step_id_));
    QString summary = QString("Slurm step %1 ").arg(step_id_.isEmpty() ? "in job " + job_id_ : step_id_) +
                      (crashed ? QString("was killed by signal %1").arg(code) : QString("exited with code %1").arg(code));
    summary += err_tail_.isEmpty() ? QString(" (nothing on stderr)") : "; its last stderr lines:\n  " + err_tail_.join("\n  ");
    finish(crashed ? 128 + code : code, summary);
}

void SlurmLauncher::job_ended(const QString& state, const QString& reason) {
    poll_timer_.stop();
    read_output();
    take_stdout(out_lines_.finish());
    take_stderr(err_lines_.finish());
    const QString elapsed = elapsed_s();
    const int tasks = spec_.node_count();
    const bool all_ok = int(finished_status_.size()) == tasks &&
                        std::all_of(finished_status_.begin(), finished_status_.end(), [](const auto& s) { return s.second == "ok"; });
    if (state == "COMPLETED" || (state == "GONE" && all_ok))
        return finish(0, QString("%1 node(s) finished in %2 s (Slurm job %3)").arg(tasks).arg(elapsed, job_id_));
    if (stop_requested())
        return finish(kExitStopped, QString("stopped after %1 s: Slurm job %2 %3").arg(elapsed, job_id_,
                                                                                    state == "GONE" ? "ended" : state));
    const QString exit = exit_code_of(job_id_, std::min(timeout_ms(), 5000));
    QString summary = QString("Slurm job %1 ended %2").arg(job_id_, state == "GONE" ? "(it left the queue)" : state);
    if (!reason.isEmpty() && reason != "None") summary += " (" + reason + ")";
    if (!exit.isEmpty()) summary += ", exit code " + exit;
    if (state == "CANCELLED") summary += ": cancelled by someone else (scancel, or an administrator)";
    if (state == "TIMEOUT") summary += ": it reached its time limit";
    summary += err_tail_.isEmpty() ? QString() : "; the last stderr lines:\n  " + err_tail_.join("\n  ");
    const int code = exit.section(':', 0, 0).toInt();
    finish(code > 0 ? code : 1, summary);
}

void SlurmLauncher::halt(bool now) {
    cancel(now);
    if (!now) grace_.start(options_.grace_ms);
}

void SlurmLauncher::cancel(bool kill) {
    killed_ = killed_ || kill;
    // Every wait has a deadline: Slurm (or srun) gets this long after the kill to confirm the end.
    if (kill && !give_up_.isActive()) give_up_.start(timeout_ms() + 30000);
    const auto scancel = [this](const QStringList& args) {
        // Owned by this launcher; each deletes itself once scancel answered.
        auto* c = new AsyncCommand("scancel", args, timeout_ms(), [this](const CommandResult& r) {
            if (!r.ok()) Q_EMIT logLine("[launcher] " + r.error());
        }, this);
        QTimer::singleShot(timeout_ms() + 6000, c, &QObject::deleteLater);
    };
    if (!submit_mode_) {
        if (kill) {
            signal_group(step_pgid_, SIGKILL);  // srun gone: Slurm kills the step's tasks
            return;
        }
        if (!step_id_.isEmpty())
            scancel({step_id_});
        else
            signal_group(step_pgid_, SIGTERM);  // before the step has an id: srun forwards SIGTERM
        return;
    }
    if (job_id_.isEmpty()) return;  // sbatch still running: submit() cancels once it has the id
    scancel(kill ? QStringList{"--signal=KILL", "--full", job_id_} : QStringList{job_id_});
}

void SlurmLauncher::finish(int code, const QString& summary) {
    if (!running()) return;
    poll_timer_.stop();
    grace_.stop();
    give_up_.stop();
    if (!secret_path_.isEmpty()) QFile::remove(secret_path_);
    secret_path_.clear();
    // The run folder stays until the next start() or this launcher goes (its output is useful
    // for a look after a failure); the secret is already gone.
    Launcher::finish(code, summary);
}

void register_slurm_launcher() {
    set_launcher_factory(ClusterSettings::Kind::Slurm, [](const LaunchOptions& options, QObject* parent) {
        return std::unique_ptr<Launcher>(std::make_unique<SlurmLauncher>(options, parent));
    });
}

}  // namespace thresher::launcher::slurm
