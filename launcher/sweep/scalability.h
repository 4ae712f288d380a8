// Scalability: how throughput grows with workers, against the ideal and against DL4J's estimate
// for gradient sharing (DL4J's "Distributed Training: Gradients Sharing" docs):
//   efficiency_est(n) = iter / (iter + encode + decode × n + overhead)
//   speedup_est(n)    = n × efficiency_est(n)
// with iter = the single-worker iteration time, encode = the time to threshold-encode one update,
// decode = the time to apply one incoming message (all measured in the n-worker run's events)
// and overhead the per-iteration cost the estimate cannot see (0 unless given).
//
// Worked example: 1 worker at 1000 samples/s; 4 workers at 3200 samples/s → speedup 3.2,
// efficiency 0.8. With iter 50 ms, encode 1 ms, decode 0.5 ms: efficiency_est(4) = 50 / (50 + 1 +
// 2) = 0.943, speedup_est 3.77.
#pragma once

#include <QList>
#include <optional>

namespace thresher::launcher::sweep {

struct ScalePoint {
    int workers = 1;
    double samples_per_s = 0;
    std::optional<double> iter_ms, encode_ms, decode_ms;  // means from the run's events
};

struct ScaleRow {
    int workers = 1;
    double samples_per_s = 0;
    double speedup = 1;     // against the smallest run, per worker: sps(n) / (sps(n0) / n0)
    double efficiency = 1;  // speedup / n
    std::optional<double> estimate_speedup, estimate_efficiency;  // DL4J's estimate, when measurable
};

// Rows in increasing worker count; the baseline is the run with the fewest workers.
QList<ScaleRow> scalability(QList<ScalePoint> points, double overhead_ms = 0.0);

}  // namespace thresher::launcher::sweep
