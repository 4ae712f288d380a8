// Model files with weights (engine/config/weight_import.h): DL4J model zips and Keras .h5 / .keras
// files, built here from known arrays with the formats' own writers -- libzip for zips, libhdf5
// for HDF5, and ND4J's binary array written by following its documented layout (big-endian Java
// DataOutputStream; independent of the reader). Every parameter is checked at the place Thresher's
// layout puts it, and a prediction through the real Network is compared with a forward pass
// written here in the file's own layout (Keras: channels_last; DL4J: 'f' dense weights).
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "source_dir.h"
#include "backend/registry.h"
#include "config/model_format.h"
#include "config/nd4j_array.h"
#include "core/error.h"
#include "nn/network.h"
#include "weight_files.h"

using namespace thresher;
using nlohmann::json;

namespace {

using namespace test_support;

// Distinct, sign-varying values so a misplaced parameter changes the outputs.
std::vector<float> values(std::size_t n, float seed) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = 0.3f * std::sin(seed + 0.71f * static_cast<float>(i)) + 0.01f * seed;
    return v;
}

constexpr int H = 6, W = 6, C = 2, F = 3, K = 3, HID = 5, OUT = 3;  // conv 3x3x2->3 on 6x6, pool 2, dense 12->5->3
constexpr int CH = H - K + 1, PH = CH / 2;                          // 4x4 after the conv, 2x2 after pooling
constexpr int FLAT = F * PH * PH;                                   // 12

// The input samples, in Thresher's layout (C x H x W).
std::vector<float> inputs(int batch) { return values(static_cast<std::size_t>(batch) * C * H * W, 1.7f); }

std::vector<float> softmax(std::vector<float> z) {
    const float mx = *std::max_element(z.begin(), z.end());
    float s = 0;
    for (auto& v : z) s += (v = std::exp(v - mx));
    for (auto& v : z) v /= s;
    return z;
}

std::vector<float> predict(const config::ModelConfig& m, const std::vector<float>& params, const std::vector<float>& x, int batch) {
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(m, *be);
    net.set_params(params);
    std::vector<float> out(static_cast<std::size_t>(batch) * OUT);
    net.predict(x.data(), batch, out.data());
    return out;
}

// ---- Keras: the weights in Keras's layouts, and Keras's forward pass over them.
struct KerasWeights {
    std::vector<float> kernel = values(K * K * C * F, 1.f), bias = values(F, 2.f);      // [kh, kw, in, out]
    std::vector<float> gamma = values(F, 3.f), beta = values(F, 4.f), mean = values(F, 5.f), var;
    std::vector<float> dense = values(FLAT * HID, 6.f), dense_b = values(HID, 7.f);  // [in, out], in = (h*W + w)*C + c
    std::vector<float> out = values(HID * OUT, 8.f), out_b = values(OUT, 9.f);
    KerasWeights() {
        var = values(F, 10.f);
        for (auto& v : var) v = 0.5f + std::abs(v);
    }
};

std::vector<float> keras_forward(const KerasWeights& k, const float* chw, float eps) {
    auto in = [&](int y, int x, int c) { return chw[(c * H + y) * W + x]; };
    std::vector<float> conv(CH * CH * F);  // [y][x][f], channels_last
    for (int y = 0; y < CH; ++y)
        for (int x = 0; x < CH; ++x)
            for (int f = 0; f < F; ++f) {
                float s = k.bias[f];
                for (int dy = 0; dy < K; ++dy)
                    for (int dx = 0; dx < K; ++dx)
                        for (int c = 0; c < C; ++c) s += k.kernel[((dy * K + dx) * C + c) * F + f] * in(y + dy, x + dx, c);
                s = std::max(s, 0.f);  // relu
                conv[(y * CH + x) * F + f] = k.gamma[f] * (s - k.mean[f]) / std::sqrt(k.var[f] + eps) + k.beta[f];
            }
    std::vector<float> flat(FLAT);  // Flatten of [2][2][3]: (y*2 + x)*3 + f
    for (int y = 0; y < PH; ++y)
        for (int x = 0; x < PH; ++x)
            for (int f = 0; f < F; ++f) {
                float m = -1e30f;
                for (int dy = 0; dy < 2; ++dy)
                    for (int dx = 0; dx < 2; ++dx) m = std::max(m, conv[((2 * y + dy) * CH + 2 * x + dx) * F + f]);
                flat[(y * PH + x) * F + f] = m;
            }
    std::vector<float> hid(HID), z(OUT);
    for (int j = 0; j < HID; ++j) {
        float s = k.dense_b[j];
        for (int i = 0; i < FLAT; ++i) s += flat[i] * k.dense[i * HID + j];
        hid[j] = std::max(s, 0.f);
    }
    for (int j = 0; j < OUT; ++j) {
        float s = k.out_b[j];
        for (int i = 0; i < HID; ++i) s += hid[i] * k.out[i * OUT + j];
        z[j] = s;
    }
    return softmax(z);
}

