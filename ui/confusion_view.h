// ConfusionView: the Run page's "Confusion matrix" tab — the last epoch_end's confusion matrix of
// the main output as a heat map (rows: actual class, top to bottom; columns: predicted; each
// row's colour its share of that class's samples, so rare classes read as well as common ones),
// class names on the axes (from run_started's class_names, or the data set's known names), counts
// in the cells when they fit, and a line naming the classes the model gets wrong most. Up to
// Confusion::kMaxDrawn classes are drawn; past that only the line.
#pragma once

#include <QJsonObject>
#include <QStringList>
#include <QWidget>
#include <optional>

#include "confusion.h"

class QCustomPlot;
class QCPColorMap;
class QLabel;

namespace thresher::ui {

class ConfusionView : public QWidget {
    Q_OBJECT
public:
    explicit ConfusionView(QWidget* parent = nullptr);

    void clear();
    // Names for the classes, label order; ignored when their count is not the matrix's.
    void set_class_names(const QStringList& names);
    // An epoch_end: shows its "confusion" when it has a valid one (a regression has none).
    void show_epoch(const QJsonObject& epoch_end);

    bool has_matrix() const { return matrix_.has_value(); }
    QString summary() const;  // the line under the matrix
    QCustomPlot* plot() const { return plot_; }

private:
    void redraw();

    std::optional<Confusion> matrix_;
    QStringList names_;
    QString caption_;
    QCustomPlot* plot_ = nullptr;
    QCPColorMap* map_ = nullptr;
    QLabel* summary_ = nullptr;
};

}  // namespace thresher::ui
