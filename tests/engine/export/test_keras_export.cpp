// Keras exports (.h5 as Keras 2 saves it, .keras as Keras 3 does) read back two ways:
// - by Thresher's own Keras importers (config/weight_import.h, which `inspect` and `train
//   --model` use): import(export(m)) has m's architecture and bit-identical parameters, for the
//   templates in resources/models, every Keras and DL4J config in the test data that Keras can
//   express, the Keras files with weights in the fuzz corpus, and models of every layer kind;
// - by an independent reader, Debian's python3-h5py (tests/tools/keras_files/check_keras_export.py):
//   groups, attributes, layer and weight names, the config as JSON with the expected Keras
//   classes, and every weight array against the Thresher parameters, its Keras layout derived
//   there with numpy.
// Parameters are drawn at random (seeded) for every block, so a swapped or mis-laid block shows.
// A refused model names its layer and leaves the folder as it was.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include <nlohmann/json.hpp>

#include "export_test_support.h"
#include "config/model_format.h"
#include "config/weight_import.h"
#include "export/keras_export.h"
#include "export/keras_model.h"
#include "export/model_export.h"
#include "source_dir.h"

using namespace thresher;
using model_export::ExportFormat;

namespace {

using test_export::read_bytes;
using test_export::read_text;
using test_export::with_random_params;

QString debian_python() { return QFile::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }




model_export::ExportableModel model_from_file(const QString& path, unsigned seed) {
    auto r = config::import_model_file(path.toStdString());
    const std::string source = QFileInfo(path).completeBaseName().toStdString() + ".thr";
    if (!r.params.empty()) {
        model_export::ExportableModel m;
        m.source = source;
        m.config = std::move(r.model);
        m.params = std::move(r.params);
        return m;
    }
    return with_random_params(std::move(r.model), source, seed);
}

// What import(export(m)) must keep: the config as Thresher JSON without the names (the .keras
// importer names the model after its file; unnamed layers get Keras's names) and the seed. DL4J's
// negativeloglikelihood on a softmax output is the loss Keras calls categorical_crossentropy,
// which reads back as mcxent.
// A graph's edges are compared as the indices each layer reads (-1: the model's input): the
// importer names every layer's inputs, a Thresher config only those that are not the layer before.
nlohmann::json architecture(const config::ModelConfig& c) {
    auto resolved = c;
    resolved.infer_shapes("architecture");
    auto j = c.to_json();
    j.erase("name");
    j.erase("seed");
    // One input's name is the exporter's to choose (a Sequential's InputLayer gets Keras's);
    // several inputs keep theirs (the layers read them by name).
    if (j.contains("input") && j["input"].is_object()) j["input"].erase("name");
    for (std::size_t i = 0; i < j["layers"].size(); ++i) {
        auto& l = j["layers"][i];
        l.erase("name");
        l.erase("inputs");
        l["reads"] = resolved.layers[i].sources;
        // Shared layers: the layer whose parameters it uses, by position (names may change).
        l.erase("shares");
        if (resolved.layers[i].shares_index >= 0) l["shares"] = resolved.layers[i].shares_index;
        if (l.value("loss", "") == "negativeloglikelihood") l["loss"] = "mcxent";
        // A reshape where neither side has several channels and several pixels moves no value in
        // either order (Keras's Reshape reads back as channels_last).
        const auto& rl = resolved.layers[i];
        const auto mixed = [](const config::Shape& sh) { return sh.c > 1 && sh.h * sh.w > 1; };
        if (rl.type == config::LayerType::Reshape && !mixed(rl.in_shape) && !mixed(rl.out_shape)) l.erase("order");
    }
    return j;
}

QString format_suffix(ExportFormat f) { return f == ExportFormat::Keras ? ".keras" : ".h5"; }

const char* kZooGeometry = R"({"name":"geometry","input":{"channels":3,"height":11,"width":10},
    "layers":[
      {"type":"convolution","name":"conv_same","filters":4,"kernel":[3,2],"stride":[2,2],"mode":"same","activation":"tanh"},
      {"type":"convolution","name":"conv_dilated","filters":5,"kernel":[2,2],"dilation":[2,1],"padding":[1,1],"activation":"relu"},
      {"type":"subsampling","name":"max_same","pooling":"max","kernel":[3,3],"stride":[2,2],"mode":"same"},
      {"type":"subsampling","name":"avg_same","pooling":"avg","kernel":[2,3],"stride":[1,2],"mode":"same"},
      {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})";
const char* kZooResize = R"({"name":"resize","input":{"channels":2,"height":7,"width":6},
    "layers":[
      {"type":"zero_padding","name":"pad","padding":[1,2,0,3]},
      {"type":"convolution","name":"conv","filters":3,"kernel":[3,3],"activation":"swish"},
      {"type":"cropping","name":"crop","cropping":[1,0,2,1]},
      {"type":"upsampling","name":"up","size":[2,3]},
      {"type":"subsampling","name":"pool","pooling":"max","kernel":[2,2],"stride":[2,2]},
      {"type":"dense","name":"dense","units":5,"activation":"tanh"},
      {"type":"activation","name":"act_flat","activation":"relu"},
      {"type":"output","name":"out","units":4,"activation":"softmax","loss":"mcxent"}]})";
const char* kZooNorms = R"({"name":"norms","input":{"channels":2,"height":6,"width":5},
    "layers":[
      {"type":"convolution","name":"conv","filters":3,"kernel":[3,3],"activation":"identity"},
      {"type":"batch_norm","name":"bn_image","eps":0.001,"decay":0.99},
      {"type":"prelu","name":"prelu_per_channel","shared_axes":["height","width"]},
      {"type":"prelu","name":"prelu_per_position","shared_axes":["channels"]},
      {"type":"prelu","name":"prelu_every","alpha_init":0.25},
      {"type":"dropout","name":"drop_image","retain":0.6},
      {"type":"dense","name":"dense","units":7,"activation":"identity"},
      {"type":"batch_norm","name":"bn_flat"},
      {"type":"prelu","name":"prelu_flat"},
      {"type":"dropout","name":"drop_flat","retain":0.5},
      {"type":"output","name":"out","units":4,"activation":"softmax","loss":"mcxent"}]})";
