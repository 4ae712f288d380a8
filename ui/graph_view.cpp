#include "graph_view.h"

#include <QFontMetricsF>
#include <QGraphicsPathItem>
#include <QGraphicsPolygonItem>
#include <QGraphicsScene>
#include <QGraphicsSceneMouseEvent>
#include <QLineF>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QScrollBar>
#include <QPainter>
#include <QPainterPath>
#include <QStyleOptionGraphicsItem>
#include <cmath>

#include "graph_layout.h"
#include "layer_schema.h"
#include "model_document.h"

namespace thresher::ui {

namespace {

constexpr int kNodeKey = 0;  // QGraphicsItem::data key holding a box's node index

// One node: a rounded box with the name (bold), the type and the output shape. Colours say what
// it is: the input green, vertices orange, the output layer violet, other layers blue.
class BoxItem : public QGraphicsItem {
public:
    enum class Kind { Input, Layer, Vertex, Output };
    BoxItem(const QRectF& rect, QStringList lines, Kind kind, bool error)
        : rect_(rect), lines_(std::move(lines)), kind_(kind), error_(error) {
        setFlag(ItemIsSelectable);
        setCursor(Qt::PointingHandCursor);
        setZValue(2);
    }
    QRectF boundingRect() const override { return rect_.adjusted(-2, -2, 2, 2); }
    void paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) override {
        static const QColor fills[] = {QColor("#e8f5e9"), QColor("#e3f2fd"), QColor("#fff3e0"), QColor("#ede7f6")};
        static const QColor borders[] = {QColor("#2e7d32"), QColor("#1565c0"), QColor("#e65100"), QColor("#5e35b1")};
        const int k = static_cast<int>(kind_);
        QColor border = error_ ? QColor("#b00020") : borders[k];
        qreal width = error_ ? 2.0 : 1.0;
        QColor fill = fills[k];
        if (isSelected()) {
            fill = fill.darker(112);
            border = QColor("#0d47a1");
            width = 3.0;
        }
        p->setRenderHint(QPainter::Antialiasing);
        p->setPen(QPen(border, width));
        p->setBrush(fill);
        p->drawRoundedRect(rect_, 6, 6);
        // Three lines, each elided to the box: a long imported name keeps its start and end.
        QFont bold = p->font();
        bold.setBold(true);
        const QFont plain = p->font();
        const qreal inner = rect_.width() - 12;
        qreal y = rect_.top() + 4;
        for (int i = 0; i < lines_.size(); ++i) {
            p->setFont(i == 0 ? bold : plain);
            p->setPen(i == 0 ? QColor("#202020") : QColor("#505050"));
            const QFontMetricsF fm(p->font());
            p->drawText(QRectF(rect_.left() + 6, y, inner, fm.height()), Qt::AlignHCenter | Qt::AlignVCenter,
                        fm.elidedText(lines_[i], Qt::ElideMiddle, inner));
            y += fm.lineSpacing();
        }
    }

private:
    QRectF rect_;
    QStringList lines_;
    Kind kind_;
    bool error_;
};

// An edge's shape: small grey text on a white patch, so an arrow passing under it stays readable.
class LabelItem : public QGraphicsSimpleTextItem {
public:
    explicit LabelItem(const QString& text) : QGraphicsSimpleTextItem(text) {
        setBrush(QColor("#555555"));
        setZValue(1);
    }
    void paint(QPainter* p, const QStyleOptionGraphicsItem* o, QWidget* w) override {
        p->fillRect(boundingRect().adjusted(-1, 0, 1, 0), QColor(255, 255, 255, 220));
        QGraphicsSimpleTextItem::paint(p, o, w);
    }
};

QPolygonF arrow_head(const QPointF& tip, const QPointF& from) {
    const QLineF back(tip, from);
    const double angle = std::atan2(-back.dy(), back.dx());
    constexpr double size = 8, spread = 0.45;
    return QPolygonF({tip, tip + QPointF(std::cos(angle + spread) * size, -std::sin(angle + spread) * size),
                      tip + QPointF(std::cos(angle - spread) * size, -std::sin(angle - spread) * size)});
}

}  // namespace

