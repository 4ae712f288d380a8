// Updater maths against steps computed by hand (the arithmetic is in the comments), and the
// Network's use of them: per-layer overrides, regularisation on weights only, state layout.
#include <QtTest>

#include <cmath>

#include "backend/registry.h"
#include "nn/network.h"

using namespace thresher;
using backend::UpdaterKind;
using backend::UpdaterSpec;

class TestUpdaters : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { be_ = backend::create_backend("cpu", {1}); }
    void two_steps_data();
    void two_steps();
    void regularisation_data();
    void regularisation();
    void network_overrides_and_weight_only_l2();

private:
    std::unique_ptr<backend::Backend> be_;
};

void TestUpdaters::two_steps_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<float>("lr");
    QTest::addColumn<float>("g1");
    QTest::addColumn<float>("g2");
    QTest::addColumn<double>("u1");
    QTest::addColumn<double>("u2");
    // sgd: u = lr g
    QTest::newRow("sgd") << int(UpdaterKind::Sgd) << 0.1f << 1.f << -2.f << 0.1 << -0.2;
    // nesterovs mu 0.9: v1 = -0.1, u1 = 0.9*0 - 1.9*(-0.1) = 0.19;
    //                   v2 = 0.9*(-0.1) - 0.1 = -0.19, u2 = 0.9*(-0.1) - 1.9*(-0.19) = 0.271
    QTest::newRow("nesterovs") << int(UpdaterKind::Nesterovs) << 0.1f << 1.f << 1.f << 0.19 << 0.271;
    // adagrad eps 1e-6: h1 = 4, u1 = 0.1*2/(2 + 1e-6); h2 = 8, u2 = 0.2/(2.8284271 + 1e-6)
    QTest::newRow("adagrad") << int(UpdaterKind::AdaGrad) << 0.1f << 2.f << 2.f << 0.09999995 << 0.07071065;
    // rmsprop decay 0.95: r1 = 0.05*4 = 0.2, u1 = 0.2/sqrt(0.2) = 0.4472136;
    //                     r2 = 0.95*0.2 + 0.05*4 = 0.39, u2 = 0.2/sqrt(0.39) = 0.3202563
    QTest::newRow("rmsprop") << int(UpdaterKind::RmsProp) << 0.1f << 2.f << 2.f << 0.4472136 << 0.3202563;
    // adam: m1 = 0.2, v1 = 0.004, alpha1 = 0.01*sqrt(0.001)/0.1 = 0.00316228, u1 = alpha1*0.2/0.0632456 = 0.01
    //       g2 = -1: m2 = 0.18 - 0.1 = 0.08, v2 = 0.003996 + 0.001 = 0.004996,
    //       alpha2 = 0.01*sqrt(1 - 0.998001)/(1 - 0.81) = 0.00235317, u2 = alpha2*0.08/0.0706824 = 0.00266337
    QTest::newRow("adam") << int(UpdaterKind::Adam) << 0.01f << 2.f << -1.f << 0.01 << 0.00266337;
}

void TestUpdaters::two_steps() {
    QFETCH(int, kind);
    QFETCH(float, lr);
    QFETCH(float, g1);
    QFETCH(float, g2);
    QFETCH(double, u1);
    QFETCH(double, u2);
    UpdaterSpec spec;
    spec.kind = static_cast<UpdaterKind>(kind);
    spec.learning_rate = lr;
    spec.epsilon = spec.kind == UpdaterKind::AdaGrad ? 1e-6f : 1e-8f;
    std::vector<float> state(2, 0.f), params{0.f};
    float g = g1;
    be_->updater_step(spec, &g, state.data(), params.data(), 1, 0);
    QVERIFY2(std::abs(g - u1) < 1e-6 + 1e-5 * std::abs(u1), qPrintable(QString("step 1: %1, expected %2").arg(g).arg(u1)));
    g = g2;
    be_->updater_step(spec, &g, state.data(), params.data(), 1, 1);
    QVERIFY2(std::abs(g - u2) < 1e-6 + 1e-5 * std::abs(u2), qPrintable(QString("step 2: %1, expected %2").arg(g).arg(u2)));
}

