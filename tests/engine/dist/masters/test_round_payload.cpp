// The averaging rounds' payload (dist/masters/round_payload.h): the sums a node sends its parent
// and the cluster's coming back, in network byte order; a peer's sums added to ours or taken
// whole; and every payload that does not fit -- another round, another shape, a cut or padded
// payload, a worker count of 0 or past the bound -- refused with nothing changed.
#include <QtTest>

#include "dist/masters/round_payload.h"

using namespace thresher::dist;

namespace {
const std::vector<double> kParams{1.5, -2.0, 0.25}, kState{4.0};
}  // namespace

class TestRoundPayload : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void layout() {
        const auto p = pack_sums(0x0102030405060708ull, 3, {1.0}, {});
        QCOMPARE(p.size(), kRoundHeaderBytes + 4);
        const std::vector<std::uint8_t> expected{1, 2, 3, 4, 5, 6, 7, 8,  0, 0, 0, 3,  0, 0, 0, 0, 0, 0, 0, 1,
                                                 0, 0, 0, 0, 0, 0, 0, 0,  0x3f, 0x80, 0, 0};
        QCOMPARE(p, expected);  // big-endian, 1.0f = 0x3f800000
    }
    void add_and_replace() {
        const auto payload = pack_sums(7, 2, kParams, kState);
        std::vector<double> params{1, 1, 1}, state{1};
        int workers = 1;
        QVERIFY(add_sums(payload, 7, params, state, workers, false));
        QCOMPARE(params, (std::vector<double>{2.5, -1.0, 1.25}));
        QCOMPARE(state, std::vector<double>{5.0});
        QCOMPARE(workers, 3);
        QVERIFY(add_sums(payload, 7, params, state, workers, true));
        QCOMPARE(params, kParams);
        QCOMPARE(state, kState);
        QCOMPARE(workers, 2);
    }
    void sums_travel_as_floats() {
        // The root keeps what the others receive: rounded to float, so every replica is the same.
        const auto payload = pack_sums(0, 1, {0.1}, {});
        std::vector<double> params{0}, state;
        int workers = 0;
        QVERIFY(add_sums(payload, 0, params, state, workers, true));
        QCOMPARE(params[0], double(0.1f));
    }
    void refused_with_nothing_changed_data() {
        QTest::addColumn<std::vector<std::uint8_t>>("payload");
        const auto good = pack_sums(7, 2, kParams, kState);
        auto cut = good;
        cut.resize(cut.size() - 1);  // (pop_back() trips GCC 12's -Warray-bounds)
        auto padded = good;
        padded.push_back(0);
        auto no_workers = good;
        no_workers[11] = 0;
        auto too_many = pack_sums(7, int(kMaxRoundWorkers) + 1, kParams, kState);
        QTest::newRow("another round") << pack_sums(8, 2, kParams, kState);
        QTest::newRow("fewer parameters") << pack_sums(7, 2, {1.0, 2.0}, kState);
        QTest::newRow("more state") << pack_sums(7, 2, kParams, {1.0, 2.0});
        QTest::newRow("cut short") << cut;
        QTest::newRow("padded") << padded;
        QTest::newRow("no workers") << no_workers;
        QTest::newRow("workers past the bound") << too_many;
        QTest::newRow("header only") << std::vector<std::uint8_t>(good.begin(), good.begin() + kRoundHeaderBytes);
        QTest::newRow("shorter than the header") << std::vector<std::uint8_t>(good.begin(), good.begin() + 27);
        QTest::newRow("empty") << std::vector<std::uint8_t>{};
    }
    void refused_with_nothing_changed() {
        QFETCH(std::vector<std::uint8_t>, payload);
        std::vector<double> params{1, 1, 1}, state{1};
        int workers = 5;
        for (bool replace : {false, true}) {
            QVERIFY(!add_sums(payload, 7, params, state, workers, replace));
            QCOMPARE(params, (std::vector<double>{1, 1, 1}));
            QCOMPARE(state, std::vector<double>{1});
            QCOMPARE(workers, 5);
        }
    }
    void counts_that_would_overflow() {
        // P and S of 2^62 each: 4·(P + S) wraps to 0 in 64 bits, and an empty body would pass a
        // size check made before the counts are compared with ours.
        auto payload = pack_sums(1, 1, {}, {});
        for (int i = 12; i < 28; ++i) payload[static_cast<std::size_t>(i)] = 0;
        payload[12] = 0x40;
        payload[20] = 0x40;
        std::vector<double> params, state;
        int workers = 0;
        QVERIFY(!add_sums(payload, 1, params, state, workers, true));
    }
};

QTEST_GUILESS_MAIN(TestRoundPayload)
#include "test_round_payload.moc"
