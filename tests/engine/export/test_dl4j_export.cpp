// DL4J exports (the zip ModelSerializer writes for a MultiLayerNetwork) read back by Thresher's
// own DL4J zip importer (config/weight_import.cpp, which `inspect` and `train --model` use):
// - import(export(m)) has m's architecture and bit-identical parameters, for the templates in
//   resources/models, the DL4J configs in the test data (random parameters), and models of every
//   layer kind DL4J can express (depthwise, separable and transposed convolutions included);
// - graphs (ComputationGraphConfiguration): the same, layer by layer under their names (DL4J's
//   topological order may put the layers in another order); the coefficients of
//   dl4j_residual_concat (flattened by make_graph_references.py's own emulation of DL4J's order)
//   come back byte for byte; DL4J's own cached topological orders in the graph corpus are the
//   order Thresher computes;
// - graphs with several inputs and outputs (networkInputs, networkOutputs in the model's order,
//   each output layer with its own loss) and channels-first reshapes (ReshapeVertex) too;
// - a zip exported with Nesterovs or Adam state takes the same next step as the network it came
//   from (within 1e-6), a layer stack's and a graph's (the two-input template's too);
// - coefficients.bin is the ND4J array DL4J 1.0 writes ([1, N] FLOAT, 'c'), and
//   configuration.json has every field the real DL4J files in the test data have;
// - normalizer.bin reads back to the model's input normalisation;
// - a model DL4J cannot express is refused naming the layer, and nothing is written.
#include <QDir>
#include <QFile>
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
#include "backend/registry.h"
#include "config/dl4j_graph.h"
#include "config/model_format.h"
#include "config/zip_archive.h"
#include "config/nd4j_array.h"
#include "config/weight_import.h"
#include "export/dl4j_export.h"
#include "export/model_export.h"
#include "export/nd4j_writer.h"
#include "nn/model_file.h"
#include "nn/network.h"
#include "source_dir.h"
#include "weight_files.h"

using namespace thresher;
using model_export::ExportFormat;
using nlohmann::json;

namespace {

using test_export::read_bytes;
using test_export::read_text;
using test_export::with_random_params;




// What import(export(m)) must keep: the config as Thresher JSON without the names (unnamed
// layers come back as "layer<i>") and the seed; PReLU's alpha_init, which DL4J does not keep (it
// draws alpha from the weight init). A dense first layer reads an image as its C·H·W features
// (DL4J keeps no image shape in front of a dense layer): the same numbers in the same order.
json architecture(const config::ModelConfig& c) {
    auto j = c.to_json();
    j.erase("name");
    j.erase("seed");
    if (!c.layers.empty() && (c.layers[0].type == config::LayerType::Dense || c.layers[0].type == config::LayerType::Output))
        j["input"] = json{{"size", c.input.size()}};
    for (auto& l : j["layers"]) {
        l.erase("name");
        l.erase("alpha_init");
    }
    return j;
}

const char* kZooGeometry = R"({"name":"geometry","input":{"channels":3,"height":11,"width":10},
    "layers":[
      {"type":"convolution","name":"conv_same","filters":4,"kernel":[3,2],"stride":[2,2],"mode":"same","activation":"tanh"},
      {"type":"convolution","name":"conv_dilated","filters":5,"kernel":[2,2],"dilation":[2,1],"padding":[1,1],"activation":"relu"},
      {"type":"subsampling","name":"max_same","pooling":"max","kernel":[3,3],"stride":[2,2],"mode":"same"},
      {"type":"subsampling","name":"avg_padded","pooling":"avg","kernel":[2,2],"stride":[1,1],"padding":[1,1]},
      {"type":"output","name":"out","units":3,"activation":"softmax","loss":"negativeloglikelihood"}]})";
const char* kZooResize = R"({"name":"resize","input":{"channels":2,"height":7,"width":6},
    "layers":[
      {"type":"zero_padding","name":"pad","padding":[1,2,0,3]},
      {"type":"convolution","name":"conv","filters":3,"kernel":[3,3],"activation":"swish"},
      {"type":"cropping","name":"crop","cropping":[1,0,2,1]},
      {"type":"upsampling","name":"up","size":[2,3]},
      {"type":"activation","name":"act_image","activation":"elu","alpha":0.7},
      {"type":"subsampling","name":"pool","pooling":"max","kernel":[2,2],"stride":[2,2]},
      {"type":"dense","name":"dense","units":5,"activation":"tanh"},
      {"type":"activation","name":"act_flat","activation":"relu"},
      {"type":"output","name":"out","units":4,"activation":"softmax","loss":"mcxent"}]})";
const char* kZooNorms = R"({"name":"norms","input":{"channels":2,"height":6,"width":5},
    "updater":{"type":"rmsprop","learning_rate":0.01,"rms_decay":0.9,"epsilon":1e-7},
    "layers":[
      {"type":"dropout","name":"drop_input","retain":0.8},
      {"type":"convolution","name":"conv","filters":3,"kernel":[3,3],"activation":"identity"},
      {"type":"batch_norm","name":"bn_image","eps":0.001,"decay":0.99},
      {"type":"prelu","name":"prelu_per_channel","shared_axes":["height","width"]},
      {"type":"prelu","name":"prelu_per_position","shared_axes":["channels"]},
      {"type":"prelu","name":"prelu_every","alpha_init":0.25},
      {"type":"dropout","name":"drop_image","retain":0.6},
      {"type":"dense","name":"dense","units":7,"activation":"identity","updater":{"type":"adagrad","learning_rate":0.05}},
      {"type":"batch_norm","name":"bn_flat"},
      {"type":"prelu","name":"prelu_flat"},
      {"type":"dropout","name":"drop_flat","retain":0.5},
      {"type":"output","name":"out","units":4,"activation":"softmax","loss":"mcxent"}]})";
const char* kZooGlobal = R"({"name":"global","input":{"channels":2,"height":7,"width":7},
    "layers":[
      {"type":"convolution","name":"conv","filters":6,"kernel":[3,3],"activation":"relu6"},
      {"type":"subsampling","name":"gavg","pooling":"avg","global":true},
      {"type":"batch_norm","name":"bn"},
      {"type":"prelu","name":"prelu"},
      {"type":"dense","name":"d","units":3,"activation":"sigmoid"},
      {"type":"activation","name":"loss_layer","activation":"softmax","loss":"mcxent"}]})";
const char* kZooActivations = R"({"name":"activations","input":{"size":12},"weight_init":"uniform",
    "updater":{"type":"adam","learning_rate":0.005,"beta1":0.8,"beta2":0.99,"epsilon":1e-6},"l1":0.0001,"l2":0.001,
    "layers":[
      {"type":"dense","name":"leaky","units":12,"activation":"leakyrelu","alpha":0.2},
      {"type":"dense","name":"elu","units":12,"activation":"elu","alpha":0.5},
      {"type":"dense","name":"relu6","units":12,"activation":"relu6"},
      {"type":"dense","name":"thresholded","units":12,"activation":"thresholdedrelu","alpha":0.1},
      {"type":"dense","name":"selu","units":12,"activation":"selu"},
      {"type":"dense","name":"softplus","units":12,"activation":"softplus"},
      {"type":"dense","name":"softsign","units":12,"activation":"softsign","weight_init":"relu"},
      {"type":"dense","name":"sigmoid","units":12,"activation":"sigmoid","weight_init":"zero"},
      {"type":"dense","name":"hard","units":12,"activation":"hardsigmoid"},
      {"type":"dense","name":"gelu","units":12,"activation":"gelu_sigmoid","weight_init":"xavier_uniform"},
      {"type":"dense","name":"swish","units":12,"activation":"swish","weight_init":"normal"},
      {"type":"output","name":"out","units":5,"activation":"identity","loss":"mse"}]})";