const char* kZooGlobal = R"({"name":"global","input":{"channels":2,"height":7,"width":7},
    "layers":[
      {"type":"convolution","name":"conv","filters":6,"kernel":[3,3],"activation":"swish"},
      {"type":"subsampling","name":"gavg","pooling":"avg","global":true},
      {"type":"batch_norm","name":"bn"},
      {"type":"prelu","name":"prelu"},
      {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})";
const char* kZooActivations = R"({"name":"activations","input":{"size":12},"weight_init":"uniform",
    "updater":{"type":"adam","learning_rate":0.005,"beta1":0.8,"beta2":0.99,"epsilon":1e-6},"l2":0.001,
    "layers":[
      {"type":"dense","name":"leaky","units":12,"activation":"leakyrelu","alpha":0.2},
      {"type":"dense","name":"elu","units":12,"activation":"elu","alpha":0.5},
      {"type":"dense","name":"relu6","units":12,"activation":"relu6"},
      {"type":"dense","name":"thresholded","units":12,"activation":"thresholdedrelu","alpha":0.1},
      {"type":"dense","name":"selu","units":12,"activation":"selu"},
      {"type":"dense","name":"softplus","units":12,"activation":"softplus"},
      {"type":"dense","name":"softsign","units":12,"activation":"softsign","weight_init":"relu"},
      {"type":"dense","name":"sigmoid","units":12,"activation":"sigmoid"},
      {"type":"dense","name":"gelu","units":12,"activation":"gelu"},
      {"type":"dense","name":"swish","units":12,"activation":"swish"},
      {"type":"output","name":"out","units":5,"activation":"identity","loss":"mse"}]})";
const char* kZooBinary = R"({"name":"binary","input":{"size":6},
    "updater":{"type":"sgd","schedule":{"type":"exponential","initial":0.1,"rate":0.5,"decay_steps":100,"staircase":true}},
    "layers":[{"type":"dense","units":8,"activation":"relu"},{"type":"output","units":1,"activation":"sigmoid","loss":"xent"}]})";
// Every sequence layer and merge mode Keras has a form for (keras_sequence_export.h).
const char* kZooSequences = R"({"name":"sequences","input":{"steps":8,"features":3},"l2":0.001,
    "layers":[
      {"type":"convolution1d","name":"conv","filters":4,"kernel":3,"mode":"same","activation":"relu"},
      {"type":"subsampling","name":"pool","pooling":"max","kernel":2,"stride":2},
      {"type":"convolution1d","name":"causal","filters":4,"kernel":2,"dilation":2,"mode":"causal","activation":"leakyrelu","alpha":0.2},
      {"type":"gru","name":"bigru","units":3,"bidirectional":"sum","return_sequences":true,"input_retain":0.9,"recurrent_retain":0.75},
      {"type":"simple_rnn","name":"birnn","units":2,"activation":"sigmoid","bidirectional":"average","return_sequences":true},
      {"type":"gru","name":"gru_before","units":3,"reset_after":false,"return_sequences":true},
      {"type":"dropout","name":"drop","retain":0.8},
      {"type":"lstm","name":"lstm","units":5,"bidirectional":"mul","forget_bias":0},
      {"type":"repeat_vector","name":"repeat","times":3},
      {"type":"lstm","name":"lstm2","units":2,"bidirectional":"concat","return_sequences":true,"recurrent_retain":0.6},
      {"type":"dense","name":"per_step","units":4,"activation":"tanh"},
      {"type":"subsampling","name":"gavg","pooling":"avg","global":true},
      {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})";
// Graphs (Keras Functional models): every vertex Keras has a merge layer for, on images (Concatenate
// of the model's input too; the output Dense reads an image: a Flatten before it) and on flat
// features (a Dense reading the input image, global pooling beside it).
const char* kGraphImages = R"({"name":"vertices","input":{"channels":2,"height":6,"width":5},
    "layers":[{"type":"convolution","name":"a","filters":4,"kernel":[3,3],"mode":"same","activation":"tanh"},
              {"type":"convolution","name":"b","inputs":"input","filters":4,"kernel":[1,1],"activation":"sigmoid"},
              {"type":"subtract","name":"sub","inputs":["a","b"]},
              {"type":"multiply","name":"mul","inputs":["sub","a","b"]},
              {"type":"maximum","name":"max","inputs":["mul","b"]},
              {"type":"average","name":"avg","inputs":["max","a","sub"]},
              {"type":"add","name":"sum","inputs":["avg","a"]},
              {"type":"concatenate","name":"cat","inputs":["sum","avg","input"]},
              {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})";
const char* kGraphFlat = R"({"name":"flat_vertices","input":{"channels":3,"height":4,"width":4},
    "layers":[{"type":"subsampling","name":"gap","pooling":"avg","global":true},
              {"type":"dense","name":"d","inputs":"input","units":3,"activation":"tanh"},
              {"type":"add","name":"sum","inputs":["gap","d"]},
              {"type":"subtract","name":"diff","inputs":["gap","d"]},
              {"type":"multiply","name":"prod","inputs":["sum","diff"]},
              {"type":"maximum","name":"most","inputs":["prod","d","gap"]},
              {"type":"average","name":"mean","inputs":["most","sum"]},
              {"type":"concatenate","name":"cat","inputs":["d","gap","mean"]},
              {"type":"output","name":"out","units":2,"activation":"softmax","loss":"mcxent"}]})";
// Dense layers reading convolution branches inside a graph (Flatten inserted on each branch), a
// branch whose convolution needs an activation layer (LeakyReLU) and one with explicit padding
// (a ZeroPadding2D before it), joined by an Add of their features, with batch norm and PReLU.
const char* kGraphBranches = R"({"name":"branches","input":{"channels":2,"height":7,"width":6},
    "layers":[{"type":"convolution","name":"conv","filters":3,"kernel":[3,3],"activation":"leakyrelu","alpha":0.1},
              {"type":"dense","name":"from_conv","units":5,"activation":"relu"},
              {"type":"convolution","name":"padded","inputs":"input","filters":2,"kernel":[2,2],"padding":[1,1],"activation":"relu"},
              {"type":"batch_norm","name":"bn"},
              {"type":"prelu","name":"prelu","shared_axes":["height","width"]},
              {"type":"subsampling","name":"pool","pooling":"max","kernel":[2,2],"stride":[2,2]},
              {"type":"dense","name":"from_pool","units":5,"activation":"tanh"},
              {"type":"add","name":"join","inputs":["from_conv","from_pool"]},
              {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})";
