// NodeLink's Control payloads (dist/masters/node_link_control.h): each kind packed and parsed back,
// the layout of "done" and "joined" on the wire, an older engine's "done" without its epoch, a
// reason kept to kMaxReason bytes, bytes after a kind's fields ignored, and everything cut short,
// unknown or impossible refused.
#include <QtTest>

#include "dist/masters/node_link_control.h"

using namespace thresher::dist::node_link_control;

namespace {
Control of(std::uint8_t kind) {
    Control c;
    c.kind = kind;
    return c;
}
}  // namespace

class TestNodeLinkControl : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void round_trip_data() {
        QTest::addColumn<Control>("control");
        Control done = of(kDone);
        done.originated = 40;
        done.first = 3;
        done.evaluated = -1;  // no epoch evaluated yet
        Control joined = of(kJoined);
        joined.epoch = 2;
        joined.iteration = 1'000'000'000'000;
        joined.rejoin = true;
        Control stop = of(kStop);
        stop.reason = "start the whole run again";
        Control ack = of(kRoundAck);
        ack.round = 17;
        Control ask = of(kResultAsk);
        ask.round = ~std::uint64_t{0};
        Control gone = of(kGone);
        Control first = of(kFirst);
        first.first = 29;
        Control confirmed = of(kResultAck);
        confirmed.round = 4;
        QTest::newRow("done") << done;
        QTest::newRow("joined") << joined;
        QTest::newRow("stop") << stop;
        QTest::newRow("left") << of(kLeft);
        QTest::newRow("finished") << of(kFinished);
        QTest::newRow("round ack") << ack;
        QTest::newRow("result ask") << ask;
        QTest::newRow("gone, no reason") << gone;
        QTest::newRow("first") << first;
        QTest::newRow("result ack") << confirmed;
    }
    void round_trip() {
        QFETCH(Control, control);
        const auto parsed = parse_control(pack_control(control));
        QVERIFY(parsed);
        QVERIFY(*parsed == control);
    }
    void layout() {
        Control done = of(kDone);
        done.originated = 2;
        done.first = 1;
        done.evaluated = 3;
        QCOMPARE(pack_control(done), (std::vector<std::uint8_t>{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3}));
        Control joined = of(kJoined);
        joined.epoch = 1;
        joined.iteration = 258;
        joined.rejoin = true;
        QCOMPARE(pack_control(joined), (std::vector<std::uint8_t>{2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 2, 1}));
    }
    void done_without_epoch() {
        // An engine from before "done" carried its last evaluated epoch: every part may still come.
        Control done = of(kDone);
        done.originated = 5;
        done.first = 2;
        done.evaluated = 0;
        auto bytes = pack_control(done);
        bytes.resize(bytes.size() - 4);
        const auto parsed = parse_control(bytes);
        QVERIFY(parsed && parsed->originated == 5 && parsed->first == 2);
        QCOMPARE(parsed->evaluated, kEveryEpoch);
        bytes.push_back(0);  // a cut epoch is an absent one
        QCOMPARE(parse_control(bytes)->evaluated, kEveryEpoch);
    }
    void reason_is_bounded() {
        std::vector<std::uint8_t> bytes{kGone};
        bytes.insert(bytes.end(), 5000, 'x');
        const auto parsed = parse_control(bytes);
        QVERIFY(parsed);
        QCOMPARE(parsed->reason.size(), kMaxReason);
    }
    void later_fields_are_ignored() {
        Control ack = of(kRoundAck);
        ack.round = 9;
        auto bytes = pack_control(ack);
        bytes.push_back(0xEE);
        QVERIFY(parse_control(bytes) == ack);
        auto left = pack_control(of(kLeft));
        left.push_back(1);
        QVERIFY(parse_control(left) == of(kLeft));
    }
    void rejoin_other_than_one_is_no() {
        std::vector<std::uint8_t> bytes{kJoined, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
        QVERIFY(parse_control(bytes) && !parse_control(bytes)->rejoin);
    }
    void refused_data() {
        QTest::addColumn<std::vector<std::uint8_t>>("bytes");
        QTest::newRow("empty") << std::vector<std::uint8_t>{};
        QTest::newRow("unknown kind 0") << std::vector<std::uint8_t>{0};
        QTest::newRow("unknown kind 11") << std::vector<std::uint8_t>{11, 0, 0, 0, 0, 0, 0, 0, 1};
        QTest::newRow("first 0") << std::vector<std::uint8_t>{kFirst, 0, 0, 0, 0, 0, 0, 0, 0};
        QTest::newRow("result ack cut short") << std::vector<std::uint8_t>{kResultAck, 0, 0, 0};
        QTest::newRow("done cut short") << std::vector<std::uint8_t>{kDone, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
        QTest::newRow("done first 0") << std::vector<std::uint8_t>{kDone, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
        QTest::newRow("joined without rejoin") << std::vector<std::uint8_t>{kJoined, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        QTest::newRow("round ack cut short") << std::vector<std::uint8_t>{kRoundAck, 0, 0, 0, 0, 0, 0, 1};
        QTest::newRow("result ask without round") << std::vector<std::uint8_t>{kResultAsk};
    }
    void refused() {
        QFETCH(std::vector<std::uint8_t>, bytes);
        QVERIFY(!parse_control(bytes));
    }
};

QTEST_GUILESS_MAIN(TestNodeLinkControl)
#include "test_node_link_control.moc"
