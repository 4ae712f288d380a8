// DL4J sequence models with their weights, against references computed from DL4J's own equations
// on DL4J's own arrays (data/sequences/make_dl4j_sequence_references.py): LSTM with a per-step
// RnnOutputLayer, GravesLSTM's peepholes with a LastTimeStepVertex, Bidirectional(LSTM, CONCAT)
// into LastTimeStep(LSTM), Bidirectional(LastTimeStep(LSTM), ADD), GravesBidirectionalLSTM into
// LastTimeStep(SimpleRnn), an EmbeddingSequenceLayer MultiLayer, and a causal dilated
// Convolution1DLayer with global pooling.
// Every gate block, peephole column and direction must land where it belongs for the outputs to
// agree within 1e-4; samples shorter than the model's steps (masked) must give the reference of
// their first L steps. Then what is refused, and how it is said.
#include <QtTest>

#include <fstream>

#include <nlohmann/json.hpp>

#include "backend/registry.h"
#include "config/model_format.h"
#include "core/error.h"
#include "export/dl4j_export.h"
#include "export/model_export.h"
#include "nn/network.h"
#include "source_dir.h"
#include "weight_files.h"

using namespace thresher;
using json = nlohmann::json;

namespace {

std::string data(const std::string& name) {
    return (test_support::source_dir() + "/tests/engine/config/data/sequences/").toStdString() + name;
}

json read_json(const std::string& path) { return test_support::read_json_file(path); }

std::vector<float> coefficients(const std::string& name) {
    const auto j = read_json(data(name + ".coefficients.json"));
    std::vector<float> flat;
    for (const auto& v : j["coefficients"]) flat.push_back(v.get<float>());
    return flat;
}

// A DL4J model zip of `config` and `flat` (coefficients.bin as DL4J 1.0 writes it), imported.
config::ImportResult import_zip(const json& config, const std::vector<float>& flat, const config::ImportOptions& options = {}) {
    QTemporaryDir dir;
    const std::string zip = dir.filePath("model.zip").toStdString();
    test_support::write_zip(zip, {{"configuration.json", test_support::text_bytes(config.dump())},
                                  {"coefficients.bin", test_support::nd4j_row(flat, false, false)}});
    return config::import_model_file(zip, options);
}

config::ImportResult import_case(const std::string& name) { return import_zip(read_json(data(name + ".json")), coefficients(name)); }

// Thresher's predictions for the expected file's input rows ([L, T*C values] each), compared
// with the reference outputs (per-step outputs: T*K values, zeros at padded steps).
void check_against_reference(const config::ImportResult& r, const std::string& name) {
    const auto e = read_json(data(name + ".expected.json"));
    std::vector<float> x;
    for (const auto& row : e["inputs"])
        for (const auto& v : row) x.push_back(v.get<float>());
    const auto& want = e["outputs"];
    const int batch = static_cast<int>(want.size());
    const auto k = r.model.target_size();
    QCOMPARE(k, want[0].size());
    QCOMPARE(static_cast<std::size_t>(r.model.input_size()) * batch, x.size());
    QCOMPARE(r.params.size(), r.model.param_count());
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(r.model, *be);
    net.set_params(r.params);
    std::vector<float> out(static_cast<std::size_t>(batch) * k);
    net.predict(x.data(), batch, out.data());
    double worst = 0;
    for (int s = 0; s < batch; ++s)
        for (std::size_t j = 0; j < k; ++j) {
            const double got = out[s * k + j], ref = want[s][j].get<double>();
            worst = std::max(worst, std::abs(got - ref));
            if (!(std::abs(got - ref) <= 1e-4))
                QFAIL(qPrintable(QString("%1: sample %2 (length %3) output %4: Thresher %5, reference %6")
                                     .arg(QString::fromStdString(name)).arg(s).arg(e["lengths"][s].get<int>()).arg(j).arg(got).arg(ref)));
        }
    qInfo("%s: max |Thresher - reference| = %.3g over %d x %zu outputs", name.c_str(), worst, batch, k);

    // It trains: one step with one-hot targets (per valid step for a per-step output, padded
    // steps zero) gives the reference's cross-entropy, the mean over valid steps or samples, and
    // moves the parameters.
    const std::size_t classes = static_cast<std::size_t>(r.model.output_size()), steps = k / classes;
    std::vector<float> t(out.size(), 0.f);
    double want_loss = 0;
    int counted = 0;
    for (int s = 0; s < batch; ++s) {
        const std::size_t valid = steps == 1 ? 1 : static_cast<std::size_t>(e["lengths"][s].get<int>());
        for (std::size_t step = 0; step < valid; ++step) {
            const std::size_t c = (step + s) % classes, at = s * k + step * classes + c;
            t[at] = 1.f;
            want_loss -= std::log(want[s][step * classes + c].get<double>());
            ++counted;
        }
    }
    want_loss /= counted;
    const double loss = net.compute_gradients(x.data(), t.data(), batch, 1);
    if (!(std::abs(loss - want_loss) <= 1e-4)) QFAIL(qPrintable(QString("loss %1, reference %2").arg(loss).arg(want_loss)));
    const auto before = net.get_params();
    net.compute_update(0);
    net.apply_update();
    QVERIFY(net.get_params() != before);
}

// The message of the ConfigError importing `config` (with `flat`) throws; "" when it imports.
std::string refusal(const json& config, const std::vector<float>& flat, const config::ImportOptions& options = {}) {
    try {
        import_zip(config, flat, options);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

void expect_refusal(const std::string& got, std::initializer_list<std::string> parts) {
    if (got.empty()) QFAIL("imported, expected a refusal");
    for (const auto& p : parts)
        if (got.find(p) == std::string::npos) QFAIL(qPrintable(QString("\"%1\" not in: %2").arg(QString::fromStdString(p)).arg(QString::fromStdString(got))));
}

json& layer_of_vertex(json& config, const std::string& vertex) { return config["vertices"][vertex]["layerConf"]["layer"]; }

}  // namespace

class TestDl4jSequenceImport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matches_reference_data();
    void matches_reference();
    void per_step_layers_and_preprocessors();
    void any_elementwise_activation_imported();
    void missing_steps_refused();
    void missing_steps_given();
    void embedding_bias_must_be_zero();
    void wrapper_refusals();
    void wrong_parameter_count_names_layers();
    void adam_state_lands_on_each_block();
    void export_round_trip_data();
    void export_round_trip();
    void templates_round_trip_data();
    void templates_round_trip();
    void export_refuses_what_dl4j_cannot_hold();
};

void TestDl4jSequenceImport::matches_reference_data() {
    QTest::addColumn<QString>("name");
    for (const char* n : {"dl4j_seq_lstm_rnnoutput", "dl4j_seq_graves_last_step", "dl4j_seq_bidirectional_concat",
                          "dl4j_seq_graves_bidirectional_simple_rnn", "dl4j_seq_embedding_lstm", "dl4j_seq_conv1d_causal_pooling",
                          "dl4j_seq_bidirectional_last_step"})
        QTest::newRow(n) << QString(n);
}

void TestDl4jSequenceImport::matches_reference() {
    QFETCH(QString, name);
    config::ImportResult r;
    try {
        r = import_case(name.toStdString());
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    check_against_reference(r, name.toStdString());
}

// DL4J's per-step dense layer between RnnToFeedForward and FeedForwardToRnn preprocessors (0.x's
// wrapper spelling too), Subsampling1D, a DropoutLayer and an RnnLossLayer on a sequence: each
// maps onto Thresher's per-step layers, with the steps they leave.
void TestDl4jSequenceImport::per_step_layers_and_preprocessors() {
    auto config = read_json(data("dl4j_seq_lstm_rnnoutput.json"));
    const std::string pl = "org.deeplearning4j.nn.conf.layers.";
    auto vertex = [&](json layer, json pre) {
        return json{{"@class", "org.deeplearning4j.nn.conf.graph.LayerVertex"},
                    {"layerConf", {{"layer", layer}, {"seed", 7}}}, {"outputVertex", false}, {"preProcessor", pre}};
    };
    config["vertices"].erase("out");
    config["vertices"]["pool"] = vertex({{"@class", pl + "Subsampling1DLayer"}, {"layerName", "pool"}, {"poolingType", "AVG"},
                                         {"kernelSize", {2, 1}}, {"stride", {1, 2}}, {"padding", {0, 0}}, {"convolutionMode", "Truncate"}},
                                        nullptr);
    config["vertices"]["drop"] = vertex({{"@class", pl + "DropoutLayer"}, {"layerName", "drop"},
                                         {"idropout", {{"@class", "org.deeplearning4j.nn.conf.dropout.Dropout"}, {"p", 0.8}}}},
                                        nullptr);
    config["vertices"]["dense"] = vertex({{"@class", pl + "DenseLayer"}, {"layerName", "dense"}, {"nin", 4}, {"nout", 3},
                                          {"activationFn", {{"@class", "org.nd4j.linalg.activations.impl.ActivationIdentity"}}},
                                          {"iupdater", {{"@class", "org.nd4j.linalg.learning.config.Sgd"}, {"learningRate", 0.1}}}},
                                         {{"rnnToFeedForward", json::object()}});
    config["vertices"]["loss"] = vertex({{"@class", pl + "RnnLossLayer"}, {"layerName", "loss"},
                                         {"activationFn", {{"@class", "org.nd4j.linalg.activations.impl.ActivationSoftmax"}}},
                                         {"lossFn", {{"@class", "org.nd4j.linalg.lossfunctions.impl.LossMCXENT"}}}},
                                        {{"@class", "org.deeplearning4j.nn.conf.preprocessor.FeedForwardToRnnPreProcessor"}});
    config["vertexInputs"] = {{"lstm", {"in"}}, {"pool", {"lstm"}}, {"drop", {"pool"}}, {"dense", {"drop"}}, {"loss", {"dense"}}};
    config["networkOutputs"] = {"loss"};
    config::ImportResult r;
    try {
        r = config::import_model_text(config.dump(), "per_step.json");
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    const auto& ls = r.model.layers;
    QCOMPARE(ls.size(), std::size_t(5));
    QCOMPARE(ls[1].type, config::LayerType::Subsampling);
    QCOMPARE(ls[1].out_shape, config::sequence_shape(4, 4));  // 5 steps, windows of 2 every step
    QCOMPARE(ls[2].type, config::LayerType::Dropout);
    QCOMPARE(ls[3].type, config::LayerType::Dense);
    QCOMPARE(ls[3].out_shape, config::sequence_shape(4, 3));
    QCOMPARE(ls[4].type, config::LayerType::Activation);
    QVERIFY(ls[4].declares_loss);
    QCOMPARE(r.model.target_size(), std::size_t(4 * 3));
    // CnnToRnn cannot be: Thresher's sequences are not made from images.
    config["vertices"]["dense"]["preProcessor"] = {{"@class", "org.deeplearning4j.nn.conf.preprocessor.CnnToRnnPreProcessor"}};
    try {
        config::import_model_text(config.dump(), "per_step.json");
        QFAIL("imported");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("vertices[\"dense\"]") != std::string::npos &&
                     std::string(e.what()).find("CnnToRnnPreProcessor is not supported") != std::string::npos,
                 e.what());
    }
}

// Hard-sigmoid gates and a ReLU cell (the corpus's Bidirectional(LSTM) has one) import onto the
// layer's own activations (the engine's host path runs them); softmax has no cell form.
void TestDl4jSequenceImport::any_elementwise_activation_imported() {
    auto config = read_json(data("dl4j_seq_lstm_rnnoutput.json"));
    layer_of_vertex(config, "lstm")["gateActivationFn"] = {{"@class", "org.nd4j.linalg.activations.impl.ActivationHardSigmoid"}};
    layer_of_vertex(config, "lstm")["activationFn"] = {{"@class", "org.nd4j.linalg.activations.impl.ActivationReLU"}};
    const auto r = import_zip(config, coefficients("dl4j_seq_lstm_rnnoutput"));
    const config::LayerConfig* lstm = nullptr;
    for (const auto& l : r.model.layers)
        if (l.type == config::LayerType::Lstm) lstm = &l;
    QVERIFY(lstm);
    QCOMPARE(lstm->gate_activation.kind, vocab::Activation::HardSigmoid);
    QCOMPARE(lstm->gate_activation.alpha, 0.2f);  // DL4J's hard sigmoid: clip(0.2x + 0.5, 0, 1)
    QCOMPARE(lstm->cell_activation.kind, vocab::Activation::Relu);
    config = read_json(data("dl4j_seq_lstm_rnnoutput.json"));
    layer_of_vertex(config, "lstm")["gateActivationFn"] = {{"@class", "org.nd4j.linalg.activations.impl.ActivationSoftmax"}};
    expect_refusal(refusal(config, coefficients("dl4j_seq_lstm_rnnoutput")),
                   {"vertices[\"lstm\"] (LSTM \"lstm\")", "gateActivationFn", "softmax is not supported in a recurrent cell"});
}

void TestDl4jSequenceImport::missing_steps_refused() {
    auto config = read_json(data("dl4j_seq_lstm_rnnoutput.json"));
    config["networkInputTypes"][0]["timeSeriesLength"] = -1;  // InputType.recurrent(size) without a length
    expect_refusal(refusal(config, coefficients("dl4j_seq_lstm_rnnoutput")),
                   {"networkInputTypes", "timeSeriesLength", "InputType.recurrent(size, timeSeriesLength)"});
    config.erase("networkInputTypes");
    expect_refusal(refusal(config, coefficients("dl4j_seq_lstm_rnnoutput")), {"the first layer reads a sequence", "timeSeriesLength"});
    // A MultiLayer keeps no InputType: without an EmbeddingSequenceLayer's inputLength, no steps.
    auto multi = read_json(data("dl4j_seq_embedding_lstm.json"));
    multi["confs"][0]["layer"]["inferInputLength"] = true;  // the steps come from the data: inputLength means nothing
    expect_refusal(refusal(multi, coefficients("dl4j_seq_embedding_lstm")), {"inputLength", "number of time steps"});
    multi["confs"][0]["layer"]["inferInputLength"] = false;
    multi["confs"][0]["layer"].erase("inputLength");
    expect_refusal(refusal(multi, coefficients("dl4j_seq_embedding_lstm")), {"inputLength", "number of time steps"});
}

// The same files with their steps left open import with the steps given (--steps) and compute
// what the reference computed for the file that stated them.
void TestDl4jSequenceImport::missing_steps_given() {
    auto config = read_json(data("dl4j_seq_lstm_rnnoutput.json"));
    const int steps = config["networkInputTypes"][0]["timeSeriesLength"].get<int>();
    config["networkInputTypes"][0]["timeSeriesLength"] = -1;
    check_against_reference(import_zip(config, coefficients("dl4j_seq_lstm_rnnoutput"), {.steps = steps}), "dl4j_seq_lstm_rnnoutput");
    config.erase("networkInputTypes");  // no input types at all: the first layer's nIn gives the features
    check_against_reference(import_zip(config, coefficients("dl4j_seq_lstm_rnnoutput"), {.steps = steps}), "dl4j_seq_lstm_rnnoutput");
    auto multi = read_json(data("dl4j_seq_embedding_lstm.json"));
    const int length = multi["confs"][0]["layer"]["inputLength"].get<int>();
    multi["confs"][0]["layer"]["inferInputLength"] = true;
    check_against_reference(import_zip(multi, coefficients("dl4j_seq_embedding_lstm"), {.steps = length}), "dl4j_seq_embedding_lstm");
    // An inputLength DL4J uses, and different steps given: refused, both numbers named.
    multi["confs"][0]["layer"]["inferInputLength"] = false;
    expect_refusal(refusal(multi, coefficients("dl4j_seq_embedding_lstm"), {.steps = length + 3}),
                   {"fixes its input at " + std::to_string(length) + " time steps", std::to_string(length + 3) + " given (--steps)"});
}

void TestDl4jSequenceImport::embedding_bias_must_be_zero() {
    // hasBias true: DL4J's b [1, nOut] follows W; a zero one imports, any other is refused.
    auto config = read_json(data("dl4j_seq_embedding_lstm.json"));
    config["confs"][0]["layer"]["hasBias"] = true;
    auto flat = coefficients("dl4j_seq_embedding_lstm");
    const std::size_t after_w = 7 * 3;
    flat.insert(flat.begin() + after_w, 3, 0.f);
    config::ImportResult r;
    try {
        r = import_zip(config, flat);
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    check_against_reference(r, "dl4j_seq_embedding_lstm");
    flat[after_w + 1] = 0.25f;
    expect_refusal(refusal(config, flat), {"confs[0] (EmbeddingSequenceLayer \"emb\"", "b[1] is 0.25", "no bias"});
}

void TestDl4jSequenceImport::wrapper_refusals() {
    auto config = read_json(data("dl4j_seq_bidirectional_concat.json"));
    // LastTimeStep(Bidirectional(LSTM)) in place of the plain Bidirectional.
    auto& bi = config["vertices"]["bi"]["layerConf"]["layer"];
    bi = {{"@class", "org.deeplearning4j.nn.conf.layers.recurrent.LastTimeStep"}, {"layerName", "bi"}, {"underlying", bi}};
    expect_refusal(refusal(config, coefficients("dl4j_seq_bidirectional_concat")),
                   {"LastTimeStep(Bidirectional(LSTM)) \"bi\"", "backward direction"});
    // A dropout only the wrapper holds (Thresher reads the wrapped layer's settings).
    config = read_json(data("dl4j_seq_bidirectional_concat.json"));
    auto& wrapper = config["vertices"]["bi"]["layerConf"]["layer"];
    wrapper["idropout"] = {{"@class", "org.deeplearning4j.nn.conf.dropout.Dropout"}, {"p", 0.5}};
    expect_refusal(refusal(config, coefficients("dl4j_seq_bidirectional_concat")), {"Bidirectional's own \"idropout\""});
    // Two directions of different kinds.
    config = read_json(data("dl4j_seq_bidirectional_concat.json"));
    config["vertices"]["bi"]["layerConf"]["layer"]["bwd"]["@class"] = "org.deeplearning4j.nn.conf.layers.GravesLSTM";
    expect_refusal(refusal(config, coefficients("dl4j_seq_bidirectional_concat")),
                   {"vertices[\"bi\"]", "a LSTM forward and a GravesLSTM backward layer is not supported"});
}

void TestDl4jSequenceImport::wrong_parameter_count_names_layers() {
    auto flat = coefficients("dl4j_seq_graves_last_step");
    flat.pop_back();
    expect_refusal(refusal(read_json(data("dl4j_seq_graves_last_step.json")), flat),
                   {"coefficients.bin", "GravesLSTM \"graves\" 140", "OutputLayer \"out\" 10"});
}

// updaterState.bin with Adam on every layer (one UpdaterBlock: m over all parameters, then v):
// DL4J's m is written as the coefficients themselves and v as twice them, so wherever the import
// puts a parameter, its m and v must hold that parameter and twice it, in every block of a
// bidirectional peephole LSTM (Thresher keeps each block's m, then v). Exported again, the
// state is DL4J's as it came.
void TestDl4jSequenceImport::adam_state_lands_on_each_block() {
    const std::string name = "dl4j_seq_graves_bidirectional_simple_rnn";
    auto config = read_json(data(name + ".json"));
    const json adam = {{"@class", "org.nd4j.linalg.learning.config.Adam"}, {"learningRate", 0.01}, {"beta1", 0.9},
                       {"beta2", 0.999}, {"epsilon", 1e-8}};
    for (auto& [vertex, v] : config["vertices"].items()) {
        auto& layer = v["layerConf"]["layer"];
        (layer.contains("underlying") ? layer["underlying"] : layer)["iupdater"] = adam;
    }
    const auto flat = coefficients(name);
    std::vector<float> dl4j_state(flat);
    for (float p : flat) dl4j_state.push_back(2 * p);
    QTemporaryDir dir;
    const std::string zip = dir.filePath("adam.zip").toStdString();
    test_support::write_zip(zip, {{"configuration.json", test_support::text_bytes(config.dump())},
                                  {"coefficients.bin", test_support::nd4j_row(flat, false, false)},
                                  {"updaterState.bin", test_support::nd4j_row(dl4j_state, false, false)}});
    config::ImportResult r;
    try {
        r = config::import_model_file(zip);
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(r.updater_state.size(), 2 * r.params.size());
    std::size_t state_at = 0;  // Thresher's layout: layer after layer, block after block, m then v
    for (const auto& l : r.model.layers)
        for (const auto& b : l.blocks) {
            for (std::size_t k = 0; k < b.size; ++k) {
                const float p = r.params[l.param_offset + b.offset + k];
                if (r.updater_state[state_at + k] != p || r.updater_state[state_at + b.size + k] != 2 * p)
                    QFAIL(qPrintable(QString("layer %1 block at %2, parameter %3: m %4 v %5, parameter %6")
                                         .arg(QString::fromStdString(l.name)).arg(b.offset).arg(k)
                                         .arg(r.updater_state[state_at + k]).arg(r.updater_state[state_at + b.size + k]).arg(p)));
            }
            state_at += 2 * b.size;
        }
    model_export::ExportableModel m;
    m.source = name + ".thr";
    m.config = r.model;
    m.params = r.params;
    m.updater_state = r.updater_state;
    std::string why;
    QVERIFY(model_export::dl4j_updater_state(m, why) == dl4j_state);
    QVERIFY(why.empty());
}

void TestDl4jSequenceImport::export_round_trip_data() { matches_reference_data(); }

// Exported back to a DL4J zip (a ComputationGraph with InputTypeRecurrent keeping the steps;
// LastTimeStepVertex comes back as a LastTimeStep wrapper, GravesBidirectionalLSTM as
// Bidirectional(GravesLSTM, ADD)) and imported again: the same layers, bit-identical parameters,
// and still the reference's outputs.
void TestDl4jSequenceImport::export_round_trip() {
    QFETCH(QString, name);
    config::ImportResult r, back;
    QTemporaryDir dir;
    const std::string out = dir.filePath("exported.zip").toStdString();
    try {
        r = import_case(name.toStdString());
        model_export::ExportableModel m;
        m.source = name.toStdString() + ".thr";
        m.config = r.model;
        m.params = r.params;
        model_export::export_model(m, model_export::ExportFormat::Dl4j, out);
        back = config::import_model_file(out);
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(back.model.layers.size(), r.model.layers.size());
    for (std::size_t i = 0; i < r.model.layers.size(); ++i) {
        const auto &a = r.model.layers[i], &b = back.model.layers[i];
        QCOMPARE(b.type, a.type);
        QCOMPARE(b.bidirectional, a.bidirectional);
        QCOMPARE(b.return_sequences, a.return_sequences);
        QCOMPARE(b.peepholes, a.peepholes);
        QCOMPARE(b.out_shape, a.out_shape);
    }
    QCOMPARE(back.model.input, r.model.input);
    QVERIFY(back.params == r.params);
    check_against_reference(back, name.toStdString());
}

void TestDl4jSequenceImport::templates_round_trip_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("char_lstm") << "char_lstm";              // embedding, lstm with every step, a per-step output
    QTest::newRow("text_classifier") << "text_classifier";  // a bidirectional lstm's last output, dense, output
}

// The sequence templates with parameters drawn from a seed: exported to DL4J and imported
// again, the same parameters and the same predictions (ids in range, one sample shorter).
void TestDl4jSequenceImport::templates_round_trip() {
    QFETCH(QString, name);
    const auto path = test_support::source_dir() + "/resources/models/" + name + ".json";
    config::ImportResult r, back;
    QTemporaryDir dir;
    const std::string out = dir.filePath("exported.zip").toStdString();
    try {
        r = config::import_model_file(path.toStdString());
        r.params.resize(r.model.param_count());
        std::uint32_t state = 12345;
        for (auto& p : r.params) {
            state = state * 1664525u + 1013904223u;
            p = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 0.2f - 0.1f;
        }
        model_export::ExportableModel m;
        m.source = name.toStdString() + ".thr";
        m.config = r.model;
        m.params = r.params;
        model_export::export_model(m, model_export::ExportFormat::Dl4j, out);
        back = config::import_model_file(out);
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QVERIFY(back.params == r.params);
    const auto& in = r.model.input;
    const int batch = 2, vocabulary = r.model.layers[0].vocabulary;
    std::vector<float> x;
    for (int s = 0; s < batch; ++s) {
        const int length = s == 0 ? in.t : in.t / 2;
        x.push_back(static_cast<float>(length));
        for (int t = 0; t < in.t; ++t) x.push_back(t < length ? static_cast<float>((t * 7 + s * 3) % vocabulary) : 0.f);
    }
    auto predict = [&](const config::ImportResult& m) {
        auto be = backend::create_backend("cpu", {1});
        nn::Network net(m.model, *be);
        net.set_params(m.params);
        std::vector<float> y(batch * m.model.target_size());
        net.predict(x.data(), batch, y.data());
        return y;
    };
    QVERIFY(predict(back) == predict(r));
}

void TestDl4jSequenceImport::export_refuses_what_dl4j_cannot_hold() {
    // A GRU (DL4J has none) and a dense layer at every step are refused naming the layer.
    for (const auto& [layer, words] : std::vector<std::pair<std::string, std::string>>{
             {R"({"type":"gru","name":"g","units":3,"return_sequences":true})", "it has no DL4J layer"},
             {R"({"type":"dense","name":"g","units":3})", "dense layer on a sequence has no DL4J export yet"}}) {
        const auto cfg = config::ModelConfig::parse(R"({"input":{"steps":4,"features":2},"layers":[)" + layer +
                                                        R"(,{"type":"output","units":2,"activation":"softmax","loss":"mcxent"}]})",
                                                    "seq.json");
        model_export::ExportableModel m;
        m.source = "seq.thr";
        m.config = cfg;
        m.params.assign(cfg.param_count(), 0.f);
        QTemporaryDir dir;
        try {
            model_export::export_model(m, model_export::ExportFormat::Dl4j, dir.filePath("x.zip").toStdString());
            QFAIL("exported");
        } catch (const Error& e) {
            const std::string msg = e.what();
            QVERIFY2(msg.find("layers[0]") != std::string::npos && msg.find("\"g\"") != std::string::npos &&
                         msg.find(words) != std::string::npos,
                     e.what());
        }
    }
}

QTEST_GUILESS_MAIN(TestDl4jSequenceImport)
#include "test_dl4j_sequence_import.moc"