const char* kZooMae = R"({"name":"mae","input":{"size":5},"updater":{"type":"sgd","learning_rate":0.1,
    "schedule":{"type":"map","by":"epoch","values":{"0":0.1,"3":0.01}}},
    "layers":[{"type":"dense","units":4,"activation":"tanh"},{"type":"output","units":2,"activation":"identity","loss":"mae"}]})";
const char* kZooBinary = R"({"name":"binary","input":{"size":6},
    "updater":{"type":"sgd","schedule":{"type":"exponential","initial":0.1,"rate":0.5,"decay_steps":100,"staircase":true}},
    "layers":[{"type":"dense","units":8,"activation":"relu"},{"type":"output","units":1,"activation":"sigmoid","loss":"xent"}]})";


// A graph's architecture layer by layer, keyed by the name DL4J knows the layer by (`names`):
// each layer as Thresher JSON without its name, inputs and PReLU alpha_init, with "reads": the
// names of what it reads; and the rest of the model (input, updater, ...) without the name and seed.
json graph_architecture(const config::ModelConfig& c, const std::vector<std::string>& names) {
    auto j = c.to_json();
    j.erase("name");
    j.erase("seed");
    json layers = json::object();
    for (std::size_t i = 0; i < c.layers.size(); ++i) {
        auto l = j["layers"][i];
        l.erase("name");
        l.erase("inputs");
        l.erase("alpha_init");
        json reads = json::array();
        for (int s : c.layers[i].sources)
            reads.push_back(s < 0 ? "<" + c.input_name_of(config::LayerConfig::input_index(s)) + ">" : names[static_cast<std::size_t>(s)]);
        l["reads"] = reads;
        layers[names[i]] = l;
    }
    j["layers"] = layers;
    if (j.contains("input") && j["input"].is_object()) j["input"].erase("name");
    return j;
}

// The names a graph export gives the layers (a layer's own name, "layer<i>" for an unnamed one).
std::vector<std::string> export_names(const config::ModelConfig& c) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < c.layers.size(); ++i) out.push_back(c.layers[i].name.empty() ? "layer" + std::to_string(i) : c.layers[i].name);
    return out;
}

std::vector<std::string> own_names(const config::ModelConfig& c) {
    std::vector<std::string> out;
    for (const auto& l : c.layers) out.push_back(l.name);
    return out;
}

// Layer i of `a` is layer at[i] of `b` (the same name), or a failed check.
std::vector<std::size_t> match_layers(const std::vector<std::string>& a, const config::ModelConfig& b) {
    std::vector<std::size_t> at;
    for (const auto& name : a) {
        std::size_t k = 0;
        while (k < b.layers.size() && b.layers[k].name != name) ++k;
        at.push_back(k);
    }
    return at;
}

// Where each layer's updater state sits in Thresher's buffer (nn/network.cpp's layout: layer
// after layer, its trainable blocks times the values per parameter its updater keeps).
std::vector<std::pair<std::size_t, std::size_t>> state_slices(const config::ModelConfig& c) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t at = 0;
    for (std::size_t i = 0; i < c.layers.size(); ++i) {
        const auto k = static_cast<std::size_t>(vocab::updater_state_per_param(c.effective_updater(i).kind));
        std::size_t n = 0;
        for (const auto& b : c.layers[i].blocks)
            if (b.trainable()) n += b.size * k;
        out.emplace_back(at, n);
        at += n;
    }
    return out;
}

// max |a - b| over each layer's parameters (or updater state: `state`), layer i of a against
// layer at[i] of b; -1 when a layer's sizes differ.
double max_layer_diff(const config::ModelConfig& ca, const std::vector<float>& a, const config::ModelConfig& cb,
                      const std::vector<float>& b, const std::vector<std::size_t>& at, bool state) {
    const auto sa = state_slices(ca), sb = state_slices(cb);
    double worst = 0;
    for (std::size_t i = 0; i < ca.layers.size(); ++i) {
        if (at[i] >= cb.layers.size()) return -1;
        const auto& la = ca.layers[i];
        const auto& lb = cb.layers[at[i]];
        const std::size_t oa = state ? sa[i].first : la.param_offset, ob = state ? sb[at[i]].first : lb.param_offset;
        const std::size_t na = state ? sa[i].second : la.param_count, nb = state ? sb[at[i]].second : lb.param_count;
        if (na != nb) return -1;
        for (std::size_t k = 0; k < na; ++k) worst = std::max(worst, std::fabs(double(a[oa + k]) - b[ob + k]));
    }
    return worst;
}

const char* kGraphVerticesOnImages = R"({"name":"vertices","input":{"channels":2,"height":6,"width":5},
    "layers":[{"type":"convolution","name":"a","filters":4,"kernel":[3,3],"mode":"same","activation":"tanh"},
              {"type":"convolution","name":"b","inputs":"input","filters":4,"kernel":[1,1],"activation":"sigmoid"},
              {"type":"subtract","name":"sub","inputs":["a","b"]},
              {"type":"multiply","name":"mul","inputs":["sub","a","b"]},
              {"type":"maximum","name":"max","inputs":["mul","b"]},
              {"type":"average","name":"avg","inputs":["max","a","sub"]},
              {"type":"subset","name":"half","inputs":"avg","channels":[1,2]},
              {"type":"concatenate","name":"cat","inputs":["half","avg","input"]},
              {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
const char* kGraphVerticesOnFlat = R"({"name":"flat_vertices","input":{"channels":3,"height":4,"width":4},
    "layers":[{"type":"subsampling","name":"gap","pooling":"avg","global":true},
              {"type":"dense","name":"d","inputs":"input","units":3,"activation":"tanh"},
              {"type":"add","name":"sum","inputs":["gap","d"]},
              {"type":"concatenate","name":"cat","inputs":["d","gap","sum"]},
              {"type":"subset","name":"part","channels":[2,6]},
              {"type":"output","units":2,"activation":"softmax","loss":"mcxent"}]})";
