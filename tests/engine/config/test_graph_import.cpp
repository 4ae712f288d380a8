// Keras functional models (graphs) imported as Thresher graphs: the same residual block written as
// Keras 1 ("Model" with Merge), Keras 2 ("Model", inbound_nodes as nested lists) and Keras 3
// ("Functional", inbound_nodes as call arguments with keras_history) gives the same layers, inputs
// and parameters; what Thresher cannot represent (a shared layer, two inputs, a Lambda) is refused
// naming the layer in the file's own words.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "config/model_config.h"
#include "config/model_format.h"

using namespace thresher;
using json = nlohmann::json;

namespace {

enum class Form { Keras1, Keras2, Keras3 };

json tensor3(const std::string& layer) {
    return {{"class_name", "__keras_tensor__"},
            {"config", {{"shape", {nullptr, 8, 8, 4}}, {"dtype", "float32"}, {"keras_history", {layer, 0, 0}}}}};
}

// `reads`: the layers it reads, in the form's inbound_nodes.
json layer(Form f, const std::string& cls, json cfg, const std::vector<std::string>& reads) {
    json nodes = json::array();
    if (!reads.empty()) {
        if (f == Form::Keras3) {
            json args = json::array();
            if (reads.size() == 1) {
                args.push_back(tensor3(reads[0]));
            } else {
                json list = json::array();
                for (const auto& r : reads) list.push_back(tensor3(r));
                args.push_back(list);
            }
            nodes.push_back({{"args", args}, {"kwargs", json::object()}});
        } else {
            json node = json::array();
            for (const auto& r : reads) node.push_back(f == Form::Keras1 ? json{r, 0, 0} : json{r, 0, 0, json::object()});
            nodes.push_back(node);
        }
    }
    json l{{"class_name", cls}, {"name", cfg["name"]}, {"config", cfg}, {"inbound_nodes", nodes}};
    if (f == Form::Keras3) l["module"] = "keras.layers", l["registered_name"] = nullptr;
    return l;
}

json conv(Form f, const std::string& name, const char* activation) {
    if (f == Form::Keras1)
        return {{"name", name}, {"nb_filter", 4}, {"nb_row", 3}, {"nb_col", 3}, {"border_mode", "same"},
                {"subsample", {1, 1}}, {"activation", activation}, {"dim_ordering", "tf"}, {"init", "glorot_uniform"}};
    return {{"name", name}, {"filters", 4}, {"kernel_size", {3, 3}}, {"strides", {1, 1}}, {"padding", "same"},
            {"data_format", "channels_last"}, {"dilation_rate", {1, 1}}, {"activation", activation}, {"use_bias", true}};
}

// input -> c1 (relu) -> c2 (linear); add(c2, c1) -> relu -> global average pool -> dense softmax.
// `merge`: the class joining the branches; `extra` is appended to the layer list.
json residual_block(Form f, const std::string& merge = "Add", const json& merge_cfg = json::object()) {
    const std::string in = f == Form::Keras3 ? "input_layer" : "input_1";
    json layers = json::array();
    json input_cfg{{"name", in}, {"dtype", "float32"}, {"sparse", false}};
    input_cfg[f == Form::Keras3 ? "batch_shape" : "batch_input_shape"] = {nullptr, 8, 8, 3};
    layers.push_back(layer(f, "InputLayer", input_cfg, {}));
    layers.push_back(layer(f, f == Form::Keras1 ? "Convolution2D" : "Conv2D", conv(f, "c1", "relu"), {in}));
    layers.push_back(layer(f, f == Form::Keras1 ? "Convolution2D" : "Conv2D", conv(f, "c2", "linear"), {"c1"}));
    json m = merge_cfg;
    m["name"] = "join";
    if (f == Form::Keras1 && merge == "Add") m = {{"name", "join"}, {"mode", "sum"}, {"concat_axis", -1}};
    layers.push_back(layer(f, f == Form::Keras1 ? "Merge" : merge, m, {"c2", "c1"}));
    layers.push_back(layer(f, "Activation", {{"name", "act"}, {"activation", "relu"}}, {"join"}));
    layers.push_back(layer(f, "GlobalAveragePooling2D", {{"name", "gap"}, {"data_format", "channels_last"}}, {"act"}));
    json dense{{"name", "out"}, {"activation", "softmax"}};
    dense[f == Form::Keras1 ? "output_dim" : "units"] = 5;
    layers.push_back(layer(f, "Dense", dense, {"gap"}));
    json cfg{{"name", "block"}, {"layers", layers}, {"input_layers", {{in, 0, 0}}}, {"output_layers", {{"out", 0, 0}}}};
    json model{{"class_name", f == Form::Keras3 ? "Functional" : "Model"}, {"config", cfg}};
    if (f == Form::Keras3) model["module"] = "keras.src.models.functional", model["registered_name"] = "Functional";
    model["keras_version"] = f == Form::Keras1 ? "1.2.2" : f == Form::Keras2 ? "2.4.0" : "3.3.3";
    return model;
}

config::ImportResult import_json(const json& j, const QString& name) {
    const QString path = QDir::temp().filePath("thresher_graph_import_" + name + ".json");
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly)) throw Error("cannot write " + path.toStdString());
    file.write(QByteArray::fromStdString(j.dump()));
    file.close();
    return config::import_model_file(path.toStdString());
}

