// Progress: how far a run is and when it will end, from its events alone, for the CLI's
// progress bar and the GUI's status line.
//
// Worked example: run_started says train_samples 60000, batch 64, workers 2 (2 nodes × 1),
// epochs 2, start_epoch 0. Each step takes one batch per worker, so an epoch is
// ceil(60000 / (64 × 2)) = 469 iterations per worker and the run 469 × (2 − 0) = 938. Workers
// step together, so the current count is the highest `iter` any worker has reported. The engine
// counts `iter` from the start of the whole run, resumed epochs included, so for a resumed run
// (start_epoch > 0) the first iteration event sets an offset (its iter − 1) and the bar still
// starts at 0 %.
//
// ETA = iterations left / recent rate, the rate measured over the last `window_s` seconds of
// event time `t` (not wall time, so synthetic events give exact figures in tests).
#pragma once

#include <QJsonObject>
#include <QString>
#include <deque>
#include <map>
#include <optional>

namespace thresher::launcher {

class Progress {
public:
    explicit Progress(double window_s = 20.0) : window_s_(window_s) {}

    void add(const QJsonObject& event);

    bool started() const { return per_epoch_ > 0; }
    // Before the first step: how far reading the data is (data_progress events), e.g. "images",
    // 4800 of 12000; nullopt once training started or when the engine sent none.
    struct DataReading {
        QString what;
        qint64 done = 0, total = 0;
    };
    std::optional<DataReading> data_reading() const;
    qint64 iterations_per_epoch() const { return per_epoch_; }
    qint64 total() const { return total_; }    // iterations per worker this run
    qint64 current() const { return current_; }  // iterations done this run (highest worker)
    double fraction() const;                     // 0..1
    int epoch() const { return epoch_ + 1; }     // 1-based, as shown
    int epochs() const { return epochs_; }
    std::optional<double> rate() const;          // iterations per second, recently
    std::optional<double> eta_seconds() const;
    std::optional<double> loss() const { return loss_; }          // latest iteration's loss
    std::optional<double> accuracy() const { return accuracy_; }  // latest epoch_end's

    // `[#####.....] 52% epoch 1/2 iter 240/470 loss 0.412 acc 0.871 ETA 0:14`
    QString line() const;
    // One line per finished epoch: `epoch 1/2: loss 0.412 acc 0.871 f1 0.866 (test set) at 31.2 s`
    QString epoch_line(const QJsonObject& epoch_end) const;

    // 14 -> "0:14", 754 -> "12:34", 3723 -> "1:02:03"
    static QString format_duration(double seconds);

private:
    double window_s_;
    qint64 per_epoch_ = 0, total_ = 0, current_ = 0;
    std::optional<qint64> offset_;  // iter − 1 of this run's first iteration
    int epoch_ = 0, epochs_ = 0, start_epoch_ = 0;
    std::optional<double> loss_, accuracy_;
    std::deque<std::pair<double, qint64>> samples_;  // (t, current) as current grew
    std::map<int, DataReading> data_;  // by node: nodes read their data side by side
};

}  // namespace thresher::launcher
