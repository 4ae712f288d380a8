#include "run_page.h"

#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include "charts_panel.h"
#include "confusion_view.h"

namespace thresher::ui {

namespace {

QString escaped_line(const QString& line, const char* color) {
    return QString("<span style=\"color:%1\">%2</span>").arg(color, line.toHtmlEscaped());
}

}  // namespace

RunPage::RunPage(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    launch_ = new QPushButton("▶ Launch");
    launch_->setToolTip("Start the run as configured (Ctrl+R)");
    stop_ = new QPushButton("■ Stop");
    stop_->setEnabled(false);
    bar_ = new QProgressBar;
    bar_->setRange(0, 1000);
    bar_->setValue(0);
    bar_->setTextVisible(true);
    bar_->setFormat("not started");
    top->addWidget(launch_);
    top->addWidget(stop_);
    top->addWidget(bar_, 1);
    outer->addLayout(top);
    status_ = new QLabel("Configure the model and the run, then press Launch.");
    outer->addWidget(status_);

    auto* split = new QSplitter(Qt::Vertical);
    charts_ = new ChartsPanel;
    charts_->set_metrics(&metrics_);
    split->addWidget(charts_);
    log_ = new QPlainTextEdit;
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(5000);
    log_->setFont(QFont("monospace"));
    log_->setPlaceholderText("Engine log (stderr of every node, prefixed with the node)");
    confusion_ = new ConfusionView;
    auto* below = new QTabWidget;
    below->setObjectName("run_details");
    below->addTab(log_, "Log");
    below->addTab(confusion_, "Confusion matrix");
    split->addWidget(below);
    split->setStretchFactor(0, 4);
    split->setStretchFactor(1, 1);
    outer->addWidget(split, 1);

    connect(launch_, &QPushButton::clicked, this, &RunPage::launchRequested);
    connect(stop_, &QPushButton::clicked, this, &RunPage::stopRequested);
}

void RunPage::begin(const QString& title) {
    metrics_.clear();
    progress_ = launcher::Progress();
    charts_->set_metrics(&metrics_);
    log_->clear();
    confusion_->clear();
    bar_->setValue(0);
    bar_->setFormat("starting…");
    status_->setText("Running " + title);
    set_running(true);
}

void RunPage::set_class_names(const QStringList& names) { confusion_->set_class_names(names); }

void RunPage::set_running(bool running) {
    launch_->setEnabled(!running);
    stop_->setEnabled(running);
}

void RunPage::add_event(const QJsonObject& e) {
    metrics_.add(e);
    progress_.add(e);
    const QString kind = e.value("event").toString();
    if (kind == "warning" || kind == "error") {
        const QString where = QString("[node %1] ").arg(e.value("node").toInt());
        log_->appendHtml(escaped_line(where + kind + ": " + e.value("message").toString(),
                                      kind == "error" ? "#b00020" : "#b26a00"));
    } else if (kind == "job_state") {
        // A Slurm job: its id and state, with Slurm's reason while it waits in the queue.
        const QString reason = e.value("reason").toString();
        const QString nodes = e.value("nodes").toString();
        const QString line = QString("Slurm job %1: %2%3%4").arg(e.value("job").toString(), e.value("state").toString())
                                 .arg(reason.isEmpty() ? QString() : " (" + reason + ")")
                                 .arg(nodes.isEmpty() ? QString() : " on " + nodes);
        log_->appendPlainText(line);
        if (!progress_.started()) {
            bar_->setFormat(line);
            status_->setText(line);
        }
    } else if (kind == "epoch_end") {
        log_->appendHtml(escaped_line(progress_.epoch_line(e), "#1b5e20"));
        confusion_->show_epoch(e);
    } else if (kind == "run_started" && e.value("node").toInt() == 0) {
        if (e.value("class_names").isArray()) {
            QStringList names;
            for (const auto& n : e.value("class_names").toArray()) names << n.toString();
            confusion_->set_class_names(names);
        }
        log_->appendPlainText(QString("run %1: %2 node(s), %3 worker(s), %4 parameters, %5, backend %6")
                                  .arg(e.value("run").toString())
                                  .arg(e.value("nodes").toInt())
                                  .arg(e.value("workers").toInt())
                                  .arg(QLocale().toString(e.value("params").toInteger()))
                                  .arg(e.value("strategy").toString(), e.value("backend").toString()) +
                              (e.contains("topology") ? ", topology " + e.value("topology").toString() : QString()));
    }
    charts_->schedule_redraw();
    if (kind == "iteration" || kind == "epoch_end" || kind == "run_started" || kind == "data_progress") refresh_progress();
}

void RunPage::refresh_progress() {
    if (const auto reading = progress_.data_reading(); reading && reading->total > 0) {
        bar_->setValue(static_cast<int>(1000 * reading->done / reading->total));
        bar_->setFormat(QString("%p% · reading the data: %1 %2/%3").arg(reading->what).arg(reading->done).arg(reading->total));
        return;
    }
    if (!progress_.started()) return;
    bar_->setValue(static_cast<int>(progress_.fraction() * 1000));
    QString text = QString("%p% · epoch %1/%2 · iteration %3/%4")
                       .arg(progress_.epoch())
                       .arg(progress_.epochs())
                       .arg(progress_.current())
                       .arg(progress_.total());
    if (auto loss = progress_.loss()) text += QString(" · loss %1").arg(*loss, 0, 'f', 3);
    if (auto acc = progress_.accuracy()) text += QString(" · accuracy %1").arg(*acc, 0, 'f', 4);
    if (auto eta = progress_.eta_seconds()) text += " · ETA " + launcher::Progress::format_duration(*eta);
    bar_->setFormat(text);
}

void RunPage::add_log(const QString& line) {
    const QString lower = line.toLower();
    if (lower.contains("error") || lower.contains("failed"))
        log_->appendHtml(escaped_line(line, "#b00020"));
    else if (lower.contains("warning"))
        log_->appendHtml(escaped_line(line, "#b26a00"));
    else
        log_->appendPlainText(line);
}

void RunPage::end(bool ok, const QString& summary) {
    set_running(false);
    charts_->redraw_now();
    if (ok) bar_->setValue(1000);
    bar_->setFormat(ok ? QString("finished · %1").arg(bar_->format().section(" · ", 1)) : QString("ended: ") + summary.section('\n', 0, 0));
    status_->setText(summary);
    add_log(ok ? "run finished: " + summary : "run ended: " + summary);
}

}  // namespace thresher::ui
