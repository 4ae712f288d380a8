// Progress and ETA from events, and their one-line rendering; see progress.h.
#include "progress.h"

#include <algorithm>
#include <cmath>

namespace thresher::launcher {

void Progress::add(const QJsonObject& e) {
    const QString kind = e.value("event").toString();
    if (kind == "data_progress") {
        const qint64 total = std::max<qint64>(0, e.value("total").toInteger());
        data_[e.value("node").toInt()] = {e.value("what").toString(), std::clamp<qint64>(e.value("done").toInteger(), 0, total), total};
        return;
    }
    if (kind == "run_started") {
        if (started()) return;  // every node announces the same run
        const qint64 samples = qint64(e.value("train_samples").toDouble());
        const qint64 batch = qint64(e.value("batch").toDouble());
        const qint64 workers = std::max<qint64>(1, qint64(e.value("workers").toDouble(1)));
        epochs_ = e.value("epochs").toInt();
        const int start_epoch = start_epoch_ = e.value("start_epoch").toInt();
        if (samples <= 0 || batch <= 0) return;
        const qint64 step = batch * workers;
        per_epoch_ = (samples + step - 1) / step;
        total_ = per_epoch_ * std::max(0, epochs_ - start_epoch);
        epoch_ = start_epoch;
    } else if (kind == "iteration") {
        const qint64 iter = qint64(e.value("iter").toDouble());
        // A fresh run counts from 0; a resumed one from where its first iteration says.
        offset_ = start_epoch_ == 0 ? 0 : std::min(offset_.value_or(iter - 1), iter - 1);
        const qint64 now = std::max<qint64>(0, iter - *offset_);
        loss_ = e.value("loss").toDouble();
        if (now <= current_) return;
        current_ = now;
        epoch_ = e.value("epoch").toInt();
        const double t = e.value("t").toDouble();
        samples_.emplace_back(t, current_);
        // Keep the window, but never fewer than two samples.
        while (samples_.size() > 2 && samples_.front().first < t - window_s_) samples_.pop_front();
    } else if (kind == "epoch_end") {
        if (e.contains("accuracy")) accuracy_ = e.value("accuracy").toDouble();
    } else if (kind == "run_finished" && e.value("status").toString() == "ok") {
        current_ = std::max(current_, total_);
    }
}

double Progress::fraction() const {
    if (total_ <= 0) return 0.0;
    return std::clamp(double(current_) / double(total_), 0.0, 1.0);
}

std::optional<double> Progress::rate() const {
    if (samples_.size() < 2) return std::nullopt;
    const auto& [t0, c0] = samples_.front();
    const auto& [t1, c1] = samples_.back();
    if (t1 - t0 <= 0 || c1 <= c0) return std::nullopt;
    return double(c1 - c0) / (t1 - t0);
}

std::optional<double> Progress::eta_seconds() const {
    const auto r = rate();
    if (!r) return std::nullopt;
    return double(std::max<qint64>(0, total_ - current_)) / *r;
}

QString Progress::format_duration(double seconds) {
    const qint64 s = qint64(std::llround(std::max(0.0, seconds)));
    if (s >= 3600)
        return QString("%1:%2:%3").arg(s / 3600).arg((s / 60) % 60, 2, 10, QChar('0')).arg(s % 60, 2, 10, QChar('0'));
    return QString("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
}

std::optional<Progress::DataReading> Progress::data_reading() const {
    if (started()) return std::nullopt;
    // The node furthest behind says when training can start.
    std::optional<DataReading> slowest;
    for (const auto& [node, r] : data_)
        if (r.total > 0 && (!slowest || double(r.done) / double(r.total) < double(slowest->done) / double(slowest->total)))
            slowest = r;
    return slowest;
}

QString Progress::line() const {
    if (const auto r = data_reading()) {
        return QString("reading the data: %1 %2/%3 (%4%)")
            .arg(r->what)
            .arg(r->done)
            .arg(r->total)
            .arg(int(std::floor(100.0 * double(r->done) / double(r->total))));
    }
    if (!started()) return "waiting for the engines to start";
    constexpr int kCells = 10;
    const double f = fraction();
    const int filled = std::clamp(int(std::floor(f * kCells)), 0, kCells);
    QString out = "[" + QString(filled, '#') + QString(kCells - filled, '.') + "] " +
                  QString::number(int(std::floor(f * 100))) + "%";
    out += QString(" epoch %1/%2 iter %3/%4").arg(epoch()).arg(epochs_).arg(current_).arg(total_);
    if (loss_) out += " loss " + QString::number(*loss_, 'f', 3);
    if (accuracy_) out += " acc " + QString::number(*accuracy_, 'f', 3);
    if (const auto eta = eta_seconds(); eta && current_ < total_) out += " ETA " + format_duration(*eta);
    return out;
}

QString Progress::epoch_line(const QJsonObject& e) const {
    QString out = QString("epoch %1/%2:").arg(e.value("epoch").toInt() + 1).arg(epochs_);
    if (e.contains("loss")) out += " loss " + QString::number(e.value("loss").toDouble(), 'f', 4);
    if (e.contains("accuracy")) out += " acc " + QString::number(e.value("accuracy").toDouble(), 'f', 4);
    if (e.contains("f1")) out += " f1 " + QString::number(e.value("f1").toDouble(), 'f', 4);
    if (e.contains("eval_set")) out += " (" + e.value("eval_set").toString() + " set)";
    if (e.contains("t")) out += " at " + QString::number(e.value("t").toDouble(), 'f', 1) + " s";
    return out;
}

}  // namespace thresher::launcher