// Depthwise (multiplier 2, same; valid with strides and an activation layer) and separable
// convolutions (multiplier 2 with strides; same with dilation).
const char* kSeparable = R"({"name":"separable","input":{"channels":3,"height":9,"width":8},
    "layers":[{"type":"depthwise_convolution","name":"dw","depth_multiplier":2,"kernel":[3,3],"mode":"same","activation":"relu"},
              {"type":"separable_convolution","name":"sep","filters":4,"depth_multiplier":2,"kernel":[3,2],"stride":[2,1],"activation":"tanh"},
              {"type":"depthwise_convolution","name":"dw_strided","kernel":[2,2],"stride":[2,2],"activation":"leakyrelu","alpha":0.2},
              {"type":"separable_convolution","name":"sep_same","filters":3,"kernel":[3,3],"mode":"same","dilation":[2,2],"activation":"identity"},
              {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})";
// Transposed convolutions: valid with strides, same with strides 2x1, valid with a dilation.
const char* kTransposed = R"({"name":"transposed","input":{"channels":2,"height":5,"width":6},
    "layers":[{"type":"transposed_convolution","name":"up","filters":3,"kernel":[3,3],"stride":[2,2],"activation":"relu"},
              {"type":"transposed_convolution","name":"same","filters":2,"kernel":[4,3],"stride":[2,1],"mode":"same","activation":"tanh"},
              {"type":"transposed_convolution","name":"dilated","filters":2,"kernel":[2,2],"dilation":[2,1],"activation":"sigmoid"},
              {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})";

// Image outputs (issue 22): the loss at every pixel; Keras's softmax over the last axis of a
// channels-last Conv2D is Thresher's softmax over each pixel's channels.
const char* kSegmentationHead = R"({"name":"segmentation_head","input":{"channels":1,"height":6,"width":6},
    "layers":[{"type":"convolution","name":"c","filters":4,"kernel":[3,3],"mode":"same","activation":"relu"},
              {"type":"dropout","name":"sd","retain":0.75,"spatial":true},
              {"type":"convolution","name":"seg","filters":3,"kernel":[1,1],"activation":"softmax","loss":"mcxent"}]})";
const char* kAutoencoder = R"({"name":"autoencoder","input":{"channels":1,"height":8,"width":8},
    "layers":[{"type":"convolution","name":"down","filters":2,"kernel":[2,2],"stride":[2,2],"activation":"relu"},
              {"type":"transposed_convolution","name":"up","filters":1,"kernel":[2,2],"stride":[2,2],"activation":"sigmoid","loss":"xent"}]})";

// The ResNet template without its learning-rate schedule: the schedule counts epochs, which a Keras
// file cannot (refused below, naming it); the graph itself is what goes round here.
std::string resnet_without_schedule() {
    auto j = nlohmann::json::parse(read_text(test_support::source_dir() + "/resources/models/resnet.json"));
    j["updater"].erase("schedule");
    return j.dump();
}

// Reshape (to an image and to features, channels-last order; a channels-first one that moves no
// value) and Permute (every Keras dims order but the identity shows in the round trip).
const char* kReshapePermute = R"({"name":"rearrange","input":{"size":6},
    "layers":[{"type":"dense","name":"d","units":24,"activation":"tanh"},
              {"type":"reshape","name":"to_image","shape":{"channels":2,"height":3,"width":4},"order":"channels_last"},
              {"type":"convolution","name":"conv","filters":3,"kernel":[2,2],"activation":"relu"},
              {"type":"permute","name":"whc","axes":["width","height","channels"]},
              {"type":"permute","name":"hcw","axes":["height","channels","width"]},
              {"type":"reshape","name":"to_flat","shape":{"size":18},"order":"channels_last"},
              {"type":"dense","name":"d2","units":8,"activation":"relu"},
              {"type":"reshape","name":"column","shape":{"channels":1,"height":8,"width":1}},
              {"type":"convolution","name":"conv2","filters":2,"kernel":[3,1],"activation":"tanh"},
              {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})";
}  // namespace

class TestKerasExport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void round_trip_data();
    void round_trip();
    void h5py_reads_the_files_data();
    void h5py_reads_the_files();
    void h5py_reads_shared_layers();
    // A Keras sequence model imported with its weights and exported again, read by h5py beside
    // the original (tests/tools/keras_files/check_sequence_export.py): the same classes and
    // every array equal in Keras's layout.
    void h5py_sequence_export_matches_original_data();
    void h5py_sequence_export_matches_original();
    void names_kept_and_made_unique();
    void refused_layer_named_and_nothing_written_data();
    void refused_layer_named_and_nothing_written();

private:
    void add_round_trip_rows(const QString& tag, const QString& path);
    void check_with_h5py(const std::string& tag, const QString& json, const QStringList& classes, const QStringList& names,
                         const QStringList& class_names, const QStringList& inbound, const nlohmann::json& extra);
    QTemporaryDir dir_;
};

void TestKerasExport::initTestCase() {
    QVERIFY(dir_.isValid());
    // A missing reader is a failure, not a skip: scripts/install-deps.sh installs python3-h5py.
    QProcess p;
    p.start(debian_python(), {"-c", "import h5py, numpy"});
    QVERIFY2(p.waitForFinished(60000) && p.exitCode() == 0,
             qPrintable(debian_python() + " cannot import h5py (Debian package python3-h5py; scripts/install-deps.sh installs it): " +
                        QString::fromUtf8(p.readAllStandardError())));
}

void TestKerasExport::add_round_trip_rows(const QString& tag, const QString& path) {
    for (const auto format : {ExportFormat::KerasH5, ExportFormat::Keras})
        QTest::newRow(qPrintable(tag + format_suffix(format))) << path << static_cast<int>(format);
}