// Two branches of the input, each a chain, so DL4J's breadth-first order interleaves them (a, p,
// a2, p2, ...) where Thresher lists a whole branch first; depthwise, separable and transposed
// convolutions, batch norm and PReLU inside.
const char* kGraphBranches = R"({"name":"branches","input":{"channels":2,"height":7,"width":6},
    "updater":{"type":"adam","learning_rate":0.01},
    "layers":[{"type":"convolution","name":"a","filters":3,"kernel":[3,3],"mode":"same","activation":"relu"},
              {"type":"batch_norm","name":"a_bn"},
              {"type":"depthwise_convolution","name":"a_dw","depth_multiplier":2,"kernel":[3,3],"mode":"same","activation":"tanh"},
              {"type":"separable_convolution","name":"p","inputs":"input","filters":6,"depth_multiplier":2,"kernel":[3,2],"mode":"same","activation":"relu"},
              {"type":"prelu","name":"p_prelu","shared_axes":["height","width"]},
              {"type":"add","name":"sum","inputs":["a_dw","p_prelu"]},
              {"type":"transposed_convolution","name":"up","filters":2,"kernel":[3,3],"stride":[2,2],"activation":"relu"},
              {"type":"subsampling","name":"pool","pooling":"max","kernel":[2,2],"stride":[2,2]},
              {"type":"dense","name":"fc","units":5,"activation":"tanh","updater":{"type":"nesterovs","learning_rate":0.05,"momentum":0.9}},
              {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})";
const char* kZooSeparable = R"({"name":"separable","input":{"channels":3,"height":9,"width":8},
    "layers":[{"type":"depthwise_convolution","name":"dw","depth_multiplier":2,"kernel":[3,3],"mode":"same","activation":"relu"},
              {"type":"separable_convolution","name":"sep","filters":4,"depth_multiplier":3,"kernel":[3,2],"stride":[2,1],"activation":"tanh"},
              {"type":"depthwise_convolution","name":"dw_dilated","depth_multiplier":1,"kernel":[2,2],"dilation":[2,1],"padding":[1,0]},
              {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
const char* kZooTransposed = R"({"name":"transposed","input":{"channels":2,"height":5,"width":6},
    "layers":[{"type":"transposed_convolution","name":"up","filters":3,"kernel":[3,3],"stride":[2,2],"activation":"relu"},
              {"type":"transposed_convolution","name":"same","filters":2,"kernel":[4,3],"stride":[2,1],"mode":"same","activation":"tanh"},
              {"type":"transposed_convolution","name":"padded","filters":2,"kernel":[3,3],"padding":[1,1]},
              {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";

// Three outputs with three losses, listed in another order than the layers (cls first), on two
// flat inputs.
const char* kGraphThreeOutputs = R"({"name":"three_outputs","input":[{"name":"a","size":6},{"name":"b","size":3}],
    "outputs":["cls","prob","reg"],
    "layers":[{"type":"dense","name":"h","inputs":"a","units":5,"activation":"tanh"},
              {"type":"dense","name":"g","inputs":"b","units":3,"activation":"relu"},
              {"type":"concatenate","name":"cat","inputs":["h","g"]},
              {"type":"output","name":"reg","inputs":"cat","units":2,"activation":"identity","loss":"mse"},
              {"type":"output","name":"prob","inputs":"h","units":3,"activation":"sigmoid","loss":"negativeloglikelihood"},
              {"type":"output","name":"cls","inputs":"cat","units":4,"activation":"softmax","loss":"mcxent"}]})";
// Channels-first reshapes (DL4J's ReshapeVertex): image to image, image to features, and one on
// the model's input (which DL4J reads through the input's PreprocessorVertex).
const char* kGraphReshape = R"({"name":"reshape","input":{"channels":2,"height":4,"width":6},
    "layers":[{"type":"convolution","name":"c","filters":3,"kernel":[3,3],"mode":"same","activation":"relu"},
              {"type":"reshape","name":"r","shape":{"channels":6,"height":2,"width":6}},
              {"type":"convolution","name":"c2","filters":2,"kernel":[2,2],"activation":"tanh"},
              {"type":"reshape","name":"flat","shape":{"size":10}},
              {"type":"reshape","name":"r0","inputs":"input","shape":{"channels":2,"height":6,"width":4}},
              {"type":"convolution","name":"c3","filters":1,"kernel":[1,1]},
              {"type":"reshape","name":"flat0","shape":{"size":24}},
              {"type":"concatenate","name":"cat","inputs":["flat","flat0"]},
              {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";

model_export::ExportableModel model_from_path(const QString& path, const std::string& tag) {
    if (path.startsWith("json:"))
        return with_random_params(config::ModelConfig::parse(path.mid(5).toStdString(), tag), tag + ".thr", 7);
    auto r = config::import_model_file(path.toStdString());
    return with_random_params(std::move(r.model), QFileInfo(path).completeBaseName().toStdString() + ".thr", 7);
}

// The .thr a run saves after 3 steps (one epoch), read back as export-model reads it.
model_export::ExportableModel saved_after_three_steps(const config::ModelConfig& cfg, nn::Network& net,
                                                      const std::string& thr, const std::string& source) {
    nn::ModelFile saved;
    saved.config = cfg;
    saved.params = net.get_params();
    saved.updater_state = net.get_updater_state();
    saved.position.iterations = 3;
    saved.position.epochs_done = 1;
    nn::save_model_file(thr, saved);
    const auto file = nn::load_model_file(thr);
    model_export::ExportableModel m;
    m.source = source;
    m.config = file.config;
    m.params = file.params;
    m.updater_state = file.updater_state;
    m.iterations = file.position.iterations;
    m.epochs = file.position.epochs_done;
    return m;
}

}  // namespace

class TestDl4jExport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QVERIFY(dir_.isValid()); }
    void round_trip_data();
    void round_trip();
    void coefficients_are_dl4j_arrays();
    void configuration_has_dl4j_fields();
    void resumes_with_the_same_step_data();
    void resumes_with_the_same_step();
    void graph_round_trip_data();
    void graph_round_trip();
    void graph_coefficients_in_dl4j_order();
    void dl4j_cached_topological_orders();
    void graph_resumes_with_the_same_step_data();
    void graph_resumes_with_the_same_step();
    void normalizer_round_trip_data();
    void normalizer_round_trip();
    void refused_layer_named_and_nothing_written_data();
    void refused_layer_named_and_nothing_written();
    void image_output_gets_a_cnn_loss_layer();

private:
    QTemporaryDir dir_;
};

void TestDl4jExport::round_trip_data() {
    QTest::addColumn<QString>("path");  // a model file, or a Thresher config's JSON text after "json:"
    const QString root = test_support::source_dir();
    for (const auto& name : QDir(root + "/resources/models").entryList({"*.json"}))
        // Sequence templates have no DL4J export yet (Keras export has: test_keras_export).
        if (name != "resnet.json" && name != "two_input.json" && name != "siamese.json" &&
            !nlohmann::json::parse(read_text(root + "/resources/models/" + name))["input"].contains("steps"))
            QTest::newRow(qPrintable("resources/models/" + name)) << root + "/resources/models/" + name;
    // Every DL4J configuration of the importer's test data that it imports (some are there to be
    // refused, as a NaN momentum).
    for (const auto& name : QDir(root + "/tests/engine/config/data").entryList({"dl4j_*.json"})) {
        const QString path = root + "/tests/engine/config/data/" + name;
        try {
            config::import_model_file(path.toStdString());
        } catch (const ConfigError&) {
            continue;
        }
        QTest::newRow(qPrintable(name)) << path;
    }
    const std::pair<const char*, const char*> zoo[] = {{"geometry", kZooGeometry}, {"resize", kZooResize},
                                                       {"norms", kZooNorms},       {"global", kZooGlobal},
                                                       {"activations", kZooActivations}, {"mae", kZooMae},
                                                       {"binary", kZooBinary},
                                                       {"depthwise and separable convolutions", kZooSeparable},
                                                       {"transposed convolutions", kZooTransposed}};
    for (const auto& [tag, text] : zoo) QTest::newRow(tag) << QString("json:") + text;
    // Every schedule DL4J has a class for, on a small MLP with Adam.
    const std::pair<const char*, const char*> schedules[] = {
        {"schedule exponential", R"({"type":"exponential","initial":0.1,"rate":0.99})"},
        {"schedule inverse", R"({"type":"inverse","initial":0.1,"rate":0.01,"power":0.75,"by":"epoch"})"},
        {"schedule poly", R"({"type":"poly","initial":0.1,"decay_steps":1000,"power":2})"},
        {"schedule sigmoid", R"({"type":"sigmoid","initial":0.1,"rate":-0.01,"step":500})"},
        {"schedule cycle", R"({"type":"cycle","initial":0.01,"max":0.1,"cycle_length":100,"annealing_length":10,"annealing_decay":0.2})"},
        {"schedule ramp around map", R"({"type":"map","values":{"0":0.1,"50":0.05},"ramp":10})"}};
    for (const auto& [tag, sched] : schedules)
        QTest::newRow(tag) << QString(R"(json:{"name":"sched","input":{"size":4},"updater":{"type":"adam","schedule":%1},
            "layers":[{"type":"dense","units":3,"activation":"relu"},{"type":"output","units":2,"activation":"softmax","loss":"mcxent"}]})")
                                  .arg(sched);
}

