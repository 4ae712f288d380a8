// `thresher-engine export-model` as a user runs it: LeNet and the MLP trained on a CSV with
// standardised features, exported to ONNX, give in ONNX Runtime (onnxruntime-node) the
// probabilities `thresher-engine predict` prints for the same rows, within 1e-5 (issue 25's bar);
// a model ONNX cannot express exits 1 naming its layer and writes nothing; Keras exports (.h5,
// .keras) of a trained model read back by inspect and predict give predict's very probabilities,
// as do Keras exports of graphs (Functional models: the ResNet template, every merge vertex) and
// of depthwise, separable and transposed convolutions; a model trained with normalised inputs is
// refused for Keras; the two-input template exported to ONNX gives in ONNX Runtime (its rows
// split between the two inputs) predict's values for both outputs; DL4J zips of a trained graph (the ResNet template) and of depthwise,
// separable and transposed convolutions predict the .thr's lines; an unknown format
// lists the formats this build writes; --out may not be the model itself.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <tuple>
#include <random>

#include <nlohmann/json.hpp>

#include "backend/registry.h"
#include "engine_process.h"
#include "nn/model_file.h"
#include "nn/network.h"
#include "onnx_runtime.h"

using namespace thresher;

namespace {

constexpr int kRows = 40, kFeatures = 784, kClasses = 10;

// Features written with 9 significant digits read back as exactly the floats written, so ONNX
// Runtime is given what the engine's CSV reader gives predict.
std::vector<float> write_csv(const QString& path) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    std::vector<float> x;
    QByteArray text;
    for (int r = 0; r < kRows; ++r) {
        for (int f = 0; f < kFeatures; ++f) {
            x.push_back(u(rng));
            text += QByteArray::number(double(x.back()), 'g', 9) + ',';
        }
        text += QByteArray::number(r % kClasses) + '\n';
    }
    return write_file(path, text) ? x : std::vector<float>{};
}

}  // namespace

class TestEngineExport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void onnx_matches_predict_data();
    void onnx_matches_predict();
    void onnx_two_inputs_match_predict();
    void refused_layer_named_and_nothing_written();
    void keras_and_dl4j_exports_predict_as_the_model();
    void keras_graph_and_new_layer_exports_predict_as_the_model_data();
    void keras_graph_and_new_layer_exports_predict_as_the_model();
    void keras_refuses_normalised_inputs();
    void dl4j_carries_normalised_inputs_data();
    void dl4j_carries_normalised_inputs();
    void dl4j_graph_and_convolutions_predict_as_the_model_data();
    void dl4j_graph_and_convolutions_predict_as_the_model();
    void unknown_format_lists_the_formats();
    void out_may_not_be_the_model();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    QTemporaryDir dir_;
    std::vector<float> features_;
};

void TestEngineExport::initTestCase() {
    QVERIFY(dir_.isValid());
    features_ = write_csv(path("rows.csv"));
    QVERIFY(!features_.empty());
    const QString missing = test_support::onnx_runtime_missing();
    QVERIFY2(missing.isEmpty(), qPrintable("ONNX Runtime is needed for this suite: " + missing));
}

void TestEngineExport::onnx_matches_predict_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("lenet") << "lenet";
    QTest::newRow("mlp") << "mlp";
}

