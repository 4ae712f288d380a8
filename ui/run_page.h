// RunPage: what a running (or finished) run looks like — Launch and Stop, a progress bar with
// epoch, loss, accuracy and ETA (launcher/progress.h, the same line the CLI prints), the live
// charts, and below them two tabs: the engines' log with host prefixes, warnings in amber and
// errors in red, and the last epoch's confusion matrix (confusion_view.h).
#pragma once

#include <QWidget>

#include "progress.h"
#include "run_metrics.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace thresher::ui {

class ChartsPanel;
class ConfusionView;

class RunPage : public QWidget {
    Q_OBJECT
public:
    explicit RunPage(QWidget* parent = nullptr);

    // A new run begins: clears charts, log and progress.
    void begin(const QString& title);
    void add_event(const QJsonObject& event);
    void add_log(const QString& line);
    void end(bool ok, const QString& summary);
    void set_running(bool running);

    const RunMetrics& metrics() const { return metrics_; }
    ChartsPanel* charts() const { return charts_; }
    QPushButton* launch_button() const { return launch_; }
    QPushButton* stop_button() const { return stop_; }
    QPlainTextEdit* log() const { return log_; }
    ConfusionView* confusion() const { return confusion_; }
    // Names for the confusion matrix's classes when the run's events bring none (a data set the
    // app knows, e.g. Fashion-MNIST); run_started's class_names replace them.
    void set_class_names(const QStringList& names);

Q_SIGNALS:
    void launchRequested();
    void stopRequested();

private:
    void refresh_progress();

    RunMetrics metrics_;
    launcher::Progress progress_;
    QPushButton* launch_ = nullptr;
    QPushButton* stop_ = nullptr;
    QProgressBar* bar_ = nullptr;
    QLabel* status_ = nullptr;
    ChartsPanel* charts_ = nullptr;
    QPlainTextEdit* log_ = nullptr;
    ConfusionView* confusion_ = nullptr;
};

}  // namespace thresher::ui
