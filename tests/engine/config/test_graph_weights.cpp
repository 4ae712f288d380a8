// Graph models (and depthwise/separable convolutions) with their weights, against PyTorch: a Keras 2 functional .h5 and a DL4J
// ComputationGraph zip of the same residual-plus-concatenation graph, written with known weights by
// data/graphs/make_graph_references.py, which also computed the outputs with PyTorch (float64).
// Every parameter must land where it belongs for the predictions to agree within 1e-4: conv
// kernels from HWIO (Keras) or DL4J's bias-first views, batch-norm statistics, the dense layer, and
// for DL4J its flattened order, which follows DL4J's topological order of the vertices (conv_c's
// parameters before bn_a's here) rather than the order the file lists them.
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "backend/registry.h"
#include "config/model_format.h"
#include "config/weight_import.h"
#include "core/error.h"
#include "nn/network.h"
#include "source_dir.h"
#include "weight_files.h"

using namespace thresher;
using json = nlohmann::json;

namespace {

std::string data(const std::string& name) {
    return (test_support::source_dir() + "/tests/engine/config/data/graphs/").toStdString() + name;
}

json read_json(const std::string& path) { return test_support::read_json_file(path); }

// Thresher's predictions for the expected file's inputs, compared with its outputs.
void check_against_reference(const config::ImportResult& r, const std::string& expected_file) {
    const auto e = read_json(data(expected_file));
    std::vector<float> x;
    for (const auto& sample : e["inputs"])
        for (const auto& v : sample) x.push_back(v.get<float>());
    const auto& want = e["outputs"];
    const int batch = static_cast<int>(want.size());
    const int k = static_cast<int>(r.model.target_size());  // a per-step output: all its steps
    QCOMPARE(static_cast<std::size_t>(k), want[0].size());
    QCOMPARE(r.params.size(), r.model.param_count());
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(r.model, *be);
    net.set_params(r.params);
    std::vector<float> out(static_cast<std::size_t>(batch) * k);
    net.predict(x.data(), batch, out.data());
    double worst = 0;
    for (int s = 0; s < batch; ++s)
        for (int j = 0; j < k; ++j) {
            const double got = out[static_cast<std::size_t>(s * k + j)], ref = want[s][j].get<double>();
            worst = std::max(worst, std::abs(got - ref));
            if (std::abs(got - ref) > 1e-4)
                QFAIL(qPrintable(QString("sample %1 output %2: Thresher %3, PyTorch %4").arg(s).arg(j).arg(got).arg(ref)));
        }
    qInfo("%s: max |Thresher - PyTorch| = %.3g over %d outputs", expected_file.c_str(), worst, batch * k);
}

}  // namespace

class TestGraphWeights : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void keras_functional_h5();
    void keras_depthwise_separable_h5();
    void keras_conv_transpose_h5();
    void keras_two_inputs_two_outputs_h5();
    void keras_reshape_permute_h5();
    void keras_unet_image_outputs_h5();
    void keras_shared_layers_h5();
    void keras_nested_models_h5();
    void keras_nested_models_keras();
    void dl4j_graph_zip();
    void dl4j_depthwise_separable_zip();
    void dl4j_conv_transpose_zip();
    // Keras sequence models (data/sequences/make_sequence_references.py): LSTM, GRU both ways,
    // SimpleRNN, Bidirectional, TimeDistributed, Embedding, Conv1D; shorter samples against
    // torch's packed sequences.
    void keras_sequences_data();
    void keras_sequences();
    void keras_sequence_weight_shape_refused();
};

