// ScalabilityPage: the scalability experiment — the current spec run at several worker counts
// (e.g. 1, 2, 4 local nodes), one after another; a table and a chart of samples/s, speedup and
// efficiency against the ideal and against DL4J's estimate (ui/model/scalability.h). The runs'
// events also reach the Run page, so their charts can be watched as they go.
#pragma once

#include <QWidget>

#include "scalability.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace thresher::ui {

class ScalabilityPage : public QWidget {
    Q_OBJECT
public:
    explicit ScalabilityPage(QWidget* parent = nullptr);

    // Parsed from "1, 2, 4"; empty when the text is not a list of positive counts.
    QList<int> counts() const;
    bool vary_nodes() const;
    void set_running(bool running);
    void set_status(const QString& text);
    // Shows the measured points (table and chart).
    void show_points(const QList<ScalePoint>& points);
    QCustomPlot* chart() const { return chart_; }
    QTableWidget* table() const { return table_; }

Q_SIGNALS:
    void startRequested();
    void stopRequested();

private:
    QLineEdit* counts_ = nullptr;
    QComboBox* vary_ = nullptr;
    QPushButton* start_ = nullptr;
    QPushButton* stop_ = nullptr;
    QLabel* status_ = nullptr;
    QTableWidget* table_ = nullptr;
    QCustomPlot* chart_ = nullptr;
};

}  // namespace thresher::ui
