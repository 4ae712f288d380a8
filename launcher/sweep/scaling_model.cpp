#include "scaling_model.h"

#include <QJsonArray>
#include <array>
#include <cmath>
#include <limits>

namespace thresher::launcher::sweep {

namespace {

constexpr int kTerms = 3;  // the constant (compute or overhead), per_peer, per_kib

std::array<double, kTerms> features(const ModelPoint& p) { return {1.0, double(p.workers - 1), p.kib_per_worker}; }

// Least squares of y over the chosen terms (mask); nullopt when the points cannot determine them.
std::optional<std::array<double, kTerms>> solve(const QList<ModelPoint>& pts, const QList<double>& y,
                                                const std::array<bool, kTerms>& use) {
    std::array<int, kTerms> idx{};
    int k = 0;
    for (int t = 0; t < kTerms; ++t)
        if (use[t]) idx[k++] = t;
    if (pts.size() < k) return std::nullopt;
    // Normal equations (k ≤ 3), Gauss-Jordan with partial pivoting.
    double a[kTerms][kTerms + 1] = {};
    for (int i = 0; i < pts.size(); ++i) {
        const auto f = features(pts[i]);
        for (int r = 0; r < k; ++r) {
            for (int c = 0; c < k; ++c) a[r][c] += f[idx[r]] * f[idx[c]];
            a[r][k] += f[idx[r]] * y[i];
        }
    }
    double scale = 0;
    for (int i = 0; i < k; ++i) scale = std::max(scale, std::abs(a[i][i]));
    for (int c = 0; c < k; ++c) {
        int pivot = c;
        for (int r = c + 1; r < k; ++r)
            if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
        if (std::abs(a[pivot][c]) <= 1e-9 * std::max(scale, 1.0)) return std::nullopt;  // terms not separable
        for (int j = 0; j <= k; ++j) std::swap(a[c][j], a[pivot][j]);
        for (int r = 0; r < k; ++r) {
            if (r == c) continue;
            const double f = a[r][c] / a[c][c];
            for (int j = c; j <= k; ++j) a[r][j] -= f * a[c][j];
        }
    }
    std::array<double, kTerms> coef{};
    for (int i = 0; i < k; ++i) coef[idx[i]] = a[i][k] / a[i][i];
    return coef;
}

double residual(const QList<ModelPoint>& pts, const QList<double>& y, const std::array<double, kTerms>& c) {
    double ss = 0;
    for (int i = 0; i < pts.size(); ++i) {
        const auto f = features(pts[i]);
        double v = 0;
        for (int t = 0; t < kTerms; ++t) v += c[t] * f[t];
        ss += (v - y[i]) * (v - y[i]);
    }
    return ss;
}

// A per-worker-count map as JSON: {"1": …, "2": …}.
QJsonObject by_workers_json(const std::map<int, double>& by) {
    QJsonObject o;
    for (const auto& [n, v] : by) o.insert(QString::number(n), v);
    return o;
}

// What a lone worker's iteration costs beyond its measured phases (U): T − C − S − E; nullopt
// for a point of several workers or without a compute phase.
std::optional<double> unphased_of(const ModelPoint& p) {
    if (p.workers != 1 || !p.compute_ms) return std::nullopt;
    return p.iter_ms - *p.compute_ms - p.own_ms.value_or(0) - (p.gradient_sharing ? p.encode_ms.value_or(0) : 0);
}

double mean(const QList<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.isEmpty() ? 0 : s / double(v.size());
}

// C, E, D and m from the points' phase times; false when no point carried a compute phase.
bool calibrate(const QList<ModelPoint>& pts, ScalingModel& m, const std::map<int, double>& other_compute) {
    std::map<int, QList<double>> by_count;
    QList<double> xs, ys, enc, dec, share, own_ratio, enc_ratio;
    std::map<int, QList<double>> own_by_count, enc_by_count;
    for (const auto& p : pts) {
        if (p.compute_ms) {
            by_count[p.workers] << *p.compute_ms;
            xs << double(p.workers - 1);
            ys << *p.compute_ms;
        }
        if (p.gradient_sharing && p.encode_ms) {
            enc << *p.encode_ms;
            enc_by_count[p.workers] << *p.encode_ms;
            if (p.compute_ms && *p.compute_ms > 0) enc_ratio << *p.encode_ms / *p.compute_ms;
        }
        if (p.own_ms && p.compute_ms && *p.compute_ms > 0) {
            own_by_count[p.workers] << *p.own_ms;
            own_ratio << *p.own_ms / *p.compute_ms;
        }
        if (p.gradient_sharing && p.workers > 1) {
            if (p.decode_ms) dec << *p.decode_ms;
            if (p.messages_per_iter) share << *p.messages_per_iter / double(p.workers - 1);
        }
    }
    if (ys.isEmpty()) return false;
    for (const auto& [n, v] : by_count) m.compute_by_workers[n] = mean(v);
    // Fewer than two counts draw no line: the compute other strategies measured at the counts
    // this one lacks (the same model, batch and machine) stands in.
    const bool line = by_count.size() >= 2;
    for (const auto& [n, c] : other_compute)
        if (!line && !m.compute_by_workers.count(n)) {
            m.compute_by_workers[n] = c;
            xs << double(n - 1);
            ys << c;
        }
    // The line through the counts: C = c1 + contention × (n − 1), contention ≥ 0.
    const double mx = mean(xs), my = mean(ys);
    double sxx = 0, sxy = 0;
    for (int i = 0; i < xs.size(); ++i) {
        sxx += (xs[i] - mx) * (xs[i] - mx);
        sxy += (xs[i] - mx) * (ys[i] - my);
    }
    m.contention_ms = sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0;
    const double c1 = my - m.contention_ms * mx;
    // A lone worker that this strategy did not measure: two estimates of one quantity, averaged.
    // The line from its shared counts back to 1 is right while other load keeps the cores busy
    // (each extra process then stretches compute by about the same step) and too high on a quiet
    // machine (below the cores' knee 1 worker has a core to itself); other strategies' lone
    // worker ran the same compute with no peers (no strategy runs anything beside it), but at
    // another moment of a machine whose load moves. Their errors are independent.
    if (line && !m.compute_by_workers.count(1))
        if (auto it = other_compute.find(1); it != other_compute.end()) m.compute_by_workers[1] = (c1 + it->second) / 2;
    m.compute_ms = m.compute_by_workers.count(1) ? m.compute_by_workers.at(1) : c1;
    m.encode_ms = mean(enc);
    for (const auto& [n, v] : enc_by_count) m.encode_by_workers[n] = mean(v);
    m.encode_ratio = mean(enc_ratio);
    for (const auto& [n, v] : own_by_count) m.own_by_workers[n] = mean(v);
    m.own_ratio = mean(own_ratio);
    m.decode_ms = mean(dec);
    m.message_share = share.isEmpty() ? 1.0 : mean(share);
    m.phases = true;
    m.encode_ms = m.encode_at(1);  // E alone: DL4J's estimate, the model in words
    return true;
}

}  // namespace

double traffic_from(const QList<ModelPoint>& points, int workers, bool gradient_sharing) {
    if (workers <= 1) return 0;
    // KiB per worker ÷ its shape in n, averaged over the multi-worker points: gradient sharing
    // sends every message to each of n − 1 peers; an averaging round is a star (every node sends
    // its sums to the controller, which sends the result back to each), 2 (n − 1) ÷ n per worker.
    const auto shape = [&](int n) { return gradient_sharing ? double(n - 1) : double(n - 1) / n; };
    double sum = 0;
    int count = 0;
    for (const auto& p : points)
        if (p.workers > 1 && p.gradient_sharing == gradient_sharing) {
            sum += p.kib_per_worker / shape(p.workers);
            ++count;
        }
    return count == 0 ? 0 : sum / count * shape(workers);
}

double ScalingModel::compute_at(int workers) const {
    if (!phases) return compute_ms;
    if (auto it = compute_by_workers.find(workers); it != compute_by_workers.end()) return it->second;
    // The line, anchored at the count measured nearest below (or C(1)).
    int below = 0;
    for (const auto& [n, c] : compute_by_workers)
        if (n < workers) below = n;
    if (below == 0) return compute_ms + contention_ms * (workers - 1);
    return compute_by_workers.at(below) + contention_ms * (workers - below);
}

double ScalingModel::encode_at(int workers) const {
    if (auto it = encode_by_workers.find(workers); it != encode_by_workers.end()) return it->second;
    return encode_ratio > 0 ? encode_ratio * compute_at(workers) : encode_ms;
}

double ScalingModel::own_at(int workers) const {
    if (auto it = own_by_workers.find(workers); it != own_by_workers.end()) return it->second;
    return own_ratio * compute_at(workers);
}

double ScalingModel::link_ms(const Scenario& s) {
    if (s.workers <= 1) return 0;
    const double n = s.workers;
    double ms = 0;
    if (s.link_rate_mbit > 0) {
        // The KiB on the critical path (the formula above).
        const double critical = s.gradient_sharing ? s.kib_per_worker
                                : s.emulated_link  ? s.kib_per_worker * n * n / (2 * (n - 1))
                                                   : s.kib_per_worker * n;
        ms += critical * 8.192 / s.link_rate_mbit;
    }
    ms += s.gradient_sharing ? s.link_delay_ms : 2 * s.link_delay_ms / std::max(1, s.averaging_frequency);
    return ms;
}

double ScalingModel::predict(const Scenario& s) const {
    const int n = s.workers;
    const int as = s.one_per_machine ? 1 : n;  // the count whose phases apply
    double t = (s.one_per_machine ? compute_ms : compute_at(n)) + unphased_ms + own_at(as);
    if (s.gradient_sharing) t += encode_at(as);
    if (n > 1 && s.gradient_sharing) t += decode_ms * message_share * (n - 1);
    return t + link_ms(s) + per_peer_ms * (n - 1) + per_kib_ms * s.kib_per_worker;
}

QString ScalingModel::describe() const {
    if (!fitted) return "not fitted: no point has finished yet";
    const auto ms = [](double v) { return QString::number(v, 'f', v < 0.1 && v != 0 ? 4 : 2) + " ms"; };
    QStringList parts;
    if (phases) {
        parts << "compute " + ms(compute_ms) + (own_ratio > 0 ? " (measured: data, forward, backward)" : " (measured: data, forward, backward, update)");
        if (contention_ms > 0) parts << ms(contention_ms) + " more compute per extra local node (cores shared)";
        if (unphased_ms != 0) parts << ms(unphased_ms) + " outside these phases (measured at 1 worker)";
        const bool gs = encode_ms > 0 || decode_ms > 0;
        if (own_ratio > 0)
            parts << "the strategy's own work " + ms(own_at(1)) + " at 1 worker (measured: " +
                         (gs ? "updater, applying its own message; " : "updater, the round's own sum, mean and copy; ") +
                         QString::number(own_ratio, 'f', 2) + " × compute where not measured)";
        if (encode_ms > 0 || decode_ms > 0)
            parts << "encode " + ms(encode_ms) + (encode_ratio > 0 ? " at 1 worker (" + QString::number(encode_ratio, 'f', 2) + " × compute where not measured)" : QString()) +
                         " + decode " + ms(decode_ms) + " × messages received (gradient sharing, measured)";
        parts << "the KiB on the critical path ÷ link rate + link delay (averaging: its round crosses the link up and down)";
    } else {
        parts << "compute " + ms(compute_ms) + " (fitted)";
    }
    if (per_peer_ms > 0) parts << ms(per_peer_ms) + " per other worker (fitted: waits, barriers)";
    if (per_kib_ms > 0) parts << ms(per_kib_ms) + " per KiB sent by a worker (fitted: the host's cost of sending)";
    const QString who = strategy.isEmpty() ? QString() : strategy + ": ";
    return who + "time per iteration = " + parts.join(" + ") + QString("; fitted on %1 point(s)").arg(points);
}

QJsonObject ScalingModel::to_json() const {
    QJsonObject o{{"fitted", fitted}, {"points", points}};
    if (!fitted) return o;
    if (!strategy.isEmpty()) o.insert("strategy", strategy);
    o.insert("formula", "iter_ms = C(n) + S(n) + unphased_ms + [gradient sharing] (E(n) + decode_ms * message_share * (n - 1)) + "
                        "link_ms + per_peer_ms * (n - 1) + per_kib_ms * KiB; "
                        "link_ms = critical KiB * 8.192 / link_rate_mbit + delay, critical KiB = KiB (gradient sharing), "
                        "n * KiB (averaging, switched network), n^2 / (2 (n - 1)) * KiB (averaging, emulated link), "
                        "delay = link_delay_ms (gradient sharing), 2 * link_delay_ms / averaging_frequency (averaging); "
                        "C(n) = compute_by_workers[n], else compute_ms + contention_ms * (n - 1); "
                        "S(n) = own_by_workers[n], else own_ratio * C(n); E(n) = encode_by_workers[n], else "
                        "encode_ratio * C(n) (encode_ms without a ratio)");
    o.insert("description", describe());
    o.insert("phases", phases);
    o.insert("compute_ms", compute_ms);
    o.insert("contention_ms", contention_ms);
    o.insert("unphased_ms", unphased_ms);
    o.insert("compute_by_workers", by_workers_json(compute_by_workers));
    o.insert("encode_ms", encode_ms);
    o.insert("encode_by_workers", by_workers_json(encode_by_workers));
    o.insert("encode_ratio", encode_ratio);
    o.insert("decode_ms", decode_ms);
    o.insert("message_share", message_share);
    o.insert("own_by_workers", by_workers_json(own_by_workers));
    o.insert("own_ratio", own_ratio);
    o.insert("per_peer_ms", per_peer_ms);
    o.insert("per_kib_ms", per_kib_ms);
    o.insert("terms", QJsonArray::fromStringList(terms));
    QJsonArray loo;
    for (const auto& l : leave_one_out) {
        QJsonObject e{{"point", l.point}, {"label", l.label}, {"measured_ms", l.measured_ms}};
        if (l.predicted_ms) e.insert("predicted_ms", *l.predicted_ms);
        if (l.relative_error) e.insert("relative_error", *l.relative_error);
        loo.append(e);
    }
    o.insert("leave_one_out", loo);
    if (max_loo_error) o.insert("max_loo_error", *max_loo_error);
    if (mean_loo_error) o.insert("mean_loo_error", *mean_loo_error);
    return o;
}

std::optional<ModelPoint> model_point(const PointResult& p) {
    if (p.samples_per_s <= 0 || p.workers < 1 || p.batch < 1) return std::nullopt;
    ModelPoint m;
    m.workers = p.workers;
    // One worker's period on its own clock where the events allow (no skew between the nodes'
    // clocks, no start-up); else from the run's throughput.
    m.iter_ms = p.period_ms.value_or(1000.0 * p.workers * p.batch / p.samples_per_s);
    m.kib_per_worker = p.bytes_per_iter.value_or(0) / p.workers / 1024.0;
    m.compute_ms = p.compute_ms;
    m.encode_ms = p.encode_ms;
    m.decode_ms = p.decode_ms;
    // With the phases apart (results since cpu_ms): C is the data wait + forward and backward,
    // the same work whatever the strategy; S the strategy's own step work.
    const auto phase = [&](const char* f) { const auto it = p.phases.find(f); return it == p.phases.end() ? 0.0 : it->second; };
    if (p.phases.count("compute_ms") && p.phases.count("updater_ms")) {
        m.compute_ms = phase("etl_ms") + phase("compute_ms");
        m.own_ms = phase("updater_ms") + phase("average_local_ms") + phase("apply_ms");
    }
    m.messages_per_iter = p.messages_per_iter;
    m.gradient_sharing = p.strategy == "gradient-sharing";
    m.averaging_frequency = p.averaging_frequency;
    m.link_rate_mbit = p.link_rate_mbit;
    m.link_delay_ms = p.link_delay_ms;
    return m;
}

Scenario ModelPoint::scenario(double kib) const {
    return {workers, kib, gradient_sharing, averaging_frequency, link_rate_mbit, link_delay_ms,
            link_rate_mbit > 0 || link_delay_ms > 0, false};
}

ScalingModel fit_scaling_model(const QList<ModelPoint>& pts, const std::map<int, double>& other_compute,
                               std::optional<double> other_unphased) {
    ScalingModel best;
    best.points = int(pts.size());
    if (pts.isEmpty()) return best;
    ScalingModel calibrated;
    if (calibrate(pts, calibrated, other_compute)) {
        // What one worker's iteration costs beyond its phases, measured on the 1-worker points.
        QList<double> rest;
        for (const auto& p : pts)
            if (const auto u = unphased_of(p)) rest << *u;
        calibrated.unphased_ms = rest.isEmpty() ? other_unphased.value_or(0.0) : mean(rest);
    }
    // What the fitted terms must explain: the measured time less the measured part.
    QList<double> y;
    for (const auto& p : pts)
        y << p.iter_ms - (calibrated.phases ? calibrated.predict(p.scenario(p.kib_per_worker))
                                            : ScalingModel::link_ms(p.scenario(p.kib_per_worker)));
    // Every subset of terms (with phases, without the constant: at 1 worker the phases are the
    // iteration; without, with it: the constant is the compute); the best fit with no negative
    // cost wins, and on a tie (within rounding) the one with fewer terms.
    double best_ss = std::numeric_limits<double>::infinity();
    int best_terms = kTerms + 1;
    const bool constant = !calibrated.phases;
    for (int mask = constant ? 1 : 0; mask < (1 << kTerms); mask += 2) {
        const std::array<bool, kTerms> use{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
        std::optional<std::array<double, kTerms>> c = std::array<double, kTerms>{};
        if (mask != 0) c = solve(pts, y, use);
        if (!c) continue;
        if ((*c)[1] < 0 || (*c)[2] < 0) continue;
        const int n = int(use[0]) + int(use[1]) + int(use[2]);
        const double ss = residual(pts, y, *c);
        const double tie = 1e-9 * (1 + best_ss);
        if (ss < best_ss - tie || (std::abs(ss - best_ss) <= tie && n < best_terms)) {
            best_ss = ss;
            best_terms = n;
            const int count = best.points;
            best = calibrated;
            best.points = count;
            best.fitted = true;
            if (constant) best.compute_ms = (*c)[0];
            best.per_peer_ms = (*c)[1];
            best.per_kib_ms = (*c)[2];
            best.terms.clear();
            if (constant) best.terms << "compute";
            if (use[1]) best.terms << "per_peer";
            if (use[2]) best.terms << "per_kib";
        }
    }
    return best;
}

ScalingModel fit_scaling_model(const QList<PointResult>& results, const std::map<int, double>& other_compute,
                               std::optional<double> other_unphased) {
    QList<ModelPoint> pts;
    QList<const PointResult*> used;
    for (const auto& r : results)
        if (auto m = model_point(r)) {
            pts.append(*m);
            used.append(&r);
        }
    ScalingModel model = fit_scaling_model(pts, other_compute, other_unphased);
    if (!model.fitted) return model;
    double max_err = 0, sum_err = 0;
    int predicted = 0;
    for (int i = 0; i < pts.size(); ++i) {
        QList<ModelPoint> rest = pts;
        rest.removeAt(i);
        LeaveOneOut l;
        l.point = used[i]->point;
        l.label = used[i]->label;
        l.measured_ms = pts[i].iter_ms;
        const ScalingModel m = fit_scaling_model(rest, other_compute, other_unphased);
        if (m.fitted) {
            // Its configuration only: workers, strategy, link; its traffic too is what the others sent.
            const auto& p = pts[i];
            const double kib = traffic_from(rest, p.workers, p.gradient_sharing);
            l.predicted_ms = m.predict(p.scenario(kib));
            l.relative_error = std::abs(*l.predicted_ms - l.measured_ms) / l.measured_ms;
            max_err = std::max(max_err, *l.relative_error);
            sum_err += *l.relative_error;
            ++predicted;
        }
        model.leave_one_out.append(l);
    }
    if (predicted > 0) {
        model.max_loo_error = max_err;
        model.mean_loo_error = sum_err / predicted;
    }
    return model;
}

const ScalingModel* SweepModel::for_strategy(const QString& strategy) const {
    for (const auto& m : models)
        if (m.strategy == strategy) return &m;
    return nullptr;
}

QJsonObject SweepModel::to_json() const {
    QJsonArray list;
    for (const auto& m : models) list.append(m.to_json());
    QJsonObject o{{"fitted", !models.isEmpty()}, {"per_strategy", list}};
    if (max_loo_error) o.insert("max_loo_error", *max_loo_error);
    if (mean_loo_error) o.insert("mean_loo_error", *mean_loo_error);
    return o;
}

SweepModel fit_sweep_model(const QList<PointResult>& points) {
    SweepModel out;
    QStringList strategies;
    for (const auto& p : points)
        if (!strategies.contains(p.strategy)) strategies << p.strategy;
    double max_err = 0, sum_err = 0;
    int predicted = 0;
    for (const QString& s : strategies) {
        QList<PointResult> mine;
        std::map<int, QList<double>> others;
        for (const auto& p : points) {
            if (p.strategy == s) mine << p;
            else if (auto m = model_point(p); m && m->compute_ms) others[p.workers] << *m->compute_ms;
        }
        std::map<int, double> other_compute;
        for (const auto& [n, v] : others) other_compute[n] = mean(v);
        // U on the other strategies' 1-worker points: T(1) less their measured phases.
        QList<double> other_u;
        for (const auto& p : points)
            if (p.strategy != s)
                if (const auto m = model_point(p))
                    if (const auto u = unphased_of(*m)) other_u << *u;
        const std::optional<double> other_unphased = other_u.isEmpty() ? std::nullopt : std::optional<double>(mean(other_u));
        ScalingModel m = fit_scaling_model(mine, other_compute, other_unphased);
        if (!m.fitted) continue;
        m.strategy = s;
        for (const auto& l : m.leave_one_out)
            if (l.relative_error) {
                max_err = std::max(max_err, *l.relative_error);
                sum_err += *l.relative_error;
                ++predicted;
            }
        out.models << m;
    }
    if (predicted > 0) {
        out.max_loo_error = max_err;
        out.mean_loo_error = sum_err / predicted;
    }
    return out;
}

double extrapolated_kib(const QList<PointResult>& group, int workers) {
    QList<ModelPoint> pts;
    for (const auto& p : group)
        if (p.bytes_per_iter)
            if (auto m = model_point(p)) pts << *m;
    return pts.isEmpty() ? 0 : traffic_from(pts, workers, pts.front().gradient_sharing);
}

double dl4j_estimate_speedup(const ScalingModel& model, int workers) {
    if (workers <= 1 || model.compute_ms <= 0) return workers;
    return workers * model.compute_ms / (model.compute_ms + model.encode_ms + model.decode_ms * workers);
}

}  // namespace thresher::launcher::sweep
