#include "charts_panel.h"

#include "chart_legend.h"

#include <QCheckBox>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QSlider>
#include <QVBoxLayout>
#include "qcustomplot_include.h"
#include <stdexcept>

namespace thresher::ui {

namespace {

// A palette that stays readable on white and for the common colour-vision deficiencies (Okabe–Ito).
const QList<QColor> kPalette{QColor(0, 114, 178), QColor(230, 159, 0), QColor(0, 158, 115),
                             QColor(204, 121, 167), QColor(86, 180, 233), QColor(213, 94, 0),
                             QColor(240, 228, 66), QColor(0, 0, 0)};

QColor color_at(int i) { return kPalette[i % kPalette.size()]; }

// bytes/s → kB/s, the unit the traffic chart shows.
std::map<int, Series> kilo(const std::map<int, Series>& in) {
    std::map<int, Series> out = in;
    for (auto& [id, s] : out)
        for (double& y : s.y) y /= 1000.0;
    return out;
}

}  // namespace

ChartsPanel::ChartsPanel(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel("Loss smoothing:"));
    smoothing_ = new QSlider(Qt::Horizontal);
    smoothing_->setRange(0, 99);
    smoothing_->setValue(90);
    smoothing_->setMaximumWidth(160);
    smoothing_->setToolTip("Exponential moving average weight of the smoothed loss (0 = none)");
    controls->addWidget(smoothing_);
    smoothing_label_ = new QLabel("0.90");
    controls->addWidget(smoothing_label_);
    log_loss_ = new QCheckBox("Log loss");
    log_traffic_ = new QCheckBox("Log traffic");
    controls->addSpacing(16);
    controls->addWidget(log_loss_);
    controls->addWidget(log_traffic_);
    controls->addStretch(1);
    controls->addWidget(new QLabel("Wheel: zoom · drag: pan · double click: follow · legend click: show/hide"));
    outer->addLayout(controls);

    auto* grid = new QGridLayout;
    grid->setSpacing(4);
    loss_ = make_chart("Loss", "iteration", "loss");
    iter_ = make_chart("Iteration time per worker", "iteration", "ms");
    traffic_ = make_chart("Network traffic per node", "run time (s)", "kB/s");
    threshold_ = make_chart("Threshold τ and density", "iteration", "τ");
    accuracy_ = make_chart("Test accuracy per epoch", "epoch", "accuracy");
    staleness_ = make_chart("Staleness of applied updates", "iteration", "lag (steps)");
    staleness_->yAxis2->setVisible(true);
    staleness_->yAxis2->setLabel("wait (ms)");
    threshold_->yAxis2->setVisible(true);
    threshold_->yAxis2->setLabel("density");
    threshold_->yAxis2->setScaleType(QCPAxis::stLogarithmic);
    threshold_->yAxis2->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    threshold_->yAxis->setScaleType(QCPAxis::stLogarithmic);
    threshold_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    accuracy_->yAxis->setRange(0, 1);
    grid->addWidget(loss_, 0, 0, 1, 3);
    grid->addWidget(iter_, 1, 0);
    grid->addWidget(traffic_, 1, 1, 1, 2);
    grid->addWidget(threshold_, 2, 0);
    grid->addWidget(staleness_, 2, 1);
    grid->addWidget(accuracy_, 2, 2);
    grid->setRowStretch(0, 3);
    grid->setRowStretch(1, 2);
    grid->setRowStretch(2, 2);
    outer->addLayout(grid, 1);

    timer_.setSingleShot(true);
    timer_.setInterval(40);
    connect(&timer_, &QTimer::timeout, this, &ChartsPanel::redraw);
    connect(smoothing_, &QSlider::valueChanged, this, [this](int v) {
        smoothing_label_->setText(QString::number(v / 100.0, 'f', 2));
        drawn_revision_ = ~0ull;
        schedule_redraw();
    });
    auto set_log = [](QCustomPlot* plot, bool on) {
        plot->yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
        if (on)
            plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
        else
            plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        plot->rescaleAxes();
        plot->replot(QCustomPlot::rpQueuedReplot);
    };
    connect(log_loss_, &QCheckBox::toggled, this, [this, set_log](bool on) { set_log(loss_, on); });
    connect(log_traffic_, &QCheckBox::toggled, this, [this, set_log](bool on) { set_log(traffic_, on); });
}

