// The graph view's layout (ui/model/graph_layout.h) without widgets: a stack is one column; a
// residual block puts its shortcut beside the branch it skips; rows are depths.
#include <QtTest>

#include "graph_layout.h"

using thresher::ui::layout_graph;

class TestGraphLayout : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void stack_is_one_column();
    void residual_block();
};

void TestGraphLayout::stack_is_one_column() {
    const auto g = layout_graph({{-1}, {0}, {1}, {2}});
    QCOMPARE(g.rows, 5);
    QCOMPARE(g.columns, 1);
    for (int i = 0; i < 4; ++i) {
        QCOMPARE(g.layers[static_cast<std::size_t>(i)].row, i + 1);
        QCOMPARE(g.layers[static_cast<std::size_t>(i)].column, 0);
    }
}

void TestGraphLayout::residual_block() {
    // 0 stem <- input; 1 conv <- 0; 2 shortcut <- 0; 3 conv <- 1; 4 add <- 3, 2; 5 out <- 4
    const auto g = layout_graph({{-1}, {0}, {0}, {1}, {3, 2}, {4}});
    QCOMPARE(g.layers[1].row, 2);
    QCOMPARE(g.layers[2].row, 2);
    QCOMPARE(g.layers[2].column, 1);  // beside the branch's first conv
    QCOMPARE(g.layers[4].row, 4);     // after the longer branch
    QCOMPARE(g.layers[5].row, 5);
    QCOMPARE(g.columns, 2);
    QCOMPARE(g.rows, 6);
}

QTEST_GUILESS_MAIN(TestGraphLayout)
#include "test_graph_layout.moc"
