// thresher-launch: runs Thresher training as a RunSpec describes it (DESIGN.md "The command
// line"), and checks a spec before a run.
//   thresher-launch run SPEC.json [--events] [--engine PATH] [--grace S] [--verbose]
//                       [--accept-new-host-keys] [--known-hosts FILE] [--connect-timeout S]
//                       [--start-timeout S] [--remote-cache DIR]
//   thresher-launch check SPEC.json [--engine PATH] [--accept-new-host-keys] [--host-timeout S]
// Exit codes: 0 ok, 1 the run or a check failed, 2 usage or spec error.
#include <CLI/CLI.hpp>

#include <QCoreApplication>

#include "commands.h"
#include "ssh_launcher.h"

int main(int argc, char** argv) {
    using namespace thresher::launcher::cli;
    CLI::App app{"thresher-launch: run Thresher training on a local or SSH cluster, and check a cluster before a run"};
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
                        "SSH: engines stop when this launcher has been silent this many seconds (frozen, or its "
                        "machine gone); 0: off")
        ->capture_default_str()->check(CLI::Range(0, 86400));
    run_cmd->add_option("--remote-cache", remote_cache,
                        "SSH: folder on the hosts for engine bundles, staged data and run folders")
        ->capture_default_str();

    auto* check_cmd = app.add_subcommand("check", "Validate a spec and check that every node could start");
    check_cmd->add_option("SPEC", spec, "Run spec (JSON)")->required();
    check_cmd->add_option("--engine", engine, "thresher-engine to check (default: next to thresher-launch, else $PATH)");
    CheckOptions check;
    check_cmd->add_flag("--accept-new-host-keys", check.accept_new_host_keys,
                        "SSH: add the keys of hosts not yet in ~/.ssh/known_hosts (a changed key is always refused)");
    check_cmd->add_option("--host-timeout", check.host_timeout_s, "SSH: seconds for each host's whole check")
        ->capture_default_str()->check(CLI::PositiveNumber);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    }
    QCoreApplication qapp(argc, argv);
    thresher::launcher::ssh::register_ssh_launcher();
    if (*run_cmd) {
        run.spec = QString::fromStdString(spec);
        run.engine = QString::fromStdString(engine);
        run.known_hosts = QString::fromStdString(known_hosts);
        run.remote_cache = QString::fromStdString(remote_cache);
        return run_command(run);
    }
    check.spec = QString::fromStdString(spec);
    check.engine = QString::fromStdString(engine);
    return check_command(check);
}
