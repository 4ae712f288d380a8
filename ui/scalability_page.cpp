#include "scalability_page.h"

#include "chart_legend.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

#include "qcustomplot_include.h"
#include "scaling_model.h"
#include "sweep_report.h"
#include "sweep_results.h"

namespace thresher::ui {

namespace {

using launcher::sweep::SvgChart;

QCustomPlot* make_chart(QWidget* parent, int legend_columns) {
    auto* plot = new QCustomPlot(parent);
    plot->setMinimumHeight(240);
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, "", QFont(parent->font().family(), parent->font().pointSize(), QFont::Bold)));
    plot->legend->setFont(QFont(parent->font().family(), parent->font().pointSize() - 1));
    put_legend_below(plot, legend_columns);
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    return plot;
}

// What each chart shows, for the charts before a sweep has results: a newcomer sees what will
// appear there instead of four blank 0..5 grids.
const char* const kChartTitles[] = {"Throughput", "Speedup against the fewest workers", "Time per iteration",
                                    "What if: one node per machine, to 64"};

void show_empty(QCustomPlot* plot, int index) {
    plot->clearGraphs();
    if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0)))
        title->setText(QString("%1 — no runs yet (Run / resume)").arg(kChartTitles[index]));
    plot->xAxis->setLabel("workers");
    plot->yAxis->setLabel({});
    plot->legend->setVisible(false);
    plot->replot();
}

// One chart of the sweep's report, drawn with QCustomPlot: the same series, markers and dashes.
void draw(QCustomPlot* plot, const SvgChart& chart) {
    plot->clearGraphs();
    plot->legend->setVisible(!chart.series.isEmpty());
    if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0))) title->setText(chart.title);
    plot->xAxis->setLabel(chart.x_label);
    plot->yAxis->setLabel(chart.y_label);
    if (chart.log2_x) {
        plot->xAxis->setScaleType(QCPAxis::stLogarithmic);
        auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
        ticker->setLogBase(2);
        plot->xAxis->setTicker(ticker);
    }
    double y_max = 0, x_min = 1e300, x_max = -1e300;
    for (const auto& s : chart.series) {
        auto* g = plot->addGraph();
        g->setName(s.name);
        QPen pen{QColor(s.color), 2, s.dashed ? Qt::DashLine : Qt::SolidLine};
        g->setPen(pen);
        if (!s.line) g->setLineStyle(QCPGraph::lsNone);
        if (s.markers) g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 7));
        for (const auto& p : s.points) {
            if (!std::isfinite(p.y())) continue;
            g->addData(p.x(), p.y());
            y_max = std::max(y_max, p.y());
            x_min = std::min(x_min, p.x());
            x_max = std::max(x_max, p.x());
        }
    }
    if (x_min <= x_max) {
        if (chart.log2_x) plot->xAxis->setRange(std::max(0.7, x_min / 1.4), x_max * 1.4);
        else plot->xAxis->setRange(x_min - 0.5, x_max + 0.5);
        plot->yAxis->setRange(0, y_max > 0 ? y_max * 1.1 : 1);
    }
    plot->replot();
}

}  // namespace

