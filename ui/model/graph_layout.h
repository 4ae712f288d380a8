// The model as a drawn graph, computed without widgets so tests can check it headless: the nodes
// (the model's input, then each layer in table order), the edges (who reads whom, labelled with
// the tensor's shape) and where everything goes on the page.
//
// Layout, kept simple on purpose: a node's depth is its longest path from the input (so a layer
// sits below everything it reads), and nodes of one depth stand side by side in table order.
// A stack is therefore a vertical chain. ResNet's blocks:
//   depth 3   stem_relu ─────────────┐        an edge that skips depths runs down a lane to the
//   depth 4   b1_conv1               │        right of every box it passes, so no arrow crosses
//   ...                              │        a box
//   depth 9   b1_add  ◀──────────────┘
// An edge between neighbouring depths is a straight arrow through the gap between them.
#pragma once

#include <QList>
#include <QPointF>
#include <QPolygonF>
#include <QRectF>
#include <QString>

namespace thresher::ui {

struct GraphNode {
    QString name;   // the layer's name ("" when it has none), or the model input's name
    QString type;   // "convolution", "add", ...; "input" for the model's input
    QString shape;  // output shape as the engine infers it ("16×28×28"); "" while the model is invalid
};

struct GraphEdge {
    int from = 0, to = 0;  // node indices
    QString shape;         // the tensor on the edge: the output shape of `from`
};

// Node 0 is the model's input; the layer in table row r is node r + 1.
struct ModelGraph {
    QList<GraphNode> nodes;
    QList<GraphEdge> edges;
    static constexpr int kInputNode = 0;
    static int node_of_row(int row) { return row + 1; }
    static int row_of_node(int node) { return node - 1; }  // -1: the model's input
};

// Depth and position within the depth of every node.
struct GraphLayout {
    QList<int> depth;  // longest path from the input (the input: 0)
    QList<int> slot;   // 0, 1, ... left to right among the nodes of one depth, in node order
    int depths = 0;    // number of distinct depths
};

// Edges must go from a lower to a higher node index (layers read earlier layers; the document
// drops any other before building the graph). A node that reads nothing sits at depth 1.
GraphLayout layout_graph(const ModelGraph& graph);

// Sizes of the drawing, in scene units (pixels at zoom 1).
struct GraphMetrics {
    qreal box_width = 168, box_height = 50;
    qreal level_gap = 40;   // vertical space between depths (arrows and their labels go there)
    qreal column_gap = 36;  // horizontal space between boxes of one depth
    qreal lane_gap = 14;    // between the lanes of edges that skip depths
};

struct GraphGeometry {
    QList<QRectF> boxes;      // per node
    QList<QPolygonF> routes;  // per edge: from the bottom of `from` to the top of `to`
    QList<QPointF> labels;    // per edge: where its shape text starts (top-left)
    QRectF bounds;            // everything above
};

// Places boxes by layout and routes every edge so that it touches no box but its two ends.
GraphGeometry place_graph(const ModelGraph& graph, const GraphLayout& layout, const GraphMetrics& metrics = {});

}  // namespace thresher::ui
