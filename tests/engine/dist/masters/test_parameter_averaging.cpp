// Parameter averaging with plain SGD, frequency 1 and disjoint equal shards equals one worker
// training on the combined batch: mean_i(θ − lr·g_i) = θ − lr·mean_i(g_i) (DESIGN.md). And with
// any updater, every replica leaves a run holding the same parameters.
#include <QtTest>

#include <cmath>
#include <functional>

#include "backend/registry.h"
#include "dist/masters/parameter_averaging.h"
#include "worker_threads.h"

using namespace thresher;

namespace {
const char* kModel = R"({"name":"pa","input":{"size":6},"updater":{"type":"sgd","learning_rate":0.2},
  "layers":[{"type":"dense","units":7,"activation":"tanh"},{"type":"output","units":3}]})";

// Sample i of a deterministic synthetic set: 6 features, one-hot of 3 classes.
void sample(int i, float* x, float* t) {
    for (int j = 0; j < 6; ++j) x[j] = std::sin(0.7f * i + 1.3f * j);
    for (int k = 0; k < 3; ++k) t[k] = k == i % 3 ? 1.f : 0.f;
}
// Replicas trained as threads under `master`: worker w's batch b at step s is sample
// index(w, s, b). Backends are kept alive with their networks.
struct Replicas {
    std::vector<std::unique_ptr<backend::Backend>> backends;
    std::vector<std::unique_ptr<nn::Network>> nets;
};

Replicas train_replicas(const config::ModelConfig& config, dist::ParameterAveraging& master, int workers, int steps,
                        int batch, const std::function<int(int w, int s, int b)>& index) {
    Replicas r;
    r.backends.resize(workers);
    r.nets.resize(workers);
    run_workers(workers, [&](int w) {
        r.backends[w] = backend::create_backend("cpu", {1});
        r.nets[w] = std::make_unique<nn::Network>(config, *r.backends[w]);
        master.attach(w, *r.nets[w]);
        std::vector<float> x(batch * 6), t(batch * 3);
        for (int s = 0; s < steps; ++s) {
            for (int b = 0; b < batch; ++b) sample(index(w, s, b), &x[b * 6], &t[b * 3]);
            r.nets[w]->compute_gradients(x.data(), t.data(), batch, 0);
            master.step(w, s, true);
        }
        master.finish(w);
    });
    return r;
}

}  // namespace

class TestParameterAveraging : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void equals_single_machine_on_combined_batch();
    void replicas_equal_after_run_data();
    void replicas_equal_after_run();
    void a_worker_failing_before_attach_ends_cleanly();
};

void TestParameterAveraging::equals_single_machine_on_combined_batch() {
    const int workers = 3, batch = 4, steps = 10;
    const auto config = config::ModelConfig::parse(kModel, "pa");
    train::ClusterShape cluster{1, 0, workers};
    dist::ParameterAveraging master(cluster, {1, true});
    // Step s: the combined batch is samples [s*12, s*12+12); worker w takes rows w, w+3, ...
    const auto r = train_replicas(config, master, workers, steps, batch,
                                  [&](int w, int s, int b) { return s * workers * batch + b * workers + w; });
    const auto& nets = r.nets;
    QCOMPARE(master.averages(), long(steps));

    auto be = backend::create_backend("cpu", {1});
    nn::Network single(config, *be);
    std::vector<float> x(workers * batch * 6), t(workers * batch * 3);
    for (int s = 0; s < steps; ++s) {
        for (int i = 0; i < workers * batch; ++i) sample(s * workers * batch + i, &x[i * 6], &t[i * 3]);
        single.compute_gradients(x.data(), t.data(), workers * batch, 0);
        single.compute_update(s);
        single.apply_update();
    }
    const auto expected = single.get_params();
    const auto initial = nn::Network(config, *be).get_params();
    double moved = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) moved = std::max(moved, double(std::abs(expected[i] - initial[i])));
    QVERIFY2(moved > 1e-2, "training did not move the parameters: the comparison would prove nothing");
    for (int w = 0; w < workers; ++w) {
        const auto p = nets[w]->get_params();
        for (std::size_t i = 0; i < p.size(); ++i)
            QVERIFY2(std::abs(p[i] - expected[i]) < 1e-5,
                     qPrintable(QString("worker %1 param %2: %3 vs single %4").arg(w).arg(i).arg(p[i]).arg(expected[i])));
    }
}

void TestParameterAveraging::replicas_equal_after_run_data() {
    QTest::addColumn<int>("frequency");
    QTest::addColumn<int>("steps");
    QTest::newRow("frequency 5, 13 steps (last average at finish)") << 5 << 13;
    QTest::newRow("frequency 3, 9 steps") << 3 << 9;
}

void TestParameterAveraging::replicas_equal_after_run() {
    QFETCH(int, frequency);
    QFETCH(int, steps);
    const int workers = 2;
    auto config = config::ModelConfig::parse(kModel, "pa");
    config.updater.kind = backend::UpdaterKind::Adam;
    config.updater.learning_rate = 0.01f;
    dist::ParameterAveraging master({1, 0, workers}, {frequency, true});
    const auto r = train_replicas(config, master, workers, steps, 5, [](int w, int s, int b) { return 1000 * w + s * 5 + b; });
    const auto& nets = r.nets;
    QCOMPARE(master.averages(), long((steps + frequency - 1) / frequency));
    QCOMPARE(nets[0]->get_params(), nets[1]->get_params());
    QCOMPARE(nets[0]->get_updater_state(), nets[1]->get_updater_state());
}

// A worker whose backend failed (a GPU out of memory) never attaches and leaves through abort();
// the last average, run by the barrier's completion, must not read the missing replica.
void TestParameterAveraging::a_worker_failing_before_attach_ends_cleanly() {
    const auto config = config::ModelConfig::parse(kModel, "pa");
    dist::ParameterAveraging master({1, 0, 2}, {1, true});
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(config, *be);
    const auto before = net.get_params();
    run_workers(2, [&](int w) {
        if (w == 0) master.attach(0, net);
        master.abort(w);
    });
    QCOMPARE(master.averages(), 0L);
    QVERIFY(net.get_params() == before);
}

QTEST_APPLESS_MAIN(TestParameterAveraging)
#include "test_parameter_averaging.moc"
