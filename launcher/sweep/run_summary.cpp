#include "run_summary.h"

#include <algorithm>

namespace thresher::launcher::sweep {

void RunSummary::add(const QJsonObject& e) {
    const QString kind = e.value("event").toString();
    if (kind == "iteration") {
        add_iteration(e);
    } else if (kind == "run_started") {
        workers_ = std::max(workers_, e.value("workers").toInt());
    } else if (kind == "epoch_end") {
        if (e.contains("accuracy")) accuracy_ = e.value("accuracy").toDouble();
    } else if (kind == "run_finished") {
        // A run has one status: the worst any node reports (failed > stopped > ok).
        const QString s = e.value("status").toString();
        if (status_.isEmpty() || s == "failed" || (s == "stopped" && status_ == "ok")) status_ = s;
        if (e.contains("wall_s")) wall_s_ = std::max(wall_s_.value_or(0.0), e.value("wall_s").toDouble());
        if (e.contains("bytes_tx")) {
            Tx& tx = node_tx_[e.value("node").toInt()];
            tx.total = std::max(tx.total, e.value("bytes_tx").toDouble());
        }
    }
}

void RunSummary::add_iteration(const QJsonObject& e) {
    const int worker = e.value("worker").toInt();
    const double t = e.value("t").toDouble();
    if (e.contains("iter_ms")) {
        iter_.total += e.value("iter_ms").toDouble();
        ++iter_.count;
    }
    if (e.contains("encode_ms")) {
        encode_.total += e.value("encode_ms").toDouble();
        ++encode_.count;
    }
    if (e.contains("decode_ms") && e.contains("messages_applied")) {
        decode_total_ms_ += e.value("decode_ms").toDouble();
        decoded_messages_ += e.value("messages_applied").toInteger();
        ++message_events_;
    }
    if (e.contains("compute_ms")) {
        compute_.total += e.value("compute_ms").toDouble() + e.value("etl_ms").toDouble() + e.value("updater_ms").toDouble();
        ++compute_.count;
    }
    if (e.contains("samples")) {
        const qint64 n = e.value("samples").toInteger();
        auto [it, fresh] = samples_.try_emplace(worker, n, n);
        it->second.second = n;
    }
    if (e.contains("iter")) {
        const qint64 it = e.value("iter").toInteger();
        iterations_ = std::max(iterations_, it);  // counts from 1
        auto [span, fresh] = spans_.try_emplace(worker, Span{t, t, it, it});
        if (!fresh) {
            span->second.last_t = t;
            span->second.last_iter = it;
        }
    }
    ++iteration_events_;
    if (e.contains("cpu_ms")) {
        const double ms = e.value("cpu_ms").toDouble();
        auto [c, fresh] = cpu_.try_emplace(e.value("node").toInt(), Cpu{t, t, ms, ms, 0});
        c->second.last_t = t;
        c->second.last_ms = ms;
        ++c->second.events;
    }
    for (const char* f : kPhaseFields)
        if (e.contains(f)) phases_[f] += e.value(f).toDouble();
    if (e.contains("bytes_tx")) {
        Tx& tx = node_tx_[e.value("node").toInt()];
        const double bytes = e.value("bytes_tx").toDouble();
        const qint64 iter = e.value("iter").toInteger();
        if (!tx.seen) {
            tx.seen = true;
            tx.first = bytes;
            tx.first_iter = iter;
        }
        // Cumulative: the largest so far (a node's workers report it in turn).
        if (bytes >= tx.last) {
            tx.last = bytes;
            tx.last_iter = std::max(tx.last_iter, iter);
        }
        tx.total = std::max(tx.total, bytes);
    }
}

std::optional<double> RunSummary::samples_per_s() const {
    // Each worker's rate on its own node's clock, summed: the samples after its first event over
    // the time after it. Not one span of `t` across nodes: their clocks start apart (DESIGN.md), so a
    // short run's last event, from a node that started later, could carry a smaller `t` than the
    // first one, and the run had no throughput (test_scalability_page lost a point that way).
    double total = 0;
    bool any = false;
    for (const auto& [worker, n] : samples_) {
        const auto span = spans_.find(worker);
        if (span == spans_.end() || span->second.last_t <= span->second.first_t) continue;
        total += static_cast<double>(n.second - n.first) / (span->second.last_t - span->second.first_t);
        any = true;
    }
    return any ? std::optional<double>(total) : std::nullopt;
}

std::optional<double> RunSummary::mean_phase_ms(const QString& field) const {
    if (iteration_events_ == 0) return std::nullopt;
    const auto it = phases_.find(field);
    if (it == phases_.end()) return std::nullopt;
    return it->second / static_cast<double>(iteration_events_);
}

std::optional<double> RunSummary::iteration_period_ms() const {
    double sum = 0;
    int workers = 0;
    for (const auto& [worker, s] : spans_)
        if (s.last_iter > s.first_iter) {
            sum += 1000.0 * (s.last_t - s.first_t) / static_cast<double>(s.last_iter - s.first_iter);
            ++workers;
        }
    if (workers == 0) return std::nullopt;
    return sum / workers;
}

std::optional<double> RunSummary::cpu_ms_per_iteration() const {
    double sum = 0;
    int nodes = 0;
    for (const auto& [node, c] : cpu_)
        if (c.events > 1) {
            sum += (c.last_ms - c.first_ms) / static_cast<double>(c.events - 1);
            ++nodes;
        }
    if (nodes == 0) return std::nullopt;
    return sum / nodes;
}

std::optional<double> RunSummary::cores_used() const {
    double cores = 0;
    bool any = false;
    for (const auto& [node, c] : cpu_)
        if (c.events > 1 && c.last_t > c.first_t) {
            cores += (c.last_ms - c.first_ms) / 1000.0 / (c.last_t - c.first_t);
            any = true;
        }
    if (!any) return std::nullopt;
    return cores;
}

std::optional<double> RunSummary::decode_ms_per_message() const {
    if (decoded_messages_ == 0) return std::nullopt;
    return decode_total_ms_ / static_cast<double>(decoded_messages_);
}

std::optional<double> RunSummary::messages_per_iteration() const {
    if (message_events_ == 0) return std::nullopt;
    return static_cast<double>(decoded_messages_) / static_cast<double>(message_events_);
}

std::optional<double> RunSummary::bytes_per_iteration() const {
    if (iterations_ == 0) return std::nullopt;
    double per_iter = 0;
    for (const auto& [node, tx] : node_tx_)
        per_iter += tx.last_iter > tx.first_iter
                        ? (tx.last - tx.first) / static_cast<double>(tx.last_iter - tx.first_iter)
                        : tx.total / static_cast<double>(iterations_);
    return per_iter;
}

}  // namespace thresher::launcher::sweep