QCustomPlot* ChartsPanel::make_chart(const QString& title, const QString& x_label, const QString& y_label) {
    auto* plot = new QCustomPlot(this);
    plot->setMinimumSize(280, 170);
    plot->plotLayout()->insertRow(0);
    auto* caption = new QCPTextElement(plot, title, QFont(font().family(), font().pointSize() + 1, QFont::Bold));
    plot->plotLayout()->addElement(0, 0, caption);
    plot->xAxis->setLabel(x_label);
    plot->yAxis->setLabel(y_label);
    plot->legend->setFont(QFont(font().family(), font().pointSize() - 1));
    plot->legend->setBrush(QColor(255, 255, 255, 200));
    plot->legend->setSelectableParts(QCPLegend::spItems);
    // Under the plot, in columns: inside the axis rect it covered the curves (traffic, τ and
    // density with several workers).
    put_legend_below(plot, 3);
    plot->legend->setBorderPen(Qt::NoPen);
    plot->legend->setMargins(QMargins(4, 0, 4, 2));
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom | QCP::iSelectLegend);
    plot->setNoAntialiasingOnDrag(true);
    following_[plot] = true;

    // Zooming or panning stops following the data until a double click.
    connect(plot, &QCustomPlot::mousePress, this, [this, plot](QMouseEvent* e) {
        if (e->button() == Qt::LeftButton) following_[plot] = false;
    });
    connect(plot, &QCustomPlot::mouseWheel, this, [this, plot](QWheelEvent*) { following_[plot] = false; });
    connect(plot, &QCustomPlot::mouseDoubleClick, this, [this, plot](QMouseEvent*) {
        following_[plot] = true;
        follow(plot);
        plot->replot(QCustomPlot::rpQueuedReplot);
    });
    connect(plot, &QCustomPlot::legendClick, this, [plot](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
        if (auto* pi = qobject_cast<QCPPlottableLegendItem*>(item)) {
            auto* p = pi->plottable();
            p->setVisible(!p->visible());
            pi->setTextColor(p->visible() ? Qt::black : Qt::gray);
            plot->replot(QCustomPlot::rpQueuedReplot);
        }
    });
    plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(plot, &QWidget::customContextMenuRequested, this, [this, plot, title](const QPoint& at) {
        QMenu menu;
        menu.addAction("Save chart as PNG…", this, [this, plot, title] {
            const QString path = QFileDialog::getSaveFileName(this, "Save chart", title.toLower().replace(' ', '-') + ".png",
                                                              "PNG images (*.png)");
            if (!path.isEmpty()) plot->savePng(path, 0, 0, 2.0);
        });
        menu.addAction("Follow data", this, [this, plot] {
            following_[plot] = true;
            follow(plot);
            plot->replot();
        });
        menu.exec(plot->mapToGlobal(at));
    });
    charts_.append(plot);
    return plot;
}

void ChartsPanel::set_metrics(const RunMetrics* metrics) {
    metrics_ = metrics;
    for (auto& [plot, map] : graphs_) {
        for (auto& [key, g] : map) plot->removeGraph(g);
        map.clear();
    }
    for (auto& [plot, on] : following_) on = true;
    drawn_revision_ = ~0ull;
    redraw_now();
}

void ChartsPanel::set_overlays(const QList<QPair<QString, const RunMetrics*>>& overlays) {
    overlays_ = overlays;
    for (auto* plot : {loss_, accuracy_}) {
        auto& map = graphs_[plot];
        for (auto it = map.begin(); it != map.end();) {
            if (it->first.startsWith("overlay:")) {
                plot->removeGraph(it->second);
                it = map.erase(it);
            } else {
                ++it;
            }
        }
    }
    drawn_revision_ = ~0ull;
    redraw_now();
}

void ChartsPanel::schedule_redraw() {
    if (!timer_.isActive()) timer_.start();
}

void ChartsPanel::redraw_now() {
    timer_.stop();
    redraw();
}

double ChartsPanel::smoothing() const { return smoothing_->value() / 100.0; }

