// Commands with deadlines; see command.h.
#include "command.h"

#include <QTimer>

namespace thresher::launcher {

QString CommandResult::error() const {
    const QString what = program + (args.isEmpty() ? QString() : " " + args.join(' '));
    if (!started) return what + ": could not start " + program + " (is it installed and on PATH?)";
    if (timed_out) return what + ": no answer in time";
    const QString said = err.trimmed().isEmpty() ? out.trimmed() : err.trimmed();
    // Slurm's own messages already start with the program's name ("sbatch: error: …").
    if (said.startsWith(program + ":")) return said;
    return QString("%1: exit %2%3").arg(what).arg(exit_code).arg(said.isEmpty() ? QString() : ": " + said);
}

CommandResult run_command(const QString& program, const QStringList& args, int timeout_ms, const QByteArray& input) {
    CommandResult r{program, args};
    QProcess p;
    p.start(program, args);
    r.started = p.waitForStarted(timeout_ms);
    if (!r.started) return r;
    if (!input.isEmpty()) p.write(input);
    p.closeWriteChannel();
    if (!p.waitForFinished(timeout_ms)) {
        r.timed_out = true;
        p.kill();
        p.waitForFinished(5000);
    }
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

AsyncCommand::AsyncCommand(const QString& program, const QStringList& args, int timeout_ms,
                           std::function<void(const CommandResult&)> done, QObject* parent)
    : QObject(parent), result_{program, args}, done_(std::move(done)) {
    connect(&process_, &QProcess::finished, this, [this] { complete(false); });
    connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart) complete(false);
    });
    QTimer::singleShot(timeout_ms, this, [this] { complete(true); });
    process_.start(program, args);
    process_.closeWriteChannel();
}

AsyncCommand::~AsyncCommand() {
    completed_ = true;
    QObject::disconnect(&process_, nullptr, this, nullptr);
    if (process_.state() != QProcess::NotRunning) {
        process_.kill();
        process_.waitForFinished(5000);
    }
}

void AsyncCommand::complete(bool timed_out) {
    if (completed_) return;
    completed_ = true;
    result_.started = process_.error() != QProcess::FailedToStart;
    result_.timed_out = timed_out;
    if (timed_out && process_.state() != QProcess::NotRunning) {
        process_.kill();
        process_.waitForFinished(5000);
    }
    result_.exit_code = process_.exitStatus() == QProcess::NormalExit && result_.started ? process_.exitCode() : -1;
    result_.out = QString::fromUtf8(process_.readAllStandardOutput());
    result_.err = QString::fromUtf8(process_.readAllStandardError());
    // Queued: `done` may delete this object.
    QMetaObject::invokeMethod(this, [this] { if (done_) done_(result_); }, Qt::QueuedConnection);
}

}  // namespace thresher::launcher
