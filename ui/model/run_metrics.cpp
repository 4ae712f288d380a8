#include "run_metrics.h"

#include <QJsonArray>

#include <algorithm>
#include <cmath>

namespace thresher::ui {

void RunMetrics::clear() { *this = RunMetrics(rate_window_s_); }

void RunMetrics::add(const QJsonObject& e) {
    summary_.add(e);
    const QString kind = e.value("event").toString();
    if (kind == "iteration") {
        add_iteration(e);
    } else if (kind == "epoch_end") {
        const double epoch = e.value("epoch").toDouble() + 1;
        if (e.contains("accuracy")) accuracy_.add(epoch, e.value("accuracy").toDouble());
        const QJsonArray outputs = e.value("outputs").toArray();
        for (qsizetype k = 1; k < outputs.size(); ++k) {  // the first is the main output: accuracy_
            const QJsonObject o = outputs[k].toObject();
            if (o.contains("accuracy"))
                output_accuracy_[o.value("name").toString()].add(epoch, o.value("accuracy").toDouble());
        }
        if (e.contains("loss")) epoch_loss_.add(epoch, e.value("loss").toDouble());
    } else if (kind == "run_finished") {
        // summary_ keeps the status and wall time.
    } else if (kind == "warning") {
        ++warnings_;
    } else if (kind == "error") {
        ++errors_;
    } else {
        return;
    }
    ++revision_;
}

void RunMetrics::add_iteration(const QJsonObject& e) {
    const int worker = e.value("worker").toInt();
    const int node = e.value("node").toInt();
    const double iter = e.value("iter").toDouble();
    const double t = e.value("t").toDouble();
    if (e.contains("loss")) {
        auto& [sum, n] = loss_by_iter_[e.value("iter").toInteger()];
        sum += e.value("loss").toDouble();
        ++n;
    }
    if (e.contains("iter_ms")) {
        const double ms = e.value("iter_ms").toDouble();
        iter_ms_[worker].add(iter, ms);
    }
    if (e.contains("threshold")) threshold_[worker].add(iter, e.value("threshold").toDouble());
    if (e.contains("density")) density_[worker].add(iter, e.value("density").toDouble());
    if (e.contains("lag_max")) lag_[worker].add(iter, e.value("lag_max").toDouble());
    if (e.contains("wait_ms")) wait_[worker].add(iter, e.value("wait_ms").toDouble());
    if (e.contains("bytes_tx") && e.contains("bytes_rx")) {
        const double tx = e.value("bytes_tx").toDouble(), rx = e.value("bytes_rx").toDouble();
        auto [it, fresh] = rate_state_.try_emplace(node, RateState{t, tx, rx});
        RateState& s = it->second;
        if (!fresh && t - s.t >= rate_window_s_) {
            const double dt = t - s.t;
            // Workers of one node report the node's counters, possibly out of order: never a
            // negative rate.
            tx_rate_[node].add(t, std::max(0.0, tx - s.tx) / dt);
            rx_rate_[node].add(t, std::max(0.0, rx - s.rx) / dt);
            s = {t, std::max(s.tx, tx), std::max(s.rx, rx)};
        }
    }
}

Series RunMetrics::loss() const {
    Series out;
    out.x.reserve(static_cast<qsizetype>(loss_by_iter_.size()));
    out.y.reserve(static_cast<qsizetype>(loss_by_iter_.size()));
    for (const auto& [iter, sum_n] : loss_by_iter_) out.add(static_cast<double>(iter), sum_n.first / sum_n.second);
    return out;
}

Series RunMetrics::smoothed_loss(double weight) const {
    const Series raw = loss();
    Series out;
    out.x = raw.x;
    out.y.reserve(raw.y.size());
    double s = 0, norm = 0;
    for (double v : raw.y) {
        s = weight * s + (1 - weight) * v;
        norm = weight * norm + (1 - weight);
        out.y.append(s / norm);
    }
    return out;
}

}  // namespace thresher::ui
