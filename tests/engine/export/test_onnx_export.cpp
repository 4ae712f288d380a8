// ONNX export against an independent runtime: for LeNet, the MLP and a model of every layer kind
// and activation Thresher trains, the exported file run in ONNX Runtime (onnxruntime-node, through
// tests/tools/onnx_runtime) gives the outputs Thresher's own Network::predict gives (the function
// `thresher-engine predict` calls) on the same batch, within 1e-5. Parameters are drawn at random
// (seeded), including the ones initialisation leaves constant (biases, batch-norm statistics,
// PReLU slopes), so a swapped or mis-shaped block shows. Every file passes Debian's python3-onnx
// checker (full check) and ONNX's C++ checker as read back from disk, and keeps the model's layer
// names and its metadata; a refused model names its layer and leaves the file system as it was.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include "backend/registry.h"
#include "export/model_export.h"
#include "export/onnx_export.h"
#include "nn/network.h"
#include "onnx_runtime.h"
#include "source_dir.h"

using namespace thresher;

namespace {

QString resource_model(const QString& name) {
    QFile f(test_support::source_dir() + "/resources/models/" + name);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// A model with its parameters, ready to export and to run.
model_export::ExportableModel make_model(config::ModelConfig cfg, const QString& source, std::uint64_t seed,
                                         bool normalize) {
    model_export::ExportableModel m;
    m.source = source.toStdString();
    m.config = std::move(cfg);
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(m.config, *be);
    net.init_params(seed);
    m.params = net.get_params();
    // What initialisation leaves constant is drawn too: a block read from the wrong place, or
    // statistics applied as the wrong one of mean and variance, then changes the outputs.
    std::mt19937 rng(static_cast<unsigned>(seed));
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (const auto& l : m.config.layers)
        for (const auto& b : l.blocks) {
            float* p = m.params.data() + l.param_offset + b.offset;
            for (std::size_t i = 0; i < b.size; ++i) switch (b.role) {
                    case config::ParamRole::Weight:
                    case config::ParamRole::Depthwise:
                    case config::ParamRole::Recurrent:  // sequence layers: not exported (refused)
                    case config::ParamRole::Peephole: break;
                    case config::ParamRole::Bias: p[i] = 0.4f * u(rng) - 0.2f; break;
                    case config::ParamRole::Gamma: p[i] = 0.5f + u(rng); break;
                    case config::ParamRole::Beta: p[i] = 0.6f * u(rng) - 0.3f; break;
                    case config::ParamRole::RunningMean: p[i] = u(rng) - 0.5f; break;
                    case config::ParamRole::RunningVar: p[i] = 0.5f + 1.5f * u(rng); break;
                    case config::ParamRole::Alpha: p[i] = 0.05f + 0.4f * u(rng); break;
                }
        }
    if (normalize) {
        m.normalization.kind = "standardize";
        for (std::size_t i = 0; i < m.config.input.size(); ++i) {
            m.normalization.shift.push_back(u(rng) - 0.5f);
            m.normalization.scale.push_back(0.5f + u(rng));
        }
    }
    return m;
}

model_export::ExportableModel make_model(const QString& json, const QString& source, std::uint64_t seed,
                                         bool normalize) {
    return make_model(config::ModelConfig::parse(json.toStdString(), source.toStdString()), source, seed, normalize);
}

// Thresher's forward on `x` ([batch x input]), normalisation first, as predict applies it.
std::vector<float> thresher_outputs(const model_export::ExportableModel& m, std::vector<float> x, int batch) {
    const std::size_t width = m.config.input.size();
    if (m.normalization.active())
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = (x[i] - m.normalization.shift[i % width]) * m.normalization.scale[i % width];
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(m.config, *be);
    net.set_params(m.params);
    std::vector<float> out(static_cast<std::size_t>(batch) * m.config.output_size());
    net.predict(x.data(), batch, out.data());
    return out;
}

QList<int> sample_dims(const config::Shape& s) {
    if (s.flat()) return {s.c};
    return {s.c, s.h, s.w};
}

onnx::ModelProto read_onnx(const QString& path) {
    onnx::ModelProto model;
    std::ifstream in(path.toStdString(), std::ios::binary);
    if (!model.ParseFromIstream(&in)) throw std::runtime_error("cannot parse " + path.toStdString());
    return model;
}

QString metadata(const onnx::ModelProto& model, const std::string& key) {
    for (const auto& p : model.metadata_props())
        if (p.key() == key) return QString::fromStdString(p.value());
    return {};
}

// Runs the exported `path` in ONNX Runtime and Thresher's `m` on one seeded batch (inputs from
// [lo, -lo], or [0, 1] for lo = 0) and compares every output.
void compare_with_onnx_runtime(const model_export::ExportableModel& m, const QString& path, float lo,
                               const QString& work_dir) {
    // An odd batch: the batch dimension is dynamic, nothing may assume the size exported with.
    constexpr int kBatch = 7;
    std::mt19937 rng(99);
    std::uniform_real_distribution<float> u(lo, lo < 0 ? -lo : 1.f);
    std::vector<float> x(kBatch * m.config.input_size());  // several inputs: side by side in a row
    for (auto& v : x) v = u(rng);
    const auto want = thresher_outputs(m, x, kBatch);
    QVERIFY2(std::ranges::all_of(want, [](float v) { return std::isfinite(v); }), "Thresher's own outputs are not finite");

    // Debian's python3-onnx checker (full check: strict shape inference too) accepts the file.
    const QString checker = test_support::onnx_checker_errors(path);
    QVERIFY2(checker.isEmpty(), qPrintable("python3-onnx's checker refuses " + path + ": " + checker));

    QList<QList<int>> input_dims;
    for (std::size_t k = 0; k < m.config.input_count(); ++k) input_dims << sample_dims(m.config.input_shape(k));
    const auto got = test_support::run_onnx_runtime(path, x, input_dims, work_dir);
    QVERIFY2(got.ok, qPrintable(got.error));
    // One image output stays an image, [batch, C, H, W] (its values in Thresher's NCHW order).
    const auto& main = m.config.main_output();
    if (m.config.output_layers.size() == 1 && main.image_output())
        QCOMPARE(got.output_dims, (QList<qint64>{kBatch, main.out_shape.c, main.out_shape.h, main.out_shape.w}));
    else
        QCOMPARE(got.output_dims, (QList<qint64>{kBatch, m.config.output_size()}));
    QCOMPARE(got.outputs.size(), want.size());
    double max_diff = 0.0, max_abs = 0.0;
    std::size_t worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double d = std::fabs(double(got.outputs[i]) - want[i]);
        // A NaN on either side compares false with everything: count it as the worst difference.
        if (!(d <= max_diff)) max_diff = std::isnan(d) ? INFINITY : d, worst = i;
        max_abs = std::max(max_abs, std::fabs(double(want[i])));
    }
    // Reported for the record (ctest -V shows it); 1e-5 of the output's scale is the bar.
    const char* tag = QTest::currentDataTag();
    const char* what = tag && *tag ? tag : QTest::currentTestFunction();
    qInfo("%s: max |thresher - %s| = %.3g over %zu outputs (largest output %.3g)", what,
          qPrintable(got.runtime), max_diff, want.size(), max_abs);
    QVERIFY2(max_diff <= 1e-5 * std::max(1.0, max_abs),
             qPrintable(QString("output %1: thresher %2, onnx runtime %3 (max |diff| %4)")
                            .arg(worst).arg(want[worst]).arg(got.outputs[worst]).arg(max_diff)));
    // And not trivially: the outputs differ between samples (a constant graph would match nothing).
    const std::size_t k = static_cast<std::size_t>(m.config.output_size());
    double spread = 0.0;
    for (std::size_t i = k; i < want.size(); ++i) spread = std::max(spread, std::fabs(double(want[i]) - want[i % k]));
    const bool varies = spread > 1e-3;
    QVERIFY2(varies, "the model's outputs do not depend on its input: the comparison shows nothing");
}

}  // namespace