void TestDl4jExport::round_trip() {
    QFETCH(QString, path);
    const QString tag = QString(QTest::currentDataTag()).replace('/', '_');
    const auto m = model_from_path(path, tag.toStdString());
    const QString out = dir_.filePath(tag + ".zip");
    const auto summary = model_export::export_model(m, ExportFormat::Dl4j, out.toStdString());
    QCOMPARE(static_cast<qint64>(summary.bytes), QFileInfo(out).size());

    const auto back = config::import_model_file(out.toStdString());
    QCOMPARE(back.format, config::ModelFormat::Dl4j);
    const auto want = architecture(m.config), got = architecture(back.model);
    QVERIFY2(want == got, qPrintable(QString("architecture changed:\n  exported %1\n  imported %2")
                                         .arg(QString::fromStdString(want.dump()), QString::fromStdString(got.dump()))));
    for (std::size_t i = 0; i < m.config.layers.size(); ++i)
        if (!m.config.layers[i].name.empty()) QCOMPARE(back.model.layers[i].name, m.config.layers[i].name);
    QCOMPARE(back.params.size(), m.params.size());
    double max_diff = 0;
    for (std::size_t i = 0; i < m.params.size(); ++i) max_diff = std::max(max_diff, std::fabs(double(back.params[i]) - m.params[i]));
    qInfo("%s: %zu bytes, %zu parameters, max |import(export(m)) - m| = %g", QTest::currentDataTag(), summary.bytes,
          m.params.size(), max_diff);
    QVERIFY2(std::memcmp(back.params.data(), m.params.data(), m.params.size() * sizeof(float)) == 0,
             qPrintable(QString("parameters differ (max |diff| %1)").arg(max_diff)));
    QVERIFY(back.updater_state.empty());  // none given, none written
}

// A layer stack ending in a convolution with the loss (a Keras segmentation head): DL4J's outputs
// are output layers, so the file holds the convolution without its activation and a CnnLossLayer
// with the activation and the loss. Read back: the same parameters, one activation layer more,
// and the same predictions (a softmax over each pixel's channels either way).
void TestDl4jExport::image_output_gets_a_cnn_loss_layer() {
    const auto m = with_random_params(config::ModelConfig::parse(R"({"name":"seghead","input":{"channels":2,"height":5,"width":4},
        "layers":[{"type":"convolution","name":"body","filters":4,"kernel":[3,3],"mode":"same","activation":"relu"},
                  {"type":"dropout","retain":0.8,"spatial":true},
                  {"type":"convolution","name":"seg","filters":3,"kernel":[1,1],"activation":"softmax","loss":"mcxent"}]})", "seghead"),
                                      "seghead.thr", 9);
    const QString out = dir_.filePath("seghead.zip");
    model_export::export_model(m, ExportFormat::Dl4j, out.toStdString());
    const auto back = config::import_model_file(out.toStdString());
    QCOMPARE(back.model.layers.size(), std::size_t{4});
    QCOMPARE(back.model.layers[2].activation.kind, config::Activation::Identity);
    QCOMPARE(back.model.layers[3].type, config::LayerType::Activation);
    QCOMPARE(back.model.layers[3].activation.kind, config::Activation::Softmax);
    QCOMPARE(back.model.layers[3].loss, config::LossKind::MultiClassCrossEntropy);
    QCOMPARE(back.model.layers[3].out_shape, (config::Shape{3, 5, 4}));
    QVERIFY(back.model.layers[1].spatial);
    QVERIFY(std::memcmp(back.params.data(), m.params.data(), m.params.size() * sizeof(float)) == 0);
    auto be = backend::create_backend("cpu", {1});
    nn::Network a(m.config, *be), b(back.model, *be);
    a.set_params(m.params);
    b.set_params(back.params);
    std::vector<float> x(3 * 40), ya(3 * 60), yb(3 * 60);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * float(i));
    a.predict(x.data(), 3, ya.data());
    b.predict(x.data(), 3, yb.data());
    QCOMPARE(yb, ya);
}

// The header DL4J 1.0 writes (config/nd4j_array.h's worked example, with libnd4j's ARRAY_FLOAT
// in the extras slot), byte for byte, and what Thresher's reader makes of a whole export.
void TestDl4jExport::coefficients_are_dl4j_arrays() {
    const float one[] = {1.5f};
    const auto b = model_export::nd4j_row_bytes(one);
    QCOMPARE(b.size(), std::size_t{127});
    std::string want;
    auto utf = [&](const std::string& s) { want += char(0); want += char(s.size()); want += s; };
    auto i64 = [&](std::int64_t v) { for (int i = 7; i >= 0; --i) want += char((v >> (8 * i)) & 0xff); };
    utf("LONG_SHAPE");
    i64(8);
    utf("LONG");
    for (std::int64_t v : {2, 1, 1, 1, 1, 8192, 1, 99}) i64(v);
    utf("MIXED_DATA_TYPES");
    i64(1);
    utf("FLOAT");
    want += std::string("\x3f\xc0\x00\x00", 4);
    QCOMPARE(QByteArray::fromStdString(b).toHex(), QByteArray::fromStdString(want).toHex());

    const auto lenet = with_random_params(config::ModelConfig::load((test_support::source_dir() + "/resources/models/lenet.json").toStdString()),
                                          "lenet.thr", 3);
    const auto coef = model_export::dl4j_coefficients(lenet);
    const auto bytes = model_export::nd4j_row_bytes(coef);
    const auto a = config::read_nd4j_array(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), "coefficients.bin");
    QCOMPARE(a.shape, (std::vector<std::int64_t>{1, static_cast<std::int64_t>(lenet.params.size())}));
    QCOMPARE(a.order, 'c');
    QCOMPARE(a.data_type, std::string("FLOAT"));
    QCOMPARE(bytes.size(), 123 + 4 * lenet.params.size());
    QVERIFY(std::memcmp(a.data.data(), coef.data(), coef.size() * sizeof(float)) == 0);
    // DL4J's order: the first convolution's bias comes first.
    const auto& conv = lenet.config.layers[0];
    for (const auto& blk : conv.blocks)
        if (blk.role == config::ParamRole::Bias) QCOMPARE(coef[0], lenet.params[conv.param_offset + blk.offset]);
}