GraphView::GraphView(ModelDocument* document, QWidget* parent)
    : QGraphicsView(parent), document_(document), scene_(new QGraphicsScene(this)) {
    setScene(scene_);
    setObjectName("graph_view");
    setRenderHint(QPainter::Antialiasing);
    setAlignment(Qt::AlignHCenter | Qt::AlignTop);
    // Fitting the width rescales: keep the scroll position (a graph shown from its input stays
    // at its input) instead of zooming about the middle of the pane.
    setTransformationAnchor(QGraphicsView::NoAnchor);
    setBackgroundBrush(QColor("#fafafa"));
    connect(scene_, &QGraphicsScene::selectionChanged, this, &GraphView::on_selection_changed);
    // Every edit of the document, a new model included, ends in changed(). A new model (reset)
    // is shown from its input; an edit keeps the place.
    connect(document_, &QAbstractItemModel::modelReset, this, [this] { show_top_ = true; });
    connect(document_, &ModelDocument::changed, this, &GraphView::rebuild);
    rebuild();
}

QGraphicsItem* GraphView::box(int row) const {
    const int node = ModelGraph::node_of_row(row);
    return node >= 0 && node < boxes_.size() ? boxes_[node] : nullptr;
}

void GraphView::rebuild() {
    syncing_ = true;
    scene_->clear();
    boxes_.clear();
    routes_.clear();
    arrows_ = 0;
    const ModelGraph& graph = document_->graph();

    // Boxes fit three lines of the view's font, and are wide enough for the usual names.
    const QFontMetricsF fm(font());
    GraphMetrics metrics;
    metrics.box_height = 3 * fm.lineSpacing() + 10;
    metrics.level_gap = std::max(metrics.level_gap, 2.6 * fm.lineSpacing());
    qreal widest = 0;
    for (const auto& n : graph.nodes) widest = std::max(widest, fm.horizontalAdvance(n.name) * 1.1);
    metrics.box_width = std::clamp(widest + 16, 140.0, 220.0);

    const GraphLayout layout = layout_graph(graph);
    const GraphGeometry geometry = place_graph(graph, layout, metrics);
    const int last = static_cast<int>(graph.nodes.size()) - 1;
    for (int v = 0; v < graph.nodes.size(); ++v) {
        const GraphNode& n = graph.nodes[v];
        const int row = ModelGraph::row_of_node(v);
        const auto kind = v == ModelGraph::kInputNode ? BoxItem::Kind::Input
                          : is_vertex_type(n.type)    ? BoxItem::Kind::Vertex
                          : v == last                 ? BoxItem::Kind::Output
                                                      : BoxItem::Kind::Layer;
        const QString title = !n.name.isEmpty() ? n.name : QString("#%1").arg(row);
        const bool error = !document_->valid() && row >= 0 && row == document_->error_row();
        auto* item = new BoxItem(geometry.boxes[v], {title, n.type, n.shape.isEmpty() ? QString("–") : n.shape}, kind, error);
        item->setData(kNodeKey, v);
        item->setToolTip(row < 0 ? QString("the model's input \"%1\": %2").arg(n.name, n.shape)
                                 : error ? document_->error()
                                         : QString("#%1 %2%3 → %4").arg(row).arg(n.type,
                                               n.name.isEmpty() ? QString() : " \"" + n.name + "\"", n.shape));
        scene_->addItem(item);
        boxes_.append(item);
    }
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
    const QPen pen(QColor("#607d8b"), 1.3);
    for (int e = 0; e < graph.edges.size(); ++e) {
        const QPolygonF& route = geometry.routes[e];
        routes_.append(route);
        if (route.size() < 2) continue;
        QPainterPath path(route.first());
        for (int i = 1; i < route.size(); ++i) path.lineTo(route[i]);
        auto* line = scene_->addPath(path, pen);
        line->setZValue(0);
        auto* head = scene_->addPolygon(arrow_head(route.last(), route[route.size() - 2]), QPen(pen.color()), pen.color());
        head->setZValue(0);
        const GraphEdge& edge = graph.edges[e];
        const QString tip = QString("%1 → %2: %3").arg(graph.nodes[edge.from].name.isEmpty() ? "#" + QString::number(ModelGraph::row_of_node(edge.from)) : graph.nodes[edge.from].name,
                                                      graph.nodes[edge.to].name.isEmpty() ? "#" + QString::number(ModelGraph::row_of_node(edge.to)) : graph.nodes[edge.to].name,
                                                      edge.shape.isEmpty() ? QString("shape unknown (the model is invalid)") : edge.shape);
        line->setToolTip(tip);
        ++arrows_;
        if (edge.shape.isEmpty()) continue;
        auto* label = new LabelItem(edge.shape);
        label->setFont(small);
        label->setPos(geometry.labels[e]);
        label->setToolTip(tip);
        scene_->addItem(label);
    }
    setSceneRect(scene_->itemsBoundingRect().adjusted(-12, -12, 12, 12));
    fit_width();
    if (show_top_) {
        verticalScrollBar()->setValue(verticalScrollBar()->minimum());
        horizontalScrollBar()->setValue(horizontalScrollBar()->minimum());
        show_top_ = false;
    }
    if (selected_node_ >= 0 && selected_node_ < boxes_.size()) boxes_[selected_node_]->setSelected(true);
    syncing_ = false;
}