void TestEngineExport::onnx_matches_predict() {
    QFETCH(QString, model);
    const QString thr = path(model + ".thr"), onnx = path(model + ".onnx");
    const auto trained = run_engine({"train", "--model", source_dir() + "/resources/models/" + model + ".json", "--data",
                                     path("rows.csv"), "--epochs", "1", "--batch", "8", "--normalize", "standardize",
                                     "--threads", "1", "--save", thr});
    QVERIFY2(trained.exit_code == 0, qPrintable(trained.summary()));

    const auto predicted = run_engine({"predict", "--model-file", thr, "--data", path("rows.csv"), "--threads", "1"});
    QVERIFY2(predicted.exit_code == 0, qPrintable(predicted.summary()));
    QCOMPARE(predicted.events.size(), kRows);

    const QString names = "T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot";
    const auto exported = run_engine({"export-model", thr, "--format", "onnx", "--out", onnx, "--class-names", names});
    QVERIFY2(exported.exit_code == 0, qPrintable(exported.summary()));
    QCOMPARE(exported.events.size(), 1);
    const auto record = exported.events[0];
    QCOMPARE(record["exported"].toString(), onnx);
    QCOMPARE(record["format"].toString(), QString("onnx"));
    QCOMPARE(record["layers"].toInt(), model == "lenet" ? 6 : 3);
    QCOMPARE(record["bytes"].toInteger(), QFileInfo(onnx).size());
    QVERIFY2(exported.stderr_text.contains("export-model: wrote " + onnx), qPrintable(exported.stderr_text));

    const auto got = test_support::run_onnx_runtime(onnx, features_, model == "lenet" ? QList<int>{1, 28, 28} : QList<int>{784},
                                                    dir_.path());
    QVERIFY2(got.ok, qPrintable(got.error));
    QCOMPARE(got.output_dims, (QList<qint64>{kRows, kClasses}));
    double max_diff = 0.0;
    for (int r = 0; r < kRows; ++r) {
        const auto line = predicted.events[r];
        QCOMPARE(line["index"].toInt(), r);
        const auto p = line["probabilities"].toArray();
        QCOMPARE(p.size(), kClasses);
        for (int k = 0; k < kClasses; ++k) {
            const double d = std::fabs(p[k].toDouble() - got.outputs[static_cast<std::size_t>(r * kClasses + k)]);
            if (!(d <= max_diff)) max_diff = std::isnan(d) ? INFINITY : d;
        }
    }
    qInfo("%s: max |predict - %s| = %.3g over %d probabilities", qPrintable(model), qPrintable(got.runtime), max_diff,
          kRows * kClasses);
    QVERIFY2(max_diff <= 1e-5, qPrintable(QString("max |diff| %1").arg(max_diff)));
}

void TestEngineExport::onnx_two_inputs_match_predict() {
    // The two-input template (two 1x14x28 halves of each 784-feature row; two outputs): ONNX
    // Runtime fed each row split between the graph's two inputs gives, side by side, the values
    // predict prints for each output (output_values, main output first). Written, not trained.
    nn::ModelFile file;
    file.config = config::ModelConfig::load((source_dir() + "/resources/models/two_input.json").toStdString());
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(file.config, *be);
    net.init_params(3);
    file.params = net.get_params();
    const QString thr = path("two_input.thr"), onnx = path("two_input.onnx");
    nn::save_model_file(thr.toStdString(), file);

    const auto predicted = run_engine({"predict", "--model-file", thr, "--data", path("rows.csv"), "--threads", "1"});
    QVERIFY2(predicted.exit_code == 0, qPrintable(predicted.summary()));
    QCOMPARE(predicted.events.size(), kRows);
    const auto exported = run_engine({"export-model", thr, "--format", "onnx", "--out", onnx});
    QVERIFY2(exported.exit_code == 0, qPrintable(exported.summary()));

    const auto got = test_support::run_onnx_runtime(onnx, features_, QList<QList<int>>{{1, 14, 28}, {1, 14, 28}}, dir_.path());
    QVERIFY2(got.ok, qPrintable(got.error));
    QCOMPARE(got.input_name, QString("top,bottom"));
    QCOMPARE(got.output_name, QString("predictions,top_guess"));
    QCOMPARE(got.output_dims, (QList<qint64>{kRows, 2 * kClasses}));
    double max_diff = 0.0;
    for (int r = 0; r < kRows; ++r) {
        const auto values = predicted.events[r]["output_values"].toObject();
        QJsonArray row;
        for (const char* name : {"predictions", "top_guess"})
            for (const auto& v : values[name].toArray()) row.append(v);
        QCOMPARE(row.size(), 2 * kClasses);
        for (int k = 0; k < 2 * kClasses; ++k) {
            const double d = std::fabs(row[k].toDouble() - got.outputs[static_cast<std::size_t>(r * 2 * kClasses + k)]);
            if (!(d <= max_diff)) max_diff = std::isnan(d) ? INFINITY : d;
        }
    }
    qInfo("two_input: max |predict - %s| = %.3g over %d values", qPrintable(got.runtime), max_diff, kRows * 2 * kClasses);
    QVERIFY2(max_diff <= 1e-5, qPrintable(QString("max |diff| %1").arg(max_diff)));
}

