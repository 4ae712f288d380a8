#include "run_metrics.h"

#include <algorithm>
#include <cmath>

namespace thresher::ui {

void RunMetrics::clear() { *this = RunMetrics(rate_window_s_); }

void RunMetrics::add(const QJsonObject& e) {
    const QString kind = e.value("event").toString();
    if (kind == "iteration") {
        add_iteration(e);
    } else if (kind == "epoch_end") {
        const double epoch = e.value("epoch").toDouble() + 1;
        if (e.contains("accuracy")) accuracy_.add(epoch, e.value("accuracy").toDouble());
        if (e.contains("loss")) epoch_loss_.add(epoch, e.value("loss").toDouble());
    } else if (kind == "run_finished") {
        // A run has one status: the worst any node reports (failed > stopped > ok).
        const QString s = e.value("status").toString();
        if (status_.isEmpty() || s == "failed" || (s == "stopped" && status_ == "ok")) status_ = s;
        if (e.contains("wall_s")) wall_s_ = std::max(wall_s_.value_or(0.0), e.value("wall_s").toDouble());
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
        iter_sum_.total += ms;
        ++iter_sum_.count;
    }
    if (e.contains("encode_ms")) {
        encode_sum_.total += e.value("encode_ms").toDouble();
        ++encode_sum_.count;
    }
    if (e.contains("decode_ms") && e.contains("messages_applied")) {
        decode_total_ms_ += e.value("decode_ms").toDouble();
        decoded_messages_ += e.value("messages_applied").toInteger();
    }
    if (e.contains("threshold")) threshold_[worker].add(iter, e.value("threshold").toDouble());
    if (e.contains("density")) density_[worker].add(iter, e.value("density").toDouble());
    if (e.contains("lag_max")) lag_[worker].add(iter, e.value("lag_max").toDouble());
    if (e.contains("wait_ms")) wait_[worker].add(iter, e.value("wait_ms").toDouble());
    if (e.contains("samples")) {
        const qint64 n = e.value("samples").toInteger();
        auto [it, fresh] = samples_.try_emplace(worker, n, n);
        it->second.second = n;
    }

    if (!first_t_) first_t_ = t;
    last_t_ = t;

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

std::optional<double> RunMetrics::final_accuracy() const {
    if (accuracy_.empty()) return std::nullopt;
    return accuracy_.y.back();
}

std::optional<double> RunMetrics::samples_per_s() const {
    if (!first_t_ || !last_t_ || *last_t_ <= *first_t_) return std::nullopt;
    // Samples after each worker's first event, over the time after the first event.
    qint64 total = 0;
    for (const auto& [worker, n] : samples_) total += n.second - n.first;
    return static_cast<double>(total) / (*last_t_ - *first_t_);
}

std::optional<double> RunMetrics::decode_ms_per_message() const {
    if (decoded_messages_ == 0) return std::nullopt;
    return decode_total_ms_ / static_cast<double>(decoded_messages_);
}

}  // namespace thresher::ui
