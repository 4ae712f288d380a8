// Keras functional models (graphs) imported as Thresher graphs: the same residual block written as
// Keras 1 ("Model" with Merge), Keras 2 ("Model", inbound_nodes as nested lists) and Keras 3
// ("Functional", inbound_nodes as call arguments with keras_history) gives the same layers, inputs
// and parameters; shared layers and nested models become layers with "shares"; what Thresher cannot represent (a Lambda) is refused
// naming the layer in the file's own words.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "config/model_config.h"
#include "config/dl4j_graph.h"
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


// A DL4J 1.0 layer conf: {"layer": {"@class": "org.deeplearning4j.nn.conf.layers.<cls>", ...}}.
json dl4j_conf(const std::string& cls, json fields) {
    fields["@class"] = "org.deeplearning4j.nn.conf.layers." + cls;
    return {{"layer", fields}, {"seed", 42}, {"miniBatch", true}, {"minimize", true},
            {"optimizationAlgo", "STOCHASTIC_GRADIENT_DESCENT"}, {"stepFunction", nullptr}, {"variables", json::array()}};
}

json dl4j_conv(const std::string& name, int n_in, int n_out, const char* act) {
    return dl4j_conf("ConvolutionLayer",
                     {{"layerName", name}, {"nin", n_in}, {"nout", n_out}, {"kernelSize", {3, 3}}, {"stride", {1, 1}},
                      {"padding", {0, 0}}, {"dilation", {1, 1}}, {"convolutionMode", "Same"}, {"hasBias", true},
                      {"activationFn", {{"@class", std::string("org.nd4j.linalg.activations.impl.Activation") + act}}},
                      {"iupdater", {{"@class", "org.nd4j.linalg.learning.config.Adam"}, {"learningRate", 0.001}, {"beta1", 0.9},
                                    {"beta2", 0.999}, {"epsilon", 1e-8}}},
                      {"weightInitFn", {{"@class", "org.deeplearning4j.nn.weights.WeightInitXavier"}}}});
}

