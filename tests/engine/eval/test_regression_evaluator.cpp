// TestRegressionEvaluator: MSE, MAE and R² against sums worked out by hand, exact merging, and
// the NaN edge cases (no data, constant targets).
#include <QtTest/QtTest>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "eval/regression.h"

using thresher::eval::RegressionEvaluator;

namespace {

bool close(double a, double b) {
    return std::abs(a - b) < 1e-9;
}

// Two columns, four rows (row-major [4 x 2]).
//   column 0: targets 1 2 3 4, predictions 1.5 2 2 5 → errors 0.5 0 −1 1
//             SSE = 2.25 → MSE 0.5625; SAE = 2.5 → MAE 0.625; mean 2.5, SST = 5 → R² = 0.55
//   column 1: targets 0 0 1 1, predictions 0 1 1 1 → errors 0 1 0 0
//             SSE = 1 → MSE 0.25; MAE 0.25; mean 0.5, SST = 1 → R² = 0
const std::vector<float> kTargets{1, 0, 2, 0, 3, 1, 4, 1};
const std::vector<float> kPredictions{1.5f, 0, 2, 1, 2, 1, 5, 1};

}  // namespace

Q_DECLARE_METATYPE(std::vector<float>)

class TestRegressionEvaluator : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hand_computed();
    void single_column_data();
    void single_column();
    void merge_equals_union();
    void merge_rejects_other_column_count();
    void empty_is_nan();
    void constant_targets_give_nan_r2();
    void bad_arguments_throw();
    void json_and_summary();
};

void TestRegressionEvaluator::hand_computed() {
    RegressionEvaluator e(2);
    e.add(kPredictions.data(), kTargets.data(), 4);
    QCOMPARE(e.count(), std::int64_t{4});
    QVERIFY(close(e.mse(0), 0.5625));
    QVERIFY(close(e.mae(0), 0.625));
    QVERIFY(close(e.r2(0), 0.55));
    QVERIFY(close(e.mse(1), 0.25));
    QVERIFY(close(e.mae(1), 0.25));
    QVERIFY(close(e.r2(1), 0.0));
    QVERIFY(close(e.average_mse(), 0.40625));  // (0.5625 + 0.25) / 2
    QVERIFY(close(e.average_mae(), 0.4375));   // (0.625 + 0.25) / 2
    QVERIFY(close(e.average_r2(), 0.275));     // (0.55 + 0) / 2
}

void TestRegressionEvaluator::single_column_data() {
    QTest::addColumn<std::vector<float>>("predictions");
    QTest::addColumn<std::vector<float>>("targets");
    QTest::addColumn<double>("mse");
    QTest::addColumn<double>("mae");
    QTest::addColumn<double>("r2");
    // Perfect fit: no error, R² = 1.
    QTest::newRow("perfect") << std::vector<float>{1, 2, 3} << std::vector<float>{1, 2, 3} << 0.0 << 0.0 << 1.0;
    // Predicting the mean (2) everywhere: SSE = SST = 2, so R² = 0; MSE 2/3, MAE 2/3.
    QTest::newRow("mean predictor") << std::vector<float>{2, 2, 2} << std::vector<float>{1, 2, 3} << 2.0 / 3
                                    << 2.0 / 3 << 0.0;
    // Worse than the mean: predictions 3 2 1 for 1 2 3, errors 2 0 −2: SSE 8, SST 2 → R² = −3.
    QTest::newRow("anti-correlated") << std::vector<float>{3, 2, 1} << std::vector<float>{1, 2, 3} << 8.0 / 3
                                     << 4.0 / 3 << -3.0;
    // Offset by a large mean: targets 1000 1001 1002, predictions +0.5 each:
    // SSE = 0.75, SST = 2 → R² = 0.625, MSE 0.25, MAE 0.5.
    QTest::newRow("large mean") << std::vector<float>{1000.5f, 1001.5f, 1002.5f}
                                << std::vector<float>{1000, 1001, 1002} << 0.25 << 0.5 << 0.625;
}

void TestRegressionEvaluator::single_column() {
    QFETCH(std::vector<float>, predictions);
    QFETCH(std::vector<float>, targets);
    QFETCH(double, mse);
    QFETCH(double, mae);
    QFETCH(double, r2);
    RegressionEvaluator e(1);
    e.add(predictions.data(), targets.data(), targets.size());
    QVERIFY2(close(e.mse(0), mse), qPrintable(QString::number(e.mse(0))));
    QVERIFY2(close(e.mae(0), mae), qPrintable(QString::number(e.mae(0))));
    QVERIFY2(close(e.r2(0), r2), qPrintable(QString::number(e.r2(0))));
}