void TestEngineExport::refused_layer_named_and_nothing_written() {
    // ONNX pooling needs every pad smaller than its window. Written here, not trained: Thresher's
    // own pooling gives -inf on the windows wholly in the padding.
    nn::ModelFile file;
    file.config = config::ModelConfig::parse(R"({"name":"padded","input":{"channels":1,"height":8,"width":8},
        "layers":[{"type":"convolution","name":"conv","filters":2,"kernel":[3,3]},
                  {"type":"subsampling","name":"pool1","pooling":"max","kernel":[2,2],"stride":[2,2],"padding":[2,2]},
                  {"type":"output","units":2,"loss":"mcxent"}]})",
                                             "padded.json");
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(file.config, *be);
    net.init_params(1);
    file.params = net.get_params();
    const QString thr = path("padded.thr");
    nn::save_model_file(thr.toStdString(), file);

    QTemporaryDir out;
    const auto r = run_engine({"export-model", thr, "--format", "onnx", "--out", out.filePath("padded.onnx")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.stderr_text.contains("thresher-engine: error: padded.thr: layers[1] (subsampling \"pool1\"): ONNX cannot "
                                    "express this layer: padding 2x2 is not smaller than its 2x2 window"),
             qPrintable(r.stderr_text));
    QVERIFY2(r.stderr_text.contains("nothing was written"), qPrintable(r.stderr_text));
    QVERIFY(r.stdout_text.isEmpty());
    QCOMPARE(QDir(out.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{});
}

void TestEngineExport::keras_and_dl4j_exports_predict_as_the_model() {
    const QString thr = path("mlp_raw.thr");
    const auto trained = run_engine({"train", "--model", source_dir() + "/resources/models/mlp.json", "--data", path("rows.csv"),
                                     "--epochs", "1", "--batch", "8", "--threads", "1", "--save", thr});
    QVERIFY2(trained.exit_code == 0, qPrintable(trained.summary()));
    const auto want = run_engine({"predict", "--model-file", thr, "--data", path("rows.csv"), "--threads", "1"});
    QVERIFY2(want.exit_code == 0, qPrintable(want.summary()));
    // format, file, and the format `inspect` reports for the file
    const std::tuple<const char*, const char*, const char*> exports[] = {
        {"keras-h5", "mlp_raw.h5", "keras"}, {"keras", "mlp_raw.keras", "keras"}, {"dl4j", "mlp_raw.zip", "dl4j"}};
    for (const auto& [format, name, read_as] : exports) {
        const QString out = path(name);
        const auto exported = run_engine({"export-model", thr, "--format", format, "--out", out});
        QVERIFY2(exported.exit_code == 0, qPrintable(exported.summary()));
        QCOMPARE(exported.events[0]["format"].toString(), QString(format));
        QCOMPARE(exported.events[0]["nodes"].toInt(), 3);  // the Keras model's layers, DL4J's confs
        QCOMPARE(exported.events[0]["bytes"].toInteger(), QFileInfo(out).size());
        // The DL4J zip carries the .thr's Nesterovs state on (updaterState.bin): nothing left out.
        QVERIFY2(!exported.events[0].contains("notes"), qPrintable(exported.summary()));

        const auto inspected = run_engine({"inspect", "--json", out});
        QVERIFY2(inspected.exit_code == 0, qPrintable(inspected.summary()));
        QCOMPARE(inspected.events[0]["format"].toString(), QString(read_as));
        QCOMPARE(inspected.events[0]["params"].toInteger(), 784 * 1000 + 1000 + 1000 * 1000 + 1000 + 1000 * 10 + 10);
        QVERIFY(inspected.events[0]["weights"].toBool());

        // The same parameters in the same architecture: predict prints the same lines.
        const auto got = run_engine({"predict", "--model-file", out, "--data", path("rows.csv"), "--threads", "1"});
        QVERIFY2(got.exit_code == 0, qPrintable(got.summary()));
        QCOMPARE(got.events.size(), want.events.size());
        for (qsizetype r = 0; r < want.events.size(); ++r) QCOMPARE(got.events[r], want.events[r]);

        // compare reads the export as predict does: bit-identical parameters.
        const auto cmp = run_engine({"compare", thr, out, "--tolerance", "0"});
        QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
        QCOMPARE(cmp.events[0]["max_abs_diff"].toDouble(), 0.0);
    }
    // and says how far apart two models are, whatever their formats (exit 1 above the tolerance).
    const QString other = path("mlp_other.thr");
    const auto retrained = run_engine({"train", "--model", source_dir() + "/resources/models/mlp.json", "--data", path("rows.csv"),
                                       "--epochs", "2", "--batch", "8", "--threads", "1", "--save", other});
    QVERIFY2(retrained.exit_code == 0, qPrintable(retrained.summary()));
    const auto differs = run_engine({"compare", other, path("mlp_raw.zip"), "--tolerance", "1e-6"});
    QCOMPARE(differs.exit_code, 1);
    QVERIFY(differs.events[0]["max_abs_diff"].toDouble() > 1e-6);
}

void TestEngineExport::keras_graph_and_new_layer_exports_predict_as_the_model_data() {
    QTest::addColumn<QString>("json");
    // The ResNet template without its schedule by epoch (which a Keras file cannot hold).
    QFile template_file(source_dir() + "/resources/models/resnet.json");
    QVERIFY(template_file.open(QIODevice::ReadOnly));
    auto resnet = nlohmann::json::parse(template_file.readAll().toStdString());
    resnet["updater"].erase("schedule");
    QTest::newRow("resnet template") << QString::fromStdString(resnet.dump());
    QTest::newRow("graph vertices") << QString(R"({"name":"vertices","input":{"channels":2,"height":6,"width":5},
        "layers":[{"type":"convolution","name":"a","filters":4,"kernel":[3,3],"mode":"same","activation":"tanh"},
                  {"type":"convolution","name":"b","inputs":"input","filters":4,"kernel":[1,1],"activation":"leakyrelu"},
                  {"type":"subtract","name":"sub","inputs":["a","b"]},
                  {"type":"multiply","name":"mul","inputs":["sub","a","b"]},
                  {"type":"maximum","name":"max","inputs":["mul","b"]},
                  {"type":"average","name":"avg","inputs":["max","a","sub"]},
                  {"type":"add","name":"sum","inputs":["avg","a"]},
                  {"type":"concatenate","name":"cat","inputs":["sum","avg","input"]},
                  {"type":"dense","name":"d","units":6,"activation":"relu"},
                  {"type":"subsampling","name":"gap","inputs":"b","pooling":"max","global":true},
                  {"type":"concatenate","name":"flat_cat","inputs":["d","gap"]},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})");
    QTest::newRow("depthwise and separable") << QString(R"({"name":"separable","input":{"channels":3,"height":9,"width":8},
        "layers":[{"type":"depthwise_convolution","name":"dw","depth_multiplier":2,"kernel":[3,3],"mode":"same","activation":"relu"},
                  {"type":"separable_convolution","name":"sep","filters":4,"depth_multiplier":2,"kernel":[3,2],"stride":[2,1],"activation":"tanh"},
                  {"type":"depthwise_convolution","name":"dw_strided","kernel":[2,2],"stride":[2,2],"activation":"leakyrelu"},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})");
    QTest::newRow("transposed") << QString(R"({"name":"transposed","input":{"channels":2,"height":5,"width":6},
        "layers":[{"type":"transposed_convolution","name":"up","filters":3,"kernel":[3,3],"stride":[2,2],"activation":"relu"},
                  {"type":"transposed_convolution","name":"same","filters":2,"kernel":[4,3],"stride":[2,1],"mode":"same","activation":"tanh"},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})");
}

void TestEngineExport::keras_graph_and_new_layer_exports_predict_as_the_model() {
    // A .thr with random parameters in every block (running variances positive), so a block laid
    // out wrongly changes the predictions; predict on each export must print the .thr's lines.
    QFETCH(QString, json);
    const QString tag = QString(QTest::currentDataTag()).replace(' ', '_');
    nn::ModelFile file;
    file.config = config::ModelConfig::parse(json.toStdString(), (tag + ".json").toStdString());
    file.params.resize(file.config.param_count());
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto& v : file.params) v = u(rng);
    for (const auto& l : file.config.layers)
        for (const auto& b : l.blocks)
            if (b.role == config::ParamRole::RunningVar)
                for (std::size_t i = 0; i < b.size; ++i) file.params[l.param_offset + b.offset + i] = 0.5f + u(rng) * u(rng);
    const QString thr = path(tag + ".thr");
    nn::save_model_file(thr.toStdString(), file);

    // Rows of the model's input size, then a label.
    const int features = static_cast<int>(file.config.input.size()), classes = file.config.output_size();
    QByteArray text;
    std::uniform_real_distribution<float> pixel(0.f, 1.f);
    for (int r = 0; r < 12; ++r) {
        for (int f = 0; f < features; ++f) text += QByteArray::number(double(pixel(rng)), 'g', 9) + ',';
        text += QByteArray::number(r % classes) + '\n';
    }
    const QString rows = path(tag + ".csv");
    QVERIFY(write_file(rows, text));

    const auto want = run_engine({"predict", "--model-file", thr, "--data", rows, "--threads", "1"});
    QVERIFY2(want.exit_code == 0, qPrintable(want.summary()));
    QCOMPARE(want.events.size(), 12);
    for (const char* format : {"keras-h5", "keras"}) {
        const QString out = path(tag + (QString(format) == "keras" ? ".keras" : ".h5"));
        const auto exported = run_engine({"export-model", thr, "--format", format, "--out", out});
        QVERIFY2(exported.exit_code == 0, qPrintable(exported.summary()));
        const auto got = run_engine({"predict", "--model-file", out, "--data", rows, "--threads", "1"});
        QVERIFY2(got.exit_code == 0, qPrintable(got.summary()));
        QCOMPARE(got.events.size(), want.events.size());
        for (qsizetype r = 0; r < want.events.size(); ++r) QCOMPARE(got.events[r], want.events[r]);
        qInfo("%s --format %s: predict printed the .thr's %lld lines", qPrintable(tag), format,
              static_cast<long long>(want.events.size()));
    }
}