void TestKerasExport::round_trip_data() {
    QTest::addColumn<QString>("path");  // a model file, or a Thresher config's JSON text after "json:"
    QTest::addColumn<int>("format");
    const QString root = test_support::source_dir();
    // Every template Thresher ships but resnet.json (a graph whose epoch schedule is refused
    // below), two_input.json's two inputs and two outputs included.
    // The sequence templates (char_lstm, text_classifier) too.
    for (const auto& name : QDir(root + "/resources/models").entryList({"*.json"}))
        if (name != "resnet.json") add_round_trip_rows("resources/models/" + name, root + "/resources/models/" + name);
    // Keras sequence models with weights (config/data/sequences): LSTM, GRU both ways,
    // SimpleRNN, Bidirectional, TimeDistributed, Embedding, Conv1D, global pooling.
    for (const auto& name : QDir(root + "/tests/engine/config/data/sequences").entryList({"*.h5", "*.keras"}))
        add_round_trip_rows("sequences/" + name, root + "/tests/engine/config/data/sequences/" + name);
    add_round_trip_rows("sequence layers", QString("json:") + kZooSequences);
    // Real Keras and DL4J configs in the test data that a Keras Sequential can express (the rest:
    // LSTMs and embeddings, which Thresher does not import, and a conv that does not fit).
    for (const char* name : {"keras1_mnist_cnn.json", "keras1_mnist_mlp_l2.json", "keras21_mlp.json", "keras2_lenet.json",
                             "keras2_swish_gelu_prelu.json", "keras3_cnn.json", "keras3_cnn_compiled_logits.json", "keras3_mlp.json",
                             "keras3_mlp_exponential_decay.json", "tfjs_keras2_mlp_sgd.json", "dl4j_lenet.json"})
        add_round_trip_rows(name, root + "/tests/engine/config/data/" + name);
    // Keras files with weights (the fuzz corpus's seeds): their own parameters go round.
    for (const char* name : {"whole.h5", "whole.keras"})
        add_round_trip_rows(name, root + "/tests/fuzz/corpus/fuzz_model_weights/" + name);
    // Every layer kind and Keras-expressible activation, optimizers and a schedule.
    const std::pair<const char*, const char*> zoo[] = {{"geometry", kZooGeometry}, {"resize", kZooResize},
                                                       {"norms", kZooNorms},       {"global", kZooGlobal},
                                                       {"activations", kZooActivations}, {"binary", kZooBinary}};
    for (const auto& [tag, json] : zoo) add_round_trip_rows(tag, QString("json:") + json);
    // Graphs and the depthwise, separable and transposed convolutions.
    add_round_trip_rows("resnet template", QString("json:") + QString::fromStdString(resnet_without_schedule()));
    const std::pair<const char*, const char*> graphs[] = {{"graph vertices on images", kGraphImages},
                                                          {"graph vertices on flat features", kGraphFlat},
                                                          {"graph dense on conv branches", kGraphBranches},
                                                          {"depthwise and separable", kSeparable},
                                                          {"transposed", kTransposed}};
    for (const auto& [tag, json] : graphs) add_round_trip_rows(tag, QString("json:") + json);
    // Image outputs: a Conv2D whose softmax is over each pixel's channels (channels last in Keras),
    // after spatial dropout; an autoencoder ending in a sigmoid Conv2DTranspose.
    add_round_trip_rows("segmentation head", QString("json:") + kSegmentationHead);
    add_round_trip_rows("autoencoder", QString("json:") + kAutoencoder);
    // Real Keras files with weights: a ResNet-style functional model (conv, bn, add, relu, concat),
    // and Sequential models of the new convolutions, their own parameters going round.
    // And a model with two inputs and two outputs, and one of Reshape and Permute layers.
    add_round_trip_rows("reshape and permute", QString("json:") + kReshapePermute);
    for (const char* name : {"keras2_residual_concat.h5", "keras2_depthwise_separable.h5", "keras2_conv_transpose.h5",
                             "keras2_two_inputs_two_outputs.h5", "keras2_reshape_permute.h5",
                             // Shared layers (one Keras layer with two inbound nodes) and nested
                             // models (written flattened).
                             "keras2_siamese_shared.h5", "keras2_nested_models.h5"})
        add_round_trip_rows(name, root + "/tests/engine/config/data/graphs/" + name);
}

void TestKerasExport::round_trip() {
    QFETCH(QString, path);
    QFETCH(int, format);
    const auto f = static_cast<ExportFormat>(format);
    const QString tag = QString(QTest::currentDataTag()).replace('/', '_');
    const auto m = path.startsWith("json:")
                       ? with_random_params(config::ModelConfig::parse(path.mid(5).toStdString(), tag.toStdString()), tag.toStdString() + ".thr", 7)
                       : model_from_file(path, 7);
    const QString out = dir_.filePath(tag + format_suffix(f));
    const auto summary = model_export::export_model(m, f, out.toStdString());
    QCOMPARE(static_cast<qint64>(summary.bytes), QFileInfo(out).size());

    const auto back = config::import_model_with_weights(read_bytes(out), QFileInfo(out).fileName().toStdString());
    QCOMPARE(back.format, config::ModelFormat::Keras);
    const auto want = architecture(m.config), got = architecture(back.model);
    QVERIFY2(want == got, qPrintable(QString("architecture changed:\n  exported %1\n  imported %2")
                                         .arg(QString::fromStdString(want.dump()), QString::fromStdString(got.dump()))));
    // Names a model had are kept (an imported Keras file's own, a config's).
    for (std::size_t i = 0; i < m.config.layers.size(); ++i)
        if (!m.config.layers[i].name.empty() && m.config.layers[i].name.find('/') == std::string::npos &&
            m.config.layers[i].name.find('[') == std::string::npos)
            QCOMPARE(back.model.layers[i].name, m.config.layers[i].name);
    QCOMPARE(back.params.size(), m.params.size());
    const bool identical = std::memcmp(back.params.data(), m.params.data(), m.params.size() * sizeof(float)) == 0;
    double max_diff = 0;
    for (std::size_t i = 0; i < m.params.size(); ++i) max_diff = std::max(max_diff, std::fabs(double(back.params[i]) - m.params[i]));
    qInfo("%s: %zu bytes, %zu parameters, max |import(export(m)) - m| = %g", QTest::currentDataTag(), summary.bytes,
          m.params.size(), max_diff);
    QVERIFY2(identical, qPrintable(QString("parameters differ (max |diff| %1)").arg(max_diff)));
}

