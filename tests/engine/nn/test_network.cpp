// Network behaviour beyond single gradients: training lowers the loss, inference is independent
// of the batch a sample arrives in, batch normalisation's running statistics move only in
// training, dropout is the identity in inference and reproducible from its seed.
#include <QtTest>

#include <cmath>
#include <memory>

#include "backend/registry.h"
#include "config/model_format.h"
#include "nn/network.h"

using namespace thresher;

class TestNetwork : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { be_ = backend::create_backend("cpu", {2}); }
    void training_lowers_loss_data();
    void training_lowers_loss();
    void inference_independent_of_batch();
    void batch_norm_statistics_move_only_in_training();
    void dropout_seeded();
    void fused_batch_norm_relu_equals_unfused();
    void spatial_dropout_drops_whole_channels();
    void init_reproducible_from_seed();

private:
    std::unique_ptr<backend::Backend> be_;
};

void TestNetwork::training_lowers_loss_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::newRow("thresher dense, output") << QByteArray(R"({"input":{"size":4},
        "layers":[{"type":"dense","units":8,"activation":"relu"},{"type":"output","units":2}]})");
    // Standalone activation layers as the importers bring them (issue 22): after a Dense that has
    // its own activation, and last, as the output that carries the loss.
    QTest::newRow("keras Dense relu, Activation tanh, Dense elu, Activation softmax") << QByteArray(R"({"class_name":"Sequential",
        "config":{"name":"k","layers":[{"class_name":"InputLayer","config":{"batch_shape":[null,4],"name":"in"}},
        {"class_name":"Dense","config":{"name":"d","units":8,"activation":"relu"}},
        {"class_name":"Activation","config":{"name":"a","activation":"tanh"}},
        {"class_name":"Dense","config":{"name":"out","units":2,"activation":"elu"}},
        {"class_name":"Activation","config":{"name":"sm","activation":"softmax"}}]}})");
    QTest::newRow("dl4j dense relu, ActivationLayer sigmoid, LossLayer") << QByteArray(R"({"confs":[
        {"layer":{"@class":"org.deeplearning4j.nn.conf.layers.DenseLayer","nin":4,"nout":8,
                  "activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationReLU"}}},
        {"layer":{"@class":"org.deeplearning4j.nn.conf.layers.ActivationLayer",
                  "activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSigmoid"}}},
        {"layer":{"@class":"org.deeplearning4j.nn.conf.layers.DenseLayer","nin":8,"nout":2,
                  "activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationIdentity"}}},
        {"layer":{"@class":"org.deeplearning4j.nn.conf.layers.LossLayer",
                  "activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
                  "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"}}}]})");
    // A shared dense and batch norm (issue 22): each called twice, the gradients of both calls
    // summed into the one set of parameters.
    QTest::newRow("shared dense and batch norm") << QByteArray(R"({"input":{"size":4},
        "layers":[{"type":"dense","name":"d","units":4,"activation":"tanh"},{"type":"batch_norm","name":"bn"},
                  {"type":"dense","name":"d@1","shares":"d","units":4,"activation":"tanh"},
                  {"type":"batch_norm","name":"bn@1","shares":"bn"},{"type":"output","units":2}]})");
}