// Every field DL4J 1.0 wrote in the real LeNet configuration (dl4j_lenet.json) is in the export of
// the same network, at the top, per conf and per layer, with the same classes.
void TestDl4jExport::configuration_has_dl4j_fields() {
    const QString real_path = test_support::source_dir() + "/tests/engine/config/data/dl4j_lenet.json";
    const auto real = json::parse(read_text(real_path));
    const auto m = model_from_path(real_path, "dl4j_lenet");
    const auto ours = model_export::dl4j_configuration(m);
    auto missing = [](const json& want, const json& have) {
        QStringList out;
        for (const auto& [k, v] : want.items())
            if (!have.contains(k)) out << QString::fromStdString(k);
        return out;
    };
    QCOMPARE(missing(real, ours), QStringList{});
    QCOMPARE(ours["confs"].size(), real["confs"].size());
    for (std::size_t i = 0; i < real["confs"].size(); ++i) {
        const auto &rc = real["confs"][i], oc = ours["confs"][i];
        QCOMPARE(missing(rc, oc), QStringList{});
        QCOMPARE(missing(rc["layer"], oc["layer"]), QStringList{});
        QCOMPARE(oc["layer"]["@class"], rc["layer"]["@class"]);
        QCOMPARE(oc["variables"], rc["variables"]);
        for (const char* k : {"activationFn", "iupdater", "lossFn", "weightInitFn", "regularization"})
            if (rc["layer"].contains(k) && rc["layer"][k].is_object()) QCOMPARE(oc["layer"][k]["@class"], rc["layer"][k]["@class"]);
    }
    QCOMPARE(ours["inputPreProcessors"], real["inputPreProcessors"]);
}

void TestDl4jExport::resumes_with_the_same_step_data() {
    QTest::addColumn<QString>("updater");
    QTest::newRow("nesterovs") << R"({"type":"nesterovs","learning_rate":0.05,"momentum":0.9})";
    QTest::newRow("adam") << R"({"type":"adam","learning_rate":0.01})";
    QTest::newRow("rmsprop") << R"({"type":"rmsprop","learning_rate":0.01})";
    QTest::newRow("adagrad") << R"({"type":"adagrad","learning_rate":0.05})";
}

// Three steps, saved as a .thr, exported to DL4J, imported with its updaterState.bin: the fourth
// step from the zip lands where the fourth step of the original network lands.
void TestDl4jExport::resumes_with_the_same_step() {
    QFETCH(QString, updater);
    const std::string text = R"({"name":"small","input":{"channels":1,"height":6,"width":6},"updater":)" + updater.toStdString() +
                             R"(,"layers":[{"type":"convolution","name":"conv","filters":3,"kernel":[3,3],"activation":"relu"},
          {"type":"batch_norm","name":"bn"},{"type":"prelu","name":"pr","shared_axes":["height","width"]},
          {"type":"subsampling","name":"pool","pooling":"max","kernel":[2,2],"stride":[2,2]},
          {"type":"dense","name":"dense","units":5,"activation":"tanh"},
          {"type":"output","name":"out","units":3,"activation":"softmax","loss":"mcxent"}]})";
    const auto cfg = config::ModelConfig::parse(text, "small.json");
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(cfg, *be);
    net.set_params(with_random_params(cfg, "small.thr", 5).params);
    constexpr int kBatch = 4;
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> x(kBatch * 36), t(kBatch * 3, 0.f);
    for (int s = 0; s < kBatch; ++s) t[static_cast<std::size_t>(s * 3 + s % 3)] = 1.f;
    auto step = [&](nn::Network& n, long it) {
        for (auto& v : x) v = std::sin(1.7f * static_cast<float>(it) + v + 0.3f);
        n.compute_gradients(x.data(), t.data(), kBatch, 0);
        n.compute_update(it);
        n.apply_update();
    };
    for (auto& v : x) v = u(rng);
    for (long it = 0; it < 3; ++it) step(net, it);

    const auto m = saved_after_three_steps(cfg, net, dir_.filePath("small.thr").toStdString(), "small.thr");
    const auto zip = dir_.filePath(QString("small_%1.zip").arg(QTest::currentDataTag())).toStdString();
    const auto summary = model_export::export_model(m, ExportFormat::Dl4j, zip);
    QVERIFY2(summary.notes.empty(), summary.notes.empty() ? "" : summary.notes[0].c_str());

    const auto r = config::import_model_file(zip);
    QCOMPARE(r.iterations, 3L);
    QCOMPARE(r.updater_state.size(), m.updater_state.size());
    QVERIFY(std::memcmp(r.updater_state.data(), m.updater_state.data(), r.updater_state.size() * sizeof(float)) == 0);
    nn::Network resumed(r.model, *be);
    resumed.set_params(r.params);
    resumed.set_updater_state(r.updater_state);
    const auto x_before = x;
    step(net, r.iterations);
    x = x_before;
    step(resumed, r.iterations);
    const auto a = net.get_params(), b = resumed.get_params();
    double max_diff = 0, moved = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        max_diff = std::max(max_diff, std::fabs(double(a[i]) - b[i]));
        moved = std::max(moved, std::fabs(double(a[i]) - m.params[i]));
    }
    qInfo("%s: %zu bytes, %zu values of updater state, step 4 max |Δ| = %g (the step moved parameters by up to %g)",
          QTest::currentDataTag(), summary.bytes, r.updater_state.size(), max_diff, moved);
    QVERIFY(moved > 1e-4);
    QVERIFY2(max_diff <= 1e-6, qPrintable(QString("max |Δ| %1").arg(max_diff)));
}

void TestDl4jExport::graph_round_trip_data() {
    QTest::addColumn<QString>("path");
    const QString root = test_support::source_dir();
    QTest::newRow("resources/models/resnet.json") << root + "/resources/models/resnet.json";
    QTest::newRow("graph vertices on images") << QString("json:") + kGraphVerticesOnImages;
    QTest::newRow("graph vertices on flat features") << QString("json:") + kGraphVerticesOnFlat;
    QTest::newRow("graph branches with depthwise, separable, transposed") << QString("json:") + kGraphBranches;
    QTest::newRow("resources/models/two_input.json") << root + "/resources/models/two_input.json";
    QTest::newRow("two inputs, three outputs: mcxent softmax, nll sigmoid, mse") << QString("json:") + kGraphThreeOutputs;
    QTest::newRow("reshape vertices") << QString("json:") + kGraphReshape;
}

