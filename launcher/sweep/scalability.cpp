#include "scalability.h"

#include <algorithm>

namespace thresher::launcher::sweep {

QList<ScaleRow> scalability(QList<ScalePoint> points, double overhead_ms) {
    QList<ScaleRow> rows;
    if (points.isEmpty()) return rows;
    std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.workers < b.workers; });
    const ScalePoint& base = points.front();
    const double per_worker = base.samples_per_s / base.workers;
    // iter in the estimate is the compute time of one worker alone: the baseline run's.
    const std::optional<double> iter = base.iter_ms;
    for (const auto& p : points) {
        ScaleRow r;
        r.workers = p.workers;
        r.samples_per_s = p.samples_per_s;
        r.speedup = per_worker > 0 ? p.samples_per_s / per_worker : 0;
        r.efficiency = r.speedup / p.workers;
        if (iter && *iter > 0) {
            // One worker alone encodes nothing it needs to send and decodes nothing.
            const double encode = p.workers > 1 ? p.encode_ms.value_or(0) : 0;
            const double decode = p.workers > 1 ? p.decode_ms.value_or(0) : 0;
            r.estimate_efficiency = *iter / (*iter + encode + decode * p.workers + overhead_ms);
            r.estimate_speedup = p.workers * *r.estimate_efficiency;
        }
        rows.append(r);
    }
    return rows;
}

}  // namespace thresher::launcher::sweep
