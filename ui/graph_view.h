// GraphView: the Model tab's drawing of the model as a graph — a box per node (the model's input,
// then every layer: name, type, output shape), an arrow per edge labelled with the tensor's shape.
// Positions and arrow routes come from ui/model/graph_layout.h (depth = longest path from the
// input, so a stack is a vertical chain); this class only draws them. It redraws from the
// ModelDocument on every change; clicking a box emits layerSelected(row) and select_row() marks
// the box of the table's current row, so the table and the drawing select together. The row the
// engine's error names is outlined red. A graph wider than the pane is shrunk to fit (to 60%).
#pragma once

#include <QGraphicsView>
#include <QList>

class QGraphicsItem;
class QGraphicsScene;

namespace thresher::ui {

class ModelDocument;

class GraphView : public QGraphicsView {
    Q_OBJECT
public:
    explicit GraphView(ModelDocument* document, QWidget* parent = nullptr);

    // Marks the box of table row `row` (-1: the model's input) and scrolls it into view; emits
    // nothing (the caller already knows).
    void select_row(int row);
    // The selected box's row (-1: the input, or nothing selected).
    int selected_row() const;

    // What is drawn, for tests: boxes are nodes (input + layers), arrows are edges.
    int box_count() const { return static_cast<int>(boxes_.size()); }
    int arrow_count() const { return arrows_; }
    QGraphicsItem* box(int row) const;  // -1: the input's box
    // The scene-coordinate route of each arrow, in the document's edge order.
    const QList<QPolygonF>& routes() const { return routes_; }

Q_SIGNALS:
    // The user clicked a box: its table row, -1 for the model's input.
    void layerSelected(int row);

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuild();
    void on_selection_changed();
    void fit_width();
    void bring_into_view();

    ModelDocument* document_;
    QGraphicsScene* scene_;
    QList<QGraphicsItem*> boxes_;  // per node
    QList<QPolygonF> routes_;
    int arrows_ = 0;
    int selected_node_ = -1;
    bool syncing_ = false;  // true while the selection is set from code
    bool show_top_ = true;  // the next redraw is of a new model: scroll to its input
};

}  // namespace thresher::ui