// A graph comes back as a graph with the same layers under the same names, reading the same
// inputs, with bit-identical parameters. DL4J's topological order may list the layers in another
// order than the model (the import follows DL4J's): layers are matched by name.
void TestDl4jExport::graph_round_trip() {
    QFETCH(QString, path);
    const QString tag = QString(QTest::currentDataTag()).replace('/', '_').replace(' ', '_').replace(',', "");
    const auto m = model_from_path(path, tag.toStdString());
    QVERIFY(m.config.is_graph());
    const QString out = dir_.filePath(tag + ".zip");
    const auto summary = model_export::export_model(m, ExportFormat::Dl4j, out.toStdString());
    QVERIFY(summary.bytes > 0);

    config::ImportResult back;
    try {
        back = config::import_model_file(out.toStdString());
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(back.format, config::ModelFormat::Dl4j);
    QVERIFY(back.model.is_graph());
    const auto names = export_names(m.config);
    const auto want = graph_architecture(m.config, names), got = graph_architecture(back.model, own_names(back.model));
    QVERIFY2(want == got, qPrintable(QString("architecture changed:\n  exported %1\n  imported %2")
                                         .arg(QString::fromStdString(want.dump()), QString::fromStdString(got.dump()))));
    // The inputs and the outputs in the model's order (networkInputs, networkOutputs).
    QCOMPARE(back.model.input_count(), m.config.input_count());
    for (std::size_t k = 0; k < m.config.input_count(); ++k) {
        QCOMPARE(back.model.input_name_of(k), m.config.input_name_of(k));
        QCOMPARE(back.model.input_shape(k).str(), m.config.input_shape(k).str());
    }
    QCOMPARE(back.model.output_layers.size(), m.config.output_layers.size());
    for (std::size_t o = 0; o < m.config.output_layers.size(); ++o)
        QCOMPARE(back.model.layers[back.model.output_layers[o]].name, names[m.config.output_layers[o]]);
    const auto at = match_layers(names, back.model);
    QCOMPARE(back.params.size(), m.params.size());
    const double max_diff = max_layer_diff(m.config, m.params, back.model, back.params, at, false);
    QStringList order;
    for (const auto& l : back.model.layers) order << QString::fromStdString(l.name);
    qInfo("%s: %zu bytes, %zu parameters, DL4J's order %s, max |import(export(m)) - m| = %g", QTest::currentDataTag(),
          summary.bytes, m.params.size(), qPrintable(order.join(",")), max_diff);
    QVERIFY2(max_diff == 0, qPrintable(QString("parameters differ (max |diff| %1)").arg(max_diff)));
    // coefficients.bin is what the import read, in DL4J's order: the export's layer order.
    const auto coef = model_export::dl4j_coefficients(m);
    const auto order_used = model_export::dl4j_layer_order(m);
    QCOMPARE(order_used.size(), m.config.layers.size());
    for (std::size_t k = 0; k < order_used.size(); ++k) QCOMPARE(back.model.layers[k].name, names[order_used[k]]);
    QCOMPARE(coef.size(), m.params.size());
}

// The graph of tests/engine/config/data/graphs (make_graph_references.py flattens its
// coefficients in DL4J's order with its own emulation of ComputationGraph.calculateIndices),
// imported and exported again: the same vertices reading the same inputs, and coefficients.bin
// holds the very same floats in the same order.
void TestDl4jExport::graph_coefficients_in_dl4j_order() {
    const QString data = test_support::source_dir() + "/tests/engine/config/data/graphs/";
    const auto reference = json::parse(read_text(data + "dl4j_residual_concat.coefficients.json"));
    std::vector<float> flat;
    for (const auto& v : reference["coefficients"]) flat.push_back(v.get<float>());
    const auto original = json::parse(read_text(data + "dl4j_residual_concat.json"));
    const QString in = dir_.filePath("residual_concat_in.zip");
    test_support::write_zip(in.toStdString(), {{"configuration.json", test_support::text_bytes(read_text(data + "dl4j_residual_concat.json"))},
                                               {"coefficients.bin", test_support::nd4j_row(flat, false, false)}});
    const auto imported = config::import_model_file(in.toStdString());
    model_export::ExportableModel m;
    m.source = "residual_concat.thr";
    m.config = imported.model;
    m.params = imported.params;
    const QString out = dir_.filePath("residual_concat_out.zip");
    model_export::export_model(m, ExportFormat::Dl4j, out.toStdString());

    const auto out_bytes = read_bytes(out);
    const config::ZipArchive zip(out_bytes, out.toStdString());
    const auto cfg_bytes = zip.read("configuration.json");
    QVERIFY(cfg_bytes);
    const auto ours = json::parse(std::string(cfg_bytes->begin(), cfg_bytes->end()));
    QStringList want_vertices, got_vertices;
    for (const auto& [k, v] : original["vertices"].items()) want_vertices << QString::fromStdString(k);
    for (const auto& [k, v] : ours["vertices"].items()) got_vertices << QString::fromStdString(k);
    QCOMPARE(got_vertices, want_vertices);
    QCOMPARE(ours["vertexInputs"], original["vertexInputs"]);
    for (const auto& [k, v] : original["vertices"].items()) QCOMPARE(ours["vertices"][k]["@class"], v["@class"]);
    QCOMPARE(ours["networkInputs"], original["networkInputs"]);
    QCOMPARE(ours["networkOutputs"], original["networkOutputs"]);
    QCOMPARE(ours["topologicalOrderStr"], reference["order"]);
    const auto coef_bytes = zip.read("coefficients.bin");
    QVERIFY(coef_bytes);
    const auto a = config::read_nd4j_array(*coef_bytes, "coefficients.bin");
    QCOMPARE(a.data_type, std::string("FLOAT"));
    QCOMPARE(a.size(), flat.size());
    QVERIFY2(std::memcmp(a.data.data(), flat.data(), flat.size() * sizeof(float)) == 0,
             "coefficients.bin is not the reference's DL4J order");
    qInfo("dl4j_residual_concat: %zu coefficients in the reference's order %s", flat.size(), reference["order"].dump().c_str());
}

// DL4J 1.0.0-beta4 on saves the topological order it computed (topologicalOrderStr): for every
// real DL4J graph file of the corpus that has one, Thresher's emulation (used by the importer and
// the exporter alike) computes the same order from the vertices as the file lists them.
void TestDl4jExport::dl4j_cached_topological_orders() {
    const QString corpus = test_support::source_dir() + "/tests/engine/config/data/graphs/corpus/";
    int checked = 0;
    for (const auto& name : QDir(corpus).entryList({"dl4j_*.json"})) {
        const auto text = read_text(corpus + name);
        json j;
        try {
            j = json::parse(text);
        } catch (const json::exception&) {
            continue;  // a file holding the document twice
        }
        if (!j.contains("topologicalOrderStr") || !j["topologicalOrderStr"].is_array()) continue;
        std::vector<std::pair<std::string, std::vector<std::string>>> vertices;
        for (const auto& key : config::dl4j_vertex_key_order(text))
            vertices.emplace_back(key, j["vertexInputs"][key].get<std::vector<std::string>>());
        const auto order = config::dl4j_topological_order(j["networkInputs"].get<std::vector<std::string>>(), vertices);
        QCOMPARE(json(order), j["topologicalOrderStr"]);
        ++checked;
    }
    qInfo("%d DL4J-written topological orders reproduced", checked);
    QVERIFY(checked >= 1);
}

void TestDl4jExport::graph_resumes_with_the_same_step_data() {
    QTest::addColumn<QString>("model");  // a Thresher config's JSON text, or a template's path
    QTest::addColumn<QString>("updater");
    QTest::addColumn<bool>("reorders");  // DL4J's order is not the model's
    QTest::newRow("nesterovs") << kGraphBranches << R"({"type":"nesterovs","learning_rate":0.05,"momentum":0.9})" << true;
    QTest::newRow("adam") << kGraphBranches << R"({"type":"adam","learning_rate":0.01})" << true;
    const QString two = QString::fromStdString(read_text(test_support::source_dir() + "/resources/models/two_input.json"));
    QTest::newRow("two_input template, adam") << two << R"({"type":"adam","learning_rate":0.002})" << false;
    QTest::newRow("three outputs, nesterovs") << kGraphThreeOutputs << R"({"type":"nesterovs","learning_rate":0.05,"momentum":0.9})"
                                              << false;
}

// The graph of graph_round_trip's branches row (two chains DL4J interleaves, so its order is not
// the model's), the two-input template and the three-output graph (several inputs and outputs,
// targets side by side), trained three steps, saved, exported with its updater state and
// imported: the state comes back layer by layer, and the fourth step lands where the original's does.
void TestDl4jExport::graph_resumes_with_the_same_step() {
    QFETCH(QString, model);
    QFETCH(QString, updater);
    QFETCH(bool, reorders);
    auto j = json::parse(model.toStdString());
    j["updater"] = json::parse(updater.toStdString());
    const auto cfg = config::ModelConfig::parse(j.dump(), "branches.json");
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(cfg, *be);
    net.set_params(with_random_params(cfg, "branches.thr", 5).params);
    constexpr int kBatch = 4;
    const std::size_t features = cfg.input_size();
    const auto targets = static_cast<std::size_t>(cfg.output_size());
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> x(kBatch * features), t(kBatch * targets, 0.f);
    // One class per output, side by side in the outputs' order.
    for (int s = 0; s < kBatch; ++s) {
        std::size_t at = static_cast<std::size_t>(s) * targets;
        for (std::size_t o : cfg.output_layers) {
            const auto units = cfg.layers[o].out_shape.size();
            t[at + static_cast<std::size_t>(s) % units] = 1.f;
            at += units;
        }
    }
    auto step = [&](nn::Network& n, long it) {
        for (auto& v : x) v = std::sin(1.7f * static_cast<float>(it) + v + 0.3f);
        n.compute_gradients(x.data(), t.data(), kBatch, 0);
        n.compute_update(it);
        n.apply_update();
    };
    for (auto& v : x) v = u(rng);
    for (long it = 0; it < 3; ++it) step(net, it);

    const auto m = saved_after_three_steps(cfg, net, dir_.filePath("branches.thr").toStdString(), "branches.thr");
    const auto zip = dir_.filePath(QString("branches_%1.zip").arg(QString(QTest::currentDataTag()).replace(' ', '_').replace(',', ""))).toStdString();
    const auto summary = model_export::export_model(m, ExportFormat::Dl4j, zip);
    QVERIFY2(summary.notes.empty(), summary.notes.empty() ? "" : summary.notes[0].c_str());

    const auto r = config::import_model_file(zip);
    QCOMPARE(r.iterations, 3L);
    const auto at = match_layers(export_names(cfg), r.model);
    QCOMPARE(r.updater_state.size(), m.updater_state.size());
    QCOMPARE(max_layer_diff(cfg, m.params, r.model, r.params, at, false), 0.0);
    QCOMPARE(max_layer_diff(cfg, m.updater_state, r.model, r.updater_state, at, true), 0.0);
    bool reordered = false;
    for (std::size_t i = 0; i < at.size(); ++i) reordered = reordered || at[i] != i;
    QVERIFY2(reordered || !reorders, "the graph was meant to come back in DL4J's own order, not the model's");
    nn::Network resumed(r.model, *be);
    resumed.set_params(r.params);
    resumed.set_updater_state(r.updater_state);
    const auto x_before = x;
    step(net, r.iterations);
    x = x_before;
    step(resumed, r.iterations);
    const auto a = net.get_params(), b = resumed.get_params();
    const double max_diff = max_layer_diff(cfg, a, r.model, b, at, false);
    double moved = 0;
    for (std::size_t i = 0; i < a.size(); ++i) moved = std::max(moved, std::fabs(double(a[i]) - m.params[i]));
    qInfo("%s: %zu bytes, %zu values of updater state, step 4 max |Δ| = %g (the step moved parameters by up to %g)",
          QTest::currentDataTag(), summary.bytes, r.updater_state.size(), max_diff, moved);
    QVERIFY(moved > 1e-4);
    QVERIFY2(max_diff >= 0 && max_diff <= 1e-6, qPrintable(QString("max |Δ| %1").arg(max_diff)));
}

void TestDl4jExport::normalizer_round_trip_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("model");
    QTest::addColumn<double>("tolerance");
    // A min-max scale comes back through max - min, both floats as DL4J keeps them: the float
    // spacing at |max| (up to 2 here) over a range down to 0.05.
    QTest::newRow("standardize, mlp") << "standardize" << "mlp.json" << 1e-6;
    QTest::newRow("minmax, lenet") << "minmax" << "lenet.json" << 1e-5;
}

