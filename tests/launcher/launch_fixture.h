// Shared by the launcher suites that run real processes: the binaries, a tiny model and CSV
// written by the test, run specs, free consecutive ports, and a look at /proc to prove that no
// engine outlives its run.
#pragma once

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

#include "synthetic_data.h"

namespace launch_fixture {

// THRESHER_BIN_DIR/name (thresher-engine, thresher-launch).
QString bin(const QString& name);

// 16 features, 3 classes, `rows` rows; the last column is the class.
using test_support::three_class_csv;
// Trains in milliseconds on three_class_csv.
extern const char* const kTinyModel;
// Two 512-unit layers: about a millisecond per iteration, for runs that must last.
extern const char* const kSlowModel;

// A local run spec (JSON text). `model` is a path or a JSON object; `training` is the body of
// the training object; `extra` more top-level fields (`"save":"x.thr"`).
QByteArray local_spec(const QString& model, const QString& data, int nodes, int port, const QString& training,
                      const QString& extra = {});

// A port P such that P .. P+count-1 are free for UDP and TCP on 127.0.0.1 right now
// (test_support::free_port_block: below the ephemeral range, never the same twice).
int free_ports(int count);

bool write_file(const QString& path, const QByteArray& bytes);

// A program run to its end: exit code (-1: crashed, or killed at the timeout), stdout, stderr.
struct Finished {
    int code = -1;
    QByteArray out, err;
    QString text() const;  // all of it, for failure messages
};
Finished run_to_end(const QString& program, const QStringList& args, int timeout_ms);
// How many JSON lines of `jsonl` are event `event` from node `node`.
int event_count(const QByteArray& jsonl, const QString& event, int node);
// thresher-launch with `args`, to its end: run_to_end() as text.
struct CliRun {
    int exit_code = -1;  // -1: it crashed, could not start, or was killed
    QString out, err;
};
CliRun run_cli(const QStringList& args, int timeout_ms = 120000);

struct Proc {
    qint64 pid = 0, ppid = 0, pgid = 0;
    char state = '?';
    QString comm;
};
// Every process in /proc now (zombies included, state 'Z').
QList<Proc> processes();
// True while `pid` exists and is not a zombie (a zombie runs nothing and holds nothing).
bool alive(qint64 pid);
// Live processes (not zombies) whose command line contains `marker`, this process excluded.
QList<qint64> pids_with_cmdline(const QString& marker);

}  // namespace launch_fixture
