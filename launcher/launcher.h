// Launcher: what the GUI's Launch button and `thresher-launch run` drive, whatever the cluster.
// LocalLauncher starts engines on this machine; the SSH launcher (a later session, libssh) will
// implement the same interface, so callers only ever see these signals:
//   event(QJsonObject)       every engine event, merged from all nodes, tagged with "node"
//   logLine(QString)         engine stderr, one line at a time, prefixed "[node N] "
//   finished(exitCode, summary)  once, after every process of the run has ended
#pragma once

#include <QJsonObject>
#include <QObject>
#include <QString>
#include <memory>
#include <stdexcept>

#include "run_spec.h"

namespace thresher::launcher {

// finished()'s exitCode: 0 when every node finished; else the first failing node's status as a
// shell reports it (its exit code, or 128 + signal when a signal ended it), or one of these.
constexpr int kExitStopped = -1;        // stop() ended the run
constexpr int kExitCouldNotStart = 127;  // an engine could not be started (or files not written)

struct LaunchOptions {
    QString engine;          // thresher-engine to run; empty: next to this program, else $PATH
    int grace_ms = 5000;     // stop(): SIGTERM, this long, then SIGKILL
    bool stop_on_node_failure = true;  // a node that fails ends the whole run
};

// The run cannot be launched at all (e.g. an SSH cluster in a build without SSH).
class LaunchError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Launcher : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    ~Launcher() override = default;

    // Starts the run; every outcome, failure to start included, arrives through finished().
    virtual void start(const RunSpec& spec) = 0;
    // Ends the run: SIGTERM, the grace period, then SIGKILL. finished() follows.
    virtual void stop() = 0;
    virtual bool running() const = 0;

Q_SIGNALS:
    void event(const QJsonObject& event);
    void logLine(const QString& line);
    void finished(int exitCode, const QString& summary);
};

// The launcher the spec's cluster needs. Throws LaunchError for SSH clusters in this build.
std::unique_ptr<Launcher> create_launcher(const RunSpec& spec, const LaunchOptions& options, QObject* parent = nullptr);

}  // namespace thresher::launcher