json keras_layers(bool keras3) {
    auto layer = [&](const std::string& cls, json config) {
        json l{{"class_name", cls}, {"config", std::move(config)}};
        if (keras3) l["module"] = "keras.layers";
        return l;
    };
    json input = keras3 ? json{{"batch_shape", {nullptr, H, W, C}}, {"dtype", "float32"}, {"name", "input"}}
                        : json{{"batch_input_shape", {nullptr, H, W, C}}, {"dtype", "float32"}, {"name", "input"}};
    return json::array({
        layer("InputLayer", input),
        layer("Conv2D", {{"name", "my_conv"}, {"filters", F}, {"kernel_size", {K, K}}, {"strides", {1, 1}}, {"padding", "valid"},
                         {"data_format", "channels_last"}, {"dilation_rate", {1, 1}}, {"activation", "relu"}, {"use_bias", true}}),
        layer("BatchNormalization", {{"name", "bn"}, {"axis", -1}, {"momentum", 0.99}, {"epsilon", 0.001}, {"center", true}, {"scale", true}}),
        layer("MaxPooling2D", {{"name", "pool"}, {"pool_size", {2, 2}}, {"strides", {2, 2}}, {"padding", "valid"}, {"data_format", "channels_last"}}),
        layer("Flatten", {{"name", "flatten"}, {"data_format", "channels_last"}}),
        layer("Dense", {{"name", "hidden"}, {"units", HID}, {"activation", "relu"}, {"use_bias", true}}),
        layer("Dense", {{"name", "out"}, {"units", OUT}, {"activation", "softmax"}, {"use_bias", true}}),
    });
}

// Keras 2 model.save("m.h5"): model_config + model_weights/<layer>/<layer>/<var>:0.
// `keras3_legacy`: as Keras 3 writes a legacy .h5 -- model_config a variable-length string -- and
// with layer_names split in two chunks (layer_names0, layer_names1), as Keras does for long lists.
void write_keras_h5(const std::string& path, const KerasWeights& k, int hidden_units_in_file = HID, bool with_config = true,
                    bool keras3_legacy = false) {
    H5Writer w(path);
    const json config{{"class_name", "Sequential"}, {"config", {{"name", "small_cnn"}, {"layers", keras_layers(false)}}}};
    if (with_config) w.strings("/", "model_config", {config.dump()}, true, keras3_legacy);
    // What model.compile() gave, as Keras 2 saves it beside the model.
    const json training{{"loss", "categorical_crossentropy"}, {"metrics", {"accuracy"}},
                        {"optimizer_config", {{"class_name", "SGD"},
                                              {"config", {{"name", "SGD"}, {"learning_rate", 0.05}, {"momentum", 0.9}, {"nesterov", true}}}}}};
    if (with_config) w.strings("/", "training_config", {training.dump()}, true);
    w.strings("/", "keras_version", {"2.4.0"}, true);
    const std::string root = with_config ? "model_weights" : "";
    w.group(with_config ? "/model_weights" : "/");
    const std::string names_at = with_config ? "/model_weights" : "/";
    if (keras3_legacy) {
        w.strings(names_at, "layer_names0", {"my_conv", "bn", "pool"}, false);
        w.strings(names_at, "layer_names1", {"flatten", "hidden", "out"}, false);
    } else {
        w.strings(names_at, "layer_names", {"my_conv", "bn", "pool", "flatten", "hidden", "out"}, false);
    }
    auto put = [&](const std::string& layer, const std::vector<H5Writer::Variable>& vars) {
        w.keras_layer((root.empty() ? "" : "/" + root) + "/" + layer, layer, vars);
    };
    put("my_conv", {{"kernel", {{K, K, C, F}, k.kernel}}, {"bias", {{F}, k.bias}}});
    put("bn", {{"gamma", {{F}, k.gamma}}, {"beta", {{F}, k.beta}}, {"moving_mean", {{F}, k.mean}}, {"moving_variance", {{F}, k.var}}});
    std::vector<float> dense = k.dense;
    dense.resize(static_cast<std::size_t>(FLAT) * hidden_units_in_file);
    put("hidden", {{"kernel", {{FLAT, static_cast<unsigned long long>(hidden_units_in_file)}, dense}}, {"bias", {{HID}, k.dense_b}}});
    put("out", {{"kernel", {{HID, OUT}, k.out}}, {"bias", {{OUT}, k.out_b}}});
    // Layers without weights: their group, with weight_names an empty float array (np.asarray([])).
    for (const char* none : {"pool", "flatten"}) {
        const std::string g = (root.empty() ? "" : "/" + root) + "/" + none;
        w.group(g);
        w.empty_floats(g, "weight_names");
    }
}

