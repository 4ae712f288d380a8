// Feature scaling: statistics fitted on one set and applied unchanged to another.
#include "core/error.h"
#include "data/feature_transform.h"
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
    void sequencesPerFeatureOverValidSteps_data();
    void sequencesPerFeatureOverValidSteps();
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

// Sequence rows (seq_spec.md): 1 + T*C floats, the length first. Statistics are per feature over
// the valid steps only (padded steps hold 1000s here: counting them would move every statistic);
// the length comes through unchanged; the fitted values, computed here by hand from the valid
// steps, land at every step of the row.
void TestNormalize::sequencesPerFeatureOverValidSteps_data() {
    QTest::addColumn<QString>("kind");
    QTest::newRow("standardize") << "standardize";
    QTest::newRow("minmax") << "minmax";
}

void TestNormalize::sequencesPerFeatureOverValidSteps() {
    QFETCH(QString, kind);
    const int T = 4, C = 2;
    Dataset d;
    d.name = "seqs";
    d.steps = T;
    d.step_features = C;
    d.shape = {1 + T * C, 1, 1};
    d.count = 2;
    // Sample 0: length 3, feature 0 = 1, 2, 3 and feature 1 = 10, 10, 10; sample 1: length 1,
    // feature 0 = 6, feature 1 = 10. Padding: 1000.
    d.features = {3, 1, 10, 2, 10, 3, 10, 1000, 1000,  //
                  1, 6, 10, 1000, 1000, 1000, 1000, 1000, 1000};
    const auto t = fit_transform(kind.toStdString(), d);
    QCOMPARE(t.shift.size(), std::size_t{1 + T * C});
    QCOMPARE(t.shift[0], 0.0f);
    QCOMPARE(t.scale[0], 1.0f);
    // Feature 0 over its 4 valid values 1, 2, 3, 6: mean 3, population sd sqrt(3.5); min 1, max 6.
    const float shift0 = kind == "standardize" ? 3.0f : 1.0f;
    const float scale0 = kind == "standardize" ? static_cast<float>(1 / std::sqrt(3.5)) : 0.2f;
    // Feature 1 is constant (10): shifted only.
    for (int s = 0; s < T; ++s) {
        QCOMPARE(t.shift[1 + s * C], shift0);
        QCOMPARE(t.scale[1 + s * C], scale0);
        QCOMPARE(t.shift[1 + s * C + 1], 10.0f);
        QCOMPARE(t.scale[1 + s * C + 1], 1.0f);
    }
    auto copy = d;
    t.apply(copy);
    QCOMPARE(copy.features[0], 3.0f);  // lengths unchanged
    QCOMPARE(copy.features[9], 1.0f);
    QCOMPARE(copy.features[1], (1.0f - shift0) * scale0);
    QCOMPARE(copy.features[2], 0.0f);
}

QTEST_APPLESS_MAIN(TestNormalize)
#include "test_normalize.moc"