QString describe(const config::ModelConfig& m) {
    QStringList parts;
    for (const auto& l : m.layers) {
        QString s = QString::fromUtf8(config::to_string(l.type).data());
        if (!l.inputs.empty()) {
            QStringList ins;
            for (const auto& i : l.inputs) ins << QString::fromStdString(i);
            s += "<" + ins.join("+");
        }
        parts << s;
    }
    return parts.join(",");
}

}  // namespace

class TestGraphImport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void keras_functional_forms_data();
    void keras_functional_forms();
    void keras_merge_layers_data();
    void keras_merge_layers();
    void keras_refusals_data();
    void keras_refusals();
};

void TestGraphImport::keras_functional_forms_data() {
    QTest::addColumn<int>("form");
    QTest::addColumn<QString>("input");
    QTest::newRow("keras 1 Model with Merge") << int(Form::Keras1) << "input_1";
    QTest::newRow("keras 2 Model") << int(Form::Keras2) << "input_1";
    QTest::newRow("keras 3 Functional") << int(Form::Keras3) << "input_layer";
}

void TestGraphImport::keras_functional_forms() {
    QFETCH(int, form);
    QFETCH(QString, input);
    config::ImportResult r;
    try {
        r = import_json(residual_block(static_cast<Form>(form)), QString::number(form));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    const auto& m = r.model;
    QCOMPARE(QString::fromStdString(m.input_name), input);
    QCOMPARE(m.input, (config::Shape{3, 8, 8}));
    // The relu after the add stays a layer: the add is read by it alone, but it is a vertex.
    QCOMPARE(describe(m), "convolution<" + input + ",convolution<c1,add<c2+c1,activation<join,subsampling<act,output<gap");
    QVERIFY(m.is_graph());
    const auto& add = m.layers[2];
    QCOMPARE(add.sources, (std::vector<int>{1, 0}));
    QCOMPARE(add.out_shape, (config::Shape{4, 8, 8}));
    QCOMPARE(m.layers[0].activation.kind, config::Activation::Relu);
    QCOMPARE(m.param_count(), std::size_t((3 * 9 * 4 + 4) + (4 * 9 * 4 + 4) + (4 * 5 + 5)));
    // A Thresher config like any other: it round-trips with its inputs.
    const auto again = config::ModelConfig::from_json(m.to_json(), "round trip");
    QCOMPARE(QString::fromStdString(again.to_json().dump()), QString::fromStdString(m.to_json().dump()));
}

void TestGraphImport::keras_merge_layers_data() {
    QTest::addColumn<QString>("cls");
    QTest::addColumn<QString>("config");
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("shape");
    QTest::newRow("Concatenate channels") << "Concatenate" << R"({"axis":-1})" << "concatenate" << "8x8x8";
    QTest::newRow("Concatenate axis 3") << "Concatenate" << R"({"axis":3})" << "concatenate" << "8x8x8";
    QTest::newRow("Multiply") << "Multiply" << "{}" << "multiply" << "4x8x8";
    QTest::newRow("Average") << "Average" << "{}" << "average" << "4x8x8";
    QTest::newRow("Maximum") << "Maximum" << "{}" << "maximum" << "4x8x8";
    QTest::newRow("Subtract") << "Subtract" << "{}" << "subtract" << "4x8x8";
}

void TestGraphImport::keras_merge_layers() {
    QFETCH(QString, cls);
    QFETCH(QString, config);
    QFETCH(QString, type);
    QFETCH(QString, shape);
    config::ImportResult r;
    try {
        r = import_json(residual_block(Form::Keras2, cls.toStdString(), json::parse(config.toStdString())), cls);
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QCOMPARE(QString::fromUtf8(config::to_string(r.model.layers[2].type).data()), type);
    QCOMPARE(QString::fromStdString(r.model.layers[2].out_shape.str()), shape);
}

void TestGraphImport::keras_refusals_data() {
    QTest::addColumn<QByteArray>("change");  // applied to the Keras 2 block: a JSON merge patch path
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("shared layer (called twice)") << QByteArray("shared") << QStringList{"\"c2\"", "called 2 times", "shared"};
    QTest::newRow("two inputs") << QByteArray("two_inputs") << QStringList{"input_layers", "2 inputs"};
    QTest::newRow("Lambda") << QByteArray("lambda") << QStringList{"Lambda", "\"c2\"", "not supported"};
    QTest::newRow("concatenate along height") << QByteArray("concat_h") << QStringList{"\"join\"", "axis", "1", "channel axis"};
    QTest::newRow("Merge mode dot") << QByteArray("merge_dot") << QStringList{"\"join\"", "Merge mode \"dot\""};
    QTest::newRow("Add in a Sequential model") << QByteArray("sequential_add") << QStringList{"Add", "functional model"};
}

void TestGraphImport::keras_refusals() {
    QFETCH(QByteArray, change);
    QFETCH(QStringList, expected);
    json m = residual_block(Form::Keras2);
    auto& layers = m["config"]["layers"];
    if (change == "shared") layers[2]["inbound_nodes"].push_back(json::array({json{"c1", 0, 0, json::object()}}));
    if (change == "two_inputs") m["config"]["input_layers"].push_back(json{"input_2", 0, 0});
    if (change == "lambda") layers[2]["class_name"] = "Lambda", layers[2]["config"]["function"] = "lambda x: x";
    if (change == "concat_h") layers[3]["class_name"] = "Concatenate", layers[3]["config"]["axis"] = 1;
    if (change == "merge_dot") m = residual_block(Form::Keras1), m["config"]["layers"][3]["config"]["mode"] = "dot";
    if (change == "sequential_add") {
        json seq = json::array();
        for (auto l : layers) {
            l.erase("inbound_nodes");
            seq.push_back(l);
        }
        m = {{"class_name", "Sequential"}, {"config", {{"name", "s"}, {"layers", seq}}}};
    }
    try {
        import_json(m, QString::fromLatin1(change));
        QFAIL("imported");
    } catch (const ConfigError& e) {
        const QString msg = QString::fromStdString(e.what());
        for (const auto& fragment : expected) QVERIFY2(msg.contains(fragment), qPrintable("\"" + fragment + "\" not in: " + msg));
    }
}

QTEST_GUILESS_MAIN(TestGraphImport)
#include "test_graph_import.moc"
