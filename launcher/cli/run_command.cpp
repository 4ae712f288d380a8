// `thresher-launch run SPEC`: starts the run the spec describes (local or SSH cluster: whatever
// create_launcher returns) and follows it on stderr (progress bar and ETA on a terminal, one line
// per epoch elsewhere); `--events` passes every engine event through to stdout as JSON lines. SIGINT/SIGTERM/SIGHUP stop the run (TERM, grace,
// KILL; a second Ctrl-C kills at once) and the exit code is then 1.
#include <algorithm>
#include <QCoreApplication>
#include <QJsonDocument>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "trace_export.h"
#include "commands.h"
#include "launcher.h"
#include "progress.h"
#include "run_spec.h"
#include "terminal_output.h"
#include "terminal_prompt.h"
#include "unix_signals.h"

namespace thresher::launcher::cli {

namespace {

QString describe_cluster(const RunSpec& spec) {
    const QString kind = spec.cluster.kind == ClusterSettings::Kind::Local ? "local"
                         : spec.cluster.kind == ClusterSettings::Kind::Ssh ? "SSH" : "Slurm";
    return QString("%1 %2 node(s) × %3 worker(s), %4").arg(spec.node_count()).arg(kind).arg(spec.workers_per_node())
        .arg(spec.training.strategy);
}

}  // namespace

LaunchOptions launch_options(const RunOptions& o) {
    LaunchOptions launch;
    launch.engine = o.engine;
    launch.grace_ms = int(o.grace_s * 1000);
    launch.ssh.accept_new_host_keys = o.accept_new_host_keys;
    launch.ssh.known_hosts_file = o.known_hosts;
    launch.ssh.connect_timeout_s = o.connect_timeout_s;
    launch.ssh.start_timeout_s = o.start_timeout_s;
    launch.ssh.heartbeat_timeout_s = o.heartbeat_timeout_s;
    launch.ssh.remote_cache = o.remote_cache;
    launch.ssh.ask_secret = ask_on_terminal;
    using Mode = SlurmLaunchOptions::Mode;
    launch.slurm.mode = o.slurm_mode == "step" ? Mode::Step : o.slurm_mode == "submit" ? Mode::Submit : Mode::Auto;
    launch.slurm.run_root = o.run_root;
    launch.slurm.poll_ms = int(o.poll_s * 1000);
    launch.slurm.save_every_node = o.save_every_node;
    // Off (0) for a Slurm job means a week: its heartbeat check needs a positive timeout.
    launch.slurm.heartbeat_timeout_s = o.heartbeat_timeout_s > 0 ? std::max(2, o.heartbeat_timeout_s) : 7 * 86400;
    return launch;
}

int run_command(const RunOptions& o) {
    const auto loaded = load_spec(o.spec);
    if (!loaded) return kExitUsage;
    const RunSpec& spec = *loaded;
    const LaunchOptions launch = launch_options(o);
    std::unique_ptr<Launcher> launcher;
    try {
        launcher = create_launcher(spec, launch);
    } catch (const LaunchError& e) {
        std::fprintf(stderr, "thresher-launch: error: %s\n", e.what());
        return kExitFailed;
    }

    // A closed stdout (`| head`) must not kill the launcher before it stops its engines.
    std::signal(SIGPIPE, SIG_IGN);
    TerminalOutput term(stderr);
    TraceBuilder trace;  // --trace: the timeline, from the same events
    Progress progress;
    bool stdout_ok = true;
    int exit_code = kExitFailed;
    int stop_signals = 0;

    term.message(QString("thresher-launch: %1: %2").arg(spec.name, describe_cluster(spec)));

    UnixSignals unix_signals({SIGINT, SIGTERM, SIGHUP});
    QObject::connect(&unix_signals, &UnixSignals::received, [&](int sig) {
        if (++stop_signals == 1)
            term.message(QString("thresher-launch: %1: stopping the engines (SIGTERM, SIGKILL after %2 s; Ctrl-C again "
                                 "to kill now)").arg(strsignal(sig)).arg(o.grace_s));
        else
            term.message("thresher-launch: killing the engines now");
        launcher->stop();
    });
    QObject::connect(launcher.get(), &Launcher::event, [&](const QJsonObject& e) {
        if (o.events && stdout_ok) {
            const QByteArray line = QJsonDocument(e).toJson(QJsonDocument::Compact) + '\n';
            stdout_ok = std::fwrite(line.constData(), 1, size_t(line.size()), stdout) == size_t(line.size()) &&
                        std::fflush(stdout) == 0;
        }
        const bool was_started = progress.started();
        progress.add(e);
        if (!o.trace.isEmpty()) trace.add(e);
        const QString kind = e.value("event").toString();
        const int node = e.value("node").toInt();
        if (kind == "run_started" && !was_started)
            term.message(QString("run %1: %2 node(s), %3 worker(s), %4 parameters, %5 on %6")
                             .arg(e.value("run").toString()).arg(e.value("nodes").toInt()).arg(e.value("workers").toInt())
                             .arg(qint64(e.value("params").toDouble())).arg(e.value("strategy").toString(),
                                                                           e.value("backend").toString()) +
                         (e.contains("topology") ? ", topology " + e.value("topology").toString() : QString()));
        else if (kind == "epoch_end" && node == 0)  // node 0 (the controller) speaks for the run
            term.message(progress.epoch_line(e));
        else if (kind == "job_state")  // a queued job: its id, state and Slurm's reason
            term.message(QString("Slurm job %1: %2%3%4").arg(e.value("job").toString(), e.value("state").toString())
                             .arg(e.value("reason").toString().isEmpty() ? QString() : " (" + e.value("reason").toString() + ")")
                             .arg(e.value("nodes").toString().isEmpty() ? QString() : " on " + e.value("nodes").toString()));
        else if (kind == "warning" || kind == "error")
            term.message(QString("node %1: %2: %3").arg(node).arg(kind, e.value("message").toString()));
        term.progress(progress.line());
    });
    QObject::connect(launcher.get(), &Launcher::logLine, [&](const QString& line) {
        if (o.verbose) term.message(line);
    });
    QObject::connect(launcher.get(), &Launcher::finished, [&](int code, const QString& summary) {
        term.done();
        if (!o.trace.isEmpty()) {
            try {
                write_trace(trace, o.trace);
                term.message(QString("timeline: %1 (%2 iterations; open in ui.perfetto.dev)").arg(o.trace).arg(trace.iterations()));
            } catch (const TraceError& e) {
                term.message(QString("thresher-launch: no timeline written: ") + e.what());
            }
        }
        if (code == 0) {
            term.message("run finished: " + summary);
            exit_code = kExitOk;
        } else {
            term.message((code == kExitStopped ? "run stopped: " : "thresher-launch: run failed: ") + summary);
            exit_code = kExitFailed;
        }
        QCoreApplication::exit(0);
    });
    launcher->start(spec);
    QCoreApplication::exec();
    return exit_code;
}

}  // namespace thresher::launcher::cli
