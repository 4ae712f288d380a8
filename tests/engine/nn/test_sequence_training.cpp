// Sequence models learn: a synthetic task only order and masking solve. Each sample is a run of
// 4 to 12 token ids, blanks (0) with one 1 and one 2 at random valid steps; the class is which
// of them comes first. Padded steps (from the length on) hold 2s and 1s in the wrong order, so
// a model that read them would be misled. An embedding, an LSTM (last valid step) and a softmax
// must reach 95% on samples they never saw, in a fixed number of iterations (no clock).
#include <QtTest>

#include <random>

#include "backend/registry.h"
#include "core/error.h"
#include "nn/network.h"
#include "train/evaluation.h"

using namespace thresher;

class TestSequenceTraining : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void which_comes_first_data();
    void which_comes_first();
    void per_step_seen_so_far();
    void bad_lengths_and_ids_data();
    void bad_lengths_and_ids();
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

// A per-step classifier (seq_spec.md): at every step, has a 1 appeared so far? Targets are one
// per step (padded steps zero); evaluation scores the valid steps only, each as one prediction.
void TestSequenceTraining::per_step_seen_so_far() {
    const auto config = config::ModelConfig::parse(
        R"({"seed":5,"input":{"steps":12,"features":1},"updater":{"type":"adam","learning_rate":0.01},"layers":[
            {"type":"embedding","vocabulary":3,"units":8},{"type":"lstm","units":16,"return_sequences":true},
            {"type":"output","units":2,"activation":"softmax","loss":"mcxent"}]})",
        "seen.json");
    QCOMPARE(config.target_size(), std::size_t{12 * 2});
    auto make_steps = [](int count, unsigned seed, std::size_t& valid_steps) {
        std::mt19937 rng(seed);
        data::Dataset d;
        d.name = "seen so far";
        d.shape = {1 + kSteps, 1, 1};
        d.count = static_cast<std::size_t>(count);
        d.num_classes = 2;
        d.target_size = kSteps * 2;
        d.features.assign(d.count * (1 + kSteps), 0.f);
        d.targets.assign(d.count * kSteps * 2, 0.f);
        d.labels.assign(d.count, 0);
        valid_steps = 0;
        for (std::size_t i = 0; i < d.count; ++i) {
            float* x = d.features.data() + i * (1 + kSteps);
            const int len = 1 + static_cast<int>(rng() % kSteps);
            x[0] = static_cast<float>(len);
            bool seen = false;
            for (int t = 0; t < len; ++t) {
                x[1 + t] = static_cast<float>(rng() % 8 == 0 ? 1 : rng() % 3 == 0 ? 2 : 0);
                seen = seen || x[1 + t] == 1.f;
                d.targets[(i * kSteps + static_cast<std::size_t>(t)) * 2 + (seen ? 1 : 0)] = 1.f;
            }
            // Padding that would flip every answer if it were read: 1s.
            for (int t = len; t < kSteps; ++t) x[1 + t] = 1.f;
            valid_steps += static_cast<std::size_t>(len);
        }
        return d;
    };
    std::size_t train_steps = 0, test_steps = 0;
    const auto train = make_steps(32 * 40, 1, train_steps);
    const auto test = make_steps(500, 2, test_steps);
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(config, *be);
    const int batch = 32;
    for (int it = 0; it < 400; ++it) {
        const std::size_t at = static_cast<std::size_t>(it % 40) * batch;
        net.compute_gradients(train.features.data() + at * (1 + kSteps), train.targets.data() + at * kSteps * 2, batch,
                              static_cast<std::uint64_t>(it));
        net.compute_update(it);
        net.apply_update();
    }
    const auto r = train::evaluate(net, test, 64);
    QVERIFY(r.classification.has_value());
    QCOMPARE(static_cast<std::size_t>(r.classification->count()), test_steps);
    qInfo("per-step accuracy %.3f over %zu valid steps of 500 unseen samples", r.classification->accuracy(), test_steps);
    QVERIFY2(r.classification->accuracy() >= 0.95, qPrintable(QString("accuracy %1").arg(r.classification->accuracy())));
}

// A length outside 1..T (or not an integer) is a DataError naming the input and the sample; an
// id outside the vocabulary at a valid step names the layer, the value and the sample. Ids at
// padded steps are not read.
void TestSequenceTraining::bad_lengths_and_ids_data() {
    QTest::addColumn<float>("length");
    QTest::addColumn<float>("id");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("length 0") << 0.f << 1.f << QStringList{"input \"tokens\"", "sample 1", "length 0", "1 to 4"};
    QTest::newRow("length beyond the steps") << 5.f << 1.f << QStringList{"input \"tokens\"", "sample 1", "length 5"};
    QTest::newRow("length 2.5") << 2.5f << 1.f << QStringList{"sample 1", "length 2.5"};
    QTest::newRow("id beyond the vocabulary") << 3.f << 3.f << QStringList{"layers[0] (embedding)", "token id 3", "sample 1", "[0, 3)"};
    QTest::newRow("id not an integer") << 3.f << 0.5f << QStringList{"layers[0] (embedding)", "token id 0.5", "step 2 of sample 1"};
    QTest::newRow("negative id") << 3.f << -1.f << QStringList{"token id -1", "sample 1"};
    QTest::newRow("a bad id at a padded step is not read") << 2.f << 7.f << QStringList{};
}

void TestSequenceTraining::bad_lengths_and_ids() {
    QFETCH(float, length);
    QFETCH(float, id);
    QFETCH(QStringList, expected);
    const auto config = config::ModelConfig::parse(R"({"input":{"name":"tokens","steps":4,"features":1},"layers":[
        {"type":"embedding","vocabulary":3,"units":2},{"type":"gru","units":2},{"type":"output","units":2}]})", "bad.json");
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(config, *be);
    // Two samples: the first fine, the second with the length and (at step 2) the id under test.
    std::vector<float> x{4, 0, 1, 2, 1, length, 1, 0, id, 0}, t{1, 0, 0, 1};
    try {
        net.compute_gradients(x.data(), t.data(), 2, 0);
        QVERIFY2(expected.isEmpty(), "no error");
    } catch (const DataError& e) {
        const QString msg = QString::fromUtf8(e.what());
        QVERIFY2(!expected.isEmpty(), qPrintable("unexpected: " + msg));
        for (const auto& fragment : expected) QVERIFY2(msg.contains(fragment), qPrintable("\"" + fragment + "\" not in: " + msg));
    }
}

QTEST_APPLESS_MAIN(TestSequenceTraining)
#include "test_sequence_training.moc"