void TestKerasExport::h5py_reads_the_files_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QStringList>("classes");  // the Keras layer classes expected, in order
    QTest::addColumn<QStringList>("names");    // and their names (empty: not checked)
    QTest::addColumn<QStringList>("class_names");
    // What each Keras layer reads, "a,b" (a Functional model's inbound nodes; empty: a Sequential)
    QTest::addColumn<QStringList>("inbound");
    const QString root = test_support::source_dir();
    const QString lenet = QString::fromStdString(read_text(root + "/resources/models/lenet.json"));
    const QString mlp = QString::fromStdString(read_text(root + "/resources/models/mlp.json"));
    const QStringList fashion{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
    QTest::newRow("lenet") << lenet << QStringList{"Conv2D", "MaxPooling2D", "Conv2D", "MaxPooling2D", "Flatten", "Dense", "Dense"}
                           << QStringList{"conv2d", "max_pooling2d", "conv2d_1", "max_pooling2d_1", "flatten", "dense", "dense_1"} << fashion << QStringList{};
    QTest::newRow("mlp") << mlp << QStringList{"Dense", "Dense", "Dense"} << QStringList{"dense", "dense_1", "dense_2"} << QStringList{} << QStringList{};
    QTest::newRow("geometry") << QString(kZooGeometry)
                              << QStringList{"Conv2D", "ZeroPadding2D", "Conv2D", "MaxPooling2D", "AveragePooling2D", "Flatten", "Dense"}
                              << QStringList{"conv_same", "zero_padding2d", "conv_dilated", "max_same", "avg_same", "flatten", "out"}
                              << QStringList{} << QStringList{};
    QTest::newRow("resize") << QString(kZooResize)
                            << QStringList{"ZeroPadding2D", "Conv2D", "Cropping2D", "UpSampling2D", "MaxPooling2D", "Flatten", "Dense",
                                           "Activation", "Dense"}
                            << QStringList{} << QStringList{} << QStringList{};
    QTest::newRow("norms") << QString(kZooNorms)
                           << QStringList{"Conv2D", "BatchNormalization", "PReLU", "PReLU", "PReLU", "Dropout", "Flatten", "Dense",
                                          "BatchNormalization", "PReLU", "Dropout", "Dense"}
                           << QStringList{} << QStringList{} << QStringList{};
    QTest::newRow("global") << QString(kZooGlobal)
                            << QStringList{"Conv2D", "GlobalAveragePooling2D", "BatchNormalization", "PReLU", "Dense"} << QStringList{}
                            << QStringList{} << QStringList{};
    QTest::newRow("activations") << QString(kZooActivations)
                                 << QStringList{"Dense", "LeakyReLU", "Dense", "ELU", "Dense", "ReLU", "Dense", "ReLU", "Dense", "Dense",
                                                "Dense", "Dense", "Dense", "Dense", "Dense"}
                                 << QStringList{} << QStringList{} << QStringList{};
    // Graphs: Functional models, their merge layers and what each layer reads.
    QTest::newRow("graph vertices on images")
        << QString(kGraphImages)
        << QStringList{"Conv2D", "Conv2D", "Subtract", "Multiply", "Maximum", "Average", "Add", "Concatenate", "Flatten", "Dense"}
        << QStringList{"a", "b", "sub", "mul", "max", "avg", "sum", "cat", "flatten", "out"} << QStringList{}
        << QStringList{"input", "input", "a,b", "sub,a,b", "mul,b", "max,a,sub", "avg,a", "sum,avg,input", "cat", "flatten"};
    QTest::newRow("graph vertices on flat features")
        << QString(kGraphFlat)
        << QStringList{"GlobalAveragePooling2D", "Flatten", "Dense", "Add", "Subtract", "Multiply", "Maximum", "Average",
                       "Concatenate", "Dense"}
        << QStringList{"gap", "flatten", "d", "sum", "diff", "prod", "most", "mean", "cat", "out"} << QStringList{}
        << QStringList{"input", "input", "flatten", "gap,d", "gap,d", "sum,diff", "prod,d,gap", "most,sum", "d,gap,mean", "cat"};
    QTest::newRow("graph dense on conv branches")
        << QString(kGraphBranches)
        << QStringList{"Conv2D", "LeakyReLU", "Flatten", "Dense", "ZeroPadding2D", "Conv2D", "BatchNormalization", "PReLU",
                       "MaxPooling2D", "Flatten", "Dense", "Add", "Dense"}
        << QStringList{"conv", "leaky_re_lu", "flatten", "from_conv", "zero_padding2d", "padded", "bn", "prelu", "pool",
                       "flatten_1", "from_pool", "join", "out"}
        << QStringList{}
        << QStringList{"input", "conv", "leaky_re_lu", "flatten", "input", "zero_padding2d", "padded", "bn", "prelu", "pool",
                       "flatten_1", "from_conv,from_pool", "join"};
    QTest::newRow("resnet template") << QString::fromStdString(resnet_without_schedule())
        << QStringList{"Conv2D", "BatchNormalization", "Activation", "Conv2D", "BatchNormalization", "Activation", "Conv2D",
                       "BatchNormalization", "Add", "Activation", "Conv2D", "BatchNormalization", "Activation", "Conv2D",
                       "BatchNormalization", "Conv2D", "Add", "Activation", "Conv2D", "BatchNormalization", "Activation", "Conv2D",
                       "BatchNormalization", "Conv2D", "Add", "Activation", "GlobalAveragePooling2D", "Dense"}
        << QStringList{} << QStringList{}
        << QStringList{"input", "stem", "stem_bn", "stem_relu", "b1_conv1", "b1_bn1", "b1_relu1", "b1_conv2", "b1_bn2,stem_relu",
                       "b1_add", "b1_out", "b2_conv1", "b2_bn1", "b2_relu1", "b2_conv2", "b1_out", "b2_bn2,b2_shortcut", "b2_add",
                       "b2_out", "b3_conv1", "b3_bn1", "b3_relu1", "b3_conv2", "b2_out", "b3_bn2,b3_shortcut", "b3_add", "b3_out",
                       "pool"};
    // The new convolutions (a Sequential): depthwise_kernel [kh, kw, in, multiplier], pointwise_kernel
    // [1, 1, in * multiplier, filters], Conv2DTranspose's kernel [kh, kw, filters, in].
    QTest::newRow("depthwise and separable")
        << QString(kSeparable)
        << QStringList{"DepthwiseConv2D", "SeparableConv2D", "DepthwiseConv2D", "LeakyReLU", "SeparableConv2D", "Flatten", "Dense"}
        << QStringList{"dw", "sep", "dw_strided", "leaky_re_lu", "sep_same", "flatten", "out"} << QStringList{} << QStringList{};
    // Two inputs and two outputs: both InputLayers first, output_layers main output first.
    QTest::newRow("two inputs, two outputs") << QString::fromStdString(read_text(root + "/resources/models/two_input.json"))
        << QStringList{"Conv2D", "MaxPooling2D", "Conv2D", "MaxPooling2D", "Flatten", "Dense", "Concatenate", "Flatten", "Dense", "Dense"}
        << QStringList{"top_conv", "top_pool", "bottom_conv", "bottom_pool", "flatten", "top_guess", "both", "flatten_1", "fc",
                       "predictions"}
        << QStringList{}
        << QStringList{"top", "top_conv", "bottom", "bottom_conv", "top_pool", "flatten", "top_pool,bottom_pool", "both",
                       "flatten_1", "fc"};
    QTest::newRow("reshape and permute") << QString(kReshapePermute)
        << QStringList{"Dense", "Reshape", "Conv2D", "Permute", "Permute", "Reshape", "Dense", "Reshape", "Conv2D", "Flatten", "Dense"}
        << QStringList{"d", "to_image", "conv", "whc", "hcw", "to_flat", "d2", "column", "conv2", "flatten", "out"} << QStringList{}
        << QStringList{};
    QTest::newRow("segmentation head") << QString(kSegmentationHead) << QStringList{"Conv2D", "SpatialDropout2D", "Conv2D"}
                                       << QStringList{"c", "sd", "seg"} << QStringList{} << QStringList{};
    QTest::newRow("transposed") << QString(kTransposed)
                                << QStringList{"Conv2DTranspose", "Conv2DTranspose", "Conv2DTranspose", "Flatten", "Dense"}
                                << QStringList{"up", "same", "dilated", "flatten", "out"} << QStringList{} << QStringList{};
}

