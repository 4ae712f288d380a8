// ScalingModel: a model of the time per iteration fitted to a sweep's measured points, to say
// why a run scaled as it did and to guess beyond the measured worker counts.
//
//   T(n) = compute + per_peer × (n − 1) + per_kib × KiB(n)          (ms per iteration)
//
// T(n) is the measured wall time of one iteration of one worker, from throughput:
// n × batch ÷ samples/s (so waiting, contention and stalls count, as the user sees them).
// compute: one worker's forward, backward and update; per_peer: what each other worker costs
// (decoding and applying its messages, a barrier's round trip); per_kib: what each KiB a worker
// sends per iteration costs (encoding, the network). Least squares over the points; a term
// whose coefficient would come out negative (it explains nothing these points can show) is left
// out, so the model never predicts that more peers or bytes make an iteration faster.
//
// Beyond the measured counts, KiB(n) per worker: gradient sharing sends each message to every
// other worker, so KiB(n) = (KiB per peer at the largest measured n) × (n − 1); parameter
// averaging sends its parameters once per round whatever n, so KiB(n) = the largest measured n's.
//
// Leave-one-out: each point is predicted by the model fitted on the others; the relative error
// |predicted − measured| ÷ measured says how far to trust the model (the bar is 15%).
//
// Worked example: 1 worker at 64 samples per 20 ms (3200/s), 2 workers at 4000/s sending 48 KiB
// per iteration each: T(1) = 20 ms, T(2) = 32 ms; with only these two points and no third to
// separate the terms, compute = 20, per_peer = 12 (per_kib left out: the points cannot tell them
// apart, and the smaller set of terms fits as well).
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <optional>

#include "sweep_results.h"

namespace thresher::launcher::sweep {

struct ModelPoint {
    int workers = 1;
    double kib_per_worker = 0;  // KiB sent per iteration by one worker
    double iter_ms = 0;         // measured: workers × batch ÷ samples/s
};

struct LeaveOneOut {
    int point = 0;  // PointResult::point
    QString label;
    double measured_ms = 0;
    std::optional<double> predicted_ms;  // nullopt: the other points could not fit a model
    std::optional<double> relative_error;
};

struct ScalingModel {
    bool fitted = false;
    double compute_ms = 0, per_peer_ms = 0, per_kib_ms = 0;
    QStringList terms;  // the terms kept: compute, per_peer, per_kib
    int points = 0;
    QList<LeaveOneOut> leave_one_out;
    std::optional<double> max_loo_error, mean_loo_error;

    double predict(int workers, double kib_per_worker) const {
        return compute_ms + per_peer_ms * (workers - 1) + per_kib_ms * kib_per_worker;
    }
    QJsonObject to_json() const;
};

// The time per iteration one point shows, and its traffic per worker; nullopt without throughput.
std::optional<ModelPoint> model_point(const PointResult& p);
// Fits the model to the points (least squares, non-negative terms; needs at least one point).
ScalingModel fit_scaling_model(const QList<ModelPoint>& points);
// Fits every point of a sweep and runs the leave-one-out test.
ScalingModel fit_scaling_model(const QList<PointResult>& points);
// KiB(n) per worker for a group's points beyond the measured counts (see above).
double extrapolated_kib(const QList<PointResult>& group, int workers);

}  // namespace thresher::launcher::sweep
