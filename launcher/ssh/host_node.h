// HostNode: what SshLauncher does for one host of an SSH cluster, on that host's own thread
// (libssh sessions are single-threaded, and connecting or uploading must not block the GUI).
//
//   setup   connect, verify the host key, authenticate (SshSession) → probe (remote cache, arch,
//           fashion-mnist present?, a fresh run folder) → stage the engine bundle and, when the
//           host lacks it, the data (remote_stage.h) → check the engine's libraries resolve
//           there → upload the model to the run folder → report ready, wait for go()
//   run     exec `echo thresher-pid $$ >&2; exec env LD_LIBRARY_PATH=B/lib B/bin/thresher-engine
//           train … --secret-stdin --stdin-heartbeat T`, write the secret line, keep stdin open
//           and write a heartbeat line every T/6 (the engine stops after T of silence: the
//           launcher froze or its machine vanished without closing the connection); stdout → events,
//           stderr → log lines; the first stderr line gives the engine's pid, which is also its
//           process group (sshd starts every session's command in a new session, setsid())
//   stop    stop(false): close stdin (the engine stops at its next iteration, run_finished
//           "stopped"); after grace_ms, or at once with stop(true): `kill -KILL -- -PID` over a
//           second channel; then the channel is closed
//   end     node 0 fetches the saved model (spec `save`) by SFTP; the run folder is removed
//
// The thread talks to its owner only through HostCallbacks, which must be thread-safe (SshLauncher
// queues each call into its own thread). It never touches a QObject.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "run_spec.h"
#include "ssh_session.h"
#include "staged_tree.h"

namespace thresher::launcher::ssh {

struct HostPlan {
    int rank = 0;
    QString address;     // as the spec says (for log prefixes)
    SshTarget target;
    AskSecret ask_secret;
    RunSpec spec;
    QString remote_cache;  // "~/…" allowed
    QByteArray model_json;
    QByteArray secret;
    QByteArray run_nonce;  // engine --run-nonce: one per run, the same on every host
    // Shared between hosts, computed once by whoever asks first (may throw LaunchError).
    std::function<StagedTree()> bundle;
    // The spec's data (or this machine's fashion-mnist); with per-node shard placement only what
    // this node owns of the shard set (staged_tree.h shard_subset_tree).
    std::function<StagedTree()> data;
    int grace_ms = 5000;
    int start_timeout_s = 120;
    int heartbeat_timeout_s = 30;  // engine --stdin-heartbeat; a line every sixth of it (0: off)
};

// How a host's part of the run ended.
struct HostOutcome {
    enum class Kind { Ended, Failed, Aborted };
    Kind kind = Kind::Aborted;
    bool engine_started = false;
    int exit_code = 0;        // Ended: the engine's status (128 + N for signal N)
    QString message;          // Failed: the whole error, naming the host
    QStringList stderr_tail;  // the engine's last stderr lines
};

struct HostCallbacks {
    std::function<void(int rank, const QString& line)> log;  // complete line, prefix included
    std::function<void(int rank, const QList<QJsonObject>& events)> events;
    std::function<void(int rank)> ready;  // setup done: waiting for go()
    std::function<void(int rank, const HostOutcome& outcome)> done;  // last call
};

class HostNode {
public:
    HostNode(HostPlan plan, HostCallbacks callbacks);
    // Kills the engine if it still runs and joins the thread.
    ~HostNode();
    HostNode(const HostNode&) = delete;
    HostNode& operator=(const HostNode&) = delete;

    void go();               // every host is ready: start the engine
    void stop(bool now);     // see the top of this file; before the engine started: abort setup
    QString label() const;   // "host N ADDRESS"

    static constexpr int kTailLines = 8;

private:
    struct Aborted {};
    void main();
    void run(HostOutcome& outcome);
    void check_abort();
    void log(const QString& line) const;

    HostPlan plan_;
    HostCallbacks callbacks_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool go_ = false;
    std::atomic<bool> abort_{false};
    std::atomic<int> stop_level_{0};  // 0 running, 1 close stdin (grace), 2 kill now
    std::thread thread_;
};

// 'text' with every ' escaped: one word for any POSIX shell.
std::string shell_quote(const std::string& text);

}  // namespace thresher::launcher::ssh