ScalabilityPage::ScalabilityPage(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    auto* file_row = new QHBoxLayout;
    sweep_file_ = new QLineEdit;
    sweep_file_->setObjectName("sweep_file");
    sweep_file_->setPlaceholderText("none: the current spec at the worker counts below");
    sweep_file_->setToolTip("A sweep file (\"format\": \"thresher-sweep\"): a base run spec and axes; see resources/sweeps");
    auto* browse = new QPushButton("Open…");
    file_row->addWidget(sweep_file_, 1);
    file_row->addWidget(browse);
    form->addRow("Sweep file:", file_row);
    auto* counts_row = new QHBoxLayout;
    counts_ = new QLineEdit("1, 2, 4");
    counts_->setObjectName("counts");
    counts_->setMaximumWidth(160);
    counts_->setToolTip("Comma-separated worker counts; each is one run of the current spec");
    counts_row->addWidget(counts_);
    vary_ = new QComboBox;
    vary_->addItem("as local nodes (1 worker each, over UDP)");
    vary_->addItem("as workers of one node (threads)");
    counts_row->addWidget(vary_);
    auto* save_sweep = new QPushButton("Save as sweep file…");
    save_sweep->setToolTip("Write the current spec at these counts as a sweep file, to edit (add axes) and run again");
    counts_row->addWidget(save_sweep);
    counts_row->addStretch(1);
    connect(save_sweep, &QPushButton::clicked, this, &ScalabilityPage::saveSweepRequested);
    form->addRow("Worker counts:", counts_row);
    auto* results_row = new QHBoxLayout;
    results_ = new QLineEdit;
    results_->setObjectName("results_folder");
    results_->setPlaceholderText("default: sweeps/NAME beside the run history");
    results_->setToolTip("results.csv, results.json and report.html go here; running into the same folder resumes");
    results_row->addWidget(results_, 1);
    start_ = new QPushButton("Run / resume");
    stop_ = new QPushButton("Stop");
    stop_->setEnabled(false);
    results_row->addWidget(start_);
    results_row->addWidget(stop_);
    form->addRow("Results folder:", results_row);
    outer->addLayout(form);
    status_ = new QLabel("Runs every point of the sweep once per repeat and compares the throughput; "
                         "points already in the results folder are skipped.");
    status_->setWordWrap(true);
    outer->addWidget(status_);

    auto* split = new QSplitter(Qt::Vertical);
    table_ = new QTableWidget(0, 0);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    split->addWidget(table_);
    auto* chart_row = new QWidget;
    auto* chart_layout = new QGridLayout(chart_row);
    chart_layout->setContentsMargins(0, 0, 0, 0);
    // Throughput, speedup, time per iteration (model dashed), what if (10 / 25 / 100 Gbit/s).
    for (int i = 0; i < 4; ++i) {
        charts_ << make_chart(this, i == 3 ? 3 : 2);  // what if: three rates per group
        chart_layout->addWidget(charts_.back(), i / 2, i % 2);
        show_empty(charts_.back(), i);
    }
    model_ = new QLabel;
    model_->setObjectName("scaling_model");
    model_->setWordWrap(true);
    model_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    chart_layout->addWidget(model_, 2, 0, 1, 2);
    // Scrolled rather than squeezed: on a small window the model's words and the charts' legends
    // would otherwise be laid over each other.
    auto* chart_scroll = new QScrollArea;
    chart_scroll->setWidgetResizable(true);
    chart_scroll->setFrameShape(QFrame::NoFrame);
    chart_scroll->setWidget(chart_row);
    split->addWidget(chart_scroll);
    split->setStretchFactor(1, 3);
    outer->addWidget(split, 1);

    connect(browse, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, "Open a sweep", {}, "Sweep files (*.json)");
        if (!f.isEmpty()) sweep_file_->setText(f);
    });
    connect(start_, &QPushButton::clicked, this, &ScalabilityPage::startRequested);
    connect(stop_, &QPushButton::clicked, this, &ScalabilityPage::stopRequested);
    clear_results();
}

QString ScalabilityPage::sweep_file() const { return sweep_file_->text().trimmed(); }
void ScalabilityPage::set_sweep_file(const QString& path) { sweep_file_->setText(path); }
QString ScalabilityPage::results_folder() const { return results_->text().trimmed(); }
void ScalabilityPage::set_results_folder(const QString& path) { results_->setText(path); }

QList<int> ScalabilityPage::counts() const {
    QList<int> out;
    for (const QString& part : counts_->text().split(',', Qt::SkipEmptyParts)) {
        bool ok = false;
        const int n = part.trimmed().toInt(&ok);
        if (!ok || n < 1 || n > 256) return {};
        out.append(n);
    }
    return out;
}

