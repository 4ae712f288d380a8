// The NaN/Inf guard: finds the first non-finite value anywhere in a buffer (also past the
// vectorised blocks' edges) and names the layer in the model file's terms.
#include <QtTest>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "train/finite_guard.h"

using namespace thresher;

namespace {
const char* kModel = R"({"name":"g","input":{"size":30},"updater":{"type":"sgd","learning_rate":0.1},
  "layers":[{"type":"dense","name":"hidden","units":40,"activation":"relu"},{"type":"output","name":"out","units":3}]})";
}

class TestFiniteGuard : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void finds_the_first_bad_value_data();
    void finds_the_first_bad_value();
    void error_names_worker_iteration_and_layer();
};

void TestFiniteGuard::finds_the_first_bad_value_data() {
    QTest::addColumn<int>("at");
    QTest::addColumn<float>("value");
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (int at : {0, 1023, 1024, 2500, 4999}) {
        QTest::newRow(qPrintable(QString("nan@%1").arg(at))) << at << nan;
        QTest::newRow(qPrintable(QString("-inf@%1").arg(at))) << at << -inf;
    }
}

void TestFiniteGuard::finds_the_first_bad_value() {
    QFETCH(int, at);
    QFETCH(float, value);
    std::vector<float> v(5000, 0.5f);
    v[1] = std::numeric_limits<float>::max();  // large but finite
    v[2] = std::numeric_limits<float>::denorm_min();
    if (at == 1) v[1] = 0.5f;
    QVERIFY(!train::first_non_finite(v.data(), v.size()));
    v[static_cast<std::size_t>(at)] = value;
    v[4999] = value;  // a later one does not hide the first
    QCOMPARE(train::first_non_finite(v.data(), v.size()), std::optional<std::size_t>(at));
}

void TestFiniteGuard::error_names_worker_iteration_and_layer() {
    auto config = config::ModelConfig::parse(kModel, "g.json");
    std::vector<float> p(config.param_count(), 0.1f);
    train::check_finite(p.data(), config, "gradient", 3, 17);  // all finite: no throw
    const std::size_t second_layer = config.layers[1].param_offset;
    p[second_layer + 5] = std::numeric_limits<float>::quiet_NaN();
    try {
        train::check_finite(p.data(), config, "gradient", 3, 17);
        QFAIL("no error for a NaN gradient");
    } catch (const Error& e) {
        const QString m = e.what();
        QVERIFY2(m.contains("worker 3") && m.contains("iteration 17") && m.contains("gradient is nan") &&
                     m.contains("layers[1]") && m.contains("\"out\"") && m.contains("its parameter 5"),
                 qPrintable(m));
    }
}

QTEST_APPLESS_MAIN(TestFiniteGuard)
#include "test_finite_guard.moc"
