#include "scaling_model.h"

#include <QJsonArray>
#include <array>
#include <cmath>
#include <limits>

namespace thresher::launcher::sweep {

namespace {

constexpr int kTerms = 3;  // compute, per_peer, per_kib

std::array<double, kTerms> features(const ModelPoint& p) { return {1.0, double(p.workers - 1), p.kib_per_worker}; }

// Least squares over the chosen terms (mask); nullopt when the points cannot determine them.
std::optional<std::array<double, kTerms>> solve(const QList<ModelPoint>& pts, const std::array<bool, kTerms>& use) {
    std::array<int, kTerms> idx{};
    int k = 0;
    for (int t = 0; t < kTerms; ++t)
        if (use[t]) idx[k++] = t;
    if (pts.size() < k) return std::nullopt;
    // Normal equations (k ≤ 3), Gauss-Jordan with partial pivoting.
    double a[kTerms][kTerms + 1] = {};
    for (const auto& p : pts) {
        const auto f = features(p);
        for (int i = 0; i < k; ++i) {
            for (int j = 0; j < k; ++j) a[i][j] += f[idx[i]] * f[idx[j]];
            a[i][k] += f[idx[i]] * p.iter_ms;
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

double residual(const QList<ModelPoint>& pts, const std::array<double, kTerms>& c) {
    double ss = 0;
    for (const auto& p : pts) {
        const auto f = features(p);
        double y = 0;
        for (int t = 0; t < kTerms; ++t) y += c[t] * f[t];
        ss += (y - p.iter_ms) * (y - p.iter_ms);
    }
    return ss;
}

}  // namespace

QJsonObject ScalingModel::to_json() const {
    QJsonObject o{{"fitted", fitted}, {"points", points}};
    if (!fitted) return o;
    o.insert("formula", "iter_ms = compute_ms + per_peer_ms * (workers - 1) + per_kib_ms * KiB sent per worker per iteration");
    o.insert("compute_ms", compute_ms);
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
    m.iter_ms = 1000.0 * p.workers * p.batch / p.samples_per_s;
    m.kib_per_worker = p.bytes_per_iter.value_or(0) / p.workers / 1024.0;
    return m;
}

ScalingModel fit_scaling_model(const QList<ModelPoint>& pts) {
    ScalingModel best;
    best.points = int(pts.size());
    if (pts.isEmpty()) return best;
    // Every subset of terms with compute in it; the best fit with no negative cost wins, and on
    // a tie (within rounding) the one with fewer terms.
    double best_ss = std::numeric_limits<double>::infinity();
    int best_terms = kTerms + 1;
    for (int mask = 1; mask < (1 << kTerms); mask += 2) {
        const std::array<bool, kTerms> use{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
        const auto c = solve(pts, use);
        if (!c) continue;
        if ((*c)[1] < 0 || (*c)[2] < 0) continue;
        const int n = int(use[0]) + int(use[1]) + int(use[2]);
        const double ss = residual(pts, *c);
        const double tie = 1e-9 * (1 + best_ss);
        if (ss < best_ss - tie || (std::abs(ss - best_ss) <= tie && n < best_terms)) {
            best_ss = ss;
            best_terms = n;
            best.fitted = true;
            best.compute_ms = (*c)[0];
            best.per_peer_ms = (*c)[1];
            best.per_kib_ms = (*c)[2];
            best.terms.clear();
            if (use[0]) best.terms << "compute";
            if (use[1]) best.terms << "per_peer";
            if (use[2]) best.terms << "per_kib";
        }
    }
    return best;
}

ScalingModel fit_scaling_model(const QList<PointResult>& results) {
    QList<ModelPoint> pts;
    QList<const PointResult*> used;
    for (const auto& r : results)
        if (auto m = model_point(r)) {
            pts.append(*m);
            used.append(&r);
        }
    ScalingModel model = fit_scaling_model(pts);
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
        const ScalingModel m = fit_scaling_model(rest);
        if (m.fitted) {
            l.predicted_ms = m.predict(pts[i].workers, pts[i].kib_per_worker);
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

double extrapolated_kib(const QList<PointResult>& group, int workers) {
    const PointResult* largest = nullptr;
    for (const auto& p : group)
        if (p.workers > 1 && p.bytes_per_iter && (!largest || p.workers > largest->workers)) largest = &p;
    if (!largest || workers <= 1) return 0;
    const double kib = *largest->bytes_per_iter / largest->workers / 1024.0;
    if (largest->strategy == "gradient-sharing") return kib / (largest->workers - 1) * (workers - 1);
    return kib;
}

}  // namespace thresher::launcher::sweep
