#include "scalability_page.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include "qcustomplot_include.h"

namespace thresher::ui {

ScalabilityPage::ScalabilityPage(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel("Worker counts:"));
    counts_ = new QLineEdit("1, 2, 4");
    counts_->setMaximumWidth(160);
    counts_->setToolTip("Comma-separated worker counts; each is one run of the current spec");
    top->addWidget(counts_);
    vary_ = new QComboBox;
    vary_->addItem("as local nodes (1 worker each, over UDP)");
    vary_->addItem("as workers of one node (threads)");
    top->addWidget(vary_);
    start_ = new QPushButton("Run experiment");
    stop_ = new QPushButton("Stop");
    stop_->setEnabled(false);
    top->addWidget(start_);
    top->addWidget(stop_);
    top->addStretch(1);
    outer->addLayout(top);
    status_ = new QLabel("Runs the current spec once per count and compares the throughput.");
    status_->setWordWrap(true);
    outer->addWidget(status_);

    auto* split = new QSplitter(Qt::Vertical);
    table_ = new QTableWidget(0, 6);
    table_->setHorizontalHeaderLabels({"Workers", "Samples/s", "Speedup", "Efficiency", "DL4J estimate: speedup", "efficiency"});
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    split->addWidget(table_);
    chart_ = new QCustomPlot;
    chart_->setMinimumHeight(220);
    chart_->plotLayout()->insertRow(0);
    chart_->plotLayout()->addElement(0, 0, new QCPTextElement(chart_, "Speedup against workers", QFont(font().family(), font().pointSize() + 1, QFont::Bold)));
    chart_->xAxis->setLabel("workers");
    chart_->yAxis->setLabel("speedup");
    chart_->yAxis2->setVisible(true);
    chart_->yAxis2->setLabel("samples/s");
    chart_->legend->setVisible(true);
    chart_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    chart_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    split->addWidget(chart_);
    split->setStretchFactor(1, 3);
    outer->addWidget(split, 1);

    connect(start_, &QPushButton::clicked, this, &ScalabilityPage::startRequested);
    connect(stop_, &QPushButton::clicked, this, &ScalabilityPage::stopRequested);
}

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

void ScalabilityPage::show_points(const QList<ScalePoint>& points) {
    const auto rows = scalability(points);
    table_->setRowCount(0);
    QVector<double> n, measured, ideal, estimate, sps;
    for (const auto& r : rows) {
        const int row = table_->rowCount();
        table_->insertRow(row);
        const QStringList cells{QString::number(r.workers),
                                QString::number(r.samples_per_s, 'f', 0),
                                QString::number(r.speedup, 'f', 2),
                                QString::number(r.efficiency * 100, 'f', 0) + " %",
                                r.estimate_speedup ? QString::number(*r.estimate_speedup, 'f', 2) : QString("—"),
                                r.estimate_efficiency ? QString::number(*r.estimate_efficiency * 100, 'f', 0) + " %" : QString("—")};
        for (int c = 0; c < cells.size(); ++c) table_->setItem(row, c, new QTableWidgetItem(cells[c]));
        n.append(r.workers);
        measured.append(r.speedup);
        ideal.append(r.workers);
        estimate.append(r.estimate_speedup.value_or(qQNaN()));
        sps.append(r.samples_per_s);
    }
    chart_->clearGraphs();
    auto add = [this](const QString& name, const QVector<double>& x, const QVector<double>& y, QColor color,
                      Qt::PenStyle style, QCPAxis* axis) {
        auto* g = chart_->addGraph(chart_->xAxis, axis);
        g->setName(name);
        g->setPen(QPen(color, 2, style));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 7));
        g->setData(x, y);
    };
    add("measured speedup", n, measured, QColor(0, 114, 178), Qt::SolidLine, chart_->yAxis);
    add("ideal", n, ideal, Qt::gray, Qt::DashLine, chart_->yAxis);
    add("DL4J estimate", n, estimate, QColor(230, 159, 0), Qt::DotLine, chart_->yAxis);
    add("samples/s (right axis)", n, sps, QColor(0, 158, 115), Qt::SolidLine, chart_->yAxis2);
    chart_->rescaleAxes();
    if (!n.isEmpty()) {
        chart_->xAxis->setRange(0.5, n.back() + 0.5);
        chart_->yAxis->setRange(0, std::max(n.back(), 1.0) + 0.5);
        chart_->yAxis2->setRangeLower(0);
    }
    chart_->replot();
}

}  // namespace thresher::ui
