// ChartsPanel: the Run page's live charts (QCustomPlot, Qt 6 build): loss per iteration (raw and
// smoothed), iteration time per worker, network traffic per node, threshold and density, test
// accuracy per epoch. Events reach RunMetrics at once; the charts are redrawn by one single-shot
// timer at most every 40 ms (≤ 25 redraws a second however fast events arrive; STYLE.md item 11),
// and only when RunMetrics' revision moved. Charts zoom and pan with the mouse (wheel, drag);
// a double click returns a chart to following the data; clicking a legend entry hides or shows
// its series; right click saves one chart as PNG. Finished runs from history can be overlaid
// (dashed) on the loss and accuracy charts.
#pragma once

#include <QList>
#include <QTimer>
#include <QWidget>
#include <map>

#include "run_metrics.h"

class QCustomPlot;
class QCPGraph;
class QCheckBox;
class QSlider;
class QLabel;

namespace thresher::ui {

class ChartsPanel : public QWidget {
    Q_OBJECT
public:
    explicit ChartsPanel(QWidget* parent = nullptr);

    // The live run's metrics (owned by the caller, outliving this panel's use of it).
    void set_metrics(const RunMetrics* metrics);
    // Call after metrics changed; the redraw follows within 40 ms.
    void schedule_redraw();
    // Finished runs drawn dashed beside the live one: (label, metrics).
    void set_overlays(const QList<QPair<QString, const RunMetrics*>>& overlays);

    // Redraws now (tests and screenshots).
    void redraw_now();
    int redraw_count() const { return redraws_; }
    // The five charts, in the order above (tests read their graphs).
    QList<QCustomPlot*> charts() const { return charts_; }
    // Writes all charts, as laid out, to one PNG; throws std::runtime_error naming the file.
    void save_png(const QString& path);
    double smoothing() const;

private:
    QCustomPlot* make_chart(const QString& title, const QString& x_label, const QString& y_label);
    void redraw();
    void refresh_series(QCustomPlot* plot, const QString& key_prefix, const std::map<int, Series>& series,
                        const QString& label, int first_color);
    QCPGraph* graph(QCustomPlot* plot, const QString& key, const QString& name, const QColor& color,
                    bool dashed = false);
    void follow(QCustomPlot* plot);

    const RunMetrics* metrics_ = nullptr;
    QList<QPair<QString, const RunMetrics*>> overlays_;
    QList<QCustomPlot*> charts_;
    QCustomPlot *loss_ = nullptr, *iter_ = nullptr, *traffic_ = nullptr, *threshold_ = nullptr, *accuracy_ = nullptr, *staleness_ = nullptr;
    std::map<QCustomPlot*, std::map<QString, QCPGraph*>> graphs_;
    std::map<QCustomPlot*, bool> following_;
    QTimer timer_;
    quint64 drawn_revision_ = ~0ull;
    int redraws_ = 0;
    QSlider* smoothing_ = nullptr;
    QLabel* smoothing_label_ = nullptr;
    QCheckBox* log_loss_ = nullptr;
    QCheckBox* log_traffic_ = nullptr;
};

}  // namespace thresher::ui