void TestKerasExport::h5py_reads_the_files() {
    QFETCH(QString, json);
    QFETCH(QStringList, classes);
    QFETCH(QStringList, names);
    QFETCH(QStringList, class_names);
    QFETCH(QStringList, inbound);
    check_with_h5py(QTest::currentDataTag(), json, classes, names, class_names, inbound, nlohmann::json::object());
}

// A shared layer is one Keras layer with an inbound node per call; its readers name the node.
void TestKerasExport::h5py_sequence_export_matches_original_data() {
    QTest::addColumn<QString>("original");
    QTest::addColumn<int>("format");
    const QString dir = test_support::source_dir() + "/tests/engine/config/data/sequences/";
    for (const auto& name : QDir(dir).entryList({"*.h5", "*.keras"}))
        for (const auto format : {ExportFormat::KerasH5, ExportFormat::Keras})
            QTest::newRow(qPrintable(name + format_suffix(format))) << dir + name << static_cast<int>(format);
}

void TestKerasExport::h5py_sequence_export_matches_original() {
    QFETCH(QString, original);
    QFETCH(int, format);
    const auto m = model_from_file(original, 1);  // the file's own weights
    const QString out = dir_.filePath(QString(QTest::currentDataTag()).replace('/', '_') + "_seq" + format_suffix(static_cast<ExportFormat>(format)));
    model_export::export_model(m, static_cast<ExportFormat>(format), out.toStdString());
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(debian_python(), {test_support::source_dir() + "/tests/tools/keras_files/check_sequence_export.py", original, out});
    QVERIFY(p.waitForFinished(120000));
    const QString said = QString::fromUtf8(p.readAll()).trimmed();
    qInfo("%s: %s", QTest::currentDataTag(), qPrintable(said.section('\n', -1)));
    QVERIFY2(p.exitCode() == 0, qPrintable(said));
}

void TestKerasExport::h5py_reads_shared_layers() {
    const QString siamese = QString::fromStdString(read_text(test_support::source_dir() + "/resources/models/siamese.json"));
    const nlohmann::json calls{{"conv", {{"top"}, {"bottom"}}},
                               {"pool", {{"conv"}, {"conv@1"}}},
                               {"flatten", {{"pool"}}},
                               {"embed", {{"flatten"}, {"flatten_1"}}},
                               {"flatten_1", {{"pool@1"}}},
                               {"both", nlohmann::json::array({nlohmann::json::array({"embed", "embed@1"})})}};
    check_with_h5py("siamese", siamese, {"Conv2D", "MaxPooling2D", "Flatten", "Dense", "Flatten", "Concatenate", "Dense"},
                    {"conv", "pool", "flatten", "embed", "flatten_1", "both", "predictions"}, {},
                    {"top", "conv", "pool", "flatten", "pool", "embed,embed", "both"}, {{"keras_calls", calls}});
}