void TestGraphWeights::keras_sequences_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("expected");
    QTest::addColumn<QString>("types");  // Thresher's layer types, in order
    QTest::newRow("embedding+lstm") << "keras2_embedding_lstm.h5" << "keras2_embedding_lstm" << "embedding lstm output";
    QTest::newRow("bilstm+timedistributed") << "keras2_bilstm_timedistributed.h5" << "keras2_bilstm_timedistributed" << "lstm output";
    QTest::newRow("gru reset_after") << "keras2_gru_reset_after.h5" << "keras2_gru_reset_after" << "gru output";
    QTest::newRow("gru reset_before") << "keras2_gru_reset_before.h5" << "keras2_gru_reset_before" << "gru output";
    QTest::newRow("simple_rnn+flatten") << "keras2_simple_rnn.h5" << "keras2_simple_rnn" << "simple_rnn reshape output";
    QTest::newRow("conv1d causal") << "keras2_conv1d_causal.h5" << "keras2_conv1d_causal" << "convolution1d subsampling output";
    QTest::newRow("keras3 lstm") << "keras3_lstm.keras" << "keras3_lstm" << "lstm output";
    QTest::newRow("cudnn lstm") << "keras2_cudnn_lstm.h5" << "keras2_cudnn_lstm" << "lstm output";
    QTest::newRow("cudnn gru") << "keras2_cudnn_gru.h5" << "keras2_cudnn_gru" << "gru output";
}