// Keras 3 model.save("m.keras"): a zip of config.json and model.weights.h5, whose groups are named
// by class and number (layers/conv2d/vars/0, layers/dense_1/vars/1, ...).
void write_keras3(const std::string& path, const std::string& h5_path, const KerasWeights& k) {
    {
        H5Writer w(h5_path);
        w.dataset("/layers/conv2d/vars/0", {K, K, C, F}, k.kernel);
        w.dataset("/layers/conv2d/vars/1", {F}, k.bias);
        w.dataset("/layers/batch_normalization/vars/0", {F}, k.gamma);
        w.dataset("/layers/batch_normalization/vars/1", {F}, k.beta);
        w.dataset("/layers/batch_normalization/vars/2", {F}, k.mean);
        w.dataset("/layers/batch_normalization/vars/3", {F}, k.var);
        w.dataset("/layers/dense/vars/0", {FLAT, HID}, k.dense);
        w.dataset("/layers/dense/vars/1", {HID}, k.dense_b);
        w.dataset("/layers/dense_1/vars/0", {HID, OUT}, k.out);
        w.dataset("/layers/dense_1/vars/1", {OUT}, k.out_b);
    }
    const json config{{"module", "keras"}, {"class_name", "Sequential"}, {"registered_name", nullptr},
                      {"config", {{"name", "small_cnn"}, {"layers", keras_layers(true)}}}};
    write_zip(path, {{"config.json", text_bytes(config.dump())},
                     {"metadata.json", text_bytes(R"({"keras_version": "3.3.3"})")},
                     {"model.weights.h5", read_bytes(h5_path)}});
}

// ---- DL4J: LeNet's configuration (tests/engine/config/data/dl4j_lenet.json) cut down to
// conv 3x3 (2 -> 3, identity) -> BatchNormalization (useLogStd) -> max pool 2x2 -> dense 12 -> 5 relu
// -> output 3 softmax, on 6x6x2 input; coefficients in DL4J's flattened order.
json dl4j_config() {
    std::ifstream in((source_dir() + "/tests/engine/config/data/dl4j_lenet.json").toStdString());
    json j = json::parse(in);
    auto& confs = j["confs"];
    json conv = confs[0], pool = confs[1], dense = confs[4], out = confs[5];
    conv["layer"]["nin"] = C;
    conv["layer"]["nout"] = F;
    conv["layer"]["kernelSize"] = {K, K};
    json bn = pool;
    bn["layer"] = {{"@class", "org.deeplearning4j.nn.conf.layers.BatchNormalization"},
                   {"layerName", "bn"}, {"nin", F}, {"nout", F}, {"eps", 1e-5}, {"decay", 0.9},
                   {"lockGammaBeta", false}, {"useLogStd", true}, {"isMinibatch", true},
                   {"activationFn", {{"@class", "org.nd4j.linalg.activations.impl.ActivationIdentity"}}}};
    dense["layer"]["nin"] = FLAT;
    dense["layer"]["nout"] = HID;
    out["layer"]["nin"] = HID;
    out["layer"]["nout"] = OUT;
    j["confs"] = json::array({conv, bn, pool, dense, out});
    j["inputPreProcessors"] = {
        {"0", {{"@class", "org.deeplearning4j.nn.conf.preprocessor.FeedForwardToCnnPreProcessor"},
               {"inputHeight", H}, {"inputWidth", W}, {"numChannels", C}}},
        {"3", {{"@class", "org.deeplearning4j.nn.conf.preprocessor.CnnToFeedForwardPreProcessor"},
               {"format", "NCHW"}, {"inputHeight", PH}, {"inputWidth", PH}, {"numChannels", F}}}};
    return j;
}

// Offsets in DL4J's flattened vector: conv b then W [F, C, K, K] 'c'; bn gamma, beta, mean,
// log10(std); dense W [12, 5] 'f' then b; output W [5, 3] 'f' then b.
constexpr int kConvB = 0, kConvW = F, kBn = kConvW + F * C * K * K, kDenseW = kBn + 4 * F, kDenseB = kDenseW + FLAT * HID,
              kOutW = kDenseB + HID, kOutB = kOutW + HID * OUT, kDl4jCount = kOutB + OUT;