void TestRegressionEvaluator::merge_equals_union() {
    // Values on a 1/8 grid keep every sum exact in double, so the merged sums must equal the
    // single-pass ones bit for bit whatever the order of addition.
    constexpr std::size_t columns = 3;
    constexpr std::size_t n = 200;
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> eighths(-80, 80);
    std::vector<float> predictions(n * columns);
    std::vector<float> targets(n * columns);
    for (std::size_t i = 0; i < n * columns; ++i) {
        predictions[i] = static_cast<float>(eighths(rng)) / 8.0f;
        targets[i] = static_cast<float>(eighths(rng)) / 8.0f;
    }
    RegressionEvaluator whole(columns);
    whole.add(predictions.data(), targets.data(), n);

    RegressionEvaluator a(columns);
    RegressionEvaluator b(columns);
    RegressionEvaluator empty(columns);
    const std::size_t split = 77;
    b.add(predictions.data() + split * columns, targets.data() + split * columns, n - split);
    a.merge(empty);  // an empty side must not contribute a placeholder min/max
    a.add(predictions.data(), targets.data(), split);
    a.merge(b);

    QCOMPARE(a.count(), whole.count());
    for (std::size_t c = 0; c < columns; ++c) {
        QCOMPARE(a.mse(c), whole.mse(c));
        QCOMPARE(a.mae(c), whole.mae(c));
        QCOMPARE(a.r2(c), whole.r2(c));
    }
    QCOMPARE(a.to_json(), whole.to_json());

    // Merging into an empty evaluator takes the other side as is.
    RegressionEvaluator c(columns);
    c.merge(whole);
    QCOMPARE(c.to_json(), whole.to_json());
}

void TestRegressionEvaluator::merge_rejects_other_column_count() {
    RegressionEvaluator a(2);
    QVERIFY_THROWS_EXCEPTION(thresher::Error, a.merge(RegressionEvaluator(3)));
}

void TestRegressionEvaluator::empty_is_nan() {
    const RegressionEvaluator e(2);
    QVERIFY(std::isnan(e.mse(0)));
    QVERIFY(std::isnan(e.mae(1)));
    QVERIFY(std::isnan(e.r2(0)));
    QVERIFY(std::isnan(e.average_mse()));
    QVERIFY(std::isnan(e.average_r2()));
}

void TestRegressionEvaluator::constant_targets_give_nan_r2() {
    // Column 0 constant at 0.1 (not exact in binary, so Σt² − (Σt)²/n is rounding noise, not 0);
    // column 1 is the "mean predictor" case with R² = 0.
    const std::vector<float> targets{0.1f, 1, 0.1f, 2, 0.1f, 3};
    const std::vector<float> predictions{0.2f, 2, 0.0f, 2, 0.1f, 2};
    RegressionEvaluator e(2);
    e.add(predictions.data(), targets.data(), 3);
    QVERIFY(std::isnan(e.r2(0)));
    QVERIFY(!std::isnan(e.mse(0)));
    QVERIFY(close(e.r2(1), 0.0));
    // The average skips the undefined column.
    QVERIFY(close(e.average_r2(), 0.0));
    const auto j = e.to_json();
    QVERIFY(j.at("r2").at(0).is_null());
    QVERIFY(j.at("average_r2").is_number());
}

void TestRegressionEvaluator::bad_arguments_throw() {
    QVERIFY_THROWS_EXCEPTION(thresher::Error, RegressionEvaluator(0));
    const RegressionEvaluator e(2);
    QVERIFY_THROWS_EXCEPTION(thresher::Error, e.mse(2));
    QVERIFY_THROWS_EXCEPTION(thresher::Error, e.r2(99));
}

void TestRegressionEvaluator::json_and_summary() {
    RegressionEvaluator e(2);
    e.add(kPredictions.data(), kTargets.data(), 4);
    const auto j = nlohmann::json::parse(e.to_json().dump());
    QCOMPARE(j.at("count").get<int>(), 4);
    QCOMPARE(j.at("columns").get<int>(), 2);
    QVERIFY(close(j.at("mse").at(0).get<double>(), 0.5625));
    QVERIFY(close(j.at("r2").at(0).get<double>(), 0.55));
    QVERIFY(close(j.at("average_mae").get<double>(), 0.4375));
    const QString text = QString::fromStdString(e.summary());
    QVERIFY2(text.contains("0.562500"), qPrintable(text));
    QVERIFY2(text.contains("average"), qPrintable(text));
}

QTEST_APPLESS_MAIN(TestRegressionEvaluator)
#include "test_regression_evaluator.moc"
