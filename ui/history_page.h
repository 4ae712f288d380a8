// HistoryPage: every run in the SQLite history, newest first — name, start, status, duration,
// accuracy, throughput. Tick runs to overlay them (dashed) on the Run page's charts; open a run's
// spec again; export its events as CSV; delete it.
#pragma once

#include <QWidget>
#include <map>
#include <memory>

#include "run_metrics.h"

class QTableWidget;
class QPushButton;

namespace thresher::ui {

class RunHistory;

class HistoryPage : public QWidget {
    Q_OBJECT
public:
    explicit HistoryPage(RunHistory* history, QWidget* parent = nullptr);

    void refresh();
    QTableWidget* table() const { return table_; }
    // Ticked runs, as (label, metrics rebuilt from their stored events).
    QList<QPair<QString, const RunMetrics*>> overlays() const;
    void set_overlay(qint64 run, bool on);
    qint64 selected_run() const;

Q_SIGNALS:
    void overlaysChanged();
    void openSpecRequested(qint64 run);
    void error(const QString& message);

private:
    void export_csv();
    void remove_selected();

    RunHistory* history_;
    QTableWidget* table_ = nullptr;
    std::map<qint64, std::unique_ptr<RunMetrics>> overlays_;
    std::map<qint64, QString> labels_;
    bool filling_ = false;
};

}  // namespace thresher::ui