std::vector<float> dl4j_forward(const std::vector<float>& p, const float* chw, float eps) {
    std::vector<float> conv(F * CH * CH);  // [f][y][x]
    for (int f = 0; f < F; ++f)
        for (int y = 0; y < CH; ++y)
            for (int x = 0; x < CH; ++x) {
                float s = p[kConvB + f];
                for (int c = 0; c < C; ++c)
                    for (int dy = 0; dy < K; ++dy)
                        for (int dx = 0; dx < K; ++dx)
                            s += p[kConvW + ((f * C + c) * K + dy) * K + dx] * chw[(c * H + y + dy) * W + x + dx];
                const double sd = std::pow(10.0, p[kBn + 3 * F + f]);
                conv[(f * CH + y) * CH + x] =
                    p[kBn + f] * static_cast<float>((s - p[kBn + 2 * F + f]) / std::sqrt(sd * sd + eps)) + p[kBn + F + f];
            }
    std::vector<float> flat(FLAT);  // CnnToFeedForward: [f][y][x] in 'c' order
    for (int f = 0; f < F; ++f)
        for (int y = 0; y < PH; ++y)
            for (int x = 0; x < PH; ++x) {
                float m = -1e30f;
                for (int dy = 0; dy < 2; ++dy)
                    for (int dx = 0; dx < 2; ++dx) m = std::max(m, conv[(f * CH + 2 * y + dy) * CH + 2 * x + dx]);
                flat[(f * PH + y) * PH + x] = m;
            }
    std::vector<float> hid(HID), z(OUT);
    for (int o = 0; o < HID; ++o) {
        float s = p[kDenseB + o];
        for (int r = 0; r < FLAT; ++r) s += flat[r] * p[kDenseW + r + o * FLAT];
        hid[o] = std::max(s, 0.f);
    }
    for (int o = 0; o < OUT; ++o) {
        float s = p[kOutB + o];
        for (int r = 0; r < HID; ++r) s += hid[r] * p[kOutW + r + o * HID];
        z[o] = s;
    }
    return softmax(z);
}

std::vector<float> dl4j_coefficients() {
    auto p = values(kDl4jCount, 0.5f);
    for (int f = 0; f < F; ++f) p[kBn + 3 * F + f] = 0.1f * p[kBn + 3 * F + f];  // log10(std): std near 1
    return p;
}

void write_dl4j_zip(const std::string& path, const std::vector<float>& coefficients, bool legacy, bool doubles,
                    const Bytes* raw_coefficients = nullptr) {
    write_zip(path, {{"configuration.json", text_bytes(dl4j_config().dump(2))},
                     {"coefficients.bin", raw_coefficients ? *raw_coefficients : nd4j_row(coefficients, legacy, doubles)},
                     {"updaterState.bin", nd4j_row(values(8, 3.f), legacy, false)}});
}

void compare_predictions(const std::vector<float>& got, const std::vector<std::vector<float>>& want) {
    for (std::size_t s = 0; s < want.size(); ++s)
        for (int j = 0; j < OUT; ++j) {
            const float g = got[s * OUT + static_cast<std::size_t>(j)], w = want[s][static_cast<std::size_t>(j)];
            if (std::abs(g - w) > 1e-4f)
                QFAIL(qPrintable(QString("sample %1 output %2: Thresher %3, reference %4").arg(s).arg(j).arg(g).arg(w)));
        }
}

template <class F_>
QString refusal(F_&& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace

class TestModelWeights : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void nd4jArrayReadsBothEras_data();
    void nd4jArrayReadsBothEras();
    void nd4jArrayRefusesLies();
    void dl4jZipMapsEveryParameter_data();
    void dl4jZipMapsEveryParameter();
    void dl4jZipRefusesWrongCount();
    void dl4jUpdaterStateMaps();
    void kerasH5MapsEveryParameter();
    void keras3ArchiveMapsEveryParameter();
    void kerasRefusesWrongShape();
    void brokenFilesAreClearErrors();
    void fuzzFindingsAreErrors();

private:
    QTemporaryDir dir_;
    std::string path(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }
};

void TestModelWeights::nd4jArrayReadsBothEras_data() {
    QTest::addColumn<bool>("legacy");
    QTest::addColumn<bool>("doubles");
    QTest::newRow("1.0 LONG_SHAPE, FLOAT") << false << false;
    QTest::newRow("1.0 LONG_SHAPE, DOUBLE") << false << true;
    QTest::newRow("0.9 HEAP, INT shape, FLOAT") << true << false;
}

void TestModelWeights::nd4jArrayReadsBothEras() {
    QFETCH(bool, legacy);
    QFETCH(bool, doubles);
    const auto v = values(37, 0.25f);
    const auto bytes = nd4j_row(v, legacy, doubles);
    std::size_t used = 0;
    const auto a = config::read_nd4j_array(bytes, "coefficients.bin", &used);
    QCOMPARE(used, bytes.size());
    QCOMPARE(a.shape, (std::vector<std::int64_t>{1, 37}));
    QCOMPARE(a.order, 'c');
    QCOMPARE(a.data, v);
}