void TestEngineExport::keras_refuses_normalised_inputs() {
    // The MLP of onnx_matches_predict, trained with standardised inputs: ONNX carries the
    // normalisation in its graph, a Keras export not yet.
    const QString thr = path("mlp.thr"), out = path("mlp.keras");
    QVERIFY2(QFile::exists(thr), "onnx_matches_predict(mlp) saves mlp.thr first");
    const auto r = run_engine({"export-model", thr, "--format", "keras", "--out", out});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.stderr_text.contains("thresher-engine: error: mlp.thr: the model standardizes its inputs"), qPrintable(r.stderr_text));
    QVERIFY2(r.stderr_text.contains("nothing was written"), qPrintable(r.stderr_text));
    QVERIFY(!QFile::exists(out));
}

void TestEngineExport::dl4j_carries_normalised_inputs_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("lenet") << "lenet";
    QTest::newRow("mlp") << "mlp";
}

// LeNet and the MLP of onnx_matches_predict, trained with standardised inputs: the DL4J zip holds
// the normaliser (normalizer.bin), so predict on the zip prints what predict on the .thr prints.
void TestEngineExport::dl4j_carries_normalised_inputs() {
    QFETCH(QString, model);
    const QString thr = path(model + ".thr"), out = path(model + "_normalised.zip");
    QVERIFY2(QFile::exists(thr), "onnx_matches_predict saves the .thr first");
    const auto exported = run_engine({"export-model", thr, "--format", "dl4j", "--out", out});
    QVERIFY2(exported.exit_code == 0, qPrintable(exported.summary()));
    const auto inspected = run_engine({"inspect", "--json", out});
    QVERIFY2(inspected.exit_code == 0, qPrintable(inspected.summary()));
    QVERIFY2(inspected.stderr_text.contains("normalizer.bin") || QJsonDocument(inspected.events[0]).toJson().contains("normalizer.bin"),
             qPrintable(inspected.summary()));
    const auto want = run_engine({"predict", "--model-file", thr, "--data", path("rows.csv"), "--threads", "1"});
    const auto got = run_engine({"predict", "--model-file", out, "--data", path("rows.csv"), "--threads", "1"});
    QVERIFY2(want.exit_code == 0 && got.exit_code == 0, qPrintable(got.summary()));
    QCOMPARE(got.events.size(), want.events.size());
    double max_diff = 0.0;
    for (qsizetype r = 0; r < want.events.size(); ++r) {
        QCOMPARE(got.events[r]["class"], want.events[r]["class"]);
        const auto a = want.events[r]["probabilities"].toArray(), b = got.events[r]["probabilities"].toArray();
        QCOMPARE(b.size(), a.size());
        for (qsizetype k = 0; k < a.size(); ++k) max_diff = std::max(max_diff, std::fabs(a[k].toDouble() - b[k].toDouble()));
    }
    qInfo("%s: max |predict(.thr) - predict(.zip)| = %.3g", qPrintable(model), max_diff);
    QVERIFY2(max_diff <= 1e-6, qPrintable(QString("max |diff| %1").arg(max_diff)));
}

