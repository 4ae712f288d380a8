#include "graph_view.h"

#include <QBrush>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QMouseEvent>
#include <QPen>
#include <QPolygonF>
#include <cmath>

#include "model/graph_layout.h"
#include "model/model_document.h"

namespace thresher::ui {

namespace {

constexpr double kBoxW = 190, kBoxH = 40, kGapX = 30, kGapY = 34;

QPointF top_of(const QRectF& r) { return {r.center().x(), r.top()}; }
QPointF bottom_of(const QRectF& r) { return {r.center().x(), r.bottom()}; }

}  // namespace

GraphView::GraphView(ModelDocument* document, QWidget* parent) : QGraphicsView(parent), document_(document) {
    setObjectName("graph_view");
    setScene(new QGraphicsScene(this));
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(160);
    rebuild();
}

void GraphView::rebuild() {
    scene()->clear();
    boxes_.clear();
    edges_ = 0;
    const auto& sources = document_->sources();
    if (sources.empty()) {  // an invalid model: the table shows the error
        scene()->addSimpleText(document_->layer_count() ? "The graph shows once the model is valid." : "No layers.");
        return;
    }
    const GraphLayout g = layout_graph(sources);
    auto rect_at = [&](const GraphPlace& p) {
        return QRectF(p.column * (kBoxW + kGapX), p.row * (kBoxH + kGapY), kBoxW, kBoxH);
    };
    auto add_box = [&](const QRectF& r, const QString& title, const QString& shape, const QColor& fill) {
        auto* box = scene()->addRect(r, QPen(QColor(90, 90, 90)), QBrush(fill));
        auto* t = new QGraphicsSimpleTextItem(title, box);
        t->setPos(r.left() + 6, r.top() + 3);
        auto* s = new QGraphicsSimpleTextItem(shape, box);
        s->setBrush(QColor(80, 80, 80));
        s->setPos(r.left() + 6, r.top() + 20);
        boxes_.append(box);
    };
    add_box(rect_at(g.input), "input", document_->input_shape(), QColor(230, 236, 245));
    for (int i = 0; i < document_->layer_count(); ++i) {
        const auto l = document_->layer(i);
        const QString type = l.value("type").toString();
        const QString name = l.value("name").toString();
        const bool vertex = QStringList{"add", "subtract", "multiply", "average", "maximum", "concatenate", "subset"}.contains(type);
        QString title = name.isEmpty() ? type : name + (name == type ? "" : "  (" + type + ")");
        if (title.size() > 28) title = title.left(27) + "…";
        add_box(rect_at(g.layers[static_cast<std::size_t>(i)]), title, document_->output_shape(i),
                vertex ? QColor(250, 240, 215) : QColor(245, 245, 245));
    }
    // Edges: from the bottom of the input's box to the top of its reader's, with an arrowhead.
    QPen pen(QColor(60, 60, 60));
    for (std::size_t i = 0; i < sources.size(); ++i)
        for (int s : sources[i]) {
            const QRectF from = boxes_[s + 1]->rect(), to = boxes_[static_cast<int>(i) + 1]->rect();
            const QPointF a = bottom_of(from), b = top_of(to);
            scene()->addLine(QLineF(a, b), pen);
            const double angle = std::atan2(b.y() - a.y(), b.x() - a.x());
            QPolygonF head;
            head << b << b - QPointF(std::cos(angle - 0.4) * 8, std::sin(angle - 0.4) * 8)
                 << b - QPointF(std::cos(angle + 0.4) * 8, std::sin(angle + 0.4) * 8);
            scene()->addPolygon(head, pen, QBrush(QColor(60, 60, 60)));
            ++edges_;
        }
    scene()->setSceneRect(scene()->itemsBoundingRect().adjusted(-10, -10, 10, 10));
    const int keep = highlighted_;
    highlighted_ = -1;
    highlight(keep);
}

void GraphView::highlight(int row) {
    if (highlighted_ >= 0 && highlighted_ + 1 < boxes_.size()) boxes_[highlighted_ + 1]->setPen(QPen(QColor(90, 90, 90)));
    highlighted_ = row;
    if (row < 0 || row + 1 >= boxes_.size()) return;
    boxes_[row + 1]->setPen(QPen(QColor(30, 100, 200), 2.5));
    ensureVisible(boxes_[row + 1]);
}

void GraphView::mousePressEvent(QMouseEvent* event) {
    const QPointF p = mapToScene(event->position().toPoint());
    for (int i = 1; i < boxes_.size(); ++i)
        if (boxes_[i]->rect().contains(p)) {
            Q_EMIT layerClicked(i - 1);
            break;
        }
    QGraphicsView::mousePressEvent(event);
}

}  // namespace thresher::ui
