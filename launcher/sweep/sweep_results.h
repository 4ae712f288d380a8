// SweepResults: what a sweep measured — one row per run (a point × a repeat), the points' means
// and spreads, and each point's speedup and efficiency — kept in the results folder as
// results.json (read back to resume: a point's run that finished "ok" with the same run spec is
// not run again) and results.csv (one row per run, for spreadsheets and pandas).
//
// Speedup: a point is compared with the point of its group that has the fewest workers, a group
// being the points equal on every axis but the worker-count ones (nodes, workers per node):
// speedup = samples/s ÷ (the baseline's samples/s ÷ its workers), efficiency = speedup ÷ workers
// (scalability.h). Strategy × nodes 1, 2: gradient sharing on 2 nodes against gradient sharing
// on 1, averaging against averaging.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <map>
#include <optional>

#include "run_summary.h"
#include "scalability.h"
#include "sweep_spec.h"

namespace thresher::launcher::sweep {

struct SweepRow {
    int point = 0;   // SweepPoint::index
    int repeat = 0;  // 0-based
    QJsonObject spec;  // the point's run spec (resume compares it)
    QList<QJsonValue> values;  // the axis values
    QString status;    // ok | failed | stopped
    QString summary;   // the launcher's last words
    int workers = 0;
    std::optional<double> samples_per_s, iter_ms, encode_ms, decode_ms, bytes_per_iter, accuracy, wall_s;
    std::optional<double> compute_ms, messages_per_iter;  // the compute phase; messages applied per iteration
    std::optional<double> period_ms;  // one worker's iteration period on its own clock (RunSummary)
    std::map<QString, double> phases;  // mean ms per iteration of each phase field (RunSummary::mean_phase_ms)
    std::optional<double> cpu_ms, cores_used;  // CPU per worker-iteration, cores kept busy (RunSummary)
    std::optional<double> load;  // the machine's 1-minute load average when the run ended (Linux; else none)
    int cpu_threads = 0;  // the launching machine's CPU threads (where local nodes run); 0: not recorded
    qint64 iterations = 0;

    static SweepRow from(const SweepPoint& point, int repeat, const RunSummary& summary, int exit_code,
                         const QString& launcher_summary);
    QJsonObject to_json() const;
    static SweepRow from_json(const QJsonObject& o);
};

// A point over its repeats: means, the spread (sample standard deviation, 0 for one run), and
// speedup/efficiency against its group's baseline.
struct PointResult {
    int point = 0;
    QString label;
    QList<QJsonValue> values;
    int workers = 0;
    int batch = 0;     // per worker (training.batch)
    QString strategy;  // training.strategy
    int runs = 0;  // finished ok
    double samples_per_s = 0, samples_per_s_spread = 0;
    std::optional<double> iter_ms, iter_ms_spread, encode_ms, decode_ms, bytes_per_iter, accuracy;
    std::optional<double> compute_ms, messages_per_iter;  // means over the runs (RunSummary)
    std::optional<double> period_ms, period_ms_spread;    // one worker's iteration period (RunSummary)
    std::map<QString, double> phases;                     // means over the runs of each phase field
    std::optional<double> cpu_ms, cores_used;             // means over the runs (RunSummary)
    int threads = 0;           // training.threads (0: automatic)
    int averaging_frequency = 5;  // training.averaging_frequency (parameter averaging's iterations per round)
    double link_rate_mbit = 0; // cluster.link.rate_mbit (0: the real network)
    double link_delay_ms = 0;  // cluster.link.delay_ms
    bool local = true;         // local nodes share this machine's cores
    int cpu_threads = 0;       // the CPU threads of the machine its runs were launched on (0: not recorded)
    double speedup = 1, efficiency = 1;
    std::optional<double> estimate_speedup;  // DL4J's
    QString group;  // the non-worker axis values ("strategy = gradient-sharing"); empty: one group
};

// Local points that ran more engine threads than their machine has CPU threads (workers ×
// training.threads, all of them per worker when threads is automatic), said in words for the
// report and the Scalability tab; empty when there are none. Their time per iteration includes
// waiting for a core, which a cluster of machines would not have.
QString past_the_cores(const QList<PointResult>& points);

// The machine's 1-minute load average (/proc/loadavg); nullopt where there is none.
std::optional<double> load_average();
// The machine the results were measured on: host, system, CPU threads, load average, time.
QJsonObject machine_facts_json();

class SweepResults {
public:
    explicit SweepResults(SweepSpec sweep) : sweep_(std::move(sweep)) {}

    // Reads DIR/results.json when it exists and keeps the rows that belong to this sweep's points
    // (same run spec); throws SpecError when the file is unreadable.
    void load(const QString& dir);
    // load()'s reading of a results file's text; `path` names it in errors.
    void read(const QByteArray& text, const QString& path);
    // Writes results.json and results.csv (atomically) into `dir`; throws SpecError.
    void save(const QString& dir) const;

    const SweepSpec& sweep() const { return sweep_; }
    const QList<SweepRow>& rows() const { return rows_; }
    void add(const SweepRow& row);
    // A finished ("ok") run of this point and repeat is already recorded.
    bool done(int point, int repeat) const;
    QList<PointResult> points() const;  // points with at least one ok run, in point order
    QString csv() const;

private:
    SweepSpec sweep_;
    QList<SweepRow> rows_;
};

}  // namespace thresher::launcher::sweep