void TestEngineExport::dl4j_graph_and_convolutions_predict_as_the_model_data() {
    QTest::addColumn<QString>("model");  // a template name, or a Thresher config's JSON text after "json:"
    QTest::newRow("resnet (a ComputationGraph)") << "resnet";
    // Two image inputs, two outputs: predict prints the main output and output_values for both.
    QTest::newRow("two_input (two inputs, two outputs)") << "two_input";
    QTest::newRow("every vertex on images") << R"(json:{"name":"vertices","input":{"channels":1,"height":28,"width":28},
        "layers":[{"type":"convolution","name":"a","filters":4,"kernel":[3,3],"mode":"same","activation":"tanh"},
                  {"type":"convolution","name":"b","inputs":"input","filters":4,"kernel":[1,1],"activation":"sigmoid"},
                  {"type":"subtract","name":"sub","inputs":["a","b"]},
                  {"type":"multiply","name":"mul","inputs":["sub","a","b"]},
                  {"type":"maximum","name":"max","inputs":["mul","b"]},
                  {"type":"average","name":"avg","inputs":["max","a","sub"]},
                  {"type":"subset","name":"half","inputs":"avg","channels":[1,2]},
                  {"type":"concatenate","name":"cat","inputs":["half","avg","input"]},
                  {"type":"output","units":10,"activation":"softmax","loss":"mcxent"}]})";
    QTest::newRow("every vertex on flat features") << R"(json:{"name":"flat_vertices","input":{"channels":1,"height":28,"width":28},
        "updater":{"type":"nesterovs","learning_rate":0.05,"momentum":0.9},
        "layers":[{"type":"convolution","name":"c","filters":3,"kernel":[5,5],"stride":[3,3],"activation":"relu"},
                  {"type":"subsampling","name":"gap","pooling":"avg","global":true},
                  {"type":"dense","name":"d","inputs":"input","units":3,"activation":"tanh"},
                  {"type":"add","name":"sum","inputs":["gap","d"]},
                  {"type":"maximum","name":"most","inputs":["sum","d"]},
                  {"type":"concatenate","name":"cat","inputs":["d","gap","most"]},
                  {"type":"subset","name":"part","channels":[2,6]},
                  {"type":"output","units":10,"activation":"softmax","loss":"mcxent"}]})";
    QTest::newRow("depthwise, separable, transposed") << R"(json:{"name":"convs","input":{"channels":1,"height":28,"width":28},
        "updater":{"type":"adam","learning_rate":0.005},
        "layers":[{"type":"convolution","name":"conv","filters":4,"kernel":[3,3],"stride":[2,2],"activation":"relu"},
                  {"type":"depthwise_convolution","name":"dw","depth_multiplier":2,"kernel":[3,3],"mode":"same","activation":"relu"},
                  {"type":"separable_convolution","name":"sep","filters":6,"depth_multiplier":1,"kernel":[3,3],"stride":[2,2],"activation":"tanh"},
                  {"type":"transposed_convolution","name":"up","filters":3,"kernel":[2,2],"stride":[2,2],"activation":"relu"},
                  {"type":"subsampling","name":"pool","pooling":"max","kernel":[2,2],"stride":[2,2]},
                  {"type":"output","name":"out","units":10,"activation":"softmax","loss":"mcxent"}]})";
}

