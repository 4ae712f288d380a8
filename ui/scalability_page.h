// ScalabilityPage: scalability experiments (launcher/sweep). A sweep file (a base spec × axes:
// strategy, nodes, τ, …) or, without one, the current spec at several worker counts (e.g. 1, 2, 4
// local nodes), run point after point into a results folder; running again into the same folder
// resumes (finished points are skipped). A table of the points (mean samples/s, speedup,
// efficiency, DL4J's estimate, time per iteration, traffic, accuracy) and the charts of the
// sweep's HTML report (sweep_charts(): throughput, speedup, time per iteration with the scaling
// model dashed to 64 workers, and what if each node had a machine of its own behind 10 / 25 /
// 100 Gbit/s, beside DL4J's estimate), drawn with QCustomPlot, and the model's form in words. The runs' events also reach the Run page.
#pragma once

#include <QWidget>

class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace thresher::launcher::sweep {
class SweepResults;
}

namespace thresher::ui {

class ScalabilityPage : public QWidget {
    Q_OBJECT
public:
    explicit ScalabilityPage(QWidget* parent = nullptr);

    // Empty: sweep the current spec over counts().
    QString sweep_file() const;
    void set_sweep_file(const QString& path);
    // Empty: the default folder (MainWindow picks it).
    QString results_folder() const;
    void set_results_folder(const QString& path);
    // Parsed from "1, 2, 4"; empty when the text is not a list of positive counts.
    QList<int> counts() const;
    bool vary_nodes() const;
    void set_running(bool running);
    void set_status(const QString& text);
    // Shows the points measured so far (table and charts).
    void show_results(const launcher::sweep::SweepResults& results);
    void clear_results();
    QCustomPlot* chart() const { return charts_.front(); }  // throughput
    const QList<QCustomPlot*>& charts() const { return charts_; }
    QTableWidget* table() const { return table_; }
    QLabel* model_text() const { return model_; }  // the scaling model in words

Q_SIGNALS:
    void startRequested();
    void stopRequested();
    void saveSweepRequested();  // the current spec × worker counts as a sweep file

private:
    QLineEdit* sweep_file_ = nullptr;
    QLineEdit* results_ = nullptr;
    QLineEdit* counts_ = nullptr;
    QComboBox* vary_ = nullptr;
    QPushButton* start_ = nullptr;
    QPushButton* stop_ = nullptr;
    QLabel* status_ = nullptr;
    QTableWidget* table_ = nullptr;
    QList<QCustomPlot*> charts_;
    QLabel* model_ = nullptr;
};

}  // namespace thresher::ui
