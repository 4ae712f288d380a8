// ScalingModel: a model of the time per iteration calibrated from a sweep's measured phases and
// fitted to its measured times, to say why a run scaled as it did and to ask "what if" beyond the
// measured worker counts and on other links (issue 14).
//
//   T(n) = C(n) + S(n) + U + [gradient sharing] (E(n) + D × m(n)) + wire(n) + delay  measured, the link
//        + per_peer × (n − 1) + per_kib × KiB(n)                                fitted on what is left
//
// One model per strategy (fit_sweep_model): gradient sharing and parameter averaging spend their
// communication differently (messages beside compute; a synchronous round of every parameter),
// and on a shared machine averaging's rounds slow its own compute phase.
//
// T(n): the measured wall time of one iteration of one worker, waiting, contention and stalls
// included, as the user sees them: each worker's period from its first to its last iteration
// event on its own node's clock, averaged (RunSummary::iteration_period_ms; nodes' clocks are not
// aligned, so n × batch ÷ samples/s over events of several nodes carries their start skew), or
// n × batch ÷ samples/s for results without it. Measured from the iteration events (RunSummary),
// not fitted:
//   C(n)  the compute phase at n workers: data wait + forward and backward (etl_ms + compute_ms;
//         the same work whatever the strategy), or, in results recorded before the phases were
//         kept apart, the RunSummary's compute (with the updater). The mean of the points
//         measured at that count; at other counts c1 + contention × (n − 1), a least-squares line
//         through the measured counts (local nodes share this machine's cores, so compute grows
//         with them; on machines of their own contention is ~0). A strategy measured at fewer than
//         two counts borrows the other strategies' C at the counts it lacks; one that lacks only
//         the lone worker takes the mean of the line's c1 and the other strategies' C(1) (see
//         calibrate(): two independent estimates, each wrong in its own regime of load);
//   S(n)  the strategy's own step work: the updater, averaging's own round work (summing the
//         replicas, the mean, setting them: the engine's average_local_ms, without the exchange),
//         gradient sharing's applying its own message. Measured at each count; elsewhere
//         ratio × C(n), the ratio S ÷ C over the measured points (the same work at any n, on the
//         same cores as the compute: contention stretches both);
//   U     what a 1-worker iteration costs beyond these phases (T(1) − the phases at 1 worker, on
//         the 1-worker points; without one, other strategies' U; else 0): writing events, the
//         loop's checks, which the phase times do not cover and no strategy changes;
//   E(n)  gradient sharing's encode time per iteration: measured at each count, elsewhere
//         ratio × C(n) like S (CPU work on the same cores: at 4 local MLP nodes on 2 cores it took
//         3.3 ms against 1.6 alone); E alone (E(1)) is DL4J's estimate's;
//   D     gradient sharing's decode time per message received;
//   m(n)  messages received per iteration: (n − 1) × the share of peers' messages applied (~1);
//   wire  the bytes on the iteration's critical path ÷ the link's rate (KiB × 8.192 ÷ Mbit/s = ms):
//         the emulated or what-if link's; 0 when the run used the real network (loopback: its
//         cost is in per_kib). Gradient sharing: KiB(n), what a worker sends to its n − 1 peers
//         (a peer's messages of the last iteration must have arrived). Averaging: a round is a
//         star whose two halves follow each other, every node's sums up to the controller, then
//         the result back down the controller's link to each; with K a node's share and KiB(n) =
//         2 (n − 1) K ÷ n per worker, that is 2 (n − 1) K = n × KiB(n) on a switched network (the
//         controller's link carries n − 1 shares each way), and K + (n − 1) K = n² ÷ (2 (n − 1))
//         × KiB(n) under Thresher's emulation (egress only: the uploads run side by side); 2 KiB
//         at 2 nodes either way. Measured (tests/launcher/sweep/data/mlp-pa-by-link, 2 nodes,
//         2 673 KiB per worker per iteration at 250-4000 Mbit/s): KiB × 8.192 ÷ rate predicts
//         the points 32-137 % off, 2 × that within 1.6 %;
//   delay the link's one-way delay: gradient sharing's message crosses it once per iteration;
//         an averaging round twice (up, down) every averaging_frequency iterations (measured:
//         mlp-pa-by-delay, 0.39 ms per iteration per ms of delay at frequency 5; 2 ÷ 5 = 0.4).
//   E is measured at 1 worker too: gradient sharing encodes its update even alone.
// Fitted (least squares over the points on T minus the measured part; a per-peer or per-KiB cost
// that would come out negative is left out, so more peers or bytes never make an iteration
// faster): per_peer (barriers, waits per other worker), per_kib (what a KiB sent costs the host
// beyond the wire: copies, system calls). Both vanish at 1 worker, where T is C + S + U (+ E).
// Points without phase times (older results) fit the old form: C is then a fitted constant.
//
// Beyond the measured counts, KiB(n) per worker (traffic_from): gradient sharing sends each
// message to every other worker, so KiB(n) = (KiB per peer) × (n − 1); an averaging round is a
// star (each node sends its sums to the controller, which sends the result back to each), so
// KiB(n) = K × (n − 1) ÷ n; the factor averaged over the measured multi-worker points.
// What if (one node per machine, a link of R Gbit/s): C, S and E as alone (no cores shared), wire at R.
//
// Leave-one-out: each point is predicted by the model calibrated and fitted on the others from
// its configuration alone (workers, strategy, link): none of its measurements is used, neither
// its phase times (C(n), S(n), E(n) from the other points at its count, or the line and the
// ratios; D, m, U from the others) nor its traffic (KiB(n) from the others, traffic_from);
// |predicted − measured| ÷ measured says how far to trust the model (the bar is 15%; on a machine
// whose load moves, a point's own repeats may scatter more: tests/launcher/sweep/data/README.md).
//
// Worked example: 1 worker at 64 samples per 20 ms (3200/s), 2 workers at 4000/s sending 48 KiB
// per iteration each, no phase times: T(1) = 20 ms, T(2) = 32 ms; with only these two points and
// no third to separate the terms, compute = 20, per_peer = 12 (per_kib left out: the points cannot
// tell them apart, and the smaller set of terms fits as well).
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <map>
#include <optional>

