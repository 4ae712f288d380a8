// A run's timeline as Chrome trace-event JSON, the format Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one process per node (pid = node), one thread per worker (tid = the
// global worker number), one complete event (ph "X", ts and dur in µs) per phase of every
// iteration, from the phase times the engine puts in its events (engine/events/README.md).
//
// Example: an iteration event of node 1, worker 3 with start_s 2.5, etl_ms 0.1, receive_ms 1.0
// (decode_ms 0.2), compute_ms 7.0 and step_ms 2.0 (updater 0.4, encode 1.2, apply 0.2, send 0.2)
// becomes, at pid 1 / tid 3:
//   data 2500000+100 · apply received +200 · wait +800 · compute +7000 · updater +400 ·
//   encode +1200 · apply own +200 · send +200 (ts, then dur, in µs)
// Categories say what the worker was doing: compute (forward/backward, updater), communicate
// (encode, apply received, apply own, send), wait (the staleness bound, averaging, data), eval.
//
// Clocks: each node's events count from its own run start; nodes are not aligned to each other.
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QSet>
#include <QString>
#include <limits>
#include <map>
#include <stdexcept>

namespace thresher::launcher {

class TraceError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct TraceRange {
    long first = 0;                                  // the `iter` of an iteration event (1-based)
    long last = std::numeric_limits<long>::max();
    bool contains(long iter) const { return iter >= first && iter <= last; }
};
// "100:200", "100:" or ":200" (inclusive); throws TraceError naming the text.
TraceRange parse_trace_range(const QString& text);

class TraceBuilder {
public:
    explicit TraceBuilder(TraceRange range = {});

    // Any event: iteration events with phase times become slices, epoch_end an eval slice,
    // run_started names the process; everything else is ignored.
    void add(const QJsonObject& event);

    // {"traceEvents": [...], "displayTimeUnit": "ms"}. Throws TraceError when no event carried
    // phase times (events of an engine older than phase times, or a range with no iteration).
    QJsonObject document() const;

    int slices() const { return slices_; }
    int iterations() const { return iterations_; }

private:
    void slice(int pid, int tid, const char* name, const char* cat, double start_us, double dur_us, const QJsonObject& args);

    TraceRange range_;
    QJsonArray events_;
    QSet<int> nodes_;
    std::map<std::pair<int, int>, bool> threads_;  // (node, worker) seen
    std::map<int, int> workers_per_node_;          // from run_started, for the evaluating worker
    int slices_ = 0;
    int iterations_ = 0;
    int without_phases_ = 0;
};

// The events of a JSON-lines file (thresher-launch run --events, or an engine's stdout). A line
// that is not a JSON object with an "event" is a TraceError naming the file and line.
QList<QJsonObject> read_event_file(const QString& path);

// Writes `builder.document()` to `path` (compact JSON); throws TraceError naming the path.
void write_trace(const TraceBuilder& builder, const QString& path);

}  // namespace thresher::launcher