void TestModelWeights::nd4jArrayRefusesLies() {
    // A data length far beyond the bytes present is refused before anything is allocated.
    JavaOut o;
    o.utf("LONG_SHAPE");
    o.be(8, 8);
    o.utf("LONG");
    for (std::int64_t x : std::initializer_list<std::int64_t>{2, 1, 1LL << 40, 1LL << 40, 1, 0, 1, 'c'}) o.be(static_cast<std::uint64_t>(x), 8);
    o.utf("MIXED_DATA_TYPES");
    o.be(1ULL << 40, 8);
    o.utf("FLOAT");
    o.f32(1.f);
    QString msg = refusal([&] { config::read_nd4j_array(o.b, "coefficients.bin"); });
    QVERIFY2(msg.contains("declares 1099511627776 FLOAT values"), qPrintable(msg));
    // Every truncation of a good array is an error naming the byte, never a crash.
    const auto good = nd4j_row(values(5, 1.f), false, false);
    for (std::size_t n = 0; n < good.size(); ++n) {
        msg = refusal([&] { config::read_nd4j_array(std::span(good.data(), n), "c.bin"); });
        QVERIFY2(msg.startsWith("c.bin: byte "), qPrintable(QString::number(n) + ": " + msg));
    }
    // The shape and the data must agree.
    auto bad = good;
    bad[bad.size() - 5 * 4 - 7 - 1] = 4;  // the data length's low byte (before "FLOAT" and the 20 data bytes)
    msg = refusal([&] { config::read_nd4j_array(bad, "c.bin"); });
    QVERIFY2(msg.contains("data: 4 values, but the shape [1, 5] holds 5"), qPrintable(msg));
}

void TestModelWeights::dl4jZipMapsEveryParameter_data() {
    QTest::addColumn<bool>("legacy");
    QTest::addColumn<bool>("doubles");
    QTest::newRow("1.0 format") << false << false;
    QTest::newRow("0.9 format, doubles") << true << true;
}

void TestModelWeights::dl4jZipMapsEveryParameter() {
    QFETCH(bool, legacy);
    QFETCH(bool, doubles);
    const auto p = dl4j_coefficients();
    const auto zip_path = path("dl4j_model.zip");
    write_dl4j_zip(zip_path, p, legacy, doubles);
    const auto r = config::import_model_file(zip_path);
    QCOMPARE(r.format, config::ModelFormat::Dl4j);
    QCOMPARE(r.model.name, std::string("dl4j_model"));
    const auto& m = r.model;
    QCOMPARE(m.param_count(), static_cast<std::size_t>(kDl4jCount));
    QCOMPARE(r.params.size(), m.param_count());
    bool noted_updater = false;
    for (const auto& n : r.notes) noted_updater = noted_updater || n.rfind("updaterState.bin", 0) == 0;
    QVERIFY(noted_updater);

    // Where each value landed, by Thresher's documented layout (README: W [in x units] row-major,
    // conv W [filters x in_c x kh x kw], batch norm gamma, beta, mean, variance).
    const auto& conv = m.layers[0];
    const auto& bn = m.layers[1];
    const auto& dense = m.layers[3];
    const auto& out = m.layers[4];
    QCOMPARE(conv.type, config::LayerType::Convolution);
    QCOMPARE(bn.type, config::LayerType::BatchNorm);
    QCOMPARE(dense.type, config::LayerType::Dense);
    for (int f = 0; f < F; ++f) {
        QCOMPARE(r.params[conv.param_offset + F * C * K * K + f], p[kConvB + f]);
        for (int i = 0; i < C * K * K; ++i) QCOMPARE(r.params[conv.param_offset + f * C * K * K + i], p[kConvW + f * C * K * K + i]);
        QCOMPARE(r.params[bn.param_offset + f], p[kBn + f]);
        QCOMPARE(r.params[bn.param_offset + F + f], p[kBn + F + f]);
        QCOMPARE(r.params[bn.param_offset + 2 * F + f], p[kBn + 2 * F + f]);
        const double sd = std::pow(10.0, p[kBn + 3 * F + f]);
        QVERIFY(std::abs(r.params[bn.param_offset + 3 * F + f] - sd * sd) < 1e-5);
    }
    for (int row = 0; row < FLAT; ++row)
        for (int o = 0; o < HID; ++o) QCOMPARE(r.params[dense.param_offset + row * HID + o], p[kDenseW + row + o * FLAT]);
    for (int o = 0; o < HID; ++o) QCOMPARE(r.params[dense.param_offset + FLAT * HID + o], p[kDenseB + o]);
    for (int row = 0; row < HID; ++row)
        for (int o = 0; o < OUT; ++o) QCOMPARE(r.params[out.param_offset + row * OUT + o], p[kOutW + row + o * HID]);

    const int batch = 4;
    const auto x = inputs(batch);
    std::vector<std::vector<float>> want;
    for (int s = 0; s < batch; ++s) want.push_back(dl4j_forward(p, x.data() + s * C * H * W, 1e-5f));
    compare_predictions(predict(m, r.params, x, batch), want);
}

