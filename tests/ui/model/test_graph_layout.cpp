// The graph view's layout without a window: depth is the longest path from the input (a stack is
// one vertical chain; a residual block's add sits below its longest branch), nodes of one depth
// stand side by side in table order, and every arrow touches no box but its own two ends — on
// hand-made graphs and on the ResNet template as the document resolves it.
#include <QtTest>

#include "graph_layout.h"
#include "model_document.h"

using thresher::ui::GraphEdge;
using thresher::ui::GraphGeometry;
using thresher::ui::GraphLayout;
using thresher::ui::GraphNode;
using thresher::ui::ModelDocument;
using thresher::ui::ModelGraph;

namespace {

QString source(const QString& rel) { return qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/" + rel; }

ModelGraph graph_of(int nodes, const QList<QPair<int, int>>& edges) {
    ModelGraph g;
    for (int i = 0; i < nodes; ++i) g.nodes.append({QString("n%1").arg(i), i == 0 ? "input" : "dense", "10"});
    for (auto [a, b] : edges) g.edges.append({a, b, "10"});
    return g;
}

// Whether segment a-b passes through the inside of rect r (touching its border is allowed: arrows
// start and end on borders). Segments are axis-aligned or short diagonals in the gaps, so sampling
// finely is exact enough.
bool crosses(const QPointF& a, const QPointF& b, const QRectF& r) {
    const QRectF inside = r.adjusted(1, 1, -1, -1);
    for (int i = 0; i <= 200; ++i)
        if (inside.contains(a + (b - a) * (i / 200.0))) return true;
    return false;
}

// The first box (node index) an edge's route crosses other than its own ends, or -1.
int crossed_box(const ModelGraph& graph, const GraphGeometry& geo, int edge) {
    const auto& route = geo.routes[edge];
    for (int v = 0; v < geo.boxes.size(); ++v) {
        if (v == graph.edges[edge].from || v == graph.edges[edge].to) continue;
        for (int i = 1; i < route.size(); ++i)
            if (crosses(route[i - 1], route[i], geo.boxes[v])) return v;
    }
    return -1;
}

}  // namespace

class TestGraphLayout : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void stack_is_a_vertical_chain();
    void residual_block_depths_and_slots();
    void skip_edges_route_around_boxes();
    void resnet_template_has_no_crossings();
    void unresolved_node_sits_below_the_input();
};

void TestGraphLayout::stack_is_a_vertical_chain() {
    const auto g = graph_of(4, {{0, 1}, {1, 2}, {2, 3}});
    const GraphLayout l = thresher::ui::layout_graph(g);
    QCOMPARE(l.depth, QList<int>({0, 1, 2, 3}));
    QCOMPARE(l.slot, QList<int>({0, 0, 0, 0}));
    QCOMPARE(l.depths, 4);
    const GraphGeometry geo = thresher::ui::place_graph(g, l);
    for (int v = 1; v < 4; ++v) {
        QCOMPARE(geo.boxes[v].left(), geo.boxes[0].left());
        QVERIFY(geo.boxes[v].top() > geo.boxes[v - 1].bottom());
    }
    for (const auto& r : geo.routes) {
        QCOMPARE(r.size(), 2);  // straight down
        QCOMPARE(r[0].x(), r[1].x());
    }
}

void TestGraphLayout::residual_block_depths_and_slots() {
    // input → a → b → c → add(c, a'), a' = shortcut reading the input: add is below c, the
    // shortcut stands beside a.
    const auto g = graph_of(6, {{0, 1}, {1, 2}, {2, 3}, {0, 4}, {3, 5}, {4, 5}});
    const GraphLayout l = thresher::ui::layout_graph(g);
    QCOMPARE(l.depth, QList<int>({0, 1, 2, 3, 1, 4}));
    QCOMPARE(l.slot, QList<int>({0, 0, 0, 0, 1, 0}));
}

void TestGraphLayout::skip_edges_route_around_boxes() {
    // Two overlapping skips from the same source (0 → 4 and 1 → 4 past 2, 3): lanes apart, and
    // no route crosses a box.
    const auto g = graph_of(5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 4}, {1, 4}});
    const GraphLayout l = thresher::ui::layout_graph(g);
    const GraphGeometry geo = thresher::ui::place_graph(g, l);
    for (int e = 0; e < g.edges.size(); ++e) QCOMPARE(crossed_box(g, geo, e), -1);
    const qreal lane_a = geo.routes[4][2].x(), lane_b = geo.routes[5][2].x();
    QVERIFY2(std::abs(lane_a - lane_b) >= thresher::ui::GraphMetrics{}.lane_gap,
             qPrintable(QString("%1 vs %2").arg(lane_a).arg(lane_b)));
    QVERIFY(lane_a > geo.boxes[2].right());
    // Every route starts on its source's bottom and ends on its target's top.
    for (int e = 0; e < g.edges.size(); ++e) {
        QCOMPARE(geo.routes[e].first().y(), geo.boxes[g.edges[e].from].bottom());
        QCOMPARE(geo.routes[e].last().y(), geo.boxes[g.edges[e].to].top());
    }
}

void TestGraphLayout::resnet_template_has_no_crossings() {
    ModelDocument doc;
    doc.load(source("resources/models/resnet.json"));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    const ModelGraph& g = doc.graph();
    const GraphLayout l = thresher::ui::layout_graph(g);
    const GraphGeometry geo = thresher::ui::place_graph(g, l);
    for (int e = 0; e < g.edges.size(); ++e)
        if (const int v = crossed_box(g, geo, e); v >= 0)
            QFAIL(qPrintable(g.nodes[g.edges[e].from].name + " → " + g.nodes[g.edges[e].to].name + " crosses " +
                             g.nodes[v].name));
    // No two boxes overlap.
    for (int a = 0; a < geo.boxes.size(); ++a)
        for (int b = a + 1; b < geo.boxes.size(); ++b) QVERIFY(!geo.boxes[a].intersects(geo.boxes[b]));
    // The shortcut of block 2 stands beside the block's first convolution.
    const auto node = [&](const QString& name) {
        for (int v = 0; v < g.nodes.size(); ++v)
            if (g.nodes[v].name == name) return v;
        return -1;
    };
    QCOMPARE(l.depth[node("b2_shortcut")], l.depth[node("b2_conv1")]);
    QCOMPARE(l.slot[node("b2_shortcut")], 1);
    QCOMPARE(l.depth[node("b1_add")], l.depth[node("b1_bn2")] + 1);
}

void TestGraphLayout::unresolved_node_sits_below_the_input() {
    const auto g = graph_of(3, {{0, 1}});  // node 2 reads nothing that resolved
    const GraphLayout l = thresher::ui::layout_graph(g);
    QCOMPARE(l.depth, QList<int>({0, 1, 1}));
    QCOMPARE(l.slot, QList<int>({0, 0, 1}));
}

QTEST_MAIN(TestGraphLayout)
#include "test_graph_layout.moc"