class TestOnnxExport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void matches_onnx_runtime_data();
    void matches_onnx_runtime();
    void file_keeps_names_shapes_and_metadata();
    void imported_model_keeps_file_names();
    void several_inputs_and_outputs_named();
    void shared_layer_weights_written_once();
    void refused_layer_named_and_nothing_written();
    void too_large_for_one_file_refused();
    void class_names_checked_before_writing();
    void export_replaces_a_file_whole();

private:
    QTemporaryDir dir_;
};

void TestOnnxExport::initTestCase() {
    QVERIFY(dir_.isValid());
    // A missing runtime is a failure, not a skip: CI installs it (scripts/install-deps.sh), and a
    // suite that quietly compared nothing would pass any exporter.
    const QString missing = test_support::onnx_runtime_missing();
    QVERIFY2(missing.isEmpty(), qPrintable("ONNX Runtime is needed for this suite: " + missing));
    const QString no_checker = test_support::onnx_checker_missing();
    QVERIFY2(no_checker.isEmpty(), qPrintable("ONNX's Python checker is needed for this suite: " + no_checker));
}

void TestOnnxExport::matches_onnx_runtime_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<bool>("normalize");
    QTest::addColumn<float>("lo");  // inputs drawn from [lo, lo + 2|lo| or 1]
    const QString lenet = resource_model("lenet.json"), mlp = resource_model("mlp.json");
    QVERIFY2(!lenet.isEmpty() && !mlp.isEmpty(), "resources/models/lenet.json and mlp.json not found");
    QTest::newRow("lenet") << lenet << false << 0.f;
    // Two inputs (a sample row split between them) and two outputs (side by side, main first).
    QTest::newRow("two inputs, two outputs") << resource_model("two_input.json") << false << 0.f;
    QTest::newRow("shared layers (siamese)") << resource_model("siamese.json") << false << 0.f;
    // Reshape (channels last: NHWC transposes around it; channels first: a plain Reshape) and
    // permute (Transpose), to images and to features.
    QTest::newRow("reshape and permute") << QString(R"({"name":"rearrange","input":{"size":6},
        "layers":[{"type":"dense","name":"d","units":24,"activation":"tanh"},
                  {"type":"reshape","name":"to_image","shape":{"channels":2,"height":3,"width":4},"order":"channels_last"},
                  {"type":"convolution","name":"conv","filters":3,"kernel":[2,2],"activation":"relu"},
                  {"type":"permute","name":"whc","axes":["width","height","channels"]},
                  {"type":"permute","name":"hcw","axes":["height","channels","width"]},
                  {"type":"reshape","name":"to_flat","shape":{"size":18},"order":"channels_last"},
                  {"type":"dense","name":"d2","units":8,"activation":"relu"},
                  {"type":"reshape","name":"cf","shape":{"channels":2,"height":2,"width":2}},
                  {"type":"reshape","name":"cl","shape":{"channels":4,"height":1,"width":2},"order":"channels_last"},
                  {"type":"convolution","name":"conv2","filters":2,"kernel":[1,2],"activation":"tanh"},
                  {"type":"reshape","name":"cf_flat","shape":{"size":2}},
                  {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})") << false << -1.f;
    QTest::newRow("lenet, standardized input") << lenet << true << 0.f;
    QTest::newRow("mlp, standardized input") << mlp << true << 0.f;
    // Same padding (uneven: the extra row and column at the end), strides, dilation, explicit
    // padding, average pooling over windows partly in the padding (excluded from the divisor).
    QTest::newRow("convolution and pooling geometry") << QString(R"({"name":"geometry","input":{"channels":3,"height":11,"width":10},
        "layers":[
          {"type":"convolution","name":"conv_same","filters":4,"kernel":[3,2],"stride":[2,2],"mode":"same","activation":"tanh"},
          {"type":"convolution","name":"conv_dilated","filters":5,"kernel":[2,2],"dilation":[2,1],"padding":[1,1],"activation":"elu","alpha":0.7},
          {"type":"subsampling","name":"avg_padded","pooling":"avg","kernel":[2,2],"stride":[1,1],"padding":[1,1]},
          {"type":"subsampling","name":"max_same","pooling":"max","kernel":[3,3],"stride":[2,2],"mode":"same"},
          {"type":"subsampling","name":"avg_same","pooling":"avg","kernel":[2,3],"stride":[1,2],"mode":"same"},
          {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})") << false << -1.f;
    // The layers graphs carry, on their own: zero padding (uneven margins), cropping, nearest
    // upsampling by unequal factors, and standalone activations (on an image, and a softmax one
    // that is the output after a dense layer that has its own activation).
    QTest::newRow("padding, cropping, upsampling, activation layers") << QString(R"({"name":"resize","input":{"channels":2,"height":7,"width":6},
        "layers":[
          {"type":"zero_padding","name":"pad","padding":[1,2,0,3]},
          {"type":"convolution","name":"conv","filters":3,"kernel":[3,3],"activation":"identity"},
          {"type":"activation","name":"act_image","activation":"swish"},
          {"type":"cropping","name":"crop","cropping":[1,0,2,1]},
          {"type":"upsampling","name":"up","size":[2,3]},
          {"type":"subsampling","name":"pool","pooling":"max","kernel":[2,2],"stride":[2,2]},
          {"type":"dense","name":"dense","units":5,"activation":"tanh"},
          {"type":"activation","name":"act_flat","activation":"relu"},
          {"type":"dense","name":"logits","units":4,"activation":"identity"},
          {"type":"activation","name":"probabilities","activation":"softmax","loss":"mcxent"}]})") << false << -1.f;
    // Batch norm in inference form on images (per channel) and on features, PReLU with shared
    // axes, dropout as the identity, flattening from an image to a dense layer.
    QTest::newRow("batch norm, prelu, dropout") << QString(R"({"name":"norms","input":{"channels":2,"height":6,"width":5},
        "layers":[
          {"type":"convolution","name":"conv","filters":3,"kernel":[3,3],"activation":"identity"},
          {"type":"batch_norm","name":"bn_image","eps":0.001},
          {"type":"prelu","name":"prelu_per_channel","shared_axes":["height","width"]},
          {"type":"prelu","name":"prelu_per_position","shared_axes":["channels"]},
          {"type":"prelu","name":"prelu_every"},
          {"type":"dropout","name":"drop_image","retain":0.6},
          {"type":"dense","name":"dense","units":7,"activation":"identity"},
          {"type":"batch_norm","name":"bn_flat"},
          {"type":"prelu","name":"prelu_flat"},
          {"type":"dropout","name":"drop_flat","retain":0.5},
          {"type":"output","name":"out","units":4,"activation":"softmax","loss":"mcxent"}]})") << false << -2.f;
    // Global pooling leaves a [batch, C, 1, 1] image that batch norm, PReLU and dense then read.
    QTest::newRow("global pooling") << QString(R"({"name":"global","input":{"channels":2,"height":7,"width":7},
        "layers":[
          {"type":"convolution","name":"conv","filters":6,"kernel":[3,3],"activation":"swish"},
          {"type":"subsampling","name":"gmax","pooling":"max","global":true},
          {"type":"batch_norm","name":"bn"},
          {"type":"prelu","name":"prelu"},
          {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})") << false << -2.f;
    // Graphs (issue 22): the ResNet template (adds of two branches, shortcut convolutions) and
    // every vertex, on images and on flat features, where a global pooling's [N, C, 1, 1] meets a
    // dense layer's [N, C].
    QTest::newRow("resnet (graph)") << resource_model("resnet.json") << false << 0.f;
    QTest::newRow("graph vertices on images") << QString(R"({"name":"vertices","input":{"channels":2,"height":6,"width":5},
        "layers":[{"type":"convolution","name":"a","filters":4,"kernel":[3,3],"mode":"same","activation":"tanh"},
                  {"type":"convolution","name":"b","inputs":"input","filters":4,"kernel":[1,1],"activation":"sigmoid"},
                  {"type":"subtract","name":"sub","inputs":["a","b"]},
                  {"type":"multiply","name":"mul","inputs":["sub","a","b"]},
                  {"type":"maximum","name":"max","inputs":["mul","b"]},
                  {"type":"average","name":"avg","inputs":["max","a","sub"]},
                  {"type":"subset","name":"half","inputs":"avg","channels":[1,2]},
                  {"type":"concatenate","name":"cat","inputs":["half","avg","input"]},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})") << false << 0.f;
    QTest::newRow("graph vertices on flat features") << QString(R"({"name":"flat_vertices","input":{"channels":3,"height":4,"width":4},
        "layers":[{"type":"subsampling","name":"gap","pooling":"avg","global":true},
                  {"type":"dense","name":"d","inputs":"input","units":3,"activation":"tanh"},
                  {"type":"add","name":"sum","inputs":["gap","d"]},
                  {"type":"concatenate","name":"cat","inputs":["d","gap","sum"]},
                  {"type":"subset","name":"part","channels":[2,6]},
                  {"type":"output","units":2,"activation":"softmax","loss":"mcxent"}]})") << false << 0.f;
    QTest::newRow("depthwise and separable convolutions") << QString(R"({"name":"separable","input":{"channels":3,"height":9,"width":8},
        "layers":[{"type":"depthwise_convolution","name":"dw","depth_multiplier":2,"kernel":[3,3],"mode":"same","activation":"relu"},
                  {"type":"separable_convolution","name":"sep","filters":4,"depth_multiplier":1,"kernel":[3,2],"stride":[2,1],"activation":"tanh"},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})") << false << 0.f;
    QTest::newRow("transposed convolutions") << QString(R"({"name":"transposed","input":{"channels":2,"height":5,"width":6},
        "layers":[{"type":"transposed_convolution","name":"up","filters":3,"kernel":[3,3],"stride":[2,2],"activation":"relu"},
                  {"type":"transposed_convolution","name":"same","filters":2,"kernel":[4,3],"stride":[2,1],"mode":"same","activation":"tanh"},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})") << false << 0.f;
    QTest::newRow("global average pooling") << QString(R"({"name":"gavg","input":{"channels":3,"height":5,"width":4},
        "layers":[
          {"type":"convolution","name":"conv","filters":4,"kernel":[2,2],"activation":"gelu"},
          {"type":"subsampling","name":"gavg","pooling":"avg","global":true},
          {"type":"output","name":"out","units":2,"activation":"softmax","loss":"mcxent"}]})") << false << -2.f;
    // Every activation on a hidden dense layer (several on convolutions too), a few per model so
    // that the signal survives to the output.
    QTest::newRow("activations: relu family") << QString(R"({"name":"relus","input":{"size":12},
        "layers":[
          {"type":"dense","name":"relu","units":12,"activation":"relu"},
          {"type":"dense","name":"leaky","units":12,"activation":"leakyrelu","alpha":0.2},
          {"type":"dense","name":"elu","units":12,"activation":"elu","alpha":0.5},
          {"type":"dense","name":"selu","units":12,"activation":"selu"},
          {"type":"dense","name":"relu6","units":12,"activation":"relu6"},
          {"type":"dense","name":"thresholded","units":12,"activation":"thresholdedrelu","alpha":0.1},
          {"type":"output","name":"out","units":5,"activation":"softmax","loss":"mcxent"}]})") << false << -3.f;
    QTest::newRow("activations: smooth") << QString(R"({"name":"smooth","input":{"size":12},
        "layers":[
          {"type":"dense","name":"tanh","units":12,"activation":"tanh"},
          {"type":"dense","name":"softplus","units":12,"activation":"softplus"},
          {"type":"dense","name":"sigmoid","units":12,"activation":"sigmoid"},
          {"type":"dense","name":"softsign","units":12,"activation":"softsign"},
          {"type":"dense","name":"hardsigmoid","units":12,"activation":"hardsigmoid","alpha":0.3},
          {"type":"output","name":"out","units":5,"activation":"softmax","loss":"mcxent"}]})") << false << -3.f;
    QTest::newRow("activations: swish, gelu, softmax") << QString(R"({"name":"gelus","input":{"size":12},
        "layers":[
          {"type":"dense","name":"swish","units":12,"activation":"swish"},
          {"type":"dense","name":"gelu","units":12,"activation":"gelu"},
          {"type":"dense","name":"gelu_tanh","units":12,"activation":"gelu_tanh"},
          {"type":"dense","name":"gelu_sigmoid","units":12,"activation":"gelu_sigmoid"},
          {"type":"dense","name":"identity","units":12,"activation":"identity"},
          {"type":"dense","name":"softmax_hidden","units":12,"activation":"softmax"},
          {"type":"output","name":"out","units":5,"activation":"identity","loss":"mse"}]})") << false << -3.f;
    QTest::newRow("convolution activations") << QString(R"({"name":"conv_activations","input":{"channels":1,"height":8,"width":8},
        "layers":[
          {"type":"convolution","name":"c_relu6","filters":2,"kernel":[2,2],"activation":"relu6"},
          {"type":"convolution","name":"c_gelu_tanh","filters":2,"kernel":[2,2],"activation":"gelu_tanh"},
          {"type":"convolution","name":"c_gelu_sigmoid","filters":2,"kernel":[2,2],"activation":"gelu_sigmoid"},
          {"type":"convolution","name":"c_hardsigmoid","filters":2,"kernel":[2,2],"activation":"hardsigmoid"},
          {"type":"convolution","name":"c_leaky","filters":2,"kernel":[2,2],"activation":"leakyrelu"},
          {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})") << false << -3.f;
    // Outputs that are not probabilities: regression (identity, mse) and one sigmoid (xent).
    QTest::newRow("regression") << QString(R"({"name":"regression","input":{"size":6},
        "layers":[{"type":"dense","units":8,"activation":"tanh"},{"type":"output","units":2,"activation":"identity","loss":"mse"}]})")
                                << true << -2.f;
    QTest::newRow("binary") << QString(R"({"name":"binary","input":{"size":6},
        "layers":[{"type":"dense","units":8,"activation":"relu"},{"type":"output","units":1,"activation":"sigmoid","loss":"xent"}]})")
                            << false << -2.f;
    // Image outputs (issue 22): a softmax over the channels of each pixel (Softmax axis 1 on
    // [batch, C, H, W]), after spatial dropout (the identity at inference); an autoencoder's
    // sigmoid transposed convolution; a resize layer as an output.
    QTest::newRow("segmentation: conv softmax over channels") << QString(R"({"name":"segmentation","input":{"channels":2,"height":6,"width":5},
        "layers":[{"type":"convolution","filters":4,"kernel":[3,3],"mode":"same","activation":"relu"},
                  {"type":"dropout","retain":0.8,"spatial":true},
                  {"type":"convolution","filters":3,"kernel":[1,1],"activation":"softmax","loss":"mcxent"}]})")
                                                              << false << -2.f;
    QTest::newRow("segmentation: activation layer softmax") << QString(R"({"name":"cnnloss","input":{"channels":2,"height":6,"width":5},
        "layers":[{"type":"convolution","filters":3,"kernel":[3,3],"activation":"identity"},
                  {"type":"activation","activation":"softmax","loss":"mcxent"}]})")
                                                            << false << -2.f;
    QTest::newRow("autoencoder: transposed conv, upsampling outputs") << QString(R"({"name":"autoencoder","input":{"channels":1,"height":6,"width":6},
        "outputs":["up","coarse"],
        "layers":[{"type":"convolution","name":"down","filters":2,"kernel":[2,2],"stride":[2,2],"activation":"relu"},
                  {"type":"transposed_convolution","name":"up","filters":1,"kernel":[2,2],"stride":[2,2],"activation":"sigmoid","loss":"xent"},
                  {"type":"upsampling","name":"coarse","inputs":"down","size":2,"loss":"mse"}]})")
                                                                     << false << -2.f;
}