void TestModelWeights::dl4jZipRefusesWrongCount() {
    auto p = dl4j_coefficients();
    p.pop_back();
    const auto zip_path = path("short.zip");
    write_dl4j_zip(zip_path, p, false, false);
    const QString msg = refusal([&] { config::import_model_file(zip_path); });
    QVERIFY2(msg.contains("coefficients.bin: holds " + QString::number(kDl4jCount - 1) + " parameters, but configuration.json needs " +
                          QString::number(kDl4jCount)),
             qPrintable(msg));
    QVERIFY2(msg.contains("confs[3] DenseLayer"), qPrintable(msg));
}

// updaterState.bin for the Nesterovs layers (conv, dense, output; the batch norm has DL4J's
// default Sgd, no state): DL4J's velocity per parameter in the flattened order. Where each value
// lands is read from the real Network's segments, not from the importer's own layout.
void TestModelWeights::dl4jUpdaterStateMaps() {
    constexpr int kState = (F + F * C * K * K) + (FLAT * HID + HID) + (HID * OUT + OUT);  // 57 + 65 + 18
    const auto v = values(kState, 4.f);
    const auto zip_path = path("with_state.zip");
    write_zip(zip_path, {{"configuration.json", text_bytes(dl4j_config().dump())},
                         {"coefficients.bin", nd4j_row(dl4j_coefficients(), false, false)},
                         {"updaterState.bin", nd4j_row(v, false, false)}});
    const auto r = config::import_model_file(zip_path);
    const auto& m = r.model;
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(m, *be);
    QCOMPARE(r.updater_state.size(), net.updater_state_size());
    auto state_of = [&](std::size_t param_offset) {
        for (const auto& seg : net.segments())
            if (seg.offset == param_offset) return seg.state_offset;
        return std::size_t{0};
    };
    const auto& conv = m.layers[0];
    const auto& dense = m.layers[3];
    const auto& out = m.layers[4];
    const std::size_t conv_w = state_of(conv.param_offset), conv_b = state_of(conv.param_offset + F * C * K * K);
    const std::size_t dense_w = state_of(dense.param_offset), dense_b = state_of(dense.param_offset + FLAT * HID);
    const std::size_t out_w = state_of(out.param_offset);
    for (int f = 0; f < F; ++f) QCOMPARE(r.updater_state[conv_b + f], v[f]);  // DL4J: conv bias first
    for (int i = 0; i < F * C * K * K; ++i) QCOMPARE(r.updater_state[conv_w + i], v[F + i]);
    constexpr int d = F + F * C * K * K;
    for (int row = 0; row < FLAT; ++row)
        for (int o = 0; o < HID; ++o) QCOMPARE(r.updater_state[dense_w + row * HID + o], v[d + row + o * FLAT]);
    for (int o = 0; o < HID; ++o) QCOMPARE(r.updater_state[dense_b + o], v[d + FLAT * HID + o]);
    constexpr int e = d + FLAT * HID + HID;
    for (int row = 0; row < HID; ++row)
        for (int o = 0; o < OUT; ++o) QCOMPARE(r.updater_state[out_w + row * OUT + o], v[e + row + o * HID]);
    bool noted = false;
    for (const auto& n : r.notes) noted = noted || n.find("updaterState.bin: 140 values") != std::string::npos;
    QVERIFY(noted);

    // A state of another size is not forced in: a note, and the updater starts fresh.
    write_dl4j_zip(path("eight.zip"), dl4j_coefficients(), false, false);  // its updaterState.bin holds 8 values
    const auto other = config::import_model_file(path("eight.zip"));
    QVERIFY(other.updater_state.empty());
    bool ignored = false;
    for (const auto& n : other.notes) ignored = ignored || n.find("updaterState.bin: not imported (8 values, the updaters here keep 140)") != std::string::npos;
    QVERIFY(ignored);
}

