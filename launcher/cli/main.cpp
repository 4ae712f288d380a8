// thresher-launch: runs Thresher training as a RunSpec describes it (DESIGN.md "The command
// line"), and checks a spec before a run.
//   thresher-launch run SPEC.json [--events] [--engine PATH] [--grace S] [--verbose]
//                       [--accept-new-host-keys] [--known-hosts FILE] [--connect-timeout S]
//                       [--start-timeout S] [--remote-cache DIR]
//                       [--slurm-mode auto|step|submit] [--run-root DIR] [--poll S]
//                       [--heartbeat-timeout S] [--save-every-node]
//   thresher-launch check SPEC.json [--engine PATH] [--accept-new-host-keys] [--host-timeout S]
//   thresher-launch script SPEC.json [--engine PATH]   (a Slurm spec's batch script, for sbatch)
//   thresher-launch sweep SWEEP.json [--out DIR] [--dry-run] [--engine PATH] [--grace S] [--verbose]
//                         [--accept-new-host-keys]   (launcher/sweep/README.md)
//   thresher-launch trace EVENTS.jsonl... -o TRACE.json [--iterations A:B]   (run --trace FILE too)
// Exit codes: 0 ok, 1 the run or a check failed, 2 usage or spec error.
#include <CLI/CLI.hpp>

#include <QCoreApplication>

#include "commands.h"
#include "slurm_launcher.h"
#include "ssh_launcher.h"

