#include "history_page.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "events_csv.h"
#include "run_history.h"

namespace thresher::ui {

namespace {

enum Col { ColOverlay, ColId, ColName, ColStarted, ColStatus, ColWall, ColAccuracy, ColThroughput, ColCount };

QString optional_text(const std::optional<double>& v, int decimals) {
    return v ? QString::number(*v, 'f', decimals) : QString("—");
}

}  // namespace

HistoryPage::HistoryPage(RunHistory* history, QWidget* parent) : QWidget(parent), history_(history) {
    auto* outer = new QVBoxLayout(this);
    auto* hint = new QLabel("Every launched run is kept here (" + history_->path() +
                            "). Tick “Overlay” to draw a run dashed beside the current one on the Run tab.");
    hint->setWordWrap(true);
    hint->setStyleSheet("color: gray");
    outer->addWidget(hint);
    table_ = new QTableWidget(0, ColCount);
    table_->setHorizontalHeaderLabels({"Overlay", "#", "Name", "Started", "Status", "Wall (s)", "Accuracy", "Samples/s"});
    table_->horizontalHeader()->setSectionResizeMode(ColName, QHeaderView::Stretch);
    table_->verticalHeader()->hide();
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    outer->addWidget(table_, 1);
    auto* buttons = new QHBoxLayout;
    auto* open = new QPushButton("Open its spec");
    auto* csv = new QPushButton("Export events as CSV…");
    auto* remove = new QPushButton("Delete run");
    buttons->addWidget(open);
    buttons->addWidget(csv);
    buttons->addStretch(1);
    buttons->addWidget(remove);
    outer->addLayout(buttons);

    connect(open, &QPushButton::clicked, this, [this] {
        if (selected_run() > 0) Q_EMIT openSpecRequested(selected_run());
    });
    connect(csv, &QPushButton::clicked, this, &HistoryPage::export_csv);
    connect(remove, &QPushButton::clicked, this, &HistoryPage::remove_selected);
    connect(table_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
        if (filling_ || item->column() != ColOverlay) return;
        set_overlay(table_->item(item->row(), ColId)->text().toLongLong(), item->checkState() == Qt::Checked);
    });
    refresh();
}

void HistoryPage::refresh() {
    filling_ = true;
    QList<RunRecord> runs;
    try {
        runs = history_->runs();
    } catch (const std::exception& e) {
        Q_EMIT error(QString::fromUtf8(e.what()));
    }
    table_->setRowCount(0);
    for (const auto& r : runs) {
        const int row = table_->rowCount();
        table_->insertRow(row);
        auto* tick = new QTableWidgetItem;
        tick->setFlags(Qt::ItemIsUserCheckable | Qt::ItemIsEnabled | Qt::ItemIsSelectable);
        tick->setCheckState(overlays_.count(r.id) ? Qt::Checked : Qt::Unchecked);
        table_->setItem(row, ColOverlay, tick);
        table_->setItem(row, ColId, new QTableWidgetItem(QString::number(r.id)));
        table_->setItem(row, ColName, new QTableWidgetItem(r.name));
        table_->setItem(row, ColStarted, new QTableWidgetItem(r.started_at.toLocalTime().toString("yyyy-MM-dd hh:mm:ss")));
        auto* status = new QTableWidgetItem(r.status);
        if (r.status == "failed") status->setForeground(QColor(176, 0, 32));
        if (r.status == "ok") status->setForeground(QColor(27, 94, 32));
        status->setToolTip(r.summary);
        table_->setItem(row, ColStatus, status);
        table_->setItem(row, ColWall, new QTableWidgetItem(optional_text(r.wall_s, 1)));
        table_->setItem(row, ColAccuracy, new QTableWidgetItem(optional_text(r.accuracy, 4)));
        table_->setItem(row, ColThroughput, new QTableWidgetItem(optional_text(r.samples_per_s, 0)));
        labels_[r.id] = QString("#%1 %2").arg(r.id).arg(r.name);
    }
    table_->resizeColumnsToContents();
    table_->horizontalHeader()->setSectionResizeMode(ColName, QHeaderView::Stretch);
    filling_ = false;
}

qint64 HistoryPage::selected_run() const {
    const int row = table_->currentRow();
    if (row < 0 || !table_->item(row, ColId)) return 0;
    return table_->item(row, ColId)->text().toLongLong();
}

void HistoryPage::set_overlay(qint64 run, bool on) {
    if (!on) {
        overlays_.erase(run);
    } else if (!overlays_.count(run)) {
        auto metrics = std::make_unique<RunMetrics>();
        try {
            for (const auto& e : history_->events(run)) metrics->add(e);
        } catch (const std::exception& e) {
            Q_EMIT error(QString::fromUtf8(e.what()));
            return;
        }
        overlays_[run] = std::move(metrics);
    }
    Q_EMIT overlaysChanged();
}

QList<QPair<QString, const RunMetrics*>> HistoryPage::overlays() const {
    QList<QPair<QString, const RunMetrics*>> out;
    for (const auto& [id, m] : overlays_) out.append({labels_.count(id) ? labels_.at(id) : QString("#%1").arg(id), m.get()});
    return out;
}

void HistoryPage::export_csv() {
    const qint64 run = selected_run();
    if (run <= 0) return;
    const QString path = QFileDialog::getSaveFileName(this, "Export events", QString("run-%1-events.csv").arg(run),
                                                      "CSV files (*.csv)");
    if (path.isEmpty()) return;
    try {
        write_events_csv(history_->events(run), path);
    } catch (const std::exception& e) {
        Q_EMIT error(QString::fromUtf8(e.what()));
    }
}

void HistoryPage::remove_selected() {
    const qint64 run = selected_run();
    if (run <= 0) return;
    if (QMessageBox::question(this, "Delete run", QString("Delete run #%1 and its events from the history?").arg(run)) !=
        QMessageBox::Yes)
        return;
    try {
        history_->remove_run(run);
    } catch (const std::exception& e) {
        Q_EMIT error(QString::fromUtf8(e.what()));
    }
    if (overlays_.erase(run)) Q_EMIT overlaysChanged();
    refresh();
}

}  // namespace thresher::ui