void TestOnnxExport::matches_onnx_runtime() {
    QFETCH(QString, json);
    QFETCH(bool, normalize);
    QFETCH(float, lo);
    const auto m = make_model(json, QString(QTest::currentDataTag()) + ".thr", 7, normalize);
    const QString path = dir_.filePath(QString("model_%1.onnx").arg(QTest::currentDataTag()).replace(' ', '_').remove(','));
    model_export::export_model(m, model_export::ExportFormat::Onnx, path.toStdString());

    compare_with_onnx_runtime(m, path, lo, dir_.path());
}

void TestOnnxExport::file_keeps_names_shapes_and_metadata() {
    auto m = make_model(resource_model("lenet.json"), "lenet.thr", 3, true);
    // Named layers keep their names; unnamed ones, and ones whose name is taken (by an earlier
    // layer or by the graph's "input"), get "<kind>_<index>".
    m.config.layers[0].name = "conv1";
    m.config.layers[1].name = "input";
    m.config.layers[2].name = "conv1";
    m.config.layers[3].name = "convolution_2";  // taken by layer 2 by then
    m.config.layers[4].name = "fc1";
    m.class_names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
    const QString path = dir_.filePath("lenet_named.onnx");
    model_export::export_model(m, model_export::ExportFormat::Onnx, path.toStdString());

    // ONNX's checker (the code behind python3-onnx's onnx.checker) on the file as written.
    try {
        onnx::checker::check_model(path.toStdString());
    } catch (const std::exception& e) {
        QFAIL(qPrintable(QString("ONNX checker: ") + e.what()));
    }
    const auto model = read_onnx(path);
    QCOMPARE(model.opset_import(0).version(), 13);
    QCOMPARE(model.graph().name(), std::string("lenet"));
    QCOMPARE(model.graph().input_size(), 1);
    const auto& in = model.graph().input(0);
    QCOMPARE(in.name(), std::string("input"));
    const auto& dims = in.type().tensor_type().shape().dim();
    QCOMPARE(dims.size(), 4);
    QCOMPARE(dims[0].dim_param(), std::string("batch"));
    QCOMPARE(dims[1].dim_value(), 1);
    QCOMPARE(dims[2].dim_value(), 28);
    QCOMPARE(dims[3].dim_value(), 28);
    QCOMPARE(model.graph().output(0).name(), std::string("output"));

    QStringList nodes;
    for (const auto& n : model.graph().node()) nodes << QString::fromStdString(n.name()) + ":" + QString::fromStdString(n.op_type());
    for (const char* want : {"normalization:Mul", "conv1:Conv", "subsampling_1:MaxPool", "convolution_2:Conv",
                             "subsampling_3:MaxPool", "fc1/flatten:Flatten", "fc1:Gemm", "fc1/relu:Relu", "output_5:Gemm",
                             "output_5/softmax:Softmax"})
        QVERIFY2(nodes.contains(want), qPrintable(QString(want) + " not in " + nodes.join(", ")));
    QStringList weights;
    for (const auto& t : model.graph().initializer()) weights << QString::fromStdString(t.name());
    for (const char* want : {"conv1.weight", "conv1.bias", "fc1.weight", "output_5.bias", "normalization.shift"})
        QVERIFY2(weights.contains(want), qPrintable(QString(want) + " not in " + weights.join(", ")));

    QCOMPARE(metadata(model, "class_names"),
             QString(R"(["T-shirt/top","Trouser","Pullover","Dress","Coat","Sandal","Shirt","Sneaker","Bag","Ankle boot"])"));
    QCOMPARE(metadata(model, "thresher.input_shape"), QString("1x28x28"));
    QCOMPARE(metadata(model, "thresher.normalization"), QString("standardize"));
    QCOMPARE(metadata(model, "thresher.output"), QString("probabilities"));
}