void TestKerasExport::check_with_h5py(const std::string& tag, const QString& json, const QStringList& classes, const QStringList& names,
                                      const QStringList& class_names, const QStringList& inbound, const nlohmann::json& extra) {
    auto m = with_random_params(config::ModelConfig::parse(json.toStdString(), tag), tag + ".thr", 11);
    for (const auto& c : class_names) m.class_names.push_back(c.toStdString());

    // The Thresher side, in Thresher's terms: the reader derives Keras's layouts itself.
    nlohmann::json expect{{"keras_classes", nlohmann::json::array()}, {"layers", nlohmann::json::array()}};
    for (const auto& c : classes) expect["keras_classes"].push_back(c.toStdString());
    if (!names.isEmpty())
        for (const auto& n : names) expect["keras_names"].push_back(n.toStdString());
    if (!m.class_names.empty()) expect["class_names"] = m.class_names;
    expect["functional"] = m.config.is_graph();
    if (m.config.input_count() > 1)
        for (std::size_t k = 0; k < m.config.input_count(); ++k) expect["input_names"].push_back(m.config.input_name_of(k));
    if (m.config.output_layers.size() > 1)
        for (const auto j : m.config.output_layers) expect["output_names"].push_back(m.config.layers[j].name);
    for (const auto& reads : inbound) {
        auto names_read = nlohmann::json::array();
        for (const auto& n : reads.split(',')) names_read.push_back(n.toStdString());
        expect["keras_inbound"].push_back(names_read);
    }
    for (const auto& [key, value] : extra.items()) expect[key] = value;
    for (const auto& l : m.config.layers) {
        if (l.param_count == 0) continue;
        nlohmann::json layer{{"type", config::to_string(l.type)},
                             {"in", {l.in_shape.c, l.in_shape.h, l.in_shape.w}},
                             {"units", l.units},
                             {"kernel", {l.kernel[0], l.kernel[1]}},
                             {"depth_multiplier", l.depth_multiplier},
                             {"prelu_shared", {l.prelu_shared[0], l.prelu_shared[1], l.prelu_shared[2]}}};
        static const char* roles[] = {"weight", "bias", "gamma", "beta", "running_mean", "running_var", "alpha", "depthwise"};
        for (const auto& b : l.blocks) {
            const float* p = m.params.data() + l.param_offset + b.offset;
            layer["params"][roles[static_cast<int>(b.role)]] = std::vector<float>(p, p + b.size);
        }
        expect["layers"].push_back(std::move(layer));
    }
    for (const auto format : {ExportFormat::KerasH5, ExportFormat::Keras}) {
        const QString out = dir_.filePath(QString::fromStdString(tag) + "_h5py" + format_suffix(format));
        const auto summary = model_export::export_model(m, format, out.toStdString());
        expect["format"] = model_export::to_string(format);
        const QString expect_path = out + ".expect.json";
        std::ofstream(expect_path.toStdString()) << expect.dump();
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(debian_python(), {test_support::source_dir() + "/tests/tools/keras_files/check_keras_export.py", out, expect_path});
        QVERIFY(p.waitForFinished(120000));
        const QString said = QString::fromUtf8(p.readAll()).trimmed();
        qInfo("%s (%zu bytes): %s", qPrintable(QFileInfo(out).fileName()), summary.bytes, qPrintable(said.section('\n', -1)));
        QVERIFY2(p.exitCode() == 0, qPrintable(said));
    }
}

void TestKerasExport::names_kept_and_made_unique() {
    // Kept: a usable name not taken before; made: Keras's automatic names around the kept ones
    // (the second conv2d-to-be is "conv2d_2": "conv2d_1" is a kept name further on).
    auto m = with_random_params(config::ModelConfig::parse(R"({"name":"named","input":{"channels":1,"height":8,"width":8},
        "layers":[{"type":"convolution","filters":2,"kernel":[3,3]},
                  {"type":"convolution","name":"a/b","filters":2,"kernel":[2,2]},
                  {"type":"convolution","name":"conv2d_1","filters":2,"kernel":[2,2]},
                  {"type":"dense","name":"fc","units":4},
                  {"type":"output","name":"fc","units":2,"loss":"mcxent"}]})", "named.json"), "named.thr", 3);
    const auto k = model_export::plan_keras_model(m, model_export::KerasDialect::Keras2);
    QStringList names;
    for (const auto& l : k.layers) names << QString::fromStdString(l.name);
    QCOMPARE(names, (QStringList{"conv2d", "conv2d_2", "conv2d_1", "flatten", "fc", "dense"}));
    QCOMPARE(QString::fromStdString(k.input_name), QString("input_layer"));
    QCOMPARE(model_export::keras_snake_case("PReLU"), std::string("p_re_lu"));
    QCOMPARE(model_export::keras_snake_case("GlobalAveragePooling2D"), std::string("global_average_pooling2d"));
    QCOMPARE(model_export::keras_snake_case("LeakyReLU"), std::string("leaky_re_lu"));
}

