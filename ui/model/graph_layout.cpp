#include "graph_layout.h"

#include <algorithm>
#include <cmath>

namespace thresher::ui {

GraphLayout layout_graph(const ModelGraph& graph) {
    const int n = static_cast<int>(graph.nodes.size());
    GraphLayout layout;
    layout.depth = QList<int>(n, 0);
    layout.slot = QList<int>(n, 0);
    if (n == 0) return layout;
    // Edges run from lower to higher indices, so one pass in node order sees every input's depth
    // before its reader's.
    QList<QList<int>> inputs(n);
    for (const auto& e : graph.edges)
        if (e.from >= 0 && e.from < e.to && e.to < n) inputs[e.to].append(e.from);
    for (int v = 1; v < n; ++v) {
        int d = 1;  // reads nothing (an invalid model's unresolved inputs): as if it read the input
        for (int u : inputs[v]) d = std::max(d, layout.depth[u] + 1);
        layout.depth[v] = d;
    }
    QList<int> used;  // nodes placed so far at each depth
    for (int v = 0; v < n; ++v) {
        const int d = layout.depth[v];
        if (d >= used.size()) used.resize(d + 1, 0);
        layout.slot[v] = used[d]++;
    }
    layout.depths = static_cast<int>(used.size());
    return layout;
}

GraphGeometry place_graph(const ModelGraph& graph, const GraphLayout& layout, const GraphMetrics& m) {
    GraphGeometry g;
    const int n = static_cast<int>(graph.nodes.size());
    auto row_top = [&](int depth) { return depth * (m.box_height + m.level_gap); };
    for (int v = 0; v < n; ++v)
        g.boxes.append(QRectF(layout.slot[v] * (m.box_width + m.column_gap), row_top(layout.depth[v]), m.box_width,
                              m.box_height));
    // The right edge of the boxes at each depth: a lane passing that depth keeps right of it.
    QList<qreal> right(layout.depths, 0);
    for (int v = 0; v < n; ++v) right[layout.depth[v]] = std::max(right[layout.depth[v]], g.boxes[v].right());

    struct Lane {
        qreal x, top, bottom;
    };
    QList<Lane> lanes;
    for (const auto& e : graph.edges) {
        if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n) {
            g.routes.append(QPolygonF());
            g.labels.append(QPointF());
            continue;
        }
        const QRectF& a = g.boxes[e.from];
        const QRectF& b = g.boxes[e.to];
        const QPointF start(a.center().x(), a.bottom()), end(b.center().x(), b.top());
        const int d0 = layout.depth[e.from], d1 = layout.depth[e.to];
        if (d1 - d0 <= 1) {
            // Neighbouring depths: straight through the gap between them; the label beside its middle.
            g.routes.append(QPolygonF({start, end}));
            const QPointF mid = (start + end) / 2;
            g.labels.append(QPointF(mid.x() + 5, mid.y() - 8));
            continue;
        }
        // Skips depths: out into the gap below the source, along a lane right of every box it
        // passes, back in through the gap above the target. The turns keep near the boxes, clear
        // of the labels straight arrows carry in the middle of the gaps.
        const qreal out_y = a.bottom() + m.level_gap / 5, in_y = b.top() - m.level_gap / 5;
        qreal base = 0;
        for (int d = d0 + 1; d < d1; ++d) base = std::max(base, right[d]);
        qreal x = base + m.column_gap / 2;
        // Lanes whose vertical runs overlap stay lane_gap apart.
        for (bool clash = true; clash;) {
            clash = false;
            for (const auto& l : lanes)
                if (l.top < in_y && out_y < l.bottom && std::abs(l.x - x) < m.lane_gap) {
                    x = l.x + m.lane_gap;
                    clash = true;
                }
        }
        lanes.append({x, out_y, in_y});
        g.routes.append(QPolygonF({start, QPointF(start.x(), out_y), QPointF(x, out_y), QPointF(x, in_y),
                                   QPointF(end.x(), in_y), end}));
        g.labels.append(QPointF(x + 4, (out_y + in_y) / 2 - 8));
    }
    for (const auto& r : g.boxes) g.bounds |= r;
    for (const auto& p : g.routes) g.bounds |= p.boundingRect();
    return g;
}

}  // namespace thresher::ui
