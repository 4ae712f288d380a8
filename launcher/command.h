// Running a program with a deadline (Slurm's own commands, thresher-engine export-model), and
// turning a failure into one message that names the command and what it said, e.g.
//   sbatch: error: Batch job submission failed: Invalid partition name specified
// Nothing is passed through a shell.
#pragma once

#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <functional>
#include <memory>

namespace thresher::launcher {

struct CommandResult {
    QString program;  // "sbatch"
    QStringList args{};
    bool started = false;
    bool timed_out = false;
    int exit_code = -1;
    QString out{}, err{};
    bool ok() const { return started && !timed_out && exit_code == 0; }
    // Started, not stopped at the deadline, and ended by a signal rather than an exit.
    bool crashed() const { return started && !timed_out && exit_code == -1; }
    // "sbatch: error: …" (the program's stderr as it wrote it, or why the command did not run).
    QString error() const;
};

// Blocks until the command ends or `timeout_ms` passes (then it is killed).
CommandResult run_command(const QString& program, const QStringList& args, int timeout_ms,
                          const QByteArray& input = {});

// The same without blocking: `done` runs in the caller's thread once the command ended (or was
// killed at its deadline). Deleting the returned object kills the command and drops `done`.
class AsyncCommand : public QObject {
    Q_OBJECT
public:
    AsyncCommand(const QString& program, const QStringList& args, int timeout_ms,
                 std::function<void(const CommandResult&)> done, QObject* parent = nullptr);
    ~AsyncCommand() override;
    // Ends the command now as its deadline would (killed, `done` told timed_out): the deadline's
    // timer calls it, and so can a test that controls when the deadline comes.
    void time_out() { complete(true); }

private:
    void complete(bool timed_out);
    QProcess process_;
    CommandResult result_;
    std::function<void(const CommandResult&)> done_;
    bool completed_ = false;
};

}  // namespace thresher::launcher
