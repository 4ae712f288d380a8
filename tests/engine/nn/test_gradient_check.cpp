// Finite-difference gradient checks: for small networks exercising every layer, activation and
// loss, the backward pass must agree with central differences of the training-mode loss,
//   dL/dθ_i ≈ (L(θ + ε e_i) − L(θ − ε e_i)) / 2ε,
// for every parameter. Float32 forward passes limit the agreement to about 1e-3 relative, so the
// check is |fd − an| ≤ atol + rtol · max(|fd|, |an|); a real bug misses by orders of magnitude.
// Max pooling and ReLU have kinks: when ±ε crosses one (two window entries within ε of each
// other, which is common), the central difference mixes two slopes. A parameter that misses is
// checked one-sidedly: the analytic gradient must equal the slope on one side of θ, which holds
// at a kink and fails for a wrong gradient (it matches neither side).
#include <QtTest>

#include <cmath>
#include <random>

#include "backend/registry.h"
#include "nn/network.h"

using namespace thresher;

namespace {

// A model JSON with the given input and hidden layers, ending in `output`.
QByteArray model(const char* input, const char* layers, const char* output) {
    return QByteArray("{\"name\":\"gc\",\"seed\":7,\"input\":") + input + ",\"layers\":[" + layers +
           (layers[0] ? "," : "") + output + "]}";
}

struct Batch {
    std::vector<float> x, t;
};

Batch make_batch(const config::ModelConfig& c, int n, bool one_hot, std::uint64_t seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    std::normal_distribution<float> normal(0.f, 1.f);
    std::uniform_real_distribution<float> unit(0.05f, 0.95f);
    Batch b;
    b.x.resize(static_cast<std::size_t>(n) * c.input.size());
    for (auto& v : b.x) v = normal(rng);
    const int k = c.output_size();
    b.t.assign(static_cast<std::size_t>(n) * k, 0.f);
    for (int i = 0; i < n; ++i) {
        if (one_hot) {
            b.t[static_cast<std::size_t>(i) * k + rng() % k] = 1.f;
        } else {
            for (int j = 0; j < k; ++j) b.t[static_cast<std::size_t>(i) * k + j] = unit(rng);
        }
    }
    return b;
}

}  // namespace

class TestGradientCheck : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void gradients_data();
    void gradients();
};