void TestOnnxExport::several_inputs_and_outputs_named() {
    // One graph input per model input (its own name), one output per model output (its layer's
    // name, main first), and metadata listing both.
    const auto m = make_model(resource_model("two_input.json"), "two_input.thr", 5, false);
    const QString path = dir_.filePath("two_input_names.onnx");
    model_export::export_model(m, model_export::ExportFormat::Onnx, path.toStdString());
    const auto model = read_onnx(path);
    QCOMPARE(model.graph().input_size(), 2);
    QCOMPARE(model.graph().input(0).name(), std::string("top"));
    QCOMPARE(model.graph().input(1).name(), std::string("bottom"));
    QCOMPARE(model.graph().output_size(), 2);
    QCOMPARE(model.graph().output(0).name(), std::string("predictions"));
    QCOMPARE(model.graph().output(1).name(), std::string("top_guess"));
    QCOMPARE(metadata(model, "thresher.inputs"), QString(R"([{"name":"top","shape":"1x14x28"},{"name":"bottom","shape":"1x14x28"}])"));
    QCOMPARE(metadata(model, "thresher.outputs"), QString(R"([{"name":"predictions","size":10},{"name":"top_guess","size":10}])"));
}

// A shared layer's calls are two nodes reading one initializer: the weights are in the file once.
void TestOnnxExport::shared_layer_weights_written_once() {
    const auto m = make_model(resource_model("siamese.json"), "siamese.thr", 5, false);
    const QString path = dir_.filePath("siamese_shared.onnx");
    model_export::export_model(m, model_export::ExportFormat::Onnx, path.toStdString());
    const auto model = read_onnx(path);
    QStringList weights;
    std::size_t values = 0;
    for (const auto& t : model.graph().initializer()) {
        weights << QString::fromStdString(t.name());
        if (t.data_type() == onnx::TensorProto::FLOAT) values += t.raw_data().size() / sizeof(float);
    }
    QCOMPARE(weights.count("conv.weight"), 1);
    QCOMPARE(weights.count("embed.weight"), 1);
    QVERIFY2(!weights.join(",").contains("@1"), qPrintable(weights.join(", ")));
    QCOMPARE(values, m.params.size());  // every parameter once (no other float constants in this model)
    QStringList readers;
    for (const auto& n : model.graph().node())
        for (const auto& in : n.input())
            if (in == "conv.weight" || in == "embed.weight") readers << QString::fromStdString(n.name() + "<" + in);
    readers.sort();
    QCOMPARE(readers.join(","), QString("conv<conv.weight,conv@1<conv.weight,embed<embed.weight,embed@1<embed.weight"));
}

