// The predictions a node sends node 0 in a distributed `thresher-engine predict`
// (dist/masters/predictions_wire.h): rows packed and parsed back bit for bit, the layout, k = 0,
// and every payload that does not hold what it claims -- cut short, padded, k or the row count
// not what node 0 expects, counts past n or so large that count × row size wraps, a row index
// outside the data set -- refused before anything is allocated for it.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>

#include "dist/masters/predictions_wire.h"

using namespace thresher::dist;

namespace {
const std::vector<std::size_t> kIndex{1, 4, 7};
const std::vector<float> kValues{0.1f, 0.7f, 0.2f, 0.3f, 0.3f, 0.4f, 0.9f, 0.05f, 0.05f};

void set_count(std::vector<std::uint8_t>& p, std::uint64_t count) {
    for (int i = 0; i < 8; ++i) p[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(count >> (56 - 8 * i));
}
}  // namespace

class TestPredictionsWire : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void round_trip() {
        const auto bytes = pack_predictions(kIndex, kValues, 3);
        QCOMPARE(bytes.size(), kPredictionsHeaderBytes + 3 * (8 + 12));
        const auto p = parse_predictions(bytes, 3, 10);
        QVERIFY(p);
        QCOMPARE(p->index, (std::vector<std::uint64_t>{1, 4, 7}));
        QCOMPARE(p->values, kValues);
    }
    void nan_and_infinity_travel_as_they_are() {
        const std::vector<float> odd{std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()};
        const auto p = parse_predictions(pack_predictions(std::vector<std::size_t>{0}, odd, 2), 2, 1);
        QVERIFY(p && std::isnan(p->values[0]) && std::isinf(p->values[1]));
    }
    void layout() {
        const auto bytes = pack_predictions(std::vector<std::size_t>{2}, std::vector<float>{1.0f}, 1);
        const std::vector<std::uint8_t> expected{0, 0, 0, 0, 0, 0, 0, 1,  0, 0, 0, 1,  0, 0, 0, 0, 0, 0, 0, 2,
                                                 0x3f, 0x80, 0, 0};
        QCOMPARE(bytes, expected);
    }
    void no_outputs() {
        // k = 0 (a model without outputs never gets here, but the format allows it): rows of an index alone.
        const auto bytes = pack_predictions(std::vector<std::size_t>{0, 3}, {}, 0);
        QCOMPARE(bytes.size(), kPredictionsHeaderBytes + 2 * 8);
        const auto p = parse_predictions(bytes, 0, 4);
        QVERIFY(p && p->index.size() == 2 && p->values.empty());
        QVERIFY(!parse_predictions(bytes, 0, 3));  // row 3 of 3
    }
    void none() {
        const auto p = parse_predictions(pack_predictions({}, {}, 3), 3, 0);
        QVERIFY(p && p->index.empty());
    }
    void refused_data() {
        QTest::addColumn<std::vector<std::uint8_t>>("bytes");
        QTest::addColumn<std::size_t>("n");
        const auto good = pack_predictions(kIndex, kValues, 3);
        auto cut = good;
        cut.resize(cut.size() - 1);  // (pop_back() trips GCC 12's -Warray-bounds)
        auto padded = good;
        padded.push_back(0);
        auto more_rows = good;
        set_count(more_rows, 4);
        auto fewer_rows = good;
        set_count(fewer_rows, 2);
        // 2^64 / 20 + 1 rows of 20 bytes: count × row wraps to 4 bytes past 2^64; with an n that
        // large, only the division says the payload does not hold them.
        auto wrapping = pack_predictions({}, {}, 3);
        set_count(wrapping, (~std::uint64_t{0}) / 20 + 1);
        wrapping.resize(wrapping.size() + 4);
        QTest::newRow("cut short") << cut << std::size_t(10);
        QTest::newRow("padded") << padded << std::size_t(10);
        QTest::newRow("header cut") << std::vector<std::uint8_t>(good.begin(), good.begin() + 11) << std::size_t(10);
        QTest::newRow("empty") << std::vector<std::uint8_t>{} << std::size_t(10);
        QTest::newRow("count over the payload") << more_rows << std::size_t(10);
        QTest::newRow("count under the payload") << fewer_rows << std::size_t(10);
        QTest::newRow("count over n") << good << std::size_t(2);
        QTest::newRow("index outside the data") << good << std::size_t(7);
        QTest::newRow("count x row wraps") << wrapping << std::numeric_limits<std::size_t>::max();
    }
    void refused() {
        QFETCH(std::vector<std::uint8_t>, bytes);
        QFETCH(std::size_t, n);
        QVERIFY(!parse_predictions(bytes, 3, n));
    }
    void other_outputs_refused() {
        const auto bytes = pack_predictions(kIndex, kValues, 3);
        QVERIFY(!parse_predictions(bytes, 2, 10));
        QVERIFY(!parse_predictions(bytes, 4, 10));
    }
};

QTEST_GUILESS_MAIN(TestPredictionsWire)
#include "test_predictions_wire.moc"