// normalizer.bin reads back to the same transform: the shift bit for bit, the scale through
// DL4J's std (1/scale) or max (shift + 1/scale) within float rounding (DL4J keeps floats).
void TestDl4jExport::normalizer_round_trip() {
    QFETCH(QString, kind);
    QFETCH(QString, model);
    QFETCH(double, tolerance);
    auto m = with_random_params(config::ModelConfig::load((test_support::source_dir() + "/resources/models/" + model).toStdString()),
                                "normalised.thr", 11);
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> shift(-2.f, 2.f), scale(0.05f, 20.f);
    m.normalization.kind = kind.toStdString();
    for (std::size_t i = 0; i < m.config.input.size(); ++i) {
        m.normalization.shift.push_back(shift(rng));
        m.normalization.scale.push_back(scale(rng));
    }
    const auto out = dir_.filePath("normalised_" + kind + ".zip").toStdString();
    const auto summary = model_export::export_model(m, ExportFormat::Dl4j, out);
    const auto r = config::import_model_file(out);
    QCOMPARE(QString::fromStdString(r.normalization.kind), kind);
    QCOMPARE(r.normalization.shift, m.normalization.shift);
    double max_rel = 0;
    for (std::size_t i = 0; i < m.normalization.scale.size(); ++i)
        max_rel = std::max(max_rel, std::fabs(double(r.normalization.scale[i]) / m.normalization.scale[i] - 1.0));
    qInfo("%s: %zu bytes, %zu features, max relative |Δscale| = %g", QTest::currentDataTag(), summary.bytes,
          m.normalization.scale.size(), max_rel);
    QVERIFY2(max_rel <= tolerance, qPrintable(QString("%1").arg(max_rel)));
    QVERIFY(std::memcmp(r.params.data(), m.params.data(), m.params.size() * sizeof(float)) == 0);
}

