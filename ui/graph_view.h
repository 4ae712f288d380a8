// The model's graph, drawn beside its table: a box per layer (name or type, output shape) and the
// model's input, an arrow per edge; layers in rows by depth (ui/model/graph_layout.h). Clicking a
// box selects that layer's row, and selecting a row highlights its box.
#pragma once

#include <QGraphicsView>
#include <QVector>

class QGraphicsRectItem;

namespace thresher::ui {

class ModelDocument;

class GraphView : public QGraphicsView {
    Q_OBJECT
public:
    explicit GraphView(ModelDocument* document, QWidget* parent = nullptr);

    // Redraws from the document (after every change).
    void rebuild();
    void highlight(int row);
    int box_count() const { return boxes_.size(); }  // the input and the layers
    int edge_count() const { return edges_; }

Q_SIGNALS:
    void layerClicked(int row);

protected:
    void mousePressEvent(QMouseEvent* event) override;

private:
    ModelDocument* document_;
    QVector<QGraphicsRectItem*> boxes_;  // [0]: the input; [i + 1]: layer i
    int edges_ = 0;
    int highlighted_ = -1;
};

}  // namespace thresher::ui
