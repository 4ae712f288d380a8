// Runs thresher-engine as a child process and splits what it printed: the JSON-lines events of
// stdout (checked against the event contract as they are parsed) and the log on stderr. For
// multi-node tests: free UDP ports, several engines side by side (NodeGroup), and files.
#pragma once

#include <QFile>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>
#include <chrono>
#include <memory>

#include "free_ports.h"
#include "synthetic_data.h"

class QProcess;

struct EngineRun {
    int exit_code = -1;  // -1 when it crashed or was killed
    bool finished = false;
    QString stdout_text, stderr_text;
    QList<QJsonObject> events;   // every stdout line, parsed
    QStringList contract_errors;  // stdout lines that are not contract events

    QList<QJsonObject> of(const QString& event) const;
    QString summary() const;  // for failure messages
};

QString engine_binary();
QString source_dir();
EngineRun run_engine(const QStringList& args, int timeout_ms = 120000);
// Fills events/contract_errors from stdout_text (run_engine does this itself).
void parse_events(EngineRun& r);

// QTest checks that node `node` exited 0 with exactly one run_finished "ok" and nothing but
// contract events on stdout (a failure returns from here; callers stop on QTest::currentTestFailed).
void check_finished_ok(const EngineRun& r, int node);

// Ports for nodes: free over UDP and TCP (tests/support/free_ports.h).
using test_support::free_node_port;
using test_support::free_node_ports;

// Writes `bytes` to `path` with `perms` (0600 by default, as secret files need); false on failure.
bool write_file(const QString& path, const QByteArray& bytes,
                QFile::Permissions perms = QFile::ReadOwner | QFile::WriteOwner);

// Processes started side by side. While the test waits (wait_for, wait_all) the event loop runs,
// so every child's stdout and stderr are read as they come and none blocks on a full pipe (a
// 64 KiB pipe fills after ~150 iteration events). Whatever is still running when the group goes
// away is killed.
class NodeGroup {
public:
    NodeGroup();
    ~NodeGroup();
    NodeGroup(const NodeGroup&) = delete;
    NodeGroup& operator=(const NodeGroup&) = delete;

    // Starts `program` (thresher-engine when empty) with `args`; returns its index.
    int start(const QStringList& args, const QString& program = {});
    int size() const;
    QProcess& process(int i);
    QString stdout_so_far(int i) const;
    // How many events named `event` process i has printed so far.
    int count_events(int i, const QString& event) const;
    // Runs the event loop until `done()` holds or `timeout_ms` passes; returns done().
    template <typename Pred>
    bool wait_for(Pred done, int timeout_ms);
    // Waits until every process has exited (those still running after timeout_ms are killed),
    // then returns what each printed, in start order.
    QList<EngineRun> wait_all(int timeout_ms);

private:
    bool spin(int ms);  // runs the event loop for up to `ms`; false when nothing is running
    struct Node;
    QList<std::shared_ptr<Node>> nodes_;
};

// Runs one engine per argument list concurrently and waits for all of them. With `program` set,
// that program is started instead (e.g. "ip" for `ip netns exec NS thresher-engine ...`).
QList<EngineRun> run_nodes(const QList<QStringList>& args, int timeout_ms = 120000, const QString& program = {});

template <typename Pred>
bool NodeGroup::wait_for(Pred done, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!done() && std::chrono::steady_clock::now() < deadline) spin(50);
    return done();
}