QCPGraph* ChartsPanel::graph(QCustomPlot* plot, const QString& key, const QString& name, const QColor& color,
                             bool dashed) {
    auto& map = graphs_[plot];
    if (auto it = map.find(key); it != map.end()) return it->second;
    const bool right = key.startsWith("density") || key.startsWith("wait");
    auto* g = plot->addGraph(plot->xAxis, right ? plot->yAxis2 : plot->yAxis);
    g->setName(name);
    QPen pen(color);
    pen.setWidthF(1.5);
    if (dashed) pen.setStyle(Qt::DashLine);
    g->setPen(pen);
    g->setAdaptiveSampling(true);  // thousands of iterations draw as fast as hundreds
    map[key] = g;
    return g;
}

void ChartsPanel::refresh_series(QCustomPlot* plot, const QString& key_prefix, const std::map<int, Series>& series,
                                 const QString& label, int first_color) {
    int i = first_color;
    for (const auto& [id, s] : series) {
        auto* g = graph(plot, key_prefix + QString::number(id), label.arg(id), color_at(i++));
        g->setData(s.x, s.y, true);
    }
}

void ChartsPanel::follow(QCustomPlot* plot) {
    bool any = false;
    for (int i = 0; i < plot->graphCount(); ++i) any = any || !plot->graph(i)->data()->isEmpty();
    if (!any) return;
    plot->rescaleAxes(true);
    if (plot == accuracy_) {
        const auto r = plot->yAxis->range();
        plot->yAxis->setRange(std::max(0.0, r.lower - 0.05), std::min(1.0, r.upper + 0.02));
        plot->xAxis->setRange(0.5, std::max(plot->xAxis->range().upper + 0.5, 1.5));
    }
    if (plot == staleness_) {  // lags and waits are never negative; all-zero lags still show an axis
        plot->yAxis->setRange(0, std::max(1.0, plot->yAxis->range().upper * 1.1));
        plot->yAxis2->setRange(0, std::max(1.0, plot->yAxis2->range().upper * 1.1));
    }
}

void ChartsPanel::redraw() {
    if (!metrics_) return;
    if (metrics_->revision() == drawn_revision_) return;
    drawn_revision_ = metrics_->revision();
    ++redraws_;

    const RunMetrics& m = *metrics_;
    const Series raw = m.loss();
    graph(loss_, "loss", "loss (mean of workers)", QColor(0, 114, 178, 90))->setData(raw.x, raw.y, true);
    const Series smooth = m.smoothed_loss(smoothing());
    auto* sg = graph(loss_, "loss-smoothed", "smoothed", QColor(0, 114, 178));
    sg->setPen(QPen(QColor(0, 114, 178), 2.2));
    sg->setData(smooth.x, smooth.y, true);

    refresh_series(iter_, "worker", m.iteration_ms(), "worker %1", 0);
    refresh_series(traffic_, "tx", kilo(m.sent_rate()), "node %1 sent", 0);
    refresh_series(traffic_, "rx", kilo(m.received_rate()), "node %1 received", 4);
    refresh_series(threshold_, "tau", m.threshold(), "τ worker %1", 0);
    refresh_series(threshold_, "density", m.density(), "density worker %1", 4);
    refresh_series(staleness_, "lag", m.lag(), "lag worker %1", 0);
    refresh_series(staleness_, "wait", m.wait_ms(), "wait worker %1", 4);

    auto* acc = graph(accuracy_, "accuracy", "test accuracy", color_at(2));
    acc->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
    acc->setData(m.accuracy().x, m.accuracy().y, true);
    // Further outputs of a model with several: each its own line, named by its output.
    int head = 5;
    for (const auto& [name, series] : m.output_accuracy()) {
        auto* a = graph(accuracy_, "output:" + name, "output " + name, color_at(head++));
        a->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangle, 6));
        a->setData(series.x, series.y, true);
    }

    int o = 3;
    for (const auto& [label, run] : overlays_) {
        const Series s = run->smoothed_loss(smoothing());
        graph(loss_, "overlay:" + label, label, color_at(o), true)->setData(s.x, s.y, true);
        auto* a = graph(accuracy_, "overlay:" + label, label, color_at(o), true);
        a->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, 6));
        a->setData(run->accuracy().x, run->accuracy().y, true);
        ++o;
    }

    for (auto* plot : charts_) {
        if (following_[plot]) follow(plot);
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void ChartsPanel::save_png(const QString& path) {
    redraw_now();
    for (auto* plot : charts_) plot->replot(QCustomPlot::rpImmediateRefresh);
    if (!grab().save(path, "PNG")) throw std::runtime_error((path + ": cannot write PNG").toStdString());
}

}  // namespace thresher::ui