void TestNetwork::training_lowers_loss() {
    // Two Gaussian blobs in 4-D; 60 steps of Nesterov SGD must cut the loss by 10x.
    QFETCH(QByteArray, json);
    auto m = config::import_model_text(json.toStdString(), "blobs").model;
    m.updater = {};
    m.updater.kind = config::UpdaterKind::Nesterovs;
    m.updater.learning_rate = 0.1f;
    m.updater.momentum = 0.9f;
    for (auto& l : m.layers) l.updater.reset();
    nn::Network net(m, *be_);
    std::vector<float> x(32 * 4), t(32 * 2, 0.f);
    for (int i = 0; i < 32; ++i) {
        const int c = i % 2;
        for (int j = 0; j < 4; ++j) x[i * 4 + j] = (c ? 1.f : -1.f) + 0.3f * std::sin(i * 7.f + j);
        t[i * 2 + c] = 1.f;
    }
    const double first = net.loss(x.data(), t.data(), 32, 0, backend::Mode::Inference);
    for (int step = 0; step < 60; ++step) {
        net.compute_gradients(x.data(), t.data(), 32, step);
        net.compute_update(step);
        net.apply_update();
    }
    const double last = net.loss(x.data(), t.data(), 32, 0, backend::Mode::Inference);
    QVERIFY2(last < first / 10, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
}

void TestNetwork::inference_independent_of_batch() {
    nn::Network net(config::ModelConfig::parse(R"({"input":{"channels":2,"height":5,"width":5},
        "layers":[{"type":"convolution","filters":3,"kernel":2,"activation":"relu"},
                  {"type":"subsampling","kernel":2},{"type":"output","units":4}]})", "b"), *be_);
    std::vector<float> x(5 * 50);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(static_cast<float>(i));
    std::vector<float> all(5 * 4), one(4);
    net.predict(x.data(), 5, all.data());
    for (int i = 0; i < 5; ++i) {
        net.predict(x.data() + i * 50, 1, one.data());
        for (int k = 0; k < 4; ++k) QVERIFY(std::abs(one[k] - all[i * 4 + k]) < 1e-6f);
        float sum = 0;
        for (int k = 0; k < 4; ++k) sum += one[k];
        QVERIFY(std::abs(sum - 1.f) < 1e-5f);  // softmax output
    }
}

void TestNetwork::batch_norm_statistics_move_only_in_training() {
    nn::Network net(config::ModelConfig::parse(R"({"input":{"size":3},
        "layers":[{"type":"batch_norm","decay":0.5},{"type":"output","units":2}]})", "bn"), *be_);
    const std::vector<float> x{1, 2, 3, 3, 2, 1}, t{1, 0, 0, 1};
    const auto p0 = net.get_params();
    net.predict(x.data(), 2, std::vector<float>(4).data());
    QCOMPARE(net.get_params(), p0);
    net.compute_gradients(x.data(), t.data(), 2, 0);
    // The running statistics move only through the update vector (so that gradient sharing
    // carries them to every replica): the forward pass leaves them alone...
    QCOMPARE(net.get_params(), p0);
    // ... and their entries hold running - (decay * running + (1 - decay) * batch). The batch means
    // are (2, 2, 2); features 0 and 2 see {1,3} (variance 1), feature 1 sees {2,2} (variance 0).
    const float mean[3] = {1.f, 1.f, 1.f}, var[3] = {1.f, 0.5f, 1.f};
    const auto g = net.get_gradients();
    for (int c = 0; c < 3; ++c) {
        QVERIFY(std::abs(g[6 + c] - (0.f - mean[c])) < 1e-6f);
        QVERIFY(std::abs(g[9 + c] - (1.f - var[c])) < 1e-6f);
    }
    // The updater leaves them as they are (DL4J's NoOp for these), and θ -= u gives the blend:
    // running mean = 0.5*0 + 0.5*batch mean, running var = 0.5*1 + 0.5*batch variance.
    net.compute_update(0);
    net.apply_update();
    const auto p1 = net.get_params();
    for (int c = 0; c < 3; ++c) {
        QVERIFY(std::abs(p1[6 + c] - mean[c]) < 1e-6f);
        QVERIFY(std::abs(p1[9 + c] - var[c]) < 1e-6f);
    }
}

// A ReLU layer that alone reads a batch norm of 16 channels runs inside it (choose_fusions); a
// dropout that keeps everything between them prevents that. Both networks compute the same
// function, so their losses and gradients must agree to rounding, at batch sizes 4 and 6 (the
// finite-difference check alone cannot tell a fused-backward bug from ReLU kinks).
void TestNetwork::fused_batch_norm_relu_equals_unfused() {
    auto make = [&](const char* between) {
        const std::string json = std::string(R"({"input":{"channels":2,"height":6,"width":6},"seed":3,"layers":[
            {"type":"convolution","filters":16,"kernel":[3,3],"activation":"identity"},{"type":"batch_norm"},)") +
                                 between + R"({"type":"activation","activation":"relu"},
            {"type":"subsampling","pooling":"avg","global":true},{"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
        return std::make_unique<nn::Network>(config::ModelConfig::parse(json, "bn_relu"), *be_);
    };
    auto fused = make("");
    auto apart = make(R"({"type":"dropout","retain":1.0},)");
    QCOMPARE(fused->param_count(), apart->param_count());
    fused->init_params(5);
    apart->set_params(fused->get_params());
    for (int batch : {4, 6}) {
        std::vector<float> x(static_cast<std::size_t>(batch) * 72), t(static_cast<std::size_t>(batch) * 3, 0.f);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i)) + 0.1f * float(i % 7);
        for (int n = 0; n < batch; ++n) t[static_cast<std::size_t>(n) * 3 + static_cast<std::size_t>(n % 3)] = 1.f;
        const double la = fused->compute_gradients(x.data(), t.data(), batch, 1);
        const double lb = apart->compute_gradients(x.data(), t.data(), batch, 1);
        QVERIFY2(std::abs(la - lb) < 1e-5 * std::max(1.0, std::abs(la)), qPrintable(QString("loss %1 vs %2").arg(la).arg(lb)));
        const auto ga = fused->get_gradients(), gb = apart->get_gradients();
        double worst = 0, scale = 0;
        for (std::size_t i = 0; i < ga.size(); ++i) {
            worst = std::max(worst, double(std::abs(ga[i] - gb[i])));
            scale = std::max(scale, double(std::abs(gb[i])));
        }
        QVERIFY2(worst <= 1e-4 * scale, qPrintable(QString("batch %1: gradients differ by %2 (largest %3)").arg(batch).arg(worst).arg(scale)));
    }
}