void TestOnnxExport::imported_model_keeps_file_names() {
    // A Keras 3 model imported: its layer names become the node names a user's code looks up.
    const QString keras = test_support::source_dir() + "/tests/engine/config/data/keras3_cnn.json";
    const auto m = make_model(config::ModelConfig::load(keras.toStdString()), "keras3_cnn.thr", 11, false);
    const QString path = dir_.filePath("keras3_cnn.onnx");
    model_export::export_model(m, model_export::ExportFormat::Onnx, path.toStdString());
    const auto model = read_onnx(path);
    QStringList nodes;
    for (const auto& n : model.graph().node())
        nodes << QString::fromStdString(n.name()) + ":" + QString::fromStdString(n.op_type());
    for (const char* want : {"conv2d:Conv", "conv2d/leakyrelu:LeakyRelu", "max_pooling2d:MaxPool",
                             "batch_normalization:BatchNormalization", "dense/flatten:Flatten", "dense:Gemm"})
        QVERIFY2(nodes.contains(want), qPrintable(QString(want) + " not in " + nodes.join(", ")));
    compare_with_onnx_runtime(m, path, 0.f, dir_.path());
}

void TestOnnxExport::refused_layer_named_and_nothing_written() {
    // ONNX pooling needs each pad smaller than its window; Thresher's own pooling does not.
    const auto m = make_model(R"({"name":"padded","input":{"channels":1,"height":8,"width":8},
        "layers":[{"type":"convolution","name":"conv","filters":2,"kernel":[3,3]},
                  {"type":"subsampling","name":"pool1","pooling":"max","kernel":[2,2],"stride":[2,2],"padding":[2,2]},
                  {"type":"output","units":2,"loss":"mcxent"}]})",
                              "padded.thr", 1, false);
    QTemporaryDir out;
    const QString path = out.filePath("padded.onnx");
    try {
        model_export::export_model(m, model_export::ExportFormat::Onnx, path.toStdString());
        QFAIL("a pooling layer padded past its window was exported");
    } catch (const model_export::ExportError& e) {
        const QString msg = e.what();
        QVERIFY2(msg.startsWith("padded.thr: layers[1] (subsampling \"pool1\"): ONNX cannot express this layer: padding 2x2"),
                 qPrintable(msg));
        QVERIFY2(msg.contains("nothing was written"), qPrintable(msg));
    }
    QVERIFY(!QFile::exists(path));
    QCOMPARE(QDir(out.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{});
}