void TestGradientCheck::gradients_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<bool>("one_hot");

    const char* flat = "{\"size\":6}";
    const char* image = "{\"channels\":2,\"height\":7,\"width\":6}";
    const char* softmax = "{\"type\":\"output\",\"units\":3,\"activation\":\"softmax\",\"loss\":\"mcxent\"}";
    for (const char* act : {"identity", "relu", "leakyrelu", "tanh", "sigmoid", "softmax", "elu", "selu", "relu6",
                            "hardsigmoid", "softplus", "softsign", "swish", "gelu", "gelu_tanh", "gelu_sigmoid"}) {
        const QByteArray layer = QByteArray("{\"type\":\"dense\",\"units\":5,\"activation\":\"") + act + "\"}";
        QTest::newRow(QByteArray("dense ") + act) << model(flat, layer.constData(), softmax) << true;
    }
    QTest::newRow("output sigmoid xent")
        << model(flat, "{\"type\":\"dense\",\"units\":4,\"activation\":\"tanh\"}",
                 "{\"type\":\"output\",\"units\":3,\"activation\":\"sigmoid\",\"loss\":\"xent\"}")
        << false;
    QTest::newRow("output identity mse")
        << model(flat, "", "{\"type\":\"output\",\"units\":2,\"activation\":\"identity\",\"loss\":\"mse\"}") << false;
    QTest::newRow("output tanh mse")
        << model(flat, "", "{\"type\":\"output\",\"units\":2,\"activation\":\"tanh\",\"loss\":\"mse\"}") << false;
    QTest::newRow("output negativeloglikelihood")
        << model(flat, "", "{\"type\":\"output\",\"units\":4,\"activation\":\"softmax\",\"loss\":\"negativeloglikelihood\"}") << true;
    QTest::newRow("dense tanh with l2 (applied later, by the updater)")
        << model("{\"size\":6}", "{\"type\":\"dense\",\"units\":5,\"activation\":\"tanh\",\"l2\":0.1}", softmax) << true;

    QTest::newRow("conv 3x3 truncate")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[3,3],\"activation\":\"tanh\"}", softmax) << true;
    QTest::newRow("conv stride 2 padding 1")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[3,2],\"stride\":[2,2],\"padding\":[1,1],\"activation\":\"sigmoid\"}", softmax) << true;
    QTest::newRow("conv dilation 2")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"dilation\":[2,2],\"activation\":\"identity\"}", softmax) << true;
    QTest::newRow("conv same mode stride 2")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"stride\":2,\"mode\":\"same\",\"activation\":\"relu\"}", softmax) << true;
    QTest::newRow("conv leakyrelu")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"leakyrelu\",\"alpha\":0.2}", softmax) << true;
    QTest::newRow("conv relu then max pool")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"relu\"},"
                        "{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2],\"stride\":[2,2]}", softmax) << true;
    for (const char* act : {"identity", "tanh"}) {
        const QByteArray layers = QByteArray("{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"") + act +
                                  "\"},{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2],\"stride\":[2,2]}";
        QTest::newRow(QByteArray("conv ") + act + " then max pool") << model(image, layers.constData(), softmax) << true;
    }
    // The activations imported files bring run after the convolution (not fused by oneDNN).
    for (const char* act : {"elu", "selu", "relu6", "hardsigmoid", "softplus", "softsign", "swish", "gelu", "gelu_tanh",
                            "gelu_sigmoid"}) {
        const QByteArray layer = QByteArray("{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"") + act + "\"}";
        QTest::newRow(QByteArray("conv ") + act) << model(image, layer.constData(), softmax) << true;
    }
    QTest::newRow("dense elu alpha 0.5")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"elu\",\"alpha\":0.5}", softmax) << true;
    // Binary classification (one sigmoid unit, xent) and regression with mae (issue 13 class 5).
    QTest::newRow("dense tanh, one sigmoid unit xent")
        << model(flat, "{\"type\":\"dense\",\"units\":4,\"activation\":\"tanh\"}",
                 "{\"type\":\"output\",\"units\":1,\"activation\":\"sigmoid\",\"loss\":\"xent\"}") << false;
    QTest::newRow("dense relu, identity mae")
        << model(flat, "{\"type\":\"dense\",\"units\":4,\"activation\":\"relu\"}",
                 "{\"type\":\"output\",\"units\":2,\"activation\":\"identity\",\"loss\":\"mae\"}") << false;
    QTest::newRow("output sigmoid mae")
        << model(flat, "", "{\"type\":\"output\",\"units\":1,\"activation\":\"sigmoid\",\"loss\":\"mae\"}") << false;
    // θ = 0.3: inputs near the threshold jump from 0 to 0.3, so a finite difference across it is
    // one-sided (the check falls back to those).
    QTest::newRow("dense thresholdedrelu 0.3")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"thresholdedrelu\",\"alpha\":0.3}", softmax) << true;
    QTest::newRow("conv thresholdedrelu then max pool")
        << model("{\"channels\":1,\"height\":6,\"width\":6}",
                 "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"activation\":\"thresholdedrelu\",\"alpha\":0.2},"
                 "{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2]}", softmax) << true;
    // Global pooling (one window over the whole 4x4 map): the C channel values go to the output.
    QTest::newRow("conv then global avg pool")
        << model("{\"channels\":1,\"height\":6,\"width\":6}",
                 "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[3,3],\"activation\":\"tanh\"},"
                 "{\"type\":\"subsampling\",\"pooling\":\"avg\",\"global\":true}", softmax) << true;
    QTest::newRow("conv then global max pool")
        << model("{\"channels\":1,\"height\":6,\"width\":6}",
                 "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[3,3],\"activation\":\"tanh\"},"
                 "{\"type\":\"subsampling\",\"pooling\":\"max\",\"global\":true}", softmax) << true;
    QTest::newRow("output softplus mse")
        << model(flat, "", "{\"type\":\"output\",\"units\":2,\"activation\":\"softplus\",\"loss\":\"mse\"}") << false;
    QTest::newRow("output softsign mse")
        << model(flat, "", "{\"type\":\"output\",\"units\":2,\"activation\":\"softsign\",\"loss\":\"mse\"}") << false;
    QTest::newRow("conv leakyrelu then max pool")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"leakyrelu\"},"
                        "{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2],\"stride\":[2,2]}", softmax) << true;
    QTest::newRow("conv then avg pool same")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"tanh\"},"
                        "{\"type\":\"subsampling\",\"pooling\":\"avg\",\"kernel\":[3,3],\"stride\":[2,2],\"mode\":\"same\"}", softmax) << true;
    QTest::newRow("batch norm on conv")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[3,3],\"activation\":\"identity\"},"
                        "{\"type\":\"batch_norm\"}", softmax) << true;
    QTest::newRow("batch norm on dense")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"identity\"},{\"type\":\"batch_norm\"},"
                       "{\"type\":\"dense\",\"units\":4,\"activation\":\"tanh\"}", softmax) << true;
    QTest::newRow("dropout")
        << model(flat, "{\"type\":\"dense\",\"units\":8,\"activation\":\"tanh\"},{\"type\":\"dropout\",\"retain\":0.6}", softmax) << true;
    // PReLU: the alpha gradients (one per unit, per channel, per position) as well as the input's.
    QTest::newRow("prelu per unit")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"identity\"},{\"type\":\"prelu\",\"alpha_init\":0.25}",
                 softmax) << true;
    QTest::newRow("prelu one alpha")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"identity\"},"
                       "{\"type\":\"prelu\",\"shared_axes\":[\"channels\"],\"alpha_init\":-0.5}", softmax) << true;
    QTest::newRow("conv prelu per channel")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"identity\"},"
                        "{\"type\":\"prelu\",\"shared_axes\":[\"height\",\"width\"],\"alpha_init\":0.3}", softmax) << true;
    QTest::newRow("conv prelu per position")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"activation\":\"identity\"},"
                        "{\"type\":\"prelu\",\"shared_axes\":[\"width\"],\"alpha_init\":0.1}", softmax) << true;
    if (qEnvironmentVariableIsSet("GC_JSON")) QTest::newRow("env") << qgetenv("GC_JSON") << true;
    QTest::newRow("lenet-like stack")
        << model("{\"channels\":1,\"height\":9,\"width\":9}",
                 "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"activation\":\"identity\"},"
                 "{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2]},"
                 "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"identity\"},"
                 "{\"type\":\"dense\",\"units\":6,\"activation\":\"relu\"}", softmax) << true;
}