void TestKerasExport::refused_layer_named_and_nothing_written_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<bool>("normalize");
    QTest::addColumn<int>("format");
    QTest::addColumn<QString>("message");
    const QString pool = R"({"name":"padded","input":{"channels":1,"height":8,"width":8},
        "layers":[{"type":"convolution","name":"conv","filters":2,"kernel":[3,3]},
                  {"type":"subsampling","name":"pool1","pooling":"max","kernel":[2,2],"stride":[2,2],"padding":[1,1]},
                  {"type":"output","units":2,"loss":"mcxent"}]})";
    const QString peepholes = R"({"name":"graves","input":{"steps":4,"features":2},
        "layers":[{"type":"lstm","name":"graves","units":3,"peepholes":true},{"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("lstm peepholes") << peepholes << false << int(ExportFormat::KerasH5)
        << R"(graves.thr: layers[0] (lstm "graves"): Keras cannot express this layer: an LSTM with peepholes (DL4J's GravesLSTM): Keras's LSTM has none; nothing was written)";
    QTest::newRow("padded pooling") << pool << false << int(ExportFormat::KerasH5)
                                    << R"(padded.thr: layers[1] (subsampling "pool1"): Keras cannot express this layer: padding 1x1: Keras pools with "valid" or "same" padding only; nothing was written)";
    const QString hard = R"({"name":"hard","input":{"size":4},
        "layers":[{"type":"dense","name":"h","units":3,"activation":"hardsigmoid"},{"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("hard_sigmoid in Keras 3") << hard << false << int(ExportFormat::Keras)
                                             << R"(hard.thr: layers[0] (dense "h"): Keras cannot express this layer: hardsigmoid with slope 0.2: Keras 3's hard_sigmoid has slope 1/6; nothing was written)";
    const QString gelu = R"({"name":"gelu","input":{"size":4},
        "layers":[{"type":"dense","name":"g","units":3,"activation":"gelu_tanh"},{"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("gelu_tanh") << gelu << false << int(ExportFormat::KerasH5)
                               << R"(gelu.thr: layers[0] (dense "g"): Keras cannot express this layer: activation gelu_tanh has no Keras form (Keras names no such activation); nothing was written)";
    // The ResNet template as shipped: its graph goes (round_trip), its schedule by epoch does not.
    const QString resnet = QString::fromStdString(read_text(test_support::source_dir() + "/resources/models/resnet.json"));
    QTest::newRow("the ResNet template's epoch schedule") << resnet << false << int(ExportFormat::KerasH5)
        << QString::fromUtf8(R"(resnet.thr: updater: learning-rate schedule "map by epoch: 0→0.002, 2→0.0004": Keras schedules count iterations, this one epochs; nothing was written)");
    // A subset vertex (DL4J's SubsetVertex) has no Keras layer; named before anything is written.
    const QString subset = R"({"name":"subset","input":{"channels":2,"height":6,"width":5},
        "layers":[{"type":"convolution","name":"a","filters":4,"kernel":[3,3],"mode":"same","activation":"tanh"},
                  {"type":"add","name":"sum","inputs":["a","a"]},
                  {"type":"subset","name":"half","inputs":"sum","channels":[1,2]},
                  {"type":"concatenate","name":"cat","inputs":["half","input"]},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
    QTest::newRow("subset vertex") << subset << false << int(ExportFormat::Keras)
        << R"(subset.thr: layers[2] (subset "half"): Keras cannot express this layer: a subset vertex keeps channels 1 to 2, and Keras has no layer that slices channels (only a Lambda, which is Python code a saved model cannot carry); nothing was written)";
    // Thresher's shapes agree (2x1x1), Keras's ranks do not: global pooling gives features, a
    // 4x4 convolution of a 4x4 image a 1x1 image.
    const QString ranks = R"({"name":"ranks","input":{"channels":2,"height":4,"width":4},
        "layers":[{"type":"subsampling","name":"gap","pooling":"avg","global":true},
                  {"type":"convolution","name":"conv","inputs":"input","filters":2,"kernel":[4,4]},
                  {"type":"add","name":"join","inputs":["gap","conv"]},
                  {"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("image joined with features") << ranks << false << int(ExportFormat::KerasH5)
        << R"(ranks.thr: layers[2] (add "join"): Keras cannot express this layer: it joins flat features (layers[0] (subsampling "gap"), after global pooling or a Flatten in Keras) with an image (layers[1] (convolution "conv")), and Keras's Add needs inputs of one rank; nothing was written)";
    const QString depthwise = R"({"name":"dwpad","input":{"channels":2,"height":6,"width":5},
        "layers":[{"type":"depthwise_convolution","name":"dw","kernel":[3,3],"padding":[1,1]},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
    QTest::newRow("padded depthwise convolution") << depthwise << false << int(ExportFormat::KerasH5)
        << R"(dwpad.thr: layers[0] (depthwise_convolution "dw"): Keras cannot express this layer: padding 1x1: Keras's DepthwiseConv2D pads "valid" or "same" only (use mode "same", or a zero_padding layer before it); nothing was written)";
    const QString transposed = R"({"name":"tdil","input":{"channels":2,"height":6,"width":5},
        "layers":[{"type":"transposed_convolution","name":"up","filters":2,"kernel":[3,3],"stride":[2,2],"dilation":[2,2]},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
    QTest::newRow("strided dilated transposed convolution") << transposed << false << int(ExportFormat::Keras)
        << R"(tdil.thr: layers[0] (transposed_convolution "up"): Keras cannot express this layer: strides above 1 together with a dilation above 1 (Keras's Conv2DTranspose allows one or the other); nothing was written)";
    // A channels-first reshape that moves values (Keras's Reshape counts channels last).
    const QString cf = R"({"name":"cfirst","input":{"channels":2,"height":3,"width":4},
        "layers":[{"type":"reshape","name":"r","shape":{"channels":4,"height":3,"width":2}},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
    QTest::newRow("channels-first reshape") << cf << false << int(ExportFormat::KerasH5)
        << R"(cfirst.thr: layers[0] (reshape "r"): Keras cannot express this layer: a reshape in channels_first order from 2x3x4 to 4x3x2 keeps Thresher's channels-first value order, and Keras's Reshape counts values channels last (give the reshape "order": "channels_last", or Permute around it); nothing was written)";
    const QString mlp = QString::fromStdString(read_text(test_support::source_dir() + "/resources/models/mlp.json"));
    QTest::newRow("normalisation") << mlp << true << int(ExportFormat::Keras)
                                   << "mlp.thr: the model standardizes its inputs, and a Keras export does not write that normalisation "
                                      "(a Keras Normalization layer) yet: export to ONNX, whose graph applies it; nothing was written";
}

void TestKerasExport::refused_layer_named_and_nothing_written() {
    QFETCH(QString, json);
    QFETCH(bool, normalize);
    QFETCH(int, format);
    QFETCH(QString, message);
    const auto cfg = config::ModelConfig::parse(json.toStdString(), "model.json");
    auto m = with_random_params(cfg, cfg.name + ".thr", 1);
    if (normalize) {
        m.normalization.kind = "standardize";
        m.normalization.shift.assign(cfg.input.size(), 0.5f);
        m.normalization.scale.assign(cfg.input.size(), 2.f);
    }
    QTemporaryDir out;
    const QString path = out.filePath("refused" + format_suffix(static_cast<ExportFormat>(format)));
    try {
        model_export::export_model(m, static_cast<ExportFormat>(format), path.toStdString());
        QFAIL("the model was exported");
    } catch (const model_export::ExportError& e) {
        QCOMPARE(QString(e.what()), message);
    }
    QCOMPARE(QDir(out.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{});
}

QTEST_GUILESS_MAIN(TestKerasExport)
#include "test_keras_export.moc"