void TestNetwork::dropout_seeded() {
    nn::Network net(config::ModelConfig::parse(R"({"input":{"size":200},
        "layers":[{"type":"dropout","retain":0.5},{"type":"output","units":2,"activation":"identity","loss":"mse"}]})", "d"), *be_);
    std::vector<float> x(200, 1.f), t(2, 0.f);
    const double a = net.loss(x.data(), t.data(), 1, 11, backend::Mode::Training);
    const double b = net.loss(x.data(), t.data(), 1, 11, backend::Mode::Training);
    const double c = net.loss(x.data(), t.data(), 1, 12, backend::Mode::Training);
    const double i1 = net.loss(x.data(), t.data(), 1, 11, backend::Mode::Inference);
    const double i2 = net.loss(x.data(), t.data(), 1, 12, backend::Mode::Inference);
    QCOMPARE(a, b);
    QVERIFY(a != c);
    QCOMPARE(i1, i2);
}

void TestNetwork::spatial_dropout_drops_whole_channels() {
    // 2 samples x 40 channels of 3x4 ones through spatial dropout (retain 0.5) and an identity
    // upsampling that is the image output: every channel comes out all 0 or all 2 (1 / retain),
    // some of each; inference passes the input through.
    nn::Network net(config::ModelConfig::parse(R"({"input":{"channels":40,"height":3,"width":4},
        "layers":[{"type":"dropout","retain":0.5,"spatial":true},{"type":"upsampling","size":1,"loss":"mse"}]})", "sd"), *be_);
    const int n = 2 * 40 * 12;
    std::vector<float> x(n, 1.f), t(n, 0.f), y(n);
    net.loss(x.data(), t.data(), 2, 7, backend::Mode::Training, y.data());
    int kept = 0;
    for (int ch = 0; ch < 80; ++ch) {
        const float first = y[static_cast<std::size_t>(ch) * 12];
        QVERIFY2(first == 0.f || first == 2.f, qPrintable(QString::number(first)));
        for (int p = 1; p < 12; ++p) QCOMPARE(y[static_cast<std::size_t>(ch) * 12 + p], first);
        kept += first != 0.f;
    }
    QVERIFY2(kept > 20 && kept < 60, qPrintable(QString("%1 of 80 channels kept").arg(kept)));
    net.loss(x.data(), t.data(), 2, 7, backend::Mode::Inference, y.data());
    QCOMPARE(y, x);
}

void TestNetwork::init_reproducible_from_seed() {
    const auto cfg = config::ModelConfig::parse(R"({"input":{"size":10},"layers":[{"type":"output","units":3}]})", "s");
    nn::Network a(cfg, *be_), b(cfg, *be_);
    QCOMPARE(a.get_params(), b.get_params());
    b.init_params(cfg.seed + 1);
    QVERIFY(a.get_params() != b.get_params());
    // Xavier: std sqrt(2 / (10 + 3)) = 0.392; 30 weights should not all be tiny or huge
    const auto p = a.get_params();
    double ss = 0;
    for (int i = 0; i < 30; ++i) ss += p[i] * p[i];
    const double sd = std::sqrt(ss / 30);
    QVERIFY2(sd > 0.2 && sd < 0.6, qPrintable(QString::number(sd)));
}

QTEST_APPLESS_MAIN(TestNetwork)
#include "test_network.moc"