void TestModelWeights::kerasH5MapsEveryParameter() {
    const KerasWeights k;
    const auto h5 = path("model.h5");
    write_keras_h5(h5, k);
    const auto r = config::import_model_file(h5);
    QCOMPARE(r.format, config::ModelFormat::Keras);
    const auto& m = r.model;
    QCOMPARE(r.params.size(), m.param_count());
    const auto& conv = m.layers[0];
    const auto& bn = m.layers[1];
    std::size_t dense_at = 0;
    for (std::size_t i = 0; i < m.layers.size(); ++i)
        if (m.layers[i].name == "hidden") dense_at = i;
    const auto& dense = m.layers[dense_at];
    QCOMPARE(dense.in_shape.str(), std::string("3x2x2"));
    for (int f = 0; f < F; ++f)
        for (int c = 0; c < C; ++c)
            for (int y = 0; y < K; ++y)
                for (int x = 0; x < K; ++x)
                    QCOMPARE(r.params[conv.param_offset + ((f * C + c) * K + y) * K + x], k.kernel[((y * K + x) * C + c) * F + f]);
    for (int f = 0; f < F; ++f) {
        QCOMPARE(r.params[conv.param_offset + F * C * K * K + f], k.bias[f]);
        QCOMPARE(r.params[bn.param_offset + 3 * F + f], k.var[f]);
    }
    // Keras's flattened row (y*2 + x)*3 + f is Thresher's (f*2 + y)*2 + x.
    for (int f = 0; f < F; ++f)
        for (int y = 0; y < PH; ++y)
            for (int x = 0; x < PH; ++x)
                for (int j = 0; j < HID; ++j)
                    QCOMPARE(r.params[dense.param_offset + ((f * PH + y) * PH + x) * HID + j], k.dense[((y * PH + x) * F + f) * HID + j]);
    // The compile settings saved beside the model (training_config) are imported too.
    QCOMPARE(m.updater.kind, config::UpdaterKind::Nesterovs);
    QCOMPARE(config::decimal(m.updater.learning_rate), 0.05);
    QCOMPARE(m.layers.back().loss, config::LossKind::MultiClassCrossEntropy);
    bool reordered = false;
    for (const auto& n : r.notes) reordered = reordered || n.find("rows reordered") != std::string::npos;
    QVERIFY(reordered);

    const int batch = 3;
    const auto x = inputs(batch);
    std::vector<std::vector<float>> want;
    for (int s = 0; s < batch; ++s) want.push_back(keras_forward(k, x.data() + s * C * H * W, 0.001f));
    compare_predictions(predict(m, r.params, x, batch), want);

    // The same weights with a variable-length model_config and chunked layer_names.
    write_keras_h5(path("legacy3.h5"), k, HID, true, true);
    const QString failed = refusal([&] { QCOMPARE(config::import_model_file(path("legacy3.h5")).params, r.params); });
    QVERIFY2(failed.isEmpty(), qPrintable(failed));
}

void TestModelWeights::keras3ArchiveMapsEveryParameter() {
    const KerasWeights k;
    const auto archive = path("model.keras");
    write_keras3(archive, path("model.weights.h5"), k);
    const auto r = config::import_model_file(archive);
    QCOMPARE(r.format, config::ModelFormat::Keras);
    QCOMPARE(r.model.name, std::string("model"));
    QCOMPARE(r.params.size(), r.model.param_count());
    // Same weights, same Keras forward pass: the same parameters as from the .h5.
    const auto h5 = config::import_model_file(path("model.h5"));
    QCOMPARE(r.params, h5.params);
    const int batch = 2;
    const auto x = inputs(batch);
    std::vector<std::vector<float>> want;
    for (int s = 0; s < batch; ++s) want.push_back(keras_forward(k, x.data() + s * C * H * W, 0.001f));
    compare_predictions(predict(r.model, r.params, x, batch), want);
}

void TestModelWeights::kerasRefusesWrongShape() {
    const auto h5 = path("wrong.h5");
    write_keras_h5(h5, KerasWeights{}, HID - 1);
    const QString msg = refusal([&] { config::import_model_file(h5); });
    QVERIFY2(msg.contains("(Dense \"hidden\"") && msg.contains("has shape [12, 4], the layer needs [12, 5]"), qPrintable(msg));
    // A .keras whose file holds weights for a layer the model has no place for.
    {
        H5Writer w(path("extra.weights.h5"));
        const KerasWeights k;
        w.dataset("/layers/conv2d/vars/0", {K, K, C, F}, k.kernel);
        w.dataset("/layers/conv2d/vars/1", {F}, k.bias);
        w.dataset("/layers/batch_normalization/vars/0", {F}, k.gamma);
        w.dataset("/layers/batch_normalization/vars/1", {F}, k.beta);
        w.dataset("/layers/batch_normalization/vars/2", {F}, k.mean);
        w.dataset("/layers/batch_normalization/vars/3", {F}, k.var);
        w.dataset("/layers/dense/vars/0", {FLAT, HID}, k.dense);
        w.dataset("/layers/dense/vars/1", {HID}, k.dense_b);
        w.dataset("/layers/dense_1/vars/0", {HID, OUT}, k.out);
        w.dataset("/layers/dense_1/vars/1", {OUT}, k.out_b);
        w.dataset("/layers/p_re_lu/vars/0", {HID}, k.dense_b);
    }
    const json config{{"module", "keras"}, {"class_name", "Sequential"}, {"config", {{"name", "m"}, {"layers", keras_layers(true)}}}};
    write_zip(path("extra.keras"), {{"config.json", text_bytes(config.dump())}, {"model.weights.h5", read_bytes(path("extra.weights.h5"))}});
    const QString extra = refusal([&] { config::import_model_file(path("extra.keras")); });
    QVERIFY2(extra.contains("layers/p_re_lu/vars: 1 weight(s) that Thresher's model has no place for"), qPrintable(extra));

    const auto weights_only = path("weights_only.h5");
    write_keras_h5(weights_only, KerasWeights{}, HID, false);
    const QString msg2 = refusal([&] { config::import_model_file(weights_only); });
    QVERIFY2(msg2.contains("no model_config attribute"), qPrintable(msg2));
}

