#include "confusion_view.h"

#include <QLabel>
#include <QVBoxLayout>

#include "qcustomplot_include.h"

namespace thresher::ui {

namespace {

// Cells show their counts up to this many classes; beyond, the numbers would not fit.
constexpr int kCountsUpTo = 20;

}  // namespace

ConfusionView::ConfusionView(QWidget* parent) : QWidget(parent) {
    setObjectName("confusion_view");
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    plot_ = new QCustomPlot(this);
    plot_->setMinimumSize(320, 240);
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, "Confusion matrix", QFont(font().family(), font().pointSize() + 1, QFont::Bold)));
    plot_->xAxis->setLabel("predicted class");
    plot_->yAxis->setLabel("actual class");
    plot_->yAxis->setRangeReversed(true);  // class 0 at the top, as the engine's table prints it
    map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
    QCPColorGradient gradient;
    gradient.setColorStopAt(0.0, QColor(255, 255, 255));
    gradient.setColorStopAt(0.5, QColor(107, 174, 214));
    gradient.setColorStopAt(1.0, QColor(8, 48, 107));
    map_->setGradient(gradient);
    map_->setDataRange(QCPRange(0, 1));
    map_->setInterpolate(false);
    auto* scale = new QCPColorScale(plot_);
    scale->setLabel("share of the actual class");
    scale->setGradient(gradient);
    scale->setDataRange(QCPRange(0, 1));
    plot_->plotLayout()->addElement(1, 1, scale);
    map_->setColorScale(scale);
    summary_ = new QLabel;
    summary_->setObjectName("confusion_summary");
    summary_->setWordWrap(true);
    layout->addWidget(plot_, 1);
    layout->addWidget(summary_);
    clear();
}

void ConfusionView::clear() {
    matrix_.reset();
    names_.clear();
    caption_.clear();
    redraw();
}

void ConfusionView::set_class_names(const QStringList& names) {
    names_ = names;
    redraw();
}

void ConfusionView::show_epoch(const QJsonObject& e) {
    auto m = Confusion::from_json(e.value("confusion"));
    if (!m) return;
    matrix_ = std::move(m);
    caption_ = QString("Epoch %1 (%2 set), accuracy %3")
                   .arg(e.value("epoch").toInt() + 1)
                   .arg(e.value("eval_set").toString("test"))
                   .arg(e.value("accuracy").toDouble(), 0, 'f', 4);
    redraw();
}

QString ConfusionView::summary() const { return summary_->text(); }

void ConfusionView::redraw() {
    plot_->clearItems();
    if (!matrix_) {
        map_->data()->clear();
        map_->setVisible(false);
        summary_->setText("No confusion matrix yet: a classifier's matrix appears after its first epoch.");
        plot_->replot();
        return;
    }
    const Confusion& m = *matrix_;
    const int n = m.classes();
    QStringList worst;
    for (const auto& [k, accuracy] : m.worst(5))
        if (accuracy < 1.0) worst << QString("%1 %2").arg(Confusion::name(names_, n, k)).arg(accuracy, 0, 'f', 2);
    summary_->setText(caption_ + " · " + QString::number(n) + " classes · " +
                      (worst.isEmpty() ? QString("every class right") : "lowest per-class accuracy: " + worst.join(", ")) +
                      (n > Confusion::kMaxDrawn ? QString(" · too many classes to draw (over %1)").arg(Confusion::kMaxDrawn) : QString()));
    if (n > Confusion::kMaxDrawn) {
        map_->setVisible(false);
        plot_->replot();
        return;
    }
    map_->setVisible(true);
    map_->data()->setSize(n, n);
    map_->data()->setRange(QCPRange(0, n - 1), QCPRange(0, n - 1));
    for (int actual = 0; actual < n; ++actual)
        for (int predicted = 0; predicted < n; ++predicted) map_->data()->setCell(predicted, actual, m.row_fraction(actual, predicted));
    // Class names as tick labels (every class, smaller type for many).
    QFont tick_font = font();
    if (n > 20) tick_font.setPointSizeF(std::max(5.0, tick_font.pointSizeF() - 2));
    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis}) {
        QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
        for (int k = 0; k < n; ++k) ticker->addTick(k, Confusion::name(names_, n, k));
        axis->setTicker(ticker);
        axis->setTickLabelFont(tick_font);
        axis->setRange(-0.5, n - 0.5);
        axis->setSubTicks(false);
        axis->grid()->setVisible(false);
    }
    plot_->xAxis->setTickLabelRotation(n > 6 ? 60 : 0);
    if (n <= kCountsUpTo) {
        for (int actual = 0; actual < n; ++actual)
            for (int predicted = 0; predicted < n; ++predicted) {
                if (m.count(actual, predicted) == 0) continue;
                auto* text = new QCPItemText(plot_);
                text->position->setCoords(predicted, actual);
                text->setText(QString::number(m.count(actual, predicted)));
                text->setColor(m.row_fraction(actual, predicted) > 0.5 ? Qt::white : Qt::black);
                QFont f = font();
                f.setPointSizeF(n > 12 ? std::max(5.0, f.pointSizeF() - 2) : f.pointSizeF());
                text->setFont(f);
            }
    }
    plot_->replot();
}

}  // namespace thresher::ui