int main(int argc, char** argv) {
    using namespace thresher::launcher::cli;
    CLI::App app{"thresher-launch: run Thresher training on a local, SSH or Slurm cluster, and check a cluster before a run"};
    app.require_subcommand(1);

    std::string spec, engine;
    RunOptions run;
    auto* run_cmd = app.add_subcommand("run", "Start the run a spec describes and follow its progress");
    run_cmd->add_option("SPEC", spec, "Run spec (JSON, see launcher/README.md)")->required();
    run_cmd->add_flag("--events", run.events, "Pass every engine event through to stdout as JSON lines");
    run_cmd->add_option("--engine", engine, "thresher-engine to run (default: next to thresher-launch, else $PATH)");
    run_cmd->add_option("--grace", run.grace_s, "Seconds between SIGTERM (SSH: closing the engines' stdin) and SIGKILL when stopping")
        ->capture_default_str()->check(CLI::NonNegativeNumber);
    run_cmd->add_flag("-v,--verbose", run.verbose, "Also print the engines' stderr, prefixed [node N] or [host N ADDRESS]");
    std::string known_hosts, remote_cache = run.remote_cache.toStdString();
    run_cmd->add_flag("--accept-new-host-keys", run.accept_new_host_keys,
                      "SSH: add the keys of hosts not yet in known_hosts (a changed key is always refused)");
    run_cmd->add_option("--known-hosts", known_hosts, "SSH: known_hosts file (default ~/.ssh/known_hosts)");
    run_cmd->add_option("--connect-timeout", run.connect_timeout_s, "SSH: seconds to connect to each host")
        ->capture_default_str()->check(CLI::PositiveNumber);
    run_cmd->add_option("--start-timeout", run.start_timeout_s, "SSH: seconds for each engine to start (run_started)")
        ->capture_default_str()->check(CLI::PositiveNumber);
    run_cmd->add_option("--heartbeat-timeout", run.heartbeat_timeout_s,
                        "Seconds this launcher may be silent (frozen, killed, or its machine gone) before the run ends "
                        "without it: SSH engines stop, a submitted Slurm job cancels itself (at least 2 s there); 0: off")
        ->capture_default_str()->check(CLI::Range(0, 86400));
    run_cmd->add_option("--remote-cache", remote_cache,
                        "SSH: folder on the hosts for engine bundles, staged data and run folders")
        ->capture_default_str();
    std::string slurm_mode = "auto", run_root;
    run_cmd->add_option("--slurm-mode", slurm_mode,
                        "Slurm: step (inside an allocation: one srun step), submit (sbatch a job and follow it), or auto "
                        "(step when SLURM_JOB_ID is set)")
        ->capture_default_str()->check(CLI::IsMember({"auto", "step", "submit"}));
    run_cmd->add_option("--run-root", run_root,
                        "Slurm: folder for run folders, visible at the same path on the nodes (default ~/.cache/thresher/slurm)");
    run_cmd->add_flag("--save-every-node", run.save_every_node,
                      "Slurm: every node saves its replica next to the spec's save file (NAME.node-R.thr), to compare them");
    run_cmd->add_option("--poll", run.poll_s, "Slurm: seconds between looks at a submitted job")
        ->capture_default_str()->check(CLI::Range(0.1, 60.0));

    std::string run_trace;
    run_cmd->add_option("--trace", run_trace, "Also write the run's timeline to this file (Chrome trace-event JSON, for Perfetto)");
    std::vector<std::string> trace_events;
    std::string trace_output, trace_iterations;
    auto* trace_cmd = app.add_subcommand("trace", "Write recorded events' timeline as Chrome trace-event JSON (Perfetto)");
    trace_cmd->add_option("EVENTS", trace_events, "JSON-lines event files (run --events output, or engines' stdout)")
        ->required()->check(CLI::ExistingFile);
    trace_cmd->add_option("-o,--output", trace_output, "Trace file to write")->required();
    trace_cmd->add_option("--iterations", trace_iterations, "Only iterations FIRST:LAST (either may be left out)");

    auto* check_cmd = app.add_subcommand("check", "Validate a spec and check that every node could start");
    check_cmd->add_option("SPEC", spec, "Run spec (JSON)")->required();
    check_cmd->add_option("--engine", engine, "thresher-engine to check (default: next to thresher-launch, else $PATH)");
    CheckOptions check;
    check_cmd->add_flag("--accept-new-host-keys", check.accept_new_host_keys,
                        "SSH: add the keys of hosts not yet in ~/.ssh/known_hosts (a changed key is always refused)");
    check_cmd->add_option("--host-timeout", check.host_timeout_s, "SSH: seconds for each host's whole check")
        ->capture_default_str()->check(CLI::PositiveNumber);

    auto* script_cmd = app.add_subcommand("script", "Print the batch script of a Slurm spec (submit it with sbatch)");
    script_cmd->add_option("SPEC", spec, "Run spec (JSON) with \"cluster\": {\"kind\": \"slurm\", …}")->required();
    script_cmd->add_option("--engine", engine, "thresher-engine the nodes run (default: next to thresher-launch, else $PATH)");

    SweepOptions sweep;
    std::string sweep_file, sweep_out, sweep_engine;
    auto* sweep_cmd = app.add_subcommand("sweep", "Run every point of a sweep file (a base spec × axes) not yet done in the "
                                                  "results folder; write results.csv, results.json and report.html there");
    sweep_cmd->add_option("SWEEP", sweep_file, "Sweep file (JSON, see launcher/sweep/README.md)")->required();
    sweep_cmd->add_option("--out", sweep_out, "Results folder (default: ./NAME-results); a sweep run again into it resumes");
    sweep_cmd->add_option("--engine", sweep_engine, "thresher-engine to run (default: next to thresher-launch, else $PATH)");
    sweep_cmd->add_option("--grace", sweep.run.grace_s, "Seconds between SIGTERM and SIGKILL when stopping a run")
        ->capture_default_str()->check(CLI::NonNegativeNumber);
    sweep_cmd->add_flag("-v,--verbose", sweep.run.verbose, "Also print the engines' stderr");
    sweep_cmd->add_flag("--dry-run", sweep.dry_run, "List the points (and which are done in the results folder); run nothing");
    sweep_cmd->add_flag("--accept-new-host-keys", sweep.run.accept_new_host_keys,
                        "SSH: add the keys of hosts not yet in known_hosts (a changed key is always refused)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    }
    QCoreApplication qapp(argc, argv);
    thresher::launcher::ssh::register_ssh_launcher();
    thresher::launcher::slurm::register_slurm_launcher();
    if (*sweep_cmd) {
        sweep.sweep = QString::fromStdString(sweep_file);
        sweep.out = QString::fromStdString(sweep_out);
        sweep.run.engine = QString::fromStdString(sweep_engine);
        return sweep_command(sweep);
    }
    if (*trace_cmd) {
        TraceCommandOptions t{{}, QString::fromStdString(trace_output), QString::fromStdString(trace_iterations)};
        for (const auto& f : trace_events) t.events << QString::fromStdString(f);
        return trace_command(t);
    }
    if (*script_cmd) return script_command({QString::fromStdString(spec), QString::fromStdString(engine)});
    if (*run_cmd) {
        run.slurm_mode = QString::fromStdString(slurm_mode);
        run.run_root = QString::fromStdString(run_root);
        run.spec = QString::fromStdString(spec);
        run.trace = QString::fromStdString(run_trace);
        run.engine = QString::fromStdString(engine);
        run.known_hosts = QString::fromStdString(known_hosts);
        run.remote_cache = QString::fromStdString(remote_cache);
        return run_command(run);
    }
    check.spec = QString::fromStdString(spec);
    check.engine = QString::fromStdString(engine);
    return check_command(check);
}
