// LocalLauncher: runs every node of a local cluster as a thresher-engine process on this
// machine. Per run it makes a fresh secret in a private temporary folder (mode 0600 file, never
// on a command line), writes an inline model there, starts one engine per node, streams their
// stdout as events and their stderr as "[node N] " log lines, and ends them without leaving any
// behind:
//  - each engine leads its own process group (setsid), so a stop reaches it and anything it
//    started, and a Ctrl-C in the launcher's terminal is handled by the launcher, not the engines;
//  - stop(): SIGTERM to every group, `grace_ms`, then SIGKILL to the groups still there;
//  - a node that exits non-zero stops the run (LaunchOptions::stop_on_node_failure); the summary
//    names the node, its exit code and its last stderr lines;
//  - a launcher killed with SIGKILL runs no cleanup at all, so each engine asks the kernel for
//    SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG, see local_launcher.cpp).
// start() must be called from a thread that outlives the run (the GUI or main thread): the
// kernel sends the parent-death signal when the forking *thread* exits.
#pragma once

#include <QElapsedTimer>
#include <QList>
#include <QTimer>
#include <memory>
#include <optional>
#include <vector>

#include "launcher.h"

class QTemporaryDir;

namespace thresher::launcher {

class LocalLauncher : public Launcher {
    Q_OBJECT
public:
    explicit LocalLauncher(LaunchOptions options = {}, QObject* parent = nullptr);
    // Ends whatever still runs at once (SIGKILL to each group) and waits for it.
    ~LocalLauncher() override;

    // Process ids of the engines still running; each is also its process group's id.
    QList<qint64> pids() const;

    // The engine program: `option` when given, else thresher-engine next to this program,
    // else the one on $PATH; empty when none is found.
    static QString find_engine(const QString& option);

private:
    struct Node;
    void start_node(Node& node, const QString& program, const QStringList& args);
    void read_stdout(Node& node);
    void read_stderr(Node& node, bool flush);
    void node_exited(Node& node, int code, bool crashed);
    void launch(const RunSpec& spec) override;
    void halt(bool now) override;
    void kill_remaining();
    void finish_if_done();

    LaunchOptions options_;
    std::vector<std::unique_ptr<Node>> nodes_;
    std::unique_ptr<QTemporaryDir> dir_;
    QString secret_path_;
    QTimer grace_;
    int killed_ = 0;  // groups that needed SIGKILL
};

}  // namespace thresher::launcher
