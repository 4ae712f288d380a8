// RunSummary: the figures that describe one finished run, from its events alone (DESIGN.md "The
// event contract"): throughput, mean phase times, traffic per iteration, final test accuracy.
// The sweep records one per run; the app's RunMetrics keeps one for its history rows, so both
// compute them the same way.
//
// Traffic per iteration: every node's bytes_tx is cumulative. What an iteration costs the link
// is what a node sent between its first and its last iteration event ÷ the iterations between
// (the largest `iter` at each), summed over the nodes: what a run sends once is left out. An MLP
// run of 2 nodes × 64 iterations, measured: gradient sharing's nodes sent 3.0 MB over their
// iterations and 7.2 MB more after the last one (the drain and the end of the run); averaging's
// 172 MB and 14.4 MB more (the final average). 2 nodes that each sent 3.1 MB between iteration 1
// and 101: 62 000 bytes per iteration. A node with fewer than two iteration events carrying
// bytes_tx counts its largest bytes_tx over all the iterations (runs of one iteration, events
// from older engines). A run shorter than one averaging round sends nothing in between: 0.
#pragma once

#include <QJsonObject>
#include <QString>
#include <map>
#include <optional>

namespace thresher::launcher::sweep {

// The iteration events' phase fields (engine/events/README.md) RunSummary averages.
inline constexpr const char* kPhaseFields[] = {"etl_ms",  "receive_ms", "wait_ms",    "compute_ms",       "step_ms",
                                               "updater_ms", "encode_ms", "apply_ms", "send_ms",          "average_ms",
                                               "average_local_ms", "comm_wait_ms", "iter_ms"};

class RunSummary {
public:
    void add(const QJsonObject& event);
    void clear() { *this = RunSummary(); }

    // Samples per second of the whole run: the sum of every worker's rate over its own span of `t`.
    std::optional<double> samples_per_s() const;
    // Means over every iteration event seen (ms); nullopt when none carried the field.
    std::optional<double> mean_iter_ms() const { return mean(iter_); }
    std::optional<double> mean_encode_ms() const { return mean(encode_); }
    // Mean compute phase of one iteration: data wait + forward and backward + updater
    // (etl_ms + compute_ms + updater_ms), what the iteration costs without communication.
    std::optional<double> mean_compute_ms() const { return mean(compute_); }
    // Messages one worker applied per iteration (messages_applied ÷ iteration events carrying it).
    std::optional<double> messages_per_iteration() const;
    // Mean time to apply one other worker's message (decode_ms / messages_applied).
    std::optional<double> decode_ms_per_message() const;
    // The mean of a phase field over every iteration event, an event without it counting 0 (wait_ms,
    // average_ms, send_ms: averaging's round comes every K iterations); nullopt when no event
    // carried it.
    std::optional<double> mean_phase_ms(const QString& field) const;
    // One worker's period from one iteration to the next on its own node's clock (nodes' clocks
    // are not aligned, DESIGN.md), averaged over the workers: (last t − first t) ÷ the iterations
    // between, so neither the nodes' start skew nor the first iteration's warm-up counts.
    std::optional<double> iteration_period_ms() const;
    // The CPU one worker's iteration costs (the process's, every thread: the engine's `cpu_ms`
    // between a node's first and last iteration event ÷ the iterations its workers ran in
    // between), averaged over the nodes; and the cores the run kept busy (Σ over nodes of CPU
    // time ÷ wall time over the same span). nullopt when the events carried no cpu_ms.
    std::optional<double> cpu_ms_per_iteration() const;
    std::optional<double> cores_used() const;
    // Bytes all nodes sent per iteration (see above); nullopt before any iteration.
    std::optional<double> bytes_per_iteration() const;
    std::optional<double> final_accuracy() const { return accuracy_; }
    // The slowest node's wall_s from run_finished; nullopt while running.
    std::optional<double> wall_s() const { return wall_s_; }
    QString status() const { return status_; }  // run_finished's worst status, empty while running
    qint64 iterations() const { return iterations_; }  // per worker: the largest iter (1-based)
    int workers() const { return workers_; }            // from run_started; 0 before it

private:
    struct Sum {
        double total = 0;
        qint64 count = 0;
    };
    static std::optional<double> mean(const Sum& s) {
        if (s.count == 0) return std::nullopt;
        return s.total / static_cast<double>(s.count);
    }
    void add_iteration(const QJsonObject& e);

    std::map<int, std::pair<qint64, qint64>> samples_;  // per worker: first and latest cumulative `samples`
    struct Span {
        double first_t = 0, last_t = 0;
        qint64 first_iter = 0, last_iter = 0;
    };
    std::map<int, Span> spans_;          // per worker, on its node's clock
    struct Cpu {
        double first_t = 0, last_t = 0, first_ms = 0, last_ms = 0;
        qint64 events = 0;
    };
    std::map<int, Cpu> cpu_;             // per node
    std::map<QString, double> phases_;  // per phase field: its total over the iteration events
    qint64 iteration_events_ = 0;
    struct Tx {
        double first = 0, last = 0;     // bytes_tx at the node's first and last iteration event
        qint64 first_iter = 0, last_iter = 0;
        bool seen = false;              // an iteration event carried bytes_tx
        double total = 0;               // the largest bytes_tx, run_finished's included
    };
    std::map<int, Tx> node_tx_;  // per node
    Sum iter_, encode_, compute_;
    qint64 message_events_ = 0;  // iteration events that carried messages_applied
    double decode_total_ms_ = 0;
    qint64 decoded_messages_ = 0;
    qint64 iterations_ = 0;
    int workers_ = 0;
    std::optional<double> accuracy_, wall_s_;
    QString status_;
};

}  // namespace thresher::launcher::sweep
