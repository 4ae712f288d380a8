// Sequence models learn: a synthetic task only order and masking solve. Each sample is a run of
// 4 to 12 token ids, blanks (0) with one 1 and one 2 at random valid steps; the class is which
// of them comes first. Padded steps (from the length on) hold 2s and 1s in the wrong order, so
// a model that read them would be misled. An embedding, an LSTM (last valid step) and a softmax
// must reach 95% on samples they never saw, in a fixed number of iterations (no clock).
#include <QtTest>

#include <random>

#include "backend/registry.h"
#include "nn/network.h"

using namespace thresher;

class TestSequenceTraining : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void which_comes_first_data();
    void which_comes_first();
};

namespace {

constexpr int kSteps = 12;

struct Data {
    std::vector<float> x, t;
    std::vector<int> labels;
};

Data make(int count, std::uint64_t seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    Data d;
    const std::size_t row = 1 + kSteps;
    d.x.assign(static_cast<std::size_t>(count) * row, 0.f);
    d.t.assign(static_cast<std::size_t>(count) * 2, 0.f);
    for (int i = 0; i < count; ++i) {
        float* x = d.x.data() + static_cast<std::size_t>(i) * row;
        const int len = 4 + static_cast<int>(rng() % (kSteps - 4 + 1));
        x[0] = static_cast<float>(len);
        int a = static_cast<int>(rng() % len), b = static_cast<int>(rng() % (len - 1));
        if (b >= a) ++b;
        x[1 + a] = 1.f, x[1 + b] = 2.f;
        const int label = a < b ? 0 : 1;
        // Misleading padding: a 2 then a 1 (or a 1 then a 2) against the label.
        if (len + 2 <= kSteps) {
            x[1 + len] = label == 0 ? 2.f : 1.f;
            x[1 + len + 1] = label == 0 ? 1.f : 2.f;
        }
        d.labels.push_back(label);
        d.t[static_cast<std::size_t>(i) * 2 + label] = 1.f;
    }
    return d;
}

}  // namespace

void TestSequenceTraining::which_comes_first_data() {
    QTest::addColumn<QByteArray>("layer");
    QTest::newRow("lstm") << QByteArray(R"({"type":"lstm","units":16})");
    QTest::newRow("gru") << QByteArray(R"({"type":"gru","units":16})");
    QTest::newRow("bidirectional lstm concat") << QByteArray(R"({"type":"lstm","units":8,"bidirectional":"concat"})");
}

void TestSequenceTraining::which_comes_first() {
    QFETCH(QByteArray, layer);
    const auto config = config::ModelConfig::parse(
        R"({"seed":3,"input":{"steps":12,"features":1},"updater":{"type":"adam","learning_rate":0.01},"layers":[
            {"type":"embedding","vocabulary":3,"units":8},)" + layer.toStdString() + R"(,
            {"type":"output","units":2,"activation":"softmax","loss":"mcxent"}]})",
        "first.json");
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(config, *be);
    const int batch = 32, iterations = 500;
    const auto train = make(batch * 50, 1);
    const auto test = make(1000, 2);
    const std::size_t row = config.input_size();
    double loss = 0;
    for (int it = 0; it < iterations; ++it) {
        const std::size_t at = static_cast<std::size_t>(it % 50) * batch;
        loss = net.compute_gradients(train.x.data() + at * row, train.t.data() + at * 2, batch, static_cast<std::uint64_t>(it));
        net.compute_update(it);
        net.apply_update();
    }
    std::vector<float> p(static_cast<std::size_t>(test.labels.size()) * 2);
    net.predict(test.x.data(), static_cast<int>(test.labels.size()), p.data());
    int right = 0;
    for (std::size_t i = 0; i < test.labels.size(); ++i) right += (p[2 * i + 1] > p[2 * i]) == (test.labels[i] == 1);
    const double accuracy = static_cast<double>(right) / static_cast<double>(test.labels.size());
    qInfo("%s: accuracy %.3f on 1000 unseen samples after %d iterations (last loss %.4f)", QTest::currentDataTag(), accuracy,
          iterations, loss);
    QVERIFY2(accuracy >= 0.95, qPrintable(QString("accuracy %1").arg(accuracy)));
}

QTEST_APPLESS_MAIN(TestSequenceTraining)
#include "test_sequence_training.moc"