void TestGradientCheck::gradients() {
    QFETCH(QByteArray, json);
    QFETCH(bool, one_hot);
    const auto config = config::ModelConfig::parse(json.toStdString(), QTest::currentDataTag());
    auto backend = backend::create_backend("cpu", {1});
    nn::Network net(config, *backend);
    const int batch = qEnvironmentVariableIntValue("GC_BATCH") > 0 ? qEnvironmentVariableIntValue("GC_BATCH") : 4;
    const auto b = make_batch(net.config(), batch, one_hot, 99);
    const std::uint64_t seed = 5;

    net.compute_gradients(b.x.data(), b.t.data(), batch, seed);
    const auto analytic = net.get_gradients();
    auto params = net.get_params();

    const double eps = 3e-3, atol = 3e-4, rtol = 2e-2;
    int checked = 0, failed = 0;
    QString worst;
    double worst_err = 0;
    auto loss_at = [&](std::size_t i, double h) {
        const float saved = params[i];
        params[i] = saved + static_cast<float>(h);
        net.set_params(params);
        const double l = net.loss(b.x.data(), b.t.data(), batch, seed, backend::Mode::Training);
        params[i] = saved;
        return l;
    };
    const double base = net.loss(b.x.data(), b.t.data(), batch, seed, backend::Mode::Training);
    auto excess = [&](double fd, double an) {
        return std::abs(fd - an) - (atol + rtol * std::max(std::abs(fd), std::abs(an)));
    };
    for (const auto& seg : net.segments()) {
        if (!seg.trainable) continue;
        for (std::size_t i = seg.offset; i < seg.offset + seg.size; ++i) {
            const double an = analytic[i];
            const double plus = loss_at(i, eps), minus = loss_at(i, -eps);
            double fd = (plus - minus) / (2 * eps);
            double err = excess(fd, an);
            if (err > 0) {
                const double right = (plus - base) / eps, left = (base - minus) / eps;
                const double e_right = excess(right, an), e_left = excess(left, an);
                // One-sided differences carry an O(ε) error of their own: allow twice the tolerance.
                if (std::min(e_right, e_left) < atol + rtol * std::abs(an)) err = 0;
                else fd = e_right < e_left ? right : left;
            }
            ++checked;
            if (err > 0) {
                ++failed;
                if (qEnvironmentVariableIsSet("GC_VERBOSE")) qDebug() << "param" << i << "analytic" << an << "fd" << fd;
                if (err > worst_err) {
                    worst_err = err;
                    worst = QString("param %1: analytic %2, finite difference %3").arg(i).arg(an).arg(fd);
                }
            }
        }
    }
    net.set_params(params);
    QVERIFY2(checked > 0, "no trainable parameters were checked");
    QVERIFY2(failed == 0, qPrintable(QString("%1 of %2 parameters disagree; worst %3").arg(failed).arg(checked).arg(worst)));
}

QTEST_APPLESS_MAIN(TestGradientCheck)
#include "test_gradient_check.moc"
