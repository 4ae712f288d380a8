// A gradient-sharing message as NodeLink sends and receives it (dist/masters/update_payload.h):
// the header in network byte order before the encoded update, and every header a node of this
// run could not have sent -- cut short, from itself or outside the cluster, numbered 0, a worker
// of another node, a negative iteration -- or an update for another model, refused by name.
#include <QtTest>

#include "core/error.h"
#include "dist/masters/update_payload.h"

using namespace thresher::dist;

namespace {

thresher::train::ClusterShape cluster() {  // received on node 0 of 3, two workers each
    thresher::train::ClusterShape c;
    c.nodes = 3;
    c.node_rank = 0;
    c.workers_per_node = 2;
    return c;
}

EncodedUpdate update(std::uint32_t n) {
    EncodedUpdate u;
    u.length = n;
    u.threshold = 0.5f;
    u.sparse = {1, -3};
    u.count = 2;
    return u;
}

std::vector<std::uint8_t> payload(const UpdateHeader& h, std::uint32_t n = 10) {
    std::vector<std::uint8_t> out;
    put_update_header(out, h);
    const auto body = serialize(update(n));
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

UpdateHeader header() {
    UpdateHeader h;
    h.origin = 2;
    h.incarnation = 77;
    h.sequence = 5;
    h.worker = 5;
    h.iteration = 12;
    return h;
}

}  // namespace

class TestUpdatePayload : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void layout() {
        std::vector<std::uint8_t> out;
        put_update_header(out, header());
        QCOMPARE(out.size(), kUpdateHeaderBytes);
        const std::vector<std::uint8_t> expected{0, 0, 0, 2,  0, 0, 0, 0, 0, 0, 0, 77,  0, 0, 0, 0, 0, 0, 0, 5,
                                                 0, 0, 0, 5,  0, 0, 0, 0, 0, 0, 0, 12};
        QCOMPARE(out, expected);
    }
    void round_trip() {
        const auto p = parse_update_payload(payload(header()), cluster(), 10);
        QCOMPARE(p.header.origin, 2u);
        QCOMPARE(p.header.incarnation, 77ull);
        QCOMPARE(p.header.sequence, 5ull);
        QCOMPARE(p.header.worker, 5u);
        QCOMPARE(p.header.iteration, 12ll);
        QCOMPARE(p.update.count, 2u);
        QCOMPARE(p.update.sparse, (std::vector<std::int32_t>{1, -3}));
    }
    void refused_data() {
        QTest::addColumn<std::vector<std::uint8_t>>("bytes");
        QTest::addColumn<QString>("reason");
        auto h = header();
        auto cut = payload(h);
        cut.resize(kUpdateHeaderBytes - 1);
        QTest::newRow("cut in the header") << cut << "shorter than its header";
        h.origin = 0;
        h.worker = 0;
        QTest::newRow("from this node") << payload(h) << "origin node 0";
        h = header();
        h.origin = 3;
        h.worker = 6;
        QTest::newRow("origin outside the cluster") << payload(h) << "origin node 3";
        h = header();
        h.sequence = 0;
        QTest::newRow("sequence 0") << payload(h) << "sequence number 0";
        h = header();
        h.worker = 2;  // node 1's
        QTest::newRow("another node's worker") << payload(h) << "worker 2 is not on origin node 2";
        h = header();
        h.iteration = -1;
        QTest::newRow("negative iteration") << payload(h) << "iteration -1";
        QTest::newRow("another model") << payload(header(), 11) << "length";
        auto header_only = payload(header());
        header_only.resize(kUpdateHeaderBytes);
        QTest::newRow("no update") << header_only << "";
    }
    void refused() {
        QFETCH(std::vector<std::uint8_t>, bytes);
        QFETCH(QString, reason);
        try {
            (void)parse_update_payload(bytes, cluster(), 10);
            QFAIL("accepted");
        } catch (const thresher::Error& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(reason), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestUpdatePayload)
#include "test_update_payload.moc"
