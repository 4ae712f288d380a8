// SshLauncher: runs every node of an SSH cluster as a thresher-engine on its host (DESIGN.md,
// launcher/README.md "Running engines over SSH"). Per run:
//   - a fresh secret (make_run_secret); it reaches each engine on stdin only (--secret-stdin);
//   - one HostNode (host_node.h) per host, each on its own thread and connection, all at once:
//     connect and verify the host key, upload the engine bundle and the data by hash only where
//     they are missing, upload the model to a per-run folder;
//   - only when every host is ready does any engine start — a host that cannot be reached or
//     logged into, or lacks a library, ends the run before anything runs, with one error naming
//     that host;
//   - stdout lines become `event`s, stderr lines `logLine`s "[host N ADDRESS] …";
//   - a node that exits non-zero stops the run (LaunchOptions::stop_on_node_failure); the
//     summary names the host, its exit code and its last stderr lines;
//   - stop(): every engine's stdin is closed (it stops at its next iteration), and after
//     grace_ms its process group is killed; a second stop() kills at once. The launcher killed
//     outright closes its connections, which closes the engines' stdin the same way.
// Every outcome arrives through finished(); the host threads never touch this object except by
// queued calls into its thread.
#pragma once

#include <QElapsedTimer>
#include <memory>
#include <optional>
#include <vector>

#include "launcher.h"

namespace thresher::launcher::ssh {

class HostNode;
struct HostOutcome;

class SshLauncher : public Launcher {
    Q_OBJECT
public:
    explicit SshLauncher(LaunchOptions options = {}, QObject* parent = nullptr);
    // Kills whatever still runs and waits for the host threads (at most a connect timeout).
    ~SshLauncher() override;

private:
    void launch(const RunSpec& spec) override;
    void halt(bool now) override;
    void host_ready(int rank);
    void host_done(int rank, const HostOutcome& outcome);
    void finish_if_done();

    LaunchOptions options_;
    std::vector<std::unique_ptr<HostNode>> hosts_;
    std::vector<bool> ready_, done_;
    bool started_ = false;  // go() given
    std::shared_ptr<void> run_state_;  // what the host threads share for one run (bundle, data)
};

// Makes create_launcher() return an SshLauncher for SSH clusters (see launcher.h). Call once at
// program start (thresher-launch's main does; the GUI must too).
void register_ssh_launcher();

}  // namespace thresher::launcher::ssh