void TestOnnxExport::too_large_for_one_file_refused() {
    // Decided from the config alone: no 2 GiB of parameters is ever allocated.
    auto cfg = config::ModelConfig::parse(R"({"input":{"size":784},
        "layers":[{"type":"dense","units":700000},{"type":"output","units":10,"loss":"mcxent"}]})", "huge.json");
    const auto why = model_export::onnx_refusal(cfg);
    QVERIFY(why.has_value());
    QVERIFY2(why->starts_with("the model's 556500010 parameters take 2122 MiB, more than one ONNX file holds"), why->c_str());
    cfg.layers[0].units = 500;
    cfg.infer_shapes("small.json");
    QVERIFY(!model_export::onnx_refusal(cfg).has_value());
}

void TestOnnxExport::class_names_checked_before_writing() {
    auto m = make_model(resource_model("mlp.json"), "mlp.thr", 1, false);
    m.class_names = {"a", "b", "c"};
    const QString path = dir_.filePath("mlp_names.onnx");
    try {
        model_export::export_model(m, model_export::ExportFormat::Onnx, path.toStdString());
        QFAIL("3 class names were accepted for 10 classes");
    } catch (const model_export::ExportError& e) {
        QCOMPARE(QString(e.what()), QString("mlp.thr: 3 class names were given, the model has 10 classes"));
    }
    QVERIFY(!QFile::exists(path));
}

void TestOnnxExport::export_replaces_a_file_whole() {
    QTemporaryDir out;
    const QString path = out.filePath("model.onnx");
    QFile old(path);
    QVERIFY(old.open(QIODevice::WriteOnly));
    old.write("an older export");
    old.close();
    const auto m = make_model(resource_model("mlp.json"), "mlp.thr", 2, false);
    const auto summary = model_export::export_model(m, model_export::ExportFormat::Onnx, path.toStdString());
    QCOMPARE(QFileInfo(path).size(), qint64(summary.bytes));
    QVERIFY(summary.bytes > m.params.size() * sizeof(float));  // the weights are in it
    QCOMPARE(read_onnx(path).graph().name(), std::string("mlp"));
    // The temporary it was written through is gone (renamed over the old file).
    QCOMPARE(QDir(out.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{"model.onnx"});
}

QTEST_GUILESS_MAIN(TestOnnxExport)
#include "test_onnx_export.moc"