void TestGraphWeights::keras_sequences() {
    QFETCH(QString, file);
    QFETCH(QString, expected);
    QFETCH(QString, types);
    config::ImportResult r;
    try {
        r = config::import_model_file(data("../sequences/" + file.toStdString()));
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
    QStringList got;
    for (const auto& l : r.model.layers) got << QString::fromStdString(std::string(config::to_string(l.type)));
    QCOMPARE(got.join(' '), types);
    QVERIFY(r.model.input.sequence());
    check_against_reference(r, "../sequences/" + expected.toStdString() + ".expected.json");
}

// A weight of the wrong shape is refused naming the layer as the file does and the array.
void TestGraphWeights::keras_sequence_weight_shape_refused() {
    const std::string path = data("../sequences/keras2_gru_reset_after.h5");
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Claim 4 units where the arrays hold 5: every array is then the wrong shape.
    const std::string from = "\"units\": 5", to = "\"units\": 4";
    auto at = std::search(bytes.begin(), bytes.end(), from.begin(), from.end());
    QVERIFY(at != bytes.end());
    std::copy(to.begin(), to.end(), at);
    try {
        config::import_model_with_weights(bytes, "bad.h5");
        QFAIL("imported a GRU whose kernel does not fit");
    } catch (const ConfigError& e) {
        const QString msg = e.what();
        QVERIFY2(msg.contains("GRU \"gru\"") && msg.contains("gru/gru_cell/kernel:0 has shape [3, 15], the layer needs [3, 12]"),
                 qPrintable(msg));
    }
}

void TestGraphWeights::keras_functional_h5() {
    config::ImportResult r;
    try {
        r = config::import_model_file(data("keras2_residual_concat.h5"));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QVERIFY(r.model.is_graph());
    check_against_reference(r, "keras2_residual_concat.expected.json");
}

// Two inputs (an image, flat features) and two outputs: the row holds both inputs, the
// prediction both outputs, main first; the aux head's loss comes from its sigmoid (mse, no compile).
void TestGraphWeights::keras_two_inputs_two_outputs_h5() {
    config::ImportResult r;
    try {
        r = config::import_model_file(data("keras2_two_inputs_two_outputs.h5"));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(r.model.input_count(), std::size_t{2});
    QCOMPARE(r.model.input, (config::Shape{2, 5, 5}));
    QCOMPARE(r.model.extra_inputs[0].name, std::string("meta"));
    QCOMPARE(r.model.extra_inputs[0].shape, (config::Shape{4, 1, 1}));
    QCOMPARE(r.model.outputs, (std::vector<std::string>{"main", "aux"}));
    check_against_reference(r, "keras2_two_inputs_two_outputs.expected.json");
}

// Keras's Reshape counts values channels last and Permute swaps axes of a channels-last tensor:
// both become index maps here, checked against PyTorch walking Keras's own tensors.
void TestGraphWeights::keras_reshape_permute_h5() {
    config::ImportResult r;
    try {
        r = config::import_model_file(data("keras2_reshape_permute.h5"));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(r.model.layers[1].type, config::LayerType::Reshape);
    QCOMPARE(r.model.layers[3].type, config::LayerType::Permute);
    QCOMPARE(r.model.layers[5].type, config::LayerType::Permute);
    check_against_reference(r, "keras2_reshape_permute.expected.json");
}

// A siamese pair (make_shared_references.py): Conv2D, BatchNormalization, pooling and Dense each
// called on both inputs. Each later call shares the first call's parameters, which the file holds
// once; a call given parameters of its own (zeros) would change every output.
void TestGraphWeights::keras_shared_layers_h5() {
    config::ImportResult r;
    try {
        r = config::import_model_file(data("keras2_siamese_shared.h5"));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QStringList shared;
    for (const auto& l : r.model.layers)
        if (!l.shares.empty()) shared << QString::fromStdString(l.name + "->" + l.shares);
    QCOMPARE(shared.join(","), QString("conv@1->conv,bn@1->bn,gap@1->gap,embed@1->embed"));
    // conv 4*3*9+4, bn 4*4, embed 4*5+5, out 5*3+3: each once.
    QCOMPARE(r.model.param_count(), std::size_t(112 + 16 + 25 + 18));
    check_against_reference(r, "keras2_siamese_shared.expected.json");
}

// A Sequential "encoder" called on both inputs and a functional "head", nested in a functional
// model: their layers inlined as encoder/conv2d, ..., the second call sharing the first's; the
// weights read from the nested models' groups.
void TestGraphWeights::keras_nested_models_h5() {
    config::ImportResult r;
    try {
        r = config::import_model_file(data("keras2_nested_models.h5"));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QStringList names;
    for (const auto& l : r.model.layers) names << QString::fromStdString(l.name + (l.shares.empty() ? "" : "->" + l.shares));
    QCOMPARE(names.join(","), QString("encoder/conv2d,encoder/max_pooling2d,encoder/dense,encoder/conv2d@1->encoder/conv2d,"
                                      "encoder/max_pooling2d@1->encoder/max_pooling2d,encoder/dense@1->encoder/dense,both,head/h1,head/h2"));
    check_against_reference(r, "keras2_nested_models.expected.json");
}

// The same model and weights as a Keras 3 .keras archive: the nested models' variables in their
// own containers (layers/sequential/layers/conv2d/vars, layers/functional/layers/dense_1/vars).
void TestGraphWeights::keras_nested_models_keras() {
    config::ImportResult r;
    try {
        r = config::import_model_file(data("keras3_nested_models.keras"));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(r.model.layers.size(), std::size_t{9});
    QCOMPARE(r.model.layers[3].shares, std::string("encoder/conv2d"));
    check_against_reference(r, "keras2_nested_models.expected.json");
}

// Keras's depthwise kernels [kh, kw, in, multiplier] and pointwise kernels [1, 1, in*m, filters]
// into Thresher's grouped layout: output channel c * multiplier + m, as PyTorch's groups=in.
void TestGraphWeights::keras_depthwise_separable_h5() {
    config::ImportResult r;
    try {
        r = config::import_model_file(data("keras2_depthwise_separable.h5"));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(r.model.layers[0].type, config::LayerType::DepthwiseConvolution);
    QCOMPARE(r.model.layers[1].type, config::LayerType::SeparableConvolution);
    check_against_reference(r, "keras2_depthwise_separable.expected.json");
}

// Keras's Conv2DTranspose kernels [kh, kw, out, in] into Thresher's [in, out, kh, kw] (PyTorch's
// ConvTranspose2d), "valid" and "same" (the output in x stride).
void TestGraphWeights::keras_conv_transpose_h5() {
    config::ImportResult r;
    try {
        r = config::import_model_file(data("keras2_conv_transpose.h5"));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(r.model.layers[0].type, config::LayerType::TransposedConvolution);
    QCOMPARE(r.model.layers[0].out_shape, (config::Shape{3, 11, 13}));
    QCOMPARE(r.model.layers[1].out_shape, (config::Shape{2, 22, 13}));
    check_against_reference(r, "keras2_conv_transpose.expected.json");
}

// Image outputs (issue 22), written by data/graphs/make_image_output_references.py: a small U-Net
// whose two outputs are 1x1 Conv2Ds, a softmax over each pixel's channels (categorical
// cross-entropy) and a sigmoid reconstruction (binary cross-entropy), side by side in NCHW order.
void TestGraphWeights::keras_unet_image_outputs_h5() {
    config::ImportResult r;
    try {
        r = config::import_model_file(data("keras2_unet_two_image_outputs.h5"));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(r.model.output_layers.size(), std::size_t{2});
    const auto& seg = r.model.layers[r.model.output_layers[0]];
    const auto& recon = r.model.layers[r.model.output_layers[1]];
    QCOMPARE(seg.out_shape, (config::Shape{3, 6, 6}));
    QCOMPARE(seg.activation.kind, config::Activation::Softmax);
    QCOMPARE(seg.loss, config::LossKind::MultiClassCrossEntropy);
    QCOMPARE(recon.out_shape, (config::Shape{1, 6, 6}));
    QCOMPARE(recon.loss, config::LossKind::BinaryCrossEntropy);
    QVERIFY(std::any_of(r.model.layers.begin(), r.model.layers.end(), [](const auto& l) { return l.spatial; }));
    check_against_reference(r, "keras2_unet_two_image_outputs.expected.json");
}

void TestGraphWeights::dl4j_graph_zip() {
    const auto coefficients = read_json(data("dl4j_residual_concat.coefficients.json"));
    std::vector<float> flat;
    for (const auto& v : coefficients["coefficients"]) flat.push_back(v.get<float>());
    std::ifstream in(data("dl4j_residual_concat.json"));
    const std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    QTemporaryDir dir;
    const std::string zip = dir.filePath("residual_concat.zip").toStdString();
    test_support::write_zip(zip, {{"configuration.json", test_support::text_bytes(config)},
                                  {"coefficients.bin", test_support::nd4j_row(flat, false, false)}});
    config::ImportResult r;
    try {
        r = config::import_model_file(zip);
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    // Thresher's layers follow DL4J's order, so its flat buffer is DL4J's.
    QStringList order;
    for (const auto& l : r.model.layers) order << QString::fromStdString(l.name);
    QCOMPARE(order.join(","), QString("conv_a,conv_c,bn_a,conv_b,add_1,act_1,concat_1,gap,out"));
    check_against_reference(r, "dl4j_residual_concat.expected.json");
}

// A DL4J zip of the model of keras2_depthwise_separable.h5 / keras2_conv_transpose.h5 with the
// same weights laid out as DL4J's DepthwiseConvolution2D, SeparableConvolution2D and
// Deconvolution2D hold them (make_dl4j_conv_references.py, numpy transposes of the Keras
// arrays): Thresher's predictions are PyTorch's.
static config::ImportResult import_dl4j_zip_of(const std::string& name) {
    const auto coefficients = read_json(data(name + ".coefficients.json"));
    std::vector<float> flat;
    for (const auto& v : coefficients["coefficients"]) flat.push_back(v.get<float>());
    std::ifstream in(data(name + ".json"));
    const std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    QTemporaryDir dir;
    const std::string zip = dir.filePath(QString::fromStdString(name) + ".zip").toStdString();
    test_support::write_zip(zip, {{"configuration.json", test_support::text_bytes(config)},
                                  {"coefficients.bin", test_support::nd4j_row(flat, false, false)}});
    return config::import_model_file(zip);
}

void TestGraphWeights::dl4j_depthwise_separable_zip() {
    config::ImportResult r;
    try {
        r = import_dl4j_zip_of("dl4j_depthwise_separable");
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(r.model.layers[0].type, config::LayerType::DepthwiseConvolution);
    QCOMPARE(r.model.layers[1].type, config::LayerType::SeparableConvolution);
    check_against_reference(r, "keras2_depthwise_separable.expected.json");
}

void TestGraphWeights::dl4j_conv_transpose_zip() {
    config::ImportResult r;
    try {
        r = import_dl4j_zip_of("dl4j_conv_transpose");
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(r.model.layers[0].type, config::LayerType::TransposedConvolution);
    QCOMPARE(r.model.layers[1].out_shape, (config::Shape{2, 22, 13}));
    check_against_reference(r, "keras2_conv_transpose.expected.json");
}

QTEST_GUILESS_MAIN(TestGraphWeights)
#include "test_graph_weights.moc"
