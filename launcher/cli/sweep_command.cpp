// `thresher-launch sweep SWEEP.json [--out DIR]`: runs every point of a sweep (launcher/sweep)
// that the results folder does not already hold, one after another, with the run's progress bar
// on a terminal and one line per finished run; SIGINT/SIGTERM/SIGHUP stop the current run and the
// sweep (what finished stays recorded: the same command resumes). Exit 0 when every run finished
// ok, 1 when one failed or the sweep was stopped, 2 for a bad sweep file or results folder.
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "progress.h"
#include "sweep_runner.h"
#include "terminal_output.h"
#include "unix_signals.h"

namespace thresher::launcher::cli {

using sweep::SweepRow;
using sweep::SweepRunner;
using sweep::SweepSpec;

int sweep_command(const SweepOptions& o) {
    SweepSpec spec;
    try {
        spec = SweepSpec::load(o.sweep);
    } catch (const SpecError& e) {
        std::fprintf(stderr, "thresher-launch: error: %s\n", e.what());
        return kExitUsage;
    }
    const QString out = o.out.isEmpty() ? QDir::current().filePath(spec.name + "-results") : o.out;
    if (o.dry_run) {
        sweep::SweepResults done(spec);
        try {
            done.load(out);
        } catch (const SpecError& e) {
            std::fprintf(stderr, "thresher-launch: error: %s\n", e.what());
            return kExitUsage;
        }
        std::printf("sweep %s: %d point(s) x %d repeat(s); results folder %s\n", qPrintable(spec.name), int(spec.points.size()),
                    spec.repeats, qPrintable(QDir::toNativeSeparators(out)));
        for (const auto& p : spec.points) {
            int finished = 0;
            for (int r = 0; r < spec.repeats; ++r) finished += done.done(p.index, r) ? 1 : 0;
            std::printf("point %d: %s: %d node(s) x %d worker(s); %d/%d run(s) done\n", p.index + 1, qPrintable(p.label),
                        p.spec.node_count(), p.spec.workers_per_node(), finished, spec.repeats);
        }
        return kExitOk;
    }
    std::signal(SIGPIPE, SIG_IGN);
    TerminalOutput term(stderr);
    Progress progress;
    QString current;
    int exit_code = kExitFailed;
    int stop_signals = 0;

    SweepRunner runner(launch_options(o.run));
    UnixSignals unix_signals({SIGINT, SIGTERM, SIGHUP});
    QObject::connect(&unix_signals, &UnixSignals::received, [&](int sig) {
        term.message(++stop_signals == 1 ? QString("thresher-launch: %1: stopping the sweep (finished runs stay recorded)")
                                               .arg(strsignal(sig))
                                         : QString("thresher-launch: stopping now"));
        runner.stop();
    });
    QObject::connect(&runner, &SweepRunner::runStarted,
                     [&](int run, int total, const sweep::SweepPoint& point, int repeat, const RunSpec& spec_of_run) {
                         progress = Progress();
                         current = QString("run %1/%2").arg(run).arg(total);
                         term.message(QString("%1: point %2 (%3)%4: %5 node(s) × %6 worker(s)")
                                          .arg(current).arg(point.index + 1).arg(point.label)
                                          .arg(spec.repeats > 1 ? QString(", repeat %1").arg(repeat + 1) : QString())
                                          .arg(spec_of_run.node_count()).arg(spec_of_run.workers_per_node()));
                     });
    QObject::connect(&runner, &SweepRunner::event, [&](const QJsonObject& e) {
        progress.add(e);
        const QString kind = e.value("event").toString();
        if (kind == "warning" || kind == "error")
            term.message(QString("node %1: %2: %3").arg(e.value("node").toInt()).arg(kind, e.value("message").toString()));
        term.progress(current + " " + progress.line());
    });
    QObject::connect(&runner, &SweepRunner::logLine, [&](const QString& line) {
        if (o.run.verbose) term.message(line);
    });
    QObject::connect(&runner, &SweepRunner::rowReady, [&](const SweepRow& r) {
        term.done();
        term.message(QString("%1: %2: %3 samples/s, %4 ms per iteration, %5 KiB sent per iteration%6%7")
                         .arg(current, r.status)
                         .arg(r.samples_per_s ? QString::number(*r.samples_per_s, 'f', 1) : QString("—"))
                         .arg(r.iter_ms ? QString::number(*r.iter_ms, 'f', 2) : QString("—"))
                         .arg(r.bytes_per_iter ? QString::number(*r.bytes_per_iter / 1024, 'f', 1) : QString("—"))
                         .arg(r.accuracy ? QString(", test accuracy %1").arg(*r.accuracy, 0, 'f', 4) : QString())
                         .arg(r.status == "ok" ? QString() : ": " + r.summary));
    });
    QObject::connect(&runner, &SweepRunner::finished, [&](bool ok, const QString& summary) {
        term.done();
        term.message((ok ? "sweep finished: " : "thresher-launch: sweep incomplete: ") + summary);
        exit_code = ok ? kExitOk : kExitFailed;
        QCoreApplication::exit(0);
    });
    try {
        runner.start(spec, out);
    } catch (const SpecError& e) {
        std::fprintf(stderr, "thresher-launch: error: %s\n", e.what());
        return kExitUsage;
    }
    term.message(QString("thresher-launch: sweep %1: %2 point(s) × %3 repeat(s); %4 run(s) already done in %5, %6 to run")
                     .arg(spec.name).arg(spec.points.size()).arg(spec.repeats).arg(runner.skipped())
                     .arg(QDir::toNativeSeparators(out)).arg(runner.remaining()));
    QCoreApplication::exec();
    return exit_code;
}

}  // namespace thresher::launcher::cli
