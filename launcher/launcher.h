// Launcher: what the GUI's Launch button and `thresher-launch run` drive, whatever the cluster.
// LocalLauncher starts engines on this machine; SshLauncher (launcher/ssh) starts them on
// cluster hosts over SSH. Callers only ever see these signals:
//   event(QJsonObject)       every engine event, merged from all nodes, tagged with "node"
//   logLine(QString)         engine stderr, one line at a time, prefixed "[node N] " (local) or
//                            "[host N ADDRESS] " (SSH), and the launcher's own "[launcher] " notes
//   finished(exitCode, summary)  once, after every process of the run has ended
//
// create_launcher() picks the implementation. The SSH one lives in thresher_ssh, which links
// this library (not the other way round), so it is registered at run time: a program that wants
// SSH clusters calls thresher::launcher::ssh::register_ssh_launcher() once at start-up (the CLI's
// main does; so must the GUI's). The Slurm one (launcher/slurm) likewise:
// thresher::launcher::slurm::register_slurm_launcher(). A static initialiser would not do: the linker drops unreferenced
// objects of static libraries, and the registration with them.
#pragma once

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QString>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "run_spec.h"

namespace thresher::launcher {

// finished()'s exitCode: 0 when every node finished; else the first failing node's status as a
// shell reports it (its exit code, or 128 + signal when a signal ended it), or one of these.
constexpr int kExitStopped = -1;        // stop() ended the run
constexpr int kExitCouldNotStart = 127;  // an engine could not be started (or files not written)

// SSH clusters only (the SSH launcher's policy; see launcher/ssh/ssh_launcher.h).
struct SshLaunchOptions {
    QString known_hosts_file;           // empty: ~/.ssh/known_hosts
    QString ssh_config_file;            // empty: ~/.ssh/config (when it exists)
    bool accept_new_host_keys = false;  // add unknown host keys to known_hosts (a changed key: never)
    int connect_timeout_s = 10;         // per host: TCP connect and SSH handshake
    int start_timeout_s = 120;          // per host: from starting the engine to its run_started
    // Engines stop when their launcher has been silent this long (thresher-engine
    // --stdin-heartbeat: the launcher writes a heartbeat line to each engine's stdin every sixth of
    // it), so a frozen launcher or a vanished machine leaves no engine training for nobody; 0: off.
    int heartbeat_timeout_s = 30;
    // Where bundles, staged data and run folders go on every host ("~/" is the remote home).
    QString remote_cache = "~/.cache/thresher";
    // Asks for a key's passphrase or a password (nullopt: none given). Called from the hosts'
    // connection threads, possibly several at once: serialise inside (SshSession's AskSecret).
    std::function<std::optional<std::string>(const std::string& prompt)> ask_secret;
};

// Slurm clusters only (launcher/slurm/slurm_launcher.h).
struct SlurmLaunchOptions {
    // Step: start the engines as a step of the allocation this process is in (SLURM_JOB_ID must
    // be set, e.g. under salloc); Submit: sbatch a job and follow it; Auto: Step when
    // SLURM_JOB_ID is set, else Submit.
    enum class Mode { Auto, Step, Submit };
    Mode mode = Mode::Auto;
    // Where run folders go (model, secret, batch output); the nodes must see it at the same
    // path (a shared home). Empty: ~/.cache/thresher/slurm.
    QString run_root;
    int poll_ms = 1000;  // submit: how often squeue and the job's output are read
    // Submit: the job cancels itself when the launcher stops touching its heartbeat for this
    // long (a launcher killed outright must not leave a job training for nobody).
    int heartbeat_timeout_s = 30;
    int command_timeout_s = 30;  // each sbatch/squeue/scancel call
    // Every node saves its replica next to the spec's `save` (launcher/slurm/batch_script.h).
    bool save_every_node = false;
};

struct LaunchOptions {
    QString engine;          // thresher-engine to run; empty: next to this program, else $PATH
    int grace_ms = 5000;     // stop(): SIGTERM (SSH: stdin closed), this long, then SIGKILL
    bool stop_on_node_failure = true;  // a node that fails ends the whole run
    SshLaunchOptions ssh;
    SlurmLaunchOptions slurm;
};

// The run cannot be launched at all (e.g. an SSH cluster in a build without SSH).
class LaunchError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The run lifecycle every kind shares lives here: one run at a time, stop() (graceful, then at
// once on a second call), the first failure kept, and one finished() from the event loop with a
// summary that says which of finished / stopped / failed it was. Each kind implements launch()
// and halt() and calls record_failure(), halt_after_failure() and conclude() or finish().
class Launcher : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    ~Launcher() override = default;

    // Starts the run; every outcome, failure to start included, arrives through finished(). A
    // start() while a run goes is ignored (and logged).
    void start(const RunSpec& spec);
    // Ends the run: SIGTERM (SSH: the engines' stdin is closed; Slurm: scancel), the grace
    // period, then SIGKILL of each engine's process group; a second stop() kills at once.
    // finished() follows. Nothing happens when no run goes.
    void stop();
    // Between start() and finished().
    bool running() const { return active_; }

Q_SIGNALS:
    void event(const QJsonObject& event);
    void logLine(const QString& line);
    void finished(int exitCode, const QString& summary);

protected:
    // Starts this kind's run (the state is reset and the clock started); a failure to start is
    // reported with fail_now().
    virtual void launch(const RunSpec& spec) = 0;
    // Ends the run's processes: gracefully (now = false: SIGTERM or this kind's equivalent, and
    // SIGKILL after the grace period), or at once. Called at most once with each value per run.
    virtual void halt(bool now) = 0;

    struct Failure {
        int exit_code;
        QString summary;
    };
    // The run's first failure is the one finished() reports; later ones are dropped (the caller
    // may log them). False when one was already kept.
    bool record_failure(int exit_code, const QString& summary);
    const std::optional<Failure>& failure() const { return failure_; }
    bool stopping() const { return stopping_; }              // halt() was called
    bool stop_requested() const { return stop_requested_; }  // by stop(), not by a failure
    qint64 elapsed_ms() const { return clock_.elapsed(); }  // since start()
    QString elapsed_s() const;                               // the same in seconds: "12.3"
    // A failure ends the others: halt(now) unless already stopping.
    void halt_after_failure(bool now = false);
    // The run is over: finished(code, summary), queued so that it never arrives inside start()
    // or stop(). Only the first call per run counts. A kind that cleans up at the end overrides
    // it and calls this.
    virtual void finish(int code, const QString& summary);
    // finish() with the summary the run's state calls for: the kept failure's (followed by
    // `others_note` on its own line, when not empty and the others were stopped), `stopped`
    // after stop(), else `done`.
    void conclude(const QString& done, const QString& stopped, const QString& others_note = {});
    // A failure before anything runs: record_failure() and finish() with it.
    void fail_now(int exit_code, const QString& summary);

private:
    bool active_ = false;
    bool stopping_ = false;
    bool stop_requested_ = false;
    std::optional<Failure> failure_;
    QElapsedTimer clock_;
};

// The launcher the spec's cluster needs. Throws LaunchError for an SSH or Slurm cluster when no
// launcher of that kind was registered (see the top of this file).
std::unique_ptr<Launcher> create_launcher(const RunSpec& spec, const LaunchOptions& options, QObject* parent = nullptr);

// Makes the launcher for one cluster kind; set_launcher_factory(kind, {}) removes it again.
using LauncherFactory = std::function<std::unique_ptr<Launcher>(const LaunchOptions& options, QObject* parent)>;
void set_launcher_factory(ClusterSettings::Kind kind, LauncherFactory factory);

}  // namespace thresher::launcher