// Trained one epoch (Adam), saved, exported to DL4J with its updater state: predict on the zip
// prints the lines predict prints on the .thr, and inspect reads the zip as a DL4J model.
void TestEngineExport::dl4j_graph_and_convolutions_predict_as_the_model() {
    QFETCH(QString, model);
    const QString tag = model.startsWith("json:") ? QString(QTest::currentDataTag()).replace(' ', '_').replace(',', "") : model;
    QString model_path = source_dir() + "/resources/models/" + model + ".json";
    if (model.startsWith("json:")) {
        model_path = path(tag + ".json");
        QVERIFY(write_file(model_path, model.mid(5).toUtf8()));
    }
    const QString thr = path(tag + "_dl4j.thr"), out = path(tag + "_dl4j.zip");
    const auto trained = run_engine({"train", "--model", model_path, "--data", path("rows.csv"), "--epochs", "1", "--batch", "8",
                                     "--threads", "1", "--save", thr});
    QVERIFY2(trained.exit_code == 0, qPrintable(trained.summary()));
    const auto exported = run_engine({"export-model", thr, "--format", "dl4j", "--out", out});
    QVERIFY2(exported.exit_code == 0, qPrintable(exported.summary()));
    QVERIFY2(!exported.events[0].contains("notes"), qPrintable(exported.summary()));  // the Adam state went in
    const auto inspected = run_engine({"inspect", "--json", out});
    QVERIFY2(inspected.exit_code == 0, qPrintable(inspected.summary()));
    QCOMPARE(inspected.events[0]["format"].toString(), QString("dl4j"));
    QVERIFY(inspected.events[0]["weights"].toBool());
    const auto want = run_engine({"predict", "--model-file", thr, "--data", path("rows.csv"), "--threads", "1"});
    const auto got = run_engine({"predict", "--model-file", out, "--data", path("rows.csv"), "--threads", "1"});
    QVERIFY2(want.exit_code == 0, qPrintable(want.summary()));
    QVERIFY2(got.exit_code == 0, qPrintable(got.summary()));
    QCOMPARE(got.events.size(), want.events.size());
    QCOMPARE(got.events.size(), kRows);
    for (qsizetype r = 0; r < want.events.size(); ++r) QCOMPARE(got.events[r], want.events[r]);
    if (model == "two_input")  // every output by name, in the model's order, from the zip too
        QCOMPARE(got.events[0]["output_values"].toObject().keys(), (QStringList{"predictions", "top_guess"}));
    qInfo("%s: %lld bytes, predict prints the same %d lines from the zip", qPrintable(tag),
          static_cast<long long>(QFileInfo(out).size()), kRows);
}

void TestEngineExport::unknown_format_lists_the_formats() {
    const QString out = path("never.h5");
    // The format is checked before the model is read: any existing file will do.
    const auto r = run_engine({"export-model", path("rows.csv"), "--format", "keras-h4", "--out", out});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.stderr_text.contains("unknown export format \"keras-h4\" (this build exports: onnx, keras-h5, keras, dl4j)"), qPrintable(r.stderr_text));
    QVERIFY(!QFile::exists(out));
}

void TestEngineExport::out_may_not_be_the_model() {
    // Refused before the model is read, so the durable write never replaces it.
    const auto before = QFileInfo(path("rows.csv")).size();
    const auto r = run_engine({"export-model", path("rows.csv"), "--format", "onnx", "--out", path("rows.csv")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.stderr_text.contains("is the model file itself"), qPrintable(r.stderr_text));
    QCOMPARE(QFileInfo(path("rows.csv")).size(), before);
}

QTEST_GUILESS_MAIN(TestEngineExport)
#include "test_engine_export.moc"
