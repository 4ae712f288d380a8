// SlurmLauncher: runs every node of a Slurm cluster as a task of ONE srun step, using Slurm for
// allocation, process start, signalling and cleanup (launcher/README.md, "Running engines on
// Slurm"). Per run it makes a private run folder (mode 0700) under SlurmLaunchOptions::run_root,
// which the nodes must see at the same path (a shared home), with the run secret (mode 0600,
// deleted as soon as every engine has announced run_started) and the run script
// (batch_script.h). Then, by SlurmLaunchOptions::mode:
//   - step (inside an allocation, SLURM_JOB_ID set): `bash run.sh` as a child of this process; its
//     last line execs srun, which keeps the parent-death signal this launcher sets, so a launcher
//     killed outright takes srun with it and Slurm then ends the step. Output arrives on pipes.
//   - submit: `sbatch --parsable run.sh`, then every poll_ms: squeue for the job's state (each
//     change is an event {"event":"job_state","scheduler":"slurm","job","state","reason"}: the
//     app shows PENDING and Slurm's reason while the job waits), the job's output files read from
//     where they were left, and the run folder's heartbeat touched (the job cancels itself when
//     it stops: SlurmLaunchOptions::heartbeat_timeout_s).
// Output lines are srun --label lines: "r: …" is task r = engine node r; stdout lines become
// `event`s (EventStream, tagged with the node), stderr lines `logLine`s "[node r] …", the rest
// "[slurm] …".
// stop(): `scancel` of the step (step mode; its id comes from the task of rank 0) or of the job
// (submit mode); after grace_ms, SIGKILL to srun's process group (step) or `scancel --signal=KILL`
// (job). finished(): 0 when the step or job completed; kExitStopped after stop(); the exit code
// and the last stderr lines, or Slurm's state and reason (CANCELLED by the admin, TIMEOUT, …),
// otherwise; kExitCouldNotStart when sbatch refused the job, naming what it said.
#pragma once

#include <QElapsedTimer>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTimer>
#include <map>
#include <memory>
#include <optional>

#include "event_stream.h"
#include "launcher.h"
#include "command.h"
#include "task_lines.h"

namespace thresher::launcher::slurm {

class SlurmLauncher : public Launcher {
    Q_OBJECT
public:
    explicit SlurmLauncher(LaunchOptions options = {}, QObject* parent = nullptr);
    // Ends whatever still runs: SIGKILL to srun's group (step), scancel (submit).
    ~SlurmLauncher() override;


    // The submitted job's id (submit mode), or the allocation's (step mode); empty before.
    QString job_id() const { return job_id_; }
    // "JOB.STEP" once the task of rank 0 has reported it (step mode).
    QString step_id() const { return step_id_; }
    // The run folder (empty when none); the tests look at it.
    QString run_dir() const;

private:
    void start_step(const QString& script);
    void submit(const QString& script);
    void poll();
    void on_job_state(const CommandResult& r);
    void read_output();
    void take_stdout(const QList<TaskLine>& lines);
    void take_stderr(const QList<TaskLine>& lines);
    void emit_event(const QJsonObject& e);
    void step_exited(int code, bool crashed);
    void step_ended(int code, bool crashed);
    void job_ended(const QString& state, const QString& reason);
    void cancel(bool kill);
    void launch(const RunSpec& spec) override;
    void halt(bool now) override;
    void finish(int code, const QString& summary) override;  // stops the timers, removes the secret
    int timeout_ms() const { return options_.slurm.command_timeout_s * 1000; }

    LaunchOptions options_;
    RunSpec spec_;
    std::unique_ptr<QTemporaryDir> dir_;
    QString secret_path_;
    bool submit_mode_ = false;
    QString job_id_, step_id_;
    QString state_, reason_;  // the job's last state from squeue
    QString last_query_error_;
    std::unique_ptr<QProcess> step_;  // step mode: bash run.sh → srun
    qint64 step_pgid_ = 0;
    std::unique_ptr<AsyncCommand> query_;  // the squeue in flight
    QTimer poll_timer_, grace_;
    QTimer give_up_;  // after the kill: how long Slurm has to confirm the end before finished()
    // Step mode, after srun ended: polls until the script's process group is gone (its watcher
    // removes the secret and the staged files), at most kCleanupLimit.
    QTimer cleanup_poll_;
    QElapsedTimer cleanup_clock_;
    TaskLines out_lines_, err_lines_;
    qint64 out_offset_ = 0, err_offset_ = 0;  // submit: how far the output files were read
    std::map<int, std::unique_ptr<EventStream>> streams_;  // per task
    std::map<int, bool> announced_;                        // run_started seen, per task
    std::map<int, QString> finished_status_;               // run_finished status, per task
    QStringList err_tail_;
    bool killed_ = false;
};

// Makes create_launcher() return a SlurmLauncher for Slurm clusters (see launcher.h). Call once
// at program start (thresher-launch's main does; so does the app).
void register_slurm_launcher();

}  // namespace thresher::launcher::slurm
