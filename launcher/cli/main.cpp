// thresher-launch: runs Thresher training as a RunSpec describes it (DESIGN.md "The command
// line"), and checks a spec before a run.
//   thresher-launch run SPEC.json [--events] [--engine PATH] [--grace S] [--verbose]
//   thresher-launch check SPEC.json [--engine PATH] [--accept-new-host-keys] [--host-timeout S]
// Exit codes: 0 ok, 1 the run or a check failed, 2 usage or spec error.
#include <CLI/CLI.hpp>

#include <QCoreApplication>

#include "commands.h"

int main(int argc, char** argv) {
    using namespace thresher::launcher::cli;
    CLI::App app{"thresher-launch: run Thresher training on a local cluster; check local and SSH clusters"};
    app.require_subcommand(1);

    std::string spec, engine;
    RunOptions run;
    auto* run_cmd = app.add_subcommand("run", "Start the run a spec describes and follow its progress");
    run_cmd->add_option("SPEC", spec, "Run spec (JSON, see launcher/README.md)")->required();
    run_cmd->add_flag("--events", run.events, "Pass every engine event through to stdout as JSON lines");
    run_cmd->add_option("--engine", engine, "thresher-engine to run (default: next to thresher-launch, else $PATH)");
    run_cmd->add_option("--grace", run.grace_s, "Seconds between SIGTERM and SIGKILL when stopping")
        ->capture_default_str()->check(CLI::NonNegativeNumber);
    run_cmd->add_flag("-v,--verbose", run.verbose, "Also print the engines' stderr, prefixed [node N]");

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
    if (*run_cmd) {
        run.spec = QString::fromStdString(spec);
        run.engine = QString::fromStdString(engine);
        return run_command(run);
    }
    check.spec = QString::fromStdString(spec);
    check.engine = QString::fromStdString(engine);
    return check_command(check);
}