bool ScalabilityPage::vary_nodes() const { return vary_->currentIndex() == 0; }

void ScalabilityPage::set_running(bool running) {
    start_->setEnabled(!running);
    stop_->setEnabled(running);
}

void ScalabilityPage::set_status(const QString& text) { status_->setText(text); }

void ScalabilityPage::clear_results() {
    table_->clear();
    table_->setRowCount(0);
    table_->setColumnCount(0);
    for (int i = 0; i < charts_.size(); ++i) show_empty(charts_[i], i);
    model_->clear();
}

void ScalabilityPage::show_results(const launcher::sweep::SweepResults& results) {
    const auto points = results.points();
    QStringList header{"#"};
    header << results.sweep().axis_names();
    header << "Workers" << "Samples/s" << "Speedup" << "Efficiency" << "DL4J estimate" << "ms/iteration" << "KiB/iteration"
           << "Accuracy";
    table_->clear();
    table_->setColumnCount(int(header.size()));
    table_->setHorizontalHeaderLabels(header);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    table_->setRowCount(int(points.size()));
    auto opt = [](const std::optional<double>& v, int decimals) {
        return v ? QString::number(*v, 'f', decimals) : QString("—");
    };
    for (int row = 0; row < points.size(); ++row) {
        const auto& p = points[row];
        QStringList cells{QString::number(p.point + 1)};
        for (const auto& v : p.values) cells << launcher::sweep::value_text(v);
        const auto m = launcher::sweep::model_point(p);
        cells << QString::number(p.workers) << QString::number(p.samples_per_s, 'f', 0)
              << QString::number(p.speedup, 'f', 2) << QString::number(p.efficiency * 100, 'f', 0) + " %"
              << opt(p.estimate_speedup, 2) << (m ? QString::number(m->iter_ms, 'f', 2) : QString("—"))
              << (p.bytes_per_iter ? QString::number(*p.bytes_per_iter / 1024, 'f', 1) : QString("—")) << opt(p.accuracy, 4);
        for (int c = 0; c < cells.size(); ++c) table_->setItem(row, c, new QTableWidgetItem(cells[c]));
    }
    const auto charts = launcher::sweep::sweep_charts(results);
    for (int i = 0; i < charts_.size(); ++i) {
        if (i < charts.size() && !charts[i].series.isEmpty()) draw(charts_[i], charts[i]);
        else show_empty(charts_[i], i);
    }
    // The model in words, and how far to trust it (its leave-one-out test).
    const auto model = launcher::sweep::fit_sweep_model(points);
    QStringList lines;
    for (const auto& m : model.models) lines << m.describe();
    lines << launcher::sweep::what_if_words(model, points);
    if (model.max_loo_error)
        lines << QString("Leave-one-out: each point predicted without it, largest error %1 %, mean %2 %%3")
                     .arg(*model.max_loo_error * 100, 0, 'f', 1)
                     .arg(*model.mean_loo_error * 100, 0, 'f', 1)
                     .arg(*model.max_loo_error > 0.15 ? " (above 15 %: read the dashed curves as a rough guide)" : "");
    // How far the measurements themselves scatter: a prediction cannot be judged closer than that.
    double spread = 0;
    for (const auto& p : points)
        if (p.runs > 1 && p.period_ms && p.period_ms_spread && *p.period_ms > 0)
            spread = std::max(spread, *p.period_ms_spread / *p.period_ms);
    if (spread > 0)
        lines << QString("The points' repeats scatter by up to %1 % (standard deviation ÷ mean of the time per iteration)")
                     .arg(spread * 100, 0, 'f', 1);
    if (const QString note = launcher::sweep::past_the_cores(points); !note.isEmpty()) lines << note;
    model_->setText(lines.join("\n"));
}

}  // namespace thresher::ui