void TestDl4jExport::refused_layer_named_and_nothing_written_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<bool>("normalize");
    QTest::addColumn<QString>("message");
    const QString mixed = R"({"name":"mixed","input":{"channels":3,"height":4,"width":4},
        "layers":[{"type":"convolution","name":"whole","filters":3,"kernel":[4,4]},
                  {"type":"subsampling","name":"gap","inputs":"input","pooling":"avg","global":true},
                  {"type":"add","name":"sum","inputs":["whole","gap"]},
                  {"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("a graph joining an image with flat features")
        << mixed << false
        << R"(mixed.thr: layers[2] (add "sum"): DL4J cannot express this layer: it joins an image (a 4-d array in DL4J) with flat features; nothing was written)";
    const QString gelu = R"({"name":"gelu","input":{"size":4},
        "layers":[{"type":"dense","name":"g","units":3,"activation":"gelu"},{"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("gelu (erf)") << gelu << false
                                << R"(gelu.thr: layers[0] (dense "g"): DL4J cannot express this layer: activation gelu has no DL4J form (DL4J's GELU is x·sigmoid(1.702x), Thresher's gelu_sigmoid; its precise form is another formula); nothing was written)";
    const QString hard = R"({"name":"hard","input":{"size":4},
        "layers":[{"type":"dense","units":3,"activation":"relu"},{"type":"dense","name":"h","units":3,"activation":"hardsigmoid","alpha":0.25},
                  {"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("hardsigmoid slope") << hard << false
                                       << R"(hard.thr: layers[1] (dense "h"): DL4J cannot express this layer: hardsigmoid with slope 0.25: DL4J's HardSigmoid has slope 0.2; nothing was written)";
    // A recurrent layer's gates too: DL4J's LSTM gates only take its 0.2-slope HardSigmoid.
    const QString gates = R"({"name":"gates","input":{"steps":4,"features":3},
        "layers":[{"type":"lstm","name":"l","units":3,"gate_activation":"hardsigmoid","gate_alpha":0.25},
                  {"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("lstm hardsigmoid gates, slope 0.25") << gates << false
        << R"(gates.thr: layers[0] (lstm "l"): DL4J cannot express this layer: hardsigmoid with slope 0.25: DL4J's HardSigmoid has slope 0.2; nothing was written)";
    const QString cosine = R"({"name":"cosine","input":{"size":4},
        "updater":{"type":"adam","schedule":{"type":"cosine","initial":0.01,"decay_steps":100}},
        "layers":[{"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("cosine schedule") << cosine << false << "";
    const QString permute = R"({"name":"permute","input":{"channels":2,"height":3,"width":4},
        "layers":[{"type":"convolution","name":"c","filters":2,"kernel":[1,1]},
                  {"type":"permute","name":"p","axes":["channels","width","height"]},
                  {"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("permute") << permute << false
                             << R"(permute.thr: layers[1] (permute "p"): DL4J cannot express this layer: DL4J has no vertex that permutes channels, height and width; nothing was written)";
    const QString last = R"({"name":"last","input":{"channels":2,"height":3,"width":4},
        "layers":[{"type":"reshape","name":"r","shape":{"channels":4,"height":3,"width":2},"order":"channels_last"},
                  {"type":"output","units":2,"loss":"mcxent"}]})";
    QTest::newRow("reshape channels_last") << last << false
                                           << R"(last.thr: layers[0] (reshape "r"): DL4J cannot express this layer: reshape with order channels_last (DL4J's ReshapeVertex counts the values channels first); nothing was written)";
    // A graph's image output that is a convolution (two heads): DL4J's graph would need a
    // CnnLossLayer vertex after each (a layer stack gets one: image_output_gets_a_cnn_loss_layer).
    const QString heads = R"({"name":"heads","input":{"channels":2,"height":5,"width":5},
        "layers":[{"type":"convolution","name":"body","filters":3,"kernel":[3,3],"mode":"same","activation":"relu"},
                  {"type":"convolution","name":"seg","filters":3,"kernel":[1,1],"activation":"softmax","loss":"mcxent"},
                  {"type":"convolution","name":"recon","inputs":"body","filters":2,"kernel":[1,1],"activation":"sigmoid","loss":"mse"}]})";
    QTest::newRow("convolution image outputs of a graph") << heads << false
        << R"(heads.thr: layers[1] (convolution "seg"): DL4J cannot express this layer: an image output that is a convolution layer has no DL4J form in a graph (DL4J ends with a CnnLossLayer): give the convolution no activation and follow it with an activation layer carrying the activation and the loss; nothing was written)";
    const QString siamese = QString::fromStdString(read_text(test_support::source_dir() + "/resources/models/siamese.json"));
    QTest::newRow("shared layers") << siamese << false
                                   << R"(siamese.thr: layers[3] (convolution "conv@1"): DL4J ComputationGraphs cannot share a layer's parameters: layer "conv@1" uses those of layers[0] (convolution "conv"); nothing was written)";
    const QString mlp = QString::fromStdString(read_text(test_support::source_dir() + "/resources/models/mlp.json"));
    QTest::newRow("a spread DL4J rounds up") << mlp << true
                                             << "mlp.thr: input normalisation (standardize): feature 0 has scale 200000.000000, which "
                                                "DL4J's normalizer cannot hold (its spread must be at least 1e-5); nothing was written";
}

void TestDl4jExport::refused_layer_named_and_nothing_written() {
    QFETCH(QString, json);
    QFETCH(bool, normalize);
    QFETCH(QString, message);
    const auto cfg = config::ModelConfig::parse(json.toStdString(), "model.json");
    auto m = with_random_params(cfg, cfg.name + ".thr", 1);
    if (normalize) {
        m.normalization.kind = "standardize";
        m.normalization.shift.assign(cfg.input.size(), 0.5f);
        m.normalization.scale.assign(cfg.input.size(), 2.f);
        m.normalization.scale[0] = 2e5f;  // a standard deviation of 5e-6
    }
    QTemporaryDir out;
    const QString path = out.filePath("refused.zip");
    try {
        model_export::export_model(m, ExportFormat::Dl4j, path.toStdString());
        QFAIL("the model was exported");
    } catch (const model_export::ExportError& e) {
        if (message.isEmpty()) {  // the schedule's own description is not spelled out here
            QVERIFY2(QString(e.what()).contains("updater: learning-rate schedule") &&
                         QString(e.what()).contains("DL4J has no such schedule") && QString(e.what()).endsWith("nothing was written"),
                     e.what());
        } else {
            QCOMPARE(QString(e.what()), message);
        }
    }
    QCOMPARE(QDir(out.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{});
}

QTEST_GUILESS_MAIN(TestDl4jExport)
#include "test_dl4j_export.moc"