// A residual block as DL4J's graphBuilder() writes it: cnn1 -> cnn2; add(cnn2, cnn1); merge(add,
// cnn1) -> global pooling -> output. `legacy`: 0.x's wrapper spelling {"LayerVertex": {...}}.
json dl4j_block(bool legacy) {
    auto vertex = [&](const std::string& cls, json body) {
        if (legacy) return json{{cls, body}};
        body["@class"] = "org.deeplearning4j.nn.conf.graph." + cls;
        return body;
    };
    auto layer_vertex = [&](json conf) { return vertex("LayerVertex", {{"layerConf", conf}, {"outputVertex", false}, {"preProcessor", nullptr}}); };
    json v = json::object();
    v["cnn1"] = layer_vertex(dl4j_conv("cnn1", 1, 4, "ReLU"));
    v["cnn2"] = layer_vertex(dl4j_conv("cnn2", 4, 4, "Identity"));
    v["add"] = vertex("ElementWiseVertex", {{"op", "Add"}});
    v["merge"] = vertex("MergeVertex", json::object());
    v["pool"] = layer_vertex(dl4j_conf("GlobalPoolingLayer", {{"layerName", "pool"}, {"poolingType", "AVG"}, {"collapseDimensions", true}}));
    json out = dl4j_conf("OutputLayer", {{"layerName", "out"}, {"nin", 8}, {"nout", 3}, {"hasBias", true},
                                         {"activationFn", {{"@class", "org.nd4j.linalg.activations.impl.ActivationSoftmax"}}},
                                         {"lossFn", {{"@class", "org.nd4j.linalg.lossfunctions.impl.LossMCXENT"}}},
                                         {"iupdater", {{"@class", "org.nd4j.linalg.learning.config.Adam"}, {"learningRate", 0.001},
                                                       {"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8}}},
                                         {"weightInitFn", {{"@class", "org.deeplearning4j.nn.weights.WeightInitXavier"}}}});
    v["out"] = layer_vertex(out);
    json types = json::array({{{"@class", "org.deeplearning4j.nn.conf.inputs.InputType$InputTypeConvolutional"},
                               {"height", 6}, {"width", 6}, {"channels", 1}, {"format", "NCHW"}}});
    return {{"vertices", v},
            {"vertexInputs", {{"cnn1", {"input"}}, {"cnn2", {"cnn1"}}, {"add", {"cnn2", "cnn1"}}, {"merge", {"add", "cnn1"}},
                              {"pool", {"merge"}}, {"out", {"pool"}}}},
            {"networkInputs", {"input"}}, {"networkOutputs", {"out"}}, {"networkInputTypes", types},
            {"backpropType", "Standard"}, {"tbpttFwdLength", 20}, {"tbpttBackLength", 20}, {"iterationCount", 0}, {"epochCount", 0},
            {"trainingWorkspaceMode", "ENABLED"}, {"inferenceWorkspaceMode", "ENABLED"}, {"cacheMode", "NONE"}, {"dataType", "FLOAT"},
            {"validateOutputLayerConfig", true}};
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

// Further below (the shared and nested rows).
json siamese(Form f);
json call_node(Form f, const std::vector<std::tuple<std::string, int, int>>& refs);

class TestGraphImport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void keras_functional_forms_data();
    void keras_functional_forms();
    void keras_merge_layers_data();
    void keras_merge_layers();
    void keras_refusals_data();
    void keras_refusals();
    void keras_shared_and_nested_data();
    void keras_shared_and_nested();
    void keras_sequential_holding_a_model_data();
    void keras_sequential_holding_a_model();
    void dl4j_graph_forms_data();
    void dl4j_graph_forms();
    void dl4j_graph_refusals_data();
    void dl4j_graph_refusals();
    void dl4j_order_follows_java_hash_sets();
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
    // A second call of c2 that nothing reads: it imports as c2@1 (sharing c2), a dead branch
    // after the output (first calls come first).
    QTest::newRow("shared layer, a call no one reads")
        << QByteArray("shared") << QStringList{"output_layers", "\"out\" must be the last layer"};
    QTest::newRow("nested model called with two tensors")
        << QByteArray("nested_inputs") << QStringList{"config.layers[6]", "takes 1 input(s), but its call passes 2"};
    QTest::newRow("nested model without input_layers")
        << QByteArray("nested_no_inputs") << QStringList{"config.layers[6].config.input_layers", "is required"};
    QTest::newRow("a call's node index not a number")
        << QByteArray("node_not_number") << QStringList{"config.layers[2].inbound_nodes[1]", "whole numbers", "[\"b\",\"x\",0,{}]"};
    QTest::newRow("output 1 of a nested model with one")
        << QByteArray("nested_output") << QStringList{"config.layers[7]", "reads output 1 of call 1 of \"head\"", "has 1 output(s)"};
    QTest::newRow("reads call 1 of a layer called once")
        << QByteArray("missing_call") << QStringList{"config.layers[3]", "call 1 of \"c1\"", "no layer of the model makes"};
    // Several inputs import (test_graph_weights); one whose InputLayer gives no shape is refused.
    QTest::newRow("second input without a shape") << QByteArray("two_inputs") << QStringList{"input_layers", "cannot tell the shape of input \"input_2\""};
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
    if (change == "missing_call") layers[3]["inbound_nodes"][0][1][1] = 1;
    if (change == "nested_inputs") m = siamese(Form::Keras2), m["config"]["layers"][6]["inbound_nodes"][0] = call_node(Form::Keras2, {{"gap", 0, 0}, {"gap_a", 0, 0}});
    if (change == "nested_no_inputs") m = siamese(Form::Keras2), m["config"]["layers"][6]["config"].erase("input_layers");
    if (change == "node_not_number") m = siamese(Form::Keras2), m["config"]["layers"][2]["inbound_nodes"][1][0][1] = "x";
    if (change == "nested_output") m = siamese(Form::Keras2), m["config"]["layers"][7]["inbound_nodes"][0][1][2] = 1;
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

// A reference to output `tensor` of call `node` of `layer`, in the form's inbound_nodes.
json call_node(Form f, const std::vector<std::tuple<std::string, int, int>>& refs) {
    if (f == Form::Keras3) {
        json args = json::array();
        for (const auto& [name, node, tensor] : refs) {
            json t = tensor3(name);
            t["config"]["keras_history"] = {name, node, tensor};
            args.push_back(t);
        }
        return {{"args", refs.size() == 1 ? args : json::array({args})}, {"kwargs", json::object()}};
    }
    json node = json::array();
    for (const auto& [name, n, tensor] : refs) node.push_back(f == Form::Keras1 ? json{name, n, tensor} : json{name, n, tensor, json::object()});
    return node;
}

// Two inputs through one shared Conv2D (a siamese pair), added; then a nested functional model
// "head" (Dense, Dense) called twice on the pooled sum and on the first branch's pooling, and
// the two calls concatenated into the output Dense.
json siamese(Form f) {
    auto input = [&](const std::string& name) {
        json c{{"name", name}, {"dtype", "float32"}};
        c[f == Form::Keras3 ? "batch_shape" : "batch_input_shape"] = {nullptr, 8, 8, 3};
        return layer(f, "InputLayer", c, {});
    };
    const std::string cls = f == Form::Keras3 ? "Functional" : "Model";
    json conv_layer = layer(f, f == Form::Keras1 ? "Convolution2D" : "Conv2D", conv(f, "c", "relu"), {});
    conv_layer["inbound_nodes"] = {call_node(f, {{"a", 0, 0}}), call_node(f, {{"b", 0, 0}})};
    json join = layer(f, f == Form::Keras1 ? "Merge" : "Add", f == Form::Keras1 ? json{{"name", "join"}, {"mode", "sum"}} : json{{"name", "join"}}, {});
    join["inbound_nodes"] = {call_node(f, {{"c", 0, 0}, {"c", 1, 0}})};
    json pool = layer(f, "GlobalAveragePooling2D", {{"name", "gap"}, {"data_format", "channels_last"}}, {"join"});
    json pool_a = layer(f, "GlobalAveragePooling2D", {{"name", "gap_a"}, {"data_format", "channels_last"}}, {});
    pool_a["inbound_nodes"] = {call_node(f, {{"c", 0, 0}})};
    auto dense = [&](const std::string& name, int units, const char* act, const std::vector<std::string>& reads) {
        json d{{"name", name}, {"activation", act}};
        d[f == Form::Keras1 ? "output_dim" : "units"] = units;
        return layer(f, "Dense", d, reads);
    };
    json head_in{{"name", "head_in"}, {"dtype", "float32"}};
    head_in[f == Form::Keras3 ? "batch_shape" : "batch_input_shape"] = {nullptr, 4};
    json head_layers = {layer(f, "InputLayer", head_in, {}), dense("h1", 6, "tanh", {"head_in"}), dense("h2", 3, "sigmoid", {"h1"})};
    json head{{"class_name", cls}, {"name", "head"},
              {"config", {{"name", "head"}, {"layers", head_layers}, {"input_layers", {{"head_in", 0, 0}}}, {"output_layers", {{"h2", 0, 0}}}}}};
    head["inbound_nodes"] = {call_node(f, {{"gap", 0, 0}}), call_node(f, {{"gap_a", 0, 0}})};
    json both = layer(f, f == Form::Keras1 ? "Merge" : "Concatenate",
                      f == Form::Keras1 ? json{{"name", "both"}, {"mode", "concat"}, {"concat_axis", -1}} : json{{"name", "both"}, {"axis", -1}}, {});
    both["inbound_nodes"] = {call_node(f, {{"head", 0, 0}, {"head", 1, 0}})};
    json layers = {input("a"), input("b"), conv_layer, join, pool, pool_a, head, both, dense("out", 5, "softmax", {"both"})};
    json cfg{{"name", "pair"}, {"layers", layers}, {"input_layers", {{"a", 0, 0}, {"b", 0, 0}}}, {"output_layers", {{"out", 0, 0}}}};
    json model{{"class_name", cls}, {"config", cfg}};
    if (f == Form::Keras3) model["module"] = "keras.src.models.functional", model["registered_name"] = "Functional";
    return model;
}

void TestGraphImport::keras_shared_and_nested_data() {
    QTest::addColumn<int>("form");
    QTest::newRow("Keras 1") << static_cast<int>(Form::Keras1);
    QTest::newRow("Keras 2") << static_cast<int>(Form::Keras2);
    QTest::newRow("Keras 3") << static_cast<int>(Form::Keras3);
}

void TestGraphImport::keras_shared_and_nested() {
    QFETCH(int, form);
    config::ImportResult r;
    try {
        r = import_json(siamese(static_cast<Form>(form)), "siamese" + QString::number(form));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    const auto& m = r.model;
    QStringList got;
    for (const auto& l : m.layers) {
        QString line = QString::fromStdString(l.name) + "<";
        for (const auto& in : l.inputs) line += QString::fromStdString(in) + ",";
        if (!l.shares.empty()) line += " shares " + QString::fromStdString(l.shares);
        got << line;
    }
    QCOMPARE(got.join(" | "), QString("c<a, | gap_a<c, | c@1<b, shares c | join<c,c@1, | gap<join, | head/h1<gap, | head/h2<head/h1, | "
                                      "head/h1@1<gap_a, shares head/h1 | head/h2@1<head/h1@1, shares head/h2 | both<head/h2,head/h2@1, | out<both,"));
    // Each weight once: conv 3*4*9+4, h1 4*6+6, h2 6*3+3, out 6*5+5.
    QCOMPARE(m.param_count(), std::size_t(112 + 30 + 21 + 35));
    const auto again = config::ModelConfig::from_json(m.to_json(), "again");
    QCOMPARE(QString::fromStdString(again.to_json().dump()), QString::fromStdString(m.to_json().dump()));

    // An activation after one call of a shared linear layer stays a layer: folded into the first
    // call, it would give that call settings the other call does not have.
    json one_sided = siamese(static_cast<Form>(form));
    auto& layers = one_sided["config"]["layers"];
    layers[2]["config"]["activation"] = "linear";
    json act = layer(static_cast<Form>(form), "Activation", {{"name", "act"}, {"activation", "tanh"}}, {"c"});
    layers.insert(layers.begin() + 3, act);
    layers[4]["inbound_nodes"][0] = call_node(static_cast<Form>(form), {{"act", 0, 0}, {"c", 1, 0}});  // join: act and call 1
    layers[6]["inbound_nodes"][0] = call_node(static_cast<Form>(form), {{"act", 0, 0}});  // gap_a reads the activation
    try {
        r = import_json(one_sided, "one_sided" + QString::number(form));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    bool kept = false;
    for (const auto& l : r.model.layers) kept = kept || (l.name == "act" && l.type == config::LayerType::Activation);
    QVERIFY2(kept, "the activation after the shared layer's first call was folded into it");
    QCOMPARE(r.model.layers[0].activation.kind, config::Activation::Identity);
}

// Transfer learning's usual form: a Sequential whose first layer is a pretrained model (here a
// Sequential "base" of Conv2D and pooling), then a classifier. Keras 3 starts with an InputLayer;
// Keras 2 gives the shape as the nested model's first layer's batch_input_shape.
void TestGraphImport::keras_sequential_holding_a_model_data() {
    QTest::addColumn<int>("form");
    QTest::newRow("Keras 2") << static_cast<int>(Form::Keras2);
    QTest::newRow("Keras 3") << static_cast<int>(Form::Keras3);
}

void TestGraphImport::keras_sequential_holding_a_model() {
    QFETCH(int, form);
    const auto f = static_cast<Form>(form);
    json conv_cfg = conv(f, "conv", "relu");
    if (f == Form::Keras2) conv_cfg["batch_input_shape"] = {nullptr, 8, 8, 3};
    json base_layers = json::array({{{"class_name", "Conv2D"}, {"config", conv_cfg}},
                                    {{"class_name", "GlobalAveragePooling2D"}, {"config", {{"name", "gap"}, {"data_format", "channels_last"}}}}});
    json layers = json::array();
    if (f == Form::Keras3)
        layers.push_back({{"class_name", "InputLayer"}, {"config", {{"name", "image"}, {"batch_shape", {nullptr, 8, 8, 3}}}}});
    layers.push_back({{"class_name", "Sequential"}, {"config", {{"name", "base"}, {"layers", base_layers}}}});
    layers.push_back({{"class_name", "Dense"}, {"config", {{"name", "out"}, {"units", 5}, {"activation", "softmax"}}}});
    json model{{"class_name", "Sequential"}, {"config", {{"name", "transfer"}, {"layers", layers}}}};
    config::ImportResult r;
    try {
        r = import_json(model, "transfer" + QString::number(form));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QStringList names;
    for (const auto& l : r.model.layers) names << QString::fromStdString(l.name);
    QCOMPARE(names.join(","), QString("base/conv,base/gap,out"));
    QCOMPARE(r.model.input, (config::Shape{3, 8, 8}));
    QCOMPARE(r.model.param_count(), std::size_t(3 * 4 * 9 + 4 + 4 * 5 + 5));
}

void TestGraphImport::dl4j_graph_forms_data() {
    QTest::addColumn<bool>("legacy");
    QTest::newRow("1.0 @class") << false;
    QTest::newRow("0.x wrapper names") << true;
}

void TestGraphImport::dl4j_graph_forms() {
    QFETCH(bool, legacy);
    config::ImportResult r;
    try {
        r = import_json(dl4j_block(legacy), legacy ? "dl4j_legacy" : "dl4j");
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    const auto& m = r.model;
    QCOMPARE(r.format, config::ModelFormat::Dl4j);
    QCOMPARE(m.input, (config::Shape{1, 6, 6}));
    QCOMPARE(QString::fromStdString(m.input_name), QString("input"));
    QCOMPARE(describe(m), QString("convolution<input,convolution<cnn1,add<cnn2+cnn1,concatenate<add+cnn1,subsampling<merge,output<pool"));
    QCOMPARE(m.layers[3].out_shape, (config::Shape{8, 6, 6}));
    QCOMPARE(m.param_count(), std::size_t((9 * 4 + 4) + (4 * 9 * 4 + 4) + (8 * 3 + 3)));
    QCOMPARE(m.effective_updater(0).kind, config::UpdaterKind::Adam);
    QVERIFY2(!QString::fromStdString(nlohmann::json(r.notes).dump()).contains("ignored field"),
             qPrintable(QString::fromStdString(nlohmann::json(r.notes).dump())));
}

void TestGraphImport::dl4j_graph_refusals_data() {
    QTest::addColumn<QByteArray>("change");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("second network input without a shape") << QByteArray("two_inputs") << QStringList{"networkInputs", "cannot tell the shape of input \"second\""};
    QTest::newRow("ScaleVertex") << QByteArray("scale") << QStringList{"vertices[\"add\"]", "ScaleVertex", "not supported"};
    QTest::newRow("merge along dimension 2") << QByteArray("merge_axis") << QStringList{"vertices[\"merge\"]", "\"mergeAxis\"", "2"};
    QTest::newRow("cycle") << QByteArray("cycle") << QStringList{"cycle"};
    QTest::newRow("unknown input") << QByteArray("unknown") << QStringList{"\"cnn2\"", "\"nowhere\"", "neither a vertex"};
    QTest::newRow("LocalResponseNormalization layer") << QByteArray("lrn") << QStringList{"vertices[\"cnn2\"]", "layer type LocalResponseNormalization is not supported"};
    QTest::newRow("ElementWise op") << QByteArray("op") << QStringList{"vertices[\"add\"]", "\"op\"", "Dot"};
}

void TestGraphImport::dl4j_graph_refusals() {
    QFETCH(QByteArray, change);
    QFETCH(QStringList, expected);
    json g = dl4j_block(false);
    if (change == "two_inputs") g["networkInputs"].push_back("second");
    if (change == "scale") g["vertices"]["add"] = {{"@class", "org.deeplearning4j.nn.conf.graph.ScaleVertex"}, {"scaleFactor", 2.0}};
    if (change == "merge_axis") g["vertices"]["merge"]["mergeAxis"] = 2;
    if (change == "cycle") g["vertexInputs"]["cnn1"] = {"add"};
    if (change == "unknown") g["vertexInputs"]["cnn2"] = {"nowhere"};
    if (change == "lrn") g["vertices"]["cnn2"]["layerConf"]["layer"]["@class"] = "org.deeplearning4j.nn.conf.layers.LocalResponseNormalization";
    if (change == "op") g["vertices"]["add"]["op"] = "Dot";
    try {
        import_json(g, "dl4j_" + QString::fromLatin1(change));
        QFAIL("imported");
    } catch (const ConfigError& e) {
        const QString msg = QString::fromStdString(e.what());
        for (const auto& fragment : expected) QVERIFY2(msg.contains(fragment), qPrintable("\"" + fragment + "\" not in: " + msg));
    }
}

// DL4J numbers the inputs, then the vertices in file order, and visits each vertex's readers in
// java.util.HashSet<Integer> order: buckets by value mod 16 while the set is small, so readers 5
// and 18 of one vertex come 18 first (bucket 2 before bucket 5) although 5 was added first.
void TestGraphImport::dl4j_order_follows_java_hash_sets() {
    std::vector<std::pair<std::string, std::vector<std::string>>> vertices;
    for (int i = 1; i <= 20; ++i) {
        const std::string prev = i == 1 ? "in" : "v" + std::to_string(i - 1);
        // v5 and v18 also read "in"; everything else is a chain.
        std::vector<std::string> ins{prev};
        if (i == 18) ins = {"in"};
        vertices.emplace_back("v" + std::to_string(i), ins);
    }
    vertices[4].second = {"in"};  // v5 (index 5) reads the input
    vertices[5].second = {"v5"};
    const auto order = config::dl4j_topological_order({"in"}, vertices);
    QCOMPARE(order.size(), std::size_t(21));
    QCOMPARE(QString::fromStdString(order[0]), QString("in"));
    // "in" has readers v1 (1), v5 (5) and v18 (18): buckets 1, 5, 2 -> v1, v18, v5.
    QCOMPARE(QString::fromStdString(order[1]), QString("v1"));
    QCOMPARE(QString::fromStdString(order[2]), QString("v18"));
    QCOMPARE(QString::fromStdString(order[3]), QString("v5"));
    // With more than 12 readers the set has 32 buckets: 5 and 18 are in order again.
    std::vector<std::pair<std::string, std::vector<std::string>>> wide;
    for (int i = 1; i <= 20; ++i) wide.emplace_back("w" + std::to_string(i), std::vector<std::string>{"in"});
    const auto wide_order = config::dl4j_topological_order({"in"}, wide);
    for (int i = 1; i <= 20; ++i) QCOMPARE(QString::fromStdString(wide_order[static_cast<std::size_t>(i)]), "w" + QString::number(i));
}

QTEST_GUILESS_MAIN(TestGraphImport)
#include "test_graph_import.moc"
