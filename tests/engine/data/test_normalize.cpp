// Feature scaling: statistics fitted on one set and applied unchanged to another.
#include "core/error.h"
#include "data/normalize.h"

#include <QtTest>

#include <cmath>

using namespace thresher::data;

namespace {
// Three features over four samples; the third is constant.
Dataset table(std::vector<float> values, std::size_t features = 3) {
    Dataset ds;
    ds.name = "table";
    ds.shape = SampleShape{1, 1, int(features)};
    ds.count = values.size() / features;
    ds.features = std::move(values);
    return ds;
}
}  // namespace

class TestNormalize : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void standardizer();
    void minMax();
    void mismatchAndUnfitted();
};

void TestNormalize::standardizer() {
    Dataset train = table({1, 10, 5, 2, 20, 5, 3, 30, 5, 4, 40, 5});
    Standardizer s;
    QVERIFY(!s.fitted());
    s.fit(train);
    QVERIFY(s.fitted());
    QCOMPARE(s.mean(), (std::vector<float>{2.5f, 25.0f, 5.0f}));
    QCOMPARE(s.stddev()[2], 0.0f);
    s.apply(train);
    for (std::size_t j = 0; j < 2; ++j) {
        double mean = 0, sq = 0;
        for (std::size_t i = 0; i < 4; ++i) mean += train.features[i * 3 + j] / 4.0;
        for (std::size_t i = 0; i < 4; ++i)
            sq += std::pow(train.features[i * 3 + j] - mean, 2) / 4.0;
        QVERIFY(std::fabs(mean) < 1e-6);
        QVERIFY(std::fabs(sq - 1.0) < 1e-5);
    }
    for (std::size_t i = 0; i < 4; ++i) QCOMPARE(train.features[i * 3 + 2], 0.0f);  // centred only

    Dataset test = table({2.5f, 25, 6});
    s.apply(test);  // the training statistics, not the test set's own
    QCOMPARE(test.features[0], 0.0f);
    QCOMPARE(test.features[1], 0.0f);
    QCOMPARE(test.features[2], 1.0f);
}

void TestNormalize::minMax() {
    Dataset train = table({1, -10, 5, 2, 20, 5, 3, 30, 5});
    MinMaxScaler m;
    m.fit(train);
    QCOMPARE(m.min(), (std::vector<float>{1, -10, 5}));
    QCOMPARE(m.max(), (std::vector<float>{3, 30, 5}));
    m.apply(train);
    QCOMPARE(train.features, (std::vector<float>{0, 0, 0, 0.5f, 0.75f, 0, 1, 1, 0}));
    Dataset test = table({5, -50, 9});
    m.apply(test);
    QCOMPARE(test.features, (std::vector<float>{2, -1, 0}));
}

void TestNormalize::mismatchAndUnfitted() {
    Dataset three = table({1, 2, 3});
    Dataset two = table({1, 2}, 2);
    two.name = "two.csv";
    Standardizer s;
    QVERIFY_THROWS_EXCEPTION(thresher::DataError, s.apply(three));
    s.fit(three);
    try {
        s.apply(two);
        QFAIL("no exception");
    } catch (const thresher::DataError& e) {
        QVERIFY2(QString(e.what()).startsWith("two.csv: Standardizer: samples have 2 features"),
                 e.what());
    }
    MinMaxScaler m;
    Dataset empty = table({});
    QVERIFY_THROWS_EXCEPTION(thresher::DataError, m.fit(empty));
}

QTEST_APPLESS_MAIN(TestNormalize)
#include "test_normalize.moc"
