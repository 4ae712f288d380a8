// Swish, GELU and PReLU in files with weights (issue 13): the fixtures
// data/keras2_swish_gelu_prelu.json and data/dl4j_1.0.0_swish_gelu_prelu.json wrapped, as Keras's
// model.save("m.h5") and DL4J's ModelSerializer do, around known arrays. Every PReLU alpha is
// checked where Thresher's layout puts it, a prediction through the real Network is compared with
// a forward pass written here in the file's own layout and with the file's own formulas (Keras:
// channels_last, erf GELU; DL4J: NCHW, 'f' alphas and dense weights, GELU = x·sigmoid(1.702x)),
// and a few training iterations lower the loss.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "source_dir.h"
#include "backend/registry.h"
#include "config/model_format.h"
#include "core/error.h"
#include "nn/network.h"
#include "weight_files.h"

using namespace thresher;
using namespace test_support;
using nlohmann::json;

namespace {

std::string fixture_text(const char* name) {
    std::ifstream in((source_dir() + "/tests/engine/config/data/" + name).toStdString(), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> values(std::size_t n, float seed) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = 1.5f * std::sin(seed + 0.71f * static_cast<float>(i)) + 0.01f * seed;
    return v;
}

// Both fixtures: 3x3x2 input -> conv 2x2 (2 filters, linear) -> PReLU sharing height (alpha per
// width x channel) -> flatten 8 -> dense 5 swish -> dense 4 gelu -> output 3 softmax.
constexpr int H = 3, W = 3, C = 2, F = 2, K = 2, CH = 2, FLAT = F * CH * CH, H1 = 5, H2 = 4, OUT = 3;

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }
float swish(float x) { return x * sigmoid(x); }
float gelu_erf(float x) { return 0.5f * x * (1.f + std::erf(x / std::sqrt(2.f))); }
float gelu_sigmoid(float x) { return x * sigmoid(1.702f * x); }

std::vector<float> softmax(std::vector<float> z) {
    const float mx = *std::max_element(z.begin(), z.end());
    float s = 0;
    for (auto& v : z) s += (v = std::exp(v - mx));
    for (auto& v : z) v /= s;
    return z;
}

std::vector<float> inputs(int batch) { return values(static_cast<std::size_t>(batch) * C * H * W, 1.3f); }

// ---- Keras: kernels [kh, kw, in, out], alpha [1, w, c] (height shared), dense [in, out].
struct KerasWeights {
    std::vector<float> conv = values(K * K * C * F, 1.f), conv_b = values(F, 2.f), alpha = values(CH * F, 3.f);
    std::vector<float> d1 = values(FLAT * H1, 4.f), d1_b = values(H1, 5.f), d2 = values(H1 * H2, 6.f), d2_b = values(H2, 7.f);
    std::vector<float> out = values(H2 * OUT, 8.f), out_b = values(OUT, 9.f);
};

std::vector<float> keras_forward(const KerasWeights& k, const float* chw) {
    std::vector<float> flat(FLAT);  // Flatten of [y][x][f]
    for (int y = 0; y < CH; ++y)
        for (int x = 0; x < CH; ++x)
            for (int f = 0; f < F; ++f) {
                float s = k.conv_b[f];
                for (int dy = 0; dy < K; ++dy)
                    for (int dx = 0; dx < K; ++dx)
                        for (int c = 0; c < C; ++c) s += k.conv[((dy * K + dx) * C + c) * F + f] * chw[(c * H + y + dy) * W + x + dx];
                flat[(y * CH + x) * F + f] = s > 0 ? s : k.alpha[x * F + f] * s;
            }
    std::vector<float> h1(H1), h2(H2), z(OUT);
    for (int j = 0; j < H1; ++j) {
        float s = k.d1_b[j];
        for (int i = 0; i < FLAT; ++i) s += flat[i] * k.d1[i * H1 + j];
        h1[j] = swish(s);
    }
    for (int j = 0; j < H2; ++j) {
        float s = k.d2_b[j];
        for (int i = 0; i < H1; ++i) s += h1[i] * k.d2[i * H2 + j];
        h2[j] = gelu_erf(s);
    }
    for (int j = 0; j < OUT; ++j) {
        float s = k.out_b[j];
        for (int i = 0; i < H2; ++i) s += h2[i] * k.out[i * OUT + j];
        z[j] = s;
    }
    return softmax(z);
}

void write_keras_h5(const std::string& path, const KerasWeights& k) {
    H5Writer w(path);
    w.strings("/", "model_config", {fixture_text("keras2_swish_gelu_prelu.json")}, true);
    w.strings("/", "keras_version", {"2.11.0"}, true);
    w.group("/model_weights");
    w.strings("/model_weights", "layer_names", {"conv", "prelu", "flatten", "hidden", "hidden2", "out"}, false);
    auto put = [&](const std::string& layer, const std::vector<H5Writer::Variable>& vars) {
        w.keras_layer("/model_weights/" + layer, layer, vars);
    };
    put("conv", {{"kernel", {{K, K, C, F}, k.conv}}, {"bias", {{F}, k.conv_b}}});
    put("prelu", {{"alpha", {{1, CH, F}, k.alpha}}});
    put("hidden", {{"kernel", {{FLAT, H1}, k.d1}}, {"bias", {{H1}, k.d1_b}}});
    put("hidden2", {{"kernel", {{H1, H2}, k.d2}}, {"bias", {{H2}, k.d2_b}}});
    put("out", {{"kernel", {{H2, OUT}, k.out}}, {"bias", {{OUT}, k.out_b}}});
    w.group("/model_weights/flatten");
    w.empty_floats("/model_weights/flatten", "weight_names");
}

// ---- DL4J: conv b then W [F, C, K, K] 'c'; PReLU alpha [C=2, 1, W=2] 'f' (index c + 2·x);
// dense W [in, out] 'f' then b.
constexpr int kConvB = 0, kConvW = F, kAlpha = kConvW + F * C * K * K, kD1W = kAlpha + CH * F, kD1B = kD1W + FLAT * H1,
              kD2W = kD1B + H1, kD2B = kD2W + H1 * H2, kOutW = kD2B + H2, kOutB = kOutW + H2 * OUT, kCount = kOutB + OUT;

std::vector<float> dl4j_forward(const std::vector<float>& p, const float* chw) {
    std::vector<float> flat(FLAT);  // CnnToFeedForward: [f][y][x]
    for (int f = 0; f < F; ++f)
        for (int y = 0; y < CH; ++y)
            for (int x = 0; x < CH; ++x) {
                float s = p[kConvB + f];
                for (int c = 0; c < C; ++c)
                    for (int dy = 0; dy < K; ++dy)
                        for (int dx = 0; dx < K; ++dx)
                            s += p[kConvW + ((f * C + c) * K + dy) * K + dx] * chw[(c * H + y + dy) * W + x + dx];
                flat[(f * CH + y) * CH + x] = s > 0 ? s : p[kAlpha + f + F * x] * s;
            }
    std::vector<float> h1(H1), h2(H2), z(OUT);
    for (int o = 0; o < H1; ++o) {
        float s = p[kD1B + o];
        for (int r = 0; r < FLAT; ++r) s += flat[r] * p[kD1W + r + o * FLAT];
        h1[o] = swish(s);
    }
    for (int o = 0; o < H2; ++o) {
        float s = p[kD2B + o];
        for (int r = 0; r < H1; ++r) s += h1[r] * p[kD2W + r + o * H1];
        h2[o] = gelu_sigmoid(s);
    }
    for (int o = 0; o < OUT; ++o) {
        float s = p[kOutB + o];
        for (int r = 0; r < H2; ++r) s += h2[r] * p[kOutW + r + o * H2];
        z[o] = s;
    }
    return softmax(z);
}

void compare(const std::vector<float>& got, const std::vector<std::vector<float>>& want) {
    for (std::size_t s = 0; s < want.size(); ++s)
        for (int j = 0; j < OUT; ++j) {
            const float g = got[s * OUT + static_cast<std::size_t>(j)], w = want[s][static_cast<std::size_t>(j)];
            if (std::abs(g - w) > 1e-5f)
                QFAIL(qPrintable(QString("sample %1 output %2: Thresher %3, reference %4").arg(s).arg(j).arg(g).arg(w)));
        }
}

// Predicts with the imported parameters, checks against `want`, then trains 30 SGD iterations on
// the same batch (one-hot targets) and returns the losses before and after.
std::pair<double, double> predict_and_train(const config::ImportResult& r, const std::vector<std::vector<float>>& want) {
    const int batch = static_cast<int>(want.size());
    const auto x = inputs(batch);
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(r.model, *be);
    net.set_params(r.params);
    std::vector<float> out(static_cast<std::size_t>(batch) * OUT);
    net.predict(x.data(), batch, out.data());
    compare(out, want);
    std::vector<float> t(static_cast<std::size_t>(batch) * OUT, 0.f);
    for (int s = 0; s < batch; ++s) t[static_cast<std::size_t>(s * OUT + s % OUT)] = 1.f;
    const double before = net.loss(x.data(), t.data(), batch, 1, backend::Mode::Inference);
    for (long it = 0; it < 30; ++it) {
        net.compute_gradients(x.data(), t.data(), batch, static_cast<std::uint64_t>(it));
        net.compute_update(it);
        net.apply_update();
    }
    return {before, net.loss(x.data(), t.data(), batch, 1, backend::Mode::Inference)};
}

}  // namespace