void GraphView::fit_width() {
    // A graph wider than the pane (branches side by side, lanes, labels) shrinks to fit its width,
    // down to a scale where the text stays readable; beyond that the pane scrolls. Height always
    // scrolls: a deep network is a long chain.
    const qreal width = sceneRect().width();
    const qreal scale = width > 0 ? std::clamp((viewport()->width() - 4) / width, 0.6, 1.0) : 1.0;
    setTransform(QTransform::fromScale(scale, scale));
}

void GraphView::resizeEvent(QResizeEvent* event) {
    QGraphicsView::resizeEvent(event);
    fit_width();
    // Shown or resized: the selected box is measured against the real viewport only now (a view
    // not yet laid out would scroll a box at the top away from it).
    bring_into_view();
}

void GraphView::bring_into_view() {
    if (selected_node_ < 0 || selected_node_ >= boxes_.size()) return;
    // A box out of view comes to the middle, with what it reads and what reads it around it; one
    // in view stays where it is (a click does not make the drawing jump).
    QGraphicsItem* box = boxes_[selected_node_];
    if (!mapToScene(viewport()->rect()).boundingRect().contains(box->sceneBoundingRect())) centerOn(box);
}

void GraphView::select_row(int row) {
    const int node = ModelGraph::node_of_row(row);
    syncing_ = true;
    scene_->clearSelection();
    selected_node_ = -1;
    if (node >= 0 && node < boxes_.size()) {
        boxes_[node]->setSelected(true);
        selected_node_ = node;
        if (isVisible()) bring_into_view();
    }
    syncing_ = false;
}

int GraphView::selected_row() const { return selected_node_ < 0 ? -1 : ModelGraph::row_of_node(selected_node_); }

void GraphView::on_selection_changed() {
    if (syncing_) return;
    const auto selected = scene_->selectedItems();
    if (selected.isEmpty()) return;
    selected_node_ = selected.first()->data(kNodeKey).toInt();
    Q_EMIT layerSelected(ModelGraph::row_of_node(selected_node_));
}

void GraphView::mousePressEvent(QMouseEvent* event) {
    // A click beside the boxes keeps the selection (the table keeps its row too).
    if (!itemAt(event->pos()) || !itemAt(event->pos())->flags().testFlag(QGraphicsItem::ItemIsSelectable)) {
        event->accept();
        return;
    }
    QGraphicsView::mousePressEvent(event);
}

}  // namespace thresher::ui