void TestUpdaters::regularisation_data() {
    QTest::addColumn<float>("l1");
    QTest::addColumn<float>("l2");
    QTest::addColumn<float>("w");
    QTest::addColumn<double>("update");
    // sgd lr 0.1 on g = 1:  l2 0.5, w 3: g = 1 + 1.5 = 2.5 -> 0.25
    QTest::newRow("l2") << 0.f << 0.5f << 3.f << 0.25;
    // l1 0.2, w -3: g = 1 - 0.2 = 0.8 -> 0.08
    QTest::newRow("l1") << 0.2f << 0.f << -3.f << 0.08;
    // both, w 2: g = 1 + 0.2 + 0.5*2 = 2.2 -> 0.22
    QTest::newRow("l1+l2") << 0.2f << 0.5f << 2.f << 0.22;
}

void TestUpdaters::regularisation() {
    QFETCH(float, l1);
    QFETCH(float, l2);
    QFETCH(float, w);
    QFETCH(double, update);
    UpdaterSpec spec;
    spec.kind = UpdaterKind::Sgd;
    spec.learning_rate = 0.1f;
    spec.l1 = l1;
    spec.l2 = l2;
    float g = 1.f;
    be_->updater_step(spec, &g, nullptr, &w, 1, 0);
    QVERIFY(std::abs(g - update) < 1e-6);
}

void TestUpdaters::network_overrides_and_weight_only_l2() {
    // Layer 0 overrides the model's sgd with adam; l2 0.5 applies to weights, never to biases.
    const auto config = config::ModelConfig::parse(R"({"input":{"size":3},"l2":0.5,
        "updater":{"type":"sgd","learning_rate":0.1},
        "layers":[{"type":"dense","units":2,"activation":"tanh","updater":{"type":"adam","learning_rate":0.01}},
                  {"type":"output","units":2,"activation":"softmax","loss":"mcxent"}]})", "test");
    nn::Network net(config, *be_);
    // Adam keeps 2 floats per parameter of layer 0 (3*2 + 2 = 8); sgd keeps none.
    QCOMPARE(net.updater_state_size(), std::size_t(16));
    const std::vector<float> x{0.5f, -1.f, 2.f}, t{0.f, 1.f};
    net.compute_gradients(x.data(), t.data(), 1, 0);
    const auto g = net.get_gradients();
    const auto w = net.get_params();
    net.compute_update(0);
    const auto u = net.get_gradients();
    const auto& l1 = net.config().layers[1];
    for (std::size_t i = l1.param_offset; i < l1.param_offset + l1.param_count; ++i) {
        const bool weight = i < l1.param_offset + l1.blocks[0].size;
        const double expected = 0.1 * (g[i] + (weight ? 0.5 * w[i] : 0.0));
        QVERIFY2(std::abs(u[i] - expected) < 1e-6, qPrintable(QString("param %1").arg(i)));
    }
    // Adam's first step moves each parameter by lr * sign(g) (m/sqrt(v) = ±1 at t = 1).
    for (std::size_t i = 0; i < config.layers[0].param_count; ++i) {
        const bool weight = i < 6;
        const double gi = g[i] + (weight ? 0.5 * w[i] : 0.0);
        if (std::abs(gi) < 1e-6) continue;
        QVERIFY2(std::abs(std::abs(u[i]) - 0.01) < 1e-5 && (u[i] > 0) == (gi > 0),
                 qPrintable(QString("param %1: update %2 for gradient %3").arg(i).arg(u[i]).arg(gi)));
    }
    net.apply_update();
    const auto after = net.get_params();
    for (std::size_t i = 0; i < after.size(); ++i) QVERIFY(std::abs(after[i] - (w[i] - u[i])) < 1e-7);
}

QTEST_APPLESS_MAIN(TestUpdaters)
#include "test_updaters.moc"
