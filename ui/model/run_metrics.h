// RunMetrics: a run's events (DESIGN.md "The event contract") turned into the series the Run
// page plots. Pure data: the engine's events go in through add(), in arrival order, from the GUI
// thread; the chart widget reads the series when its batched redraw timer fires and uses
// revision() to skip a redraw when nothing arrived.
//
// Rates come from cumulative counters: a node's bytes_tx at t=10.0 s is 5 000 000 and at
// t=10.5 s 5 400 000, so it sent 800 000 bytes/s over that half second. A rate point is made
// once at least `rate_window_s` has passed on that node's clock, so bursts of events with the
// same `t` don't give infinite rates.
#pragma once

#include <QJsonObject>
#include <QString>
#include <QVector>
#include <map>
#include <optional>

#include "run_summary.h"

namespace thresher::ui {

struct Series {
    QVector<double> x, y;
    void add(double xv, double yv) {
        x.append(xv);
        y.append(yv);
    }
    bool empty() const { return x.isEmpty(); }
    int size() const { return static_cast<int>(x.size()); }
};

class RunMetrics {
public:
    explicit RunMetrics(double rate_window_s = 0.5) : rate_window_s_(rate_window_s) {}

    void add(const QJsonObject& event);
    void clear();
    // Grows with every event that changed a series.
    quint64 revision() const { return revision_; }

    // Loss per iteration: x = the iteration count, y = the mean loss of the workers that have
    // reported that iteration (workers run asynchronously, so the latest points may hold fewer).
    Series loss() const;
    // Exponential moving average of loss() with TensorBoard's smoothing weight w in [0, 1):
    // s_i = w·s_{i−1} + (1−w)·loss_i, debiased so the first points are not pulled towards 0.
    Series smoothed_loss(double weight) const;
    // Per global worker: iteration time (ms) against iteration.
    const std::map<int, Series>& iteration_ms() const { return iter_ms_; }
    // Per node: bytes/s sent and received against run time t.
    const std::map<int, Series>& sent_rate() const { return tx_rate_; }
    const std::map<int, Series>& received_rate() const { return rx_rate_; }
    // Gradient sharing, per global worker: τ and message density against iteration.
    const std::map<int, Series>& threshold() const { return threshold_; }
    const std::map<int, Series>& density() const { return density_; }
    // Gradient sharing, per global worker: how stale the updates applied before each gradient
    // were (lag_max, in the worker's steps) and how long it waited for the staleness bound (ms).
    const std::map<int, Series>& lag() const { return lag_; }
    const std::map<int, Series>& wait_ms() const { return wait_; }
    // Per epoch (1-based): test accuracy and the epoch's mean training loss.
    const Series& accuracy() const { return accuracy_; }
    // A model with several outputs: each classifier output's test accuracy per epoch, by name
    // (epoch_end's "outputs"; the main output's is accuracy()).
    const std::map<QString, Series>& output_accuracy() const { return output_accuracy_; }
    const Series& epoch_loss() const { return epoch_loss_; }

    // Summary figures for history and the sweeps (launcher/sweep/run_summary.h computes them).
    const launcher::sweep::RunSummary& summary() const { return summary_; }
    std::optional<double> final_accuracy() const { return summary_.final_accuracy(); }
    std::optional<double> samples_per_s() const { return summary_.samples_per_s(); }
    std::optional<double> mean_iter_ms() const { return summary_.mean_iter_ms(); }
    std::optional<double> mean_encode_ms() const { return summary_.mean_encode_ms(); }
    std::optional<double> decode_ms_per_message() const { return summary_.decode_ms_per_message(); }
    std::optional<double> wall_s() const { return summary_.wall_s(); }
    QString status() const { return summary_.status(); }
    int warnings() const { return warnings_; }
    int errors() const { return errors_; }

private:
    struct RateState {
        double t = 0;
        double tx = 0, rx = 0;
    };

    void add_iteration(const QJsonObject& e);

    double rate_window_s_;
    quint64 revision_ = 0;
    std::map<qint64, std::pair<double, int>> loss_by_iter_;  // iter → (sum of losses, workers)
    Series accuracy_, epoch_loss_;
    std::map<QString, Series> output_accuracy_;
    std::map<int, Series> iter_ms_, tx_rate_, rx_rate_, threshold_, density_, lag_, wait_;
    std::map<int, RateState> rate_state_;
    launcher::sweep::RunSummary summary_;
    int warnings_ = 0, errors_ = 0;
};

}  // namespace thresher::ui