class TestActivationWeights : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QVERIFY(dir_.isValid()); }
    void fixturesImport_data();
    void fixturesImport();
    void kerasH5();
    void dl4jZip();

private:
    std::string path(const char* name) const { return dir_.filePath(name).toStdString(); }
    QTemporaryDir dir_;
};

void TestActivationWeights::fixturesImport_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("summary");  // layer types and activations as Thresher runs them
    QTest::newRow("keras") << "keras2_swish_gelu_prelu.json"
                           << "convolution identity,prelu,dense swish,dense gelu,output softmax";
    QTest::newRow("dl4j") << "dl4j_1.0.0_swish_gelu_prelu.json"
                          << "convolution identity,prelu,dense swish,dense gelu_sigmoid,output softmax";
}

void TestActivationWeights::fixturesImport() {
    QFETCH(QString, file);
    QFETCH(QString, summary);
    const auto r = config::import_model_file((source_dir() + "/tests/engine/config/data/" + file).toStdString());
    QStringList got;
    for (const auto& l : r.model.layers) {
        QString s = QString::fromUtf8(config::to_string(l.type).data());
        if (l.type != config::LayerType::PRelu) s += " " + QString::fromUtf8(config::to_string(l.activation.kind).data());
        got << s;
    }
    QCOMPARE(got.join(','), summary);
    const auto& prelu = r.model.layers[1];
    QCOMPARE(prelu.prelu_shared, (std::array<bool, 3>{false, true, false}));  // height shared
    QCOMPARE(prelu.param_count, std::size_t(CH * F));
    QCOMPARE(r.model.param_count(), std::size_t(kCount));
    for (const auto& n : r.notes) QVERIFY2(n.find("ignored field") == std::string::npos, n.c_str());
    // A Thresher config like any other: it round-trips, and trains from scratch.
    const auto again = config::ModelConfig::from_json(r.model.to_json(), "round trip");
    QCOMPARE(QString::fromStdString(again.to_json().dump()), QString::fromStdString(r.model.to_json().dump()));
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(again, *be);
    net.init_params(7);
    const auto x = inputs(4);
    std::vector<float> t(4 * OUT, 0.f);
    for (int s = 0; s < 4; ++s) t[static_cast<std::size_t>(s * OUT + s % OUT)] = 1.f;
    const double first = net.compute_gradients(x.data(), t.data(), 4, 0);
    double last = first;
    for (long it = 0; it < 40; ++it) {
        last = net.compute_gradients(x.data(), t.data(), 4, static_cast<std::uint64_t>(it));
        net.compute_update(it);
        net.apply_update();
    }
    QVERIFY2(std::isfinite(last) && last < first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
}

void TestActivationWeights::kerasH5() {
    KerasWeights k;
    const auto file = path("swish_gelu_prelu.h5");
    write_keras_h5(file, k);
    const auto r = config::import_model_file(file);
    QCOMPARE(r.params.size(), std::size_t(kCount));
    // Alpha [1, x, f] channels_last -> Thresher [f, 1, x].
    const auto& prelu = r.model.layers[1];
    for (int f = 0; f < F; ++f)
        for (int x = 0; x < CH; ++x) QCOMPARE(r.params[prelu.param_offset + f * CH + x], k.alpha[x * F + f]);
    const int batch = 5;
    const auto xs = inputs(batch);
    std::vector<std::vector<float>> want;
    for (int s = 0; s < batch; ++s) want.push_back(keras_forward(k, xs.data() + s * C * H * W));
    const auto [before, after] = predict_and_train(r, want);
    QVERIFY2(after < before, qPrintable(QString("loss %1 -> %2").arg(before).arg(after)));
}

void TestActivationWeights::dl4jZip() {
    const auto p = values(kCount, 0.4f);
    const auto file = path("swish_gelu_prelu.zip");
    write_zip(file, {{"configuration.json", text_bytes(fixture_text("dl4j_1.0.0_swish_gelu_prelu.json"))},
                     {"coefficients.bin", nd4j_row(p, false, false)}});
    const auto r = config::import_model_file(file);
    QCOMPARE(r.params.size(), std::size_t(kCount));
    // Alpha [c, 1, x] 'f' (c + 2x) -> Thresher row-major [c, 1, x].
    const auto& prelu = r.model.layers[1];
    for (int c = 0; c < F; ++c)
        for (int x = 0; x < CH; ++x) QCOMPARE(r.params[prelu.param_offset + c * CH + x], p[kAlpha + c + F * x]);
    const int batch = 5;
    const auto xs = inputs(batch);
    std::vector<std::vector<float>> want;
    for (int s = 0; s < batch; ++s) want.push_back(dl4j_forward(p, xs.data() + s * C * H * W));
    const auto [before, after] = predict_and_train(r, want);
    QVERIFY2(after < before, qPrintable(QString("loss %1 -> %2").arg(before).arg(after)));
}

QTEST_GUILESS_MAIN(TestActivationWeights)
#include "test_activation_weights.moc"
