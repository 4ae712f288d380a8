// The thresher-launch subcommands. Each returns the process exit code: 0 ok, 1 the run or a
// check failed, 2 a usage or spec error.
#pragma once

#include <QString>
#include <QStringList>
#include <optional>

#include "launcher.h"
#include "run_spec.h"

namespace thresher::launcher::cli {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// Loads and validates a spec; on a spec error prints it on stderr and returns nothing (the
// caller exits with kExitUsage).
std::optional<RunSpec> load_spec(const QString& path);

struct RunOptions {
    QString spec;
    QString engine;
    bool events = false;   // JSON lines on stdout
    bool verbose = false;  // engine stderr on stderr
    double grace_s = 5.0;
    // SSH clusters (as for check; see LaunchOptions::ssh).
    bool accept_new_host_keys = false;
    QString known_hosts;
    int connect_timeout_s = 10;
    int start_timeout_s = 120;
    int heartbeat_timeout_s = 30;  // SSH engines and submitted Slurm jobs alike; 0: off
    QString remote_cache = "~/.cache/thresher";
    // Slurm clusters (see LaunchOptions::slurm).
    QString slurm_mode = "auto";  // auto | step | submit
    QString run_root;             // empty: ~/.cache/thresher/slurm
    double poll_s = 1.0;
    bool save_every_node = false;
    QString trace;  // also write the run's timeline here (Chrome trace-event JSON); empty: none
};
// Runs the spec until it finishes, fails, or is stopped by SIGINT/SIGTERM/SIGHUP.
int run_command(const RunOptions& options);
// The launcher's options from the command line's (engine, grace, SSH, Slurm).
LaunchOptions launch_options(const RunOptions& options);

struct SweepOptions {
    QString sweep;    // the sweep file
    QString out;      // results folder; empty: ./<sweep name>-results
    bool dry_run = false;  // list the points and which are done; run nothing
    RunOptions run;   // engine, grace, verbosity, SSH and Slurm settings for every point
};
// Runs every point of a sweep not yet done in the results folder (launcher/sweep), one line per
// run and a progress bar; writes results.json, results.csv and report.html there.
int sweep_command(const SweepOptions& options);

struct CheckOptions {
    QString spec;
    QString engine;
    bool accept_new_host_keys = false;  // SSH: add unknown host keys to ~/.ssh/known_hosts
    int host_timeout_s = 30;            // SSH: each host's whole check
};
// Validates the spec and checks, per node, that it could start: engine and ports locally; for SSH
// hosts (in parallel) reachable, host key, login, system, GPUs, port, disk.
int check_command(const CheckOptions& options);

struct ScriptOptions {
    QString spec;
    QString engine;
};
// Prints the batch script of a Slurm spec (launcher/slurm/batch_script.h) on stdout.
int script_command(const ScriptOptions& options);

struct TraceCommandOptions {
    QStringList events;  // JSON-lines event files (run --events, or engines' stdout)
    QString output;
    QString iterations;  // "A:B", "A:", ":B"; empty: all
};
// Writes the timeline of recorded events as Chrome trace-event JSON (launcher/trace_export.h).
int trace_command(const TraceCommandOptions& options);

}  // namespace thresher::launcher::cli