#include "sweep_results.h"

namespace thresher::launcher::sweep {

// A configuration the model predicts a time per iteration for.
struct Scenario {
    int workers = 1;
    double kib_per_worker = 0;  // KiB one worker sends per iteration
    bool gradient_sharing = false;
    int averaging_frequency = 1;   // parameter averaging: iterations per round
    double link_rate_mbit = 0;     // 0: the real network, as measured (its cost is in per_kib)
    double link_delay_ms = 0;      // one way
    bool emulated_link = false;    // Thresher's link emulation (egress only), else a switched network
    bool one_per_machine = false;  // the what-if cluster: C, S and E as one worker alone measured them
};

struct ModelPoint {
    int workers = 1;
    double kib_per_worker = 0;  // KiB sent per iteration by one worker
    double iter_ms = 0;         // measured: workers × batch ÷ samples/s
    // Measured phases (RunSummary); nullopt when the events carried none.
    std::optional<double> compute_ms, encode_ms, decode_ms, messages_per_iter;
    std::optional<double> own_ms;  // S: the strategy's own step work per iteration (phases: updater, averaging's round work, apply)
    bool gradient_sharing = false;
    int averaging_frequency = 1;  // parameter averaging's iterations per round
    double link_rate_mbit = 0, link_delay_ms = 0;  // the run's emulated link (0: the real network)
    // The point's configuration with `kib` per worker (its own traffic, or the others' for a
    // point left out).
    Scenario scenario(double kib) const;
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
    QString strategy;     // the points' strategy; empty: points of any
    bool phases = false;  // C, E, D measured (else compute_ms is the fitted constant)
    double compute_ms = 0;      // C(1)
    double contention_ms = 0;   // C grows by this per extra worker (the line through the counts)
    double unphased_ms = 0;     // T(1) less its phases on the 1-worker points (events, averaging's own copy)
    std::map<int, double> compute_by_workers;  // C measured at each count
    double encode_ms = 0, decode_ms = 0, message_share = 1;  // gradient sharing's E (at 1 worker), D, m(n) ÷ (n − 1)
    std::map<int, double> encode_by_workers;  // E measured at each count
    double encode_ratio = 0;  // E ÷ C over the measured points: where E was not measured, E = ratio × C(n)
    std::map<int, double> own_by_workers;  // S: the strategy's own step work per iteration measured at each count
    double own_ratio = 0;  // S ÷ C over the measured points: where S was not measured, S = ratio × C(n)
    double per_peer_ms = 0, per_kib_ms = 0;  // fitted
    QStringList terms;  // the fitted terms kept: compute (no phases), per_peer, per_kib
    int points = 0;
    QList<LeaveOneOut> leave_one_out;
    std::optional<double> max_loo_error, mean_loo_error;

    // The compute phase at n workers: measured at that count, else the line.
    double compute_at(int workers) const;
    // The strategy's own step work at n workers: measured at that count, else ratio × C(n).
    double own_at(int workers) const;
    // Gradient sharing's encode at n workers: measured at that count, else ratio × C(n) (else E).
    double encode_at(int workers) const;
    // T in that configuration (see the formula above).
    double predict(const Scenario& s) const;
    // The link's part of it: the bytes on the critical path ÷ the rate, and the delay.
    static double link_ms(const Scenario& s);
    // The model's form with its terms, in words ("compute 14.2 ms + 3.1 ms per extra local node …").
    QString describe() const;
    QJsonObject to_json() const;
};

// The time per iteration one point shows, its traffic per worker and its phases; nullopt
// without throughput.
std::optional<ModelPoint> model_point(const PointResult& p);
// Calibrates and fits the model to the points (needs at least one point). other_compute: the
// compute phase other strategies measured per count, used only when these points have fewer
// than two counts (no line to draw).
// other_unphased: U measured by other strategies' 1-worker points, used when these have none.
ScalingModel fit_scaling_model(const QList<ModelPoint>& points, const std::map<int, double>& other_compute = {},
                               std::optional<double> other_unphased = std::nullopt);
// Fits every point of a sweep as one model and runs the leave-one-out test.
ScalingModel fit_scaling_model(const QList<PointResult>& points, const std::map<int, double>& other_compute = {},
                               std::optional<double> other_unphased = std::nullopt);

// A sweep's models: one per strategy (each with its leave-one-out test), and the test's figures
// over all points.
struct SweepModel {
    QList<ScalingModel> models;
    std::optional<double> max_loo_error, mean_loo_error;
    const ScalingModel* for_strategy(const QString& strategy) const;
    QJsonObject to_json() const;
};
SweepModel fit_sweep_model(const QList<PointResult>& points);
// KiB(n) per worker at `workers` from points' traffic (of one strategy): gradient sharing's per
// peer × (n − 1), averaging's × 2 (n − 1) ÷ n (see above), averaged over the multi-worker points.
double traffic_from(const QList<ModelPoint>& points, int workers, bool gradient_sharing);
// KiB(n) per worker for a group's points beyond the measured counts (traffic_from).
double extrapolated_kib(const QList<PointResult>& group, int workers);
// DL4J's estimate of the speedup at n workers from the model's phases (scalability.h):
// n × C(1) ÷ (C(1) + E + D × n).
double dl4j_estimate_speedup(const ScalingModel& model, int workers);

}  // namespace thresher::launcher::sweep
