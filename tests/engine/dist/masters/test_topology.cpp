// Routes of every topology over many cluster sizes and sets of gone nodes: the links form one
// tree that spans exactly the live nodes (so flooding along them reaches every node once), node 0
// is the root while it lives, a gone node's children go to its nearest live ancestor, and the
// relay star and the mesh look as topology.h says.
#include <QtTest>

#include <random>
#include <set>

#include "core/error.h"
#include "dist/masters/topology.h"

using thresher::dist::Routes;
using thresher::dist::Topology;
using thresher::dist::TopologyKind;

namespace {

// Flood from `origin` the way NodeLink does (send to the neighbours, each receiver passes it on
// to its neighbours but the one it came from); returns how often each node received it.
std::vector<int> flood(const Routes& r, int nodes, int origin) {
    std::vector<int> got(static_cast<std::size_t>(nodes), 0);
    std::vector<std::pair<int, int>> queue;  // (receiver, sender)
    for (int n : r.neighbours(origin)) queue.push_back({n, origin});
    while (!queue.empty()) {
        auto [at, from] = queue.back();
        queue.pop_back();
        if (++got[static_cast<std::size_t>(at)] > 1 || !r.floods()) continue;
        for (int n : r.neighbours(at))
            if (n != from && n != origin) queue.push_back({n, at});
    }
    return got;
}

}  // namespace

class TestTopology : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void every_live_node_gets_every_message_once_data();
    void every_live_node_gets_every_message_once();
    void gone_nodes_children_are_adopted();
    void relay_is_a_star_on_node_0();
    void auto_and_bad_names();
};

void TestTopology::every_live_node_gets_every_message_once_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("fanout");
    QTest::newRow("mesh") << int(TopologyKind::Mesh) << 2;
    QTest::newRow("relay") << int(TopologyKind::Relay) << 2;
    QTest::newRow("tree-1") << int(TopologyKind::Tree) << 1;
    QTest::newRow("tree-2") << int(TopologyKind::Tree) << 2;
    QTest::newRow("tree-4") << int(TopologyKind::Tree) << 4;
}

void TestTopology::every_live_node_gets_every_message_once() {
    QFETCH(int, kind);
    QFETCH(int, fanout);
    const Topology t{static_cast<TopologyKind>(kind), fanout};
    std::mt19937 rng(7);
    for (int nodes = 1; nodes <= 40; ++nodes)
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<bool> live(static_cast<std::size_t>(nodes));
            int alive = 0;
            for (auto&& l : live) alive += (l = trial == 0 || rng() % 4 != 0);
            if (alive == 0) continue;
            const Routes r(t, live);
            int roots = 0, edges = 0;
            for (int n = 0; n < nodes; ++n) {
                if (!live[static_cast<std::size_t>(n)]) continue;
                if (r.parent(n) < 0) ++roots;
                else QVERIFY(live[static_cast<std::size_t>(r.parent(n))]);
                for (int c : r.children(n)) {
                    QCOMPARE(r.parent(c), n);
                    ++edges;
                }
            }
            if (t.kind != TopologyKind::Mesh) {
                QCOMPARE(roots, 1);
                QCOMPARE(edges, alive - 1);
                if (live[0]) QCOMPARE(r.parent(0), -1);
            }
            for (int origin = 0; origin < nodes; ++origin) {
                if (!live[static_cast<std::size_t>(origin)]) continue;
                const auto got = flood(r, nodes, origin);
                for (int n = 0; n < nodes; ++n) {
                    const int expected = n != origin && live[static_cast<std::size_t>(n)] ? 1 : 0;
                    QVERIFY2(got[static_cast<std::size_t>(n)] == expected,
                             qPrintable(QString("nodes %1 trial %2 origin %3: node %4 got it %5 times")
                                            .arg(nodes).arg(trial).arg(origin).arg(n).arg(got[static_cast<std::size_t>(n)])));
                }
            }
        }
}

void TestTopology::gone_nodes_children_are_adopted() {
    // Fanout 2 over 7 nodes: 0 -> 1, 2; 1 -> 3, 4; 2 -> 5, 6.
    const Topology t{TopologyKind::Tree, 2};
    const Routes all(t, std::vector<bool>(7, true));
    QCOMPARE(all.children(1), (std::vector<int>{3, 4}));
    QCOMPARE(all.neighbours(2), (std::vector<int>{0, 5, 6}));
    // Node 1 gone: 3 and 4 hang on 0, nobody else moves.
    const Routes no1(t, {true, false, true, true, true, true, true});
    QCOMPARE(no1.children(0), (std::vector<int>{2, 3, 4}));
    QCOMPARE(no1.parent(5), 2);
    // Node 0 gone too: the lowest live node (2) is the root, and 3, 4 hang on it.
    const Routes no01(t, {false, false, true, true, true, true, true});
    QCOMPARE(no01.parent(2), -1);
    QCOMPARE(no01.children(2), (std::vector<int>{3, 4, 5, 6}));
}

void TestTopology::relay_is_a_star_on_node_0() {
    const Routes r(Topology{TopologyKind::Relay, 2}, std::vector<bool>(5, true));
    QCOMPARE(r.neighbours(3), std::vector<int>{0});
    QCOMPARE(r.neighbours(0), (std::vector<int>{1, 2, 3, 4}));
    const Routes m(Topology{TopologyKind::Mesh, 2}, {true, true, false, true});
    QCOMPARE(m.neighbours(1), (std::vector<int>{0, 3}));
    QVERIFY(!m.floods());
}

void TestTopology::auto_and_bad_names() {
    using thresher::dist::parse_topology;
    const auto small = parse_topology("auto", 2, 8);
    QCOMPARE(int(small.kind), int(TopologyKind::Mesh));
    QVERIFY(!small.tree_rounds);
    // Many nodes: messages stay in the mesh (the least any node uploads), rounds go up a tree.
    const auto big = parse_topology("auto", 2, 9);
    QCOMPARE(int(big.kind), int(TopologyKind::Mesh));
    QVERIFY(big.tree_rounds);
    QCOMPARE(big.fanout, 4);
    QCOMPARE(parse_topology("tree", 3, 2).fanout, 3);
    QVERIFY(parse_topology("tree", 3, 2).tree_rounds);
    QVERIFY(!parse_topology("relay", 3, 2).tree_rounds);
    try {
        parse_topology("ring", 2, 4);
        QFAIL("ring accepted");
    } catch (const thresher::ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("--topology ring"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(thresher::ConfigError, parse_topology("tree", 0, 4));
}

QTEST_APPLESS_MAIN(TestTopology)
#include "test_topology.moc"