void TestModelWeights::brokenFilesAreClearErrors() {
    // Each file cut short at many points: a ConfigError naming the file, never a crash.
    const KerasWeights k;
    write_keras_h5(path("whole.h5"), k);
    write_dl4j_zip(path("whole.zip"), dl4j_coefficients(), false, false);
    write_keras3(path("whole.keras"), path("whole.weights.h5"), k);
    for (const char* name : {"whole.h5", "whole.zip", "whole.keras"}) {
        const auto bytes = read_bytes(path(name));
        QVERIFY(bytes.size() > 100);
        for (std::size_t cut : {std::size_t{8}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 30, bytes.size() - 1}) {
            const auto cut_path = path("cut.bin");
            write_bytes(cut_path, Bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut)));
            const QString msg = refusal([&] { config::import_model_file(cut_path); });
            QVERIFY2(msg.startsWith(QString::fromStdString(cut_path) + ": "), qPrintable(QString(name) + " cut at " + QString::number(cut) + ": " + msg));
        }
    }
    // A DL4J zip whose coefficients.bin lies about its length.
    JavaOut o;
    o.utf("LONG_SHAPE");
    o.be(8, 8);
    o.utf("LONG");
    for (std::int64_t x : std::initializer_list<std::int64_t>{2, 1, kDl4jCount, kDl4jCount, 1, 0, 1, 'c'}) o.be(static_cast<std::uint64_t>(x), 8);
    o.utf("MIXED_DATA_TYPES");
    o.be(1ULL << 62, 8);
    o.utf("FLOAT");
    write_dl4j_zip(path("liar.zip"), {}, false, false, &o.b);
    const QString msg = refusal([&] { config::import_model_file(path("liar.zip")); });
    QVERIFY2(msg.contains("liar.zip: coefficients.bin: byte ") && msg.contains("declares"), qPrintable(msg));

    // Seeds for tests/fuzz/fuzz_model_weights and fuzz_nd4j_array, when asked for.
    const QByteArray corpus = qgetenv("THRESHER_WEIGHTS_CORPUS");
    if (!corpus.isEmpty()) {
        const std::string to = corpus.toStdString();
        for (const char* name : {"whole.h5", "whole.zip", "whole.keras"}) write_bytes(to + "/" + name, read_bytes(path(name)));
        write_bytes(to + "/coefficients.bin", nd4j_row(dl4j_coefficients(), false, false));
    }
}

// Inputs tests/fuzz found: a shape value near 2^63 (it went through a double and overflowed a
// long), and a Keras .h5 whose damaged attribute message overflows a heap buffer inside libhdf5
// 1.10.8 itself -- which is why libhdf5 runs in thresher-hdf5-reader (hdf5_file.h): whatever it does
// there, this process gets a ConfigError naming the file.
void TestModelWeights::fuzzFindingsAreErrors() {
    const std::string data = (source_dir() + "/tests/engine/config/data/").toStdString();
    const auto nd4j = read_bytes(data + "fuzz_nd4j_shape_long_overflow.bin");
    QVERIFY(!nd4j.empty());
    QString msg = refusal([&] { config::read_nd4j_array(nd4j, "fuzz.bin"); });
    QVERIFY2(msg.startsWith("fuzz.bin: byte "), qPrintable(msg));
    const std::string h5 = data + "fuzz_libhdf5_attribute_overflow.h5";
    msg = refusal([&] { config::import_model_file(h5); });
    QVERIFY2(msg.startsWith(QString::fromStdString(h5) + ": "), qPrintable(msg));
}

QTEST_GUILESS_MAIN(TestModelWeights)
#include "test_model_weights.moc"
