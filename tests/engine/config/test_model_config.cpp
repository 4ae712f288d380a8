// Model config parsing: the shipped models infer the shapes and parameter counts worked out in
// shape_inference.cpp, the JSON round-trips, and every kind of bad config fails with a message
// that names the source, the layer and the field.
#include <QtTest>

#include "source_dir.h"
#include "core/error.h"
#include "config/model_config.h"

using namespace thresher;

using test_support::source_dir;


class TestModelConfig : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void lenet_shapes();
    void mlp_shapes();
    void round_trip_data();
    void round_trip();
    void errors_data();
    void errors();
    void resnet_graph();
    void several_inputs_and_outputs();
    void activation_layers();
    void resize_layers();
    void same_mode_padding();
    void missing_file();
    void sequence_layers();
    void sequence_round_trip();
};

void TestModelConfig::lenet_shapes() {
    const auto m = config::ModelConfig::load((source_dir() + "/resources/models/lenet.json").toStdString());
    QCOMPARE(m.layers.size(), std::size_t(6));
    QCOMPARE(m.layers[0].out_shape, (config::Shape{20, 24, 24}));
    QCOMPARE(m.layers[1].out_shape, (config::Shape{20, 12, 12}));
    QCOMPARE(m.layers[2].out_shape, (config::Shape{50, 8, 8}));
    QCOMPARE(m.layers[3].out_shape, (config::Shape{50, 4, 4}));
    QCOMPARE(m.layers[4].in_shape.size(), std::size_t(800));
    // 20*1*25+20 + 50*20*25+50 + 800*500+500 + 500*10+10
    QCOMPARE(m.layers[0].param_count, std::size_t(520));
    QCOMPARE(m.layers[2].param_count, std::size_t(25050));
    QCOMPARE(m.layers[4].param_count, std::size_t(400500));
    QCOMPARE(m.param_count(), std::size_t(431080));
    QCOMPARE(m.layers[4].param_offset, std::size_t(520 + 25050));
    QVERIFY(m.is_classifier());
}

void TestModelConfig::mlp_shapes() {
    const auto m = config::ModelConfig::load((source_dir() + "/resources/models/mlp.json").toStdString());
    // 784*1000+1000 + 1000*1000+1000 + 1000*10+10
    QCOMPARE(m.param_count(), std::size_t(785000 + 1001000 + 10010));
}

void TestModelConfig::round_trip_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("lenet") << "lenet.json";
    QTest::newRow("mlp") << "mlp.json";
    QTest::newRow("resnet (a graph)") << "resnet.json";
    QTest::newRow("two_input (two inputs, two outputs)") << "two_input.json";
    QTest::newRow("segmentation (an image output, spatial dropout)") << "segmentation.json";
    QTest::newRow("siamese (shared layers)") << "siamese.json";
}

void TestModelConfig::round_trip() {
    QFETCH(QString, file);
    const auto a = config::ModelConfig::load((source_dir() + "/resources/models/" + file).toStdString());
    const auto b = config::ModelConfig::from_json(a.to_json(), "round trip");
    QCOMPARE(QString::fromStdString(b.to_json().dump()), QString::fromStdString(a.to_json().dump()));
    QCOMPARE(b.param_count(), a.param_count());
}

// The two-input template: each branch reads its own input; two outputs in the order "outputs"
// gives (the main one first), their values side by side.
void TestModelConfig::several_inputs_and_outputs() {
    const auto m = config::ModelConfig::load((source_dir() + "/resources/models/two_input.json").toStdString());
    QVERIFY(m.is_graph());
    QCOMPARE(m.input_count(), std::size_t{2});
    QCOMPARE(m.input_name_of(1), std::string("bottom"));
    QCOMPARE(m.input_size(), std::size_t{2 * 14 * 28});
    QCOMPARE(m.layers[0].sources, std::vector<int>{config::LayerConfig::model_input(0)});
    QCOMPARE(m.layers[2].sources, std::vector<int>{config::LayerConfig::model_input(1)});
    QCOMPARE(m.output_layers, (std::vector<std::size_t>{7, 4}));
    QCOMPARE(m.main_output().name, std::string("predictions"));
    QCOMPARE(m.output_size(), 20);
    QVERIFY(m.layers[4].is_output && m.layers[7].is_output && !m.layers[5].is_output);
    QVERIFY(m.is_classifier());
}

void TestModelConfig::errors_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QStringList>("expected");  // fragments the message must contain
    const QByteArray in = R"("input":{"channels":1,"height":8,"width":8})";
    const QByteArray out = R"({"type":"output","units":2})";
    auto with = [&](const QByteArray& layers) { return "{" + in + R"(,"layers":[)" + layers + "]}"; };
    const QByteArray seq = R"("input":{"steps":10,"features":3})";
    auto with_seq = [&](const QByteArray& layers) { return "{" + seq + R"(,"layers":[)" + layers + "]}"; };

    QTest::newRow("lstm on an image names the layer and the shape")
        << with(R"({"type":"lstm","units":4},)" + out) << QStringList{"layers[0] (lstm)", "needs a sequence input", "1x8x8 image"};
    QTest::newRow("gru on flat features")
        << QByteArray(R"({"input":{"size":5},"layers":[{"type":"gru","units":4},{"type":"output","units":2}]})")
        << QStringList{"layers[0] (gru)", "needs a sequence input", "5 flat features"};
    QTest::newRow("embedding on several features per step")
        << with_seq(R"({"type":"embedding","vocabulary":20,"units":4},)" + out)
        << QStringList{"layers[0] (embedding)", "token ids", "10 steps x 3 features"};
    QTest::newRow("embedding without vocabulary")
        << with_seq(R"({"type":"embedding","units":4},)" + out) << QStringList{"layers[0] (embedding)", "\"vocabulary\"", "required"};
    QTest::newRow("lstm without units") << with_seq(R"({"type":"lstm"},)" + out) << QStringList{"layers[0] (lstm)", "\"units\""};
    QTest::newRow("bad bidirectional mode")
        << with_seq(R"({"type":"lstm","units":4,"bidirectional":"both"},)" + out) << QStringList{"layers[0] (lstm)", "\"bidirectional\""};
    QTest::newRow("simple_rnn with softmax")
        << with_seq(R"({"type":"simple_rnn","units":4,"activation":"softmax"},)" + out)
        << QStringList{"layers[0] (simple_rnn)", "\"activation\"", "softmax is not an element-wise activation"};
    QTest::newRow("softmax gates on an lstm")
        << with_seq(R"({"type":"lstm","units":4,"gate_activation":"softmax"},)" + out)
        << QStringList{"layers[0] (lstm)", "\"gate_activation\"", "softmax cannot gate"};
    QTest::newRow("gate_activation on a simple_rnn (unknown field)")
        << with_seq(R"({"type":"simple_rnn","units":4,"gate_activation":"sigmoid"},)" + out)
        << QStringList{"layers[0] (simple_rnn)", "gate_activation"};
    QTest::newRow("gate_alpha for sigmoid gates")
        << with_seq(R"({"type":"gru","units":4,"gate_alpha":0.2},)" + out)
        << QStringList{"layers[0] (gru)", "\"gate_alpha\"", "only applies to gate_activation leakyrelu, elu, hardsigmoid"};
    QTest::newRow("gate_alpha out of range")
        << with_seq(R"({"type":"lstm","units":4,"gate_activation":"hardsigmoid","gate_alpha":20},)" + out)
        << QStringList{"layers[0] (lstm)", "\"gate_alpha\""};
    QTest::newRow("unknown lstm activation")
        << with_seq(R"({"type":"lstm","units":4,"activation":"hard_tanh"},)" + out)
        << QStringList{"layers[0] (lstm)", "\"activation\"", "hard_tanh"};
    QTest::newRow("peepholes on a gru (unknown field)")
        << with_seq(R"({"type":"gru","units":4,"peepholes":true},)" + out) << QStringList{"layers[0] (gru)", "peepholes"};
    QTest::newRow("convolution1d kernel longer than the sequence")
        << with_seq(R"({"type":"convolution1d","filters":2,"kernel":11},)" + out)
        << QStringList{"layers[0] (convolution1d)", "kernel 11", "10 steps x 3 features"};
    QTest::newRow("convolution on a sequence")
        << with_seq(R"({"type":"convolution","filters":2,"kernel":[1,1]},)" + out)
        << QStringList{"layers[0] (convolution)", "needs image input", "a sequence of 10 steps x 3 features"};
    QTest::newRow("repeat_vector of a sequence")
        << with_seq(R"({"type":"repeat_vector","times":3},)" + out) << QStringList{"layers[0] (repeat_vector)", "needs flat features"};
    QTest::newRow("sequence input without features")
        << QByteArray(R"({"input":{"steps":10},"layers":[{"type":"output","units":2}]})") << QStringList{"input", "\"features\""};
    QTest::newRow("causal pooling")
        << with_seq(R"({"type":"subsampling","kernel":2,"mode":"causal"},)" + out) << QStringList{"layers[0] (subsampling)", "mode"};

    QTest::newRow("bad JSON names line and column")
        << QByteArray("{\n  \"input\": {\"size\": 3},\n  \"layers\": [,]\n}")
        << QStringList{"cfg.json:3:", "invalid JSON"};
    QTest::newRow("number beyond double (found by the fuzzer)")
        << QByteArray(R"({"seed": 12e1000, "input":{"size":3},"layers":[{"type":"output","units":2}]})")
        << QStringList{"cfg.json", "invalid JSON", "12e1000"};
    const QByteArray two = R"("input":[{"name":"a","size":3},{"name":"b","size":2}])";
    QTest::newRow("several inputs, one unnamed")
        << QByteArray(R"({"input":[{"name":"a","size":3},{"size":2}],"layers":[)" + out + "]}")
        << QStringList{"input[1]", "\"name\": is required when the model has several inputs"};
    QTest::newRow("several inputs, one name twice")
        << QByteArray(R"({"input":[{"name":"a","size":3},{"name":"a","size":2}],"layers":[)" + out + "]}")
        << QStringList{"input[1]", "\"a\" names two inputs"};
    QTest::newRow("reads an input no one declared")
        << QByteArray("{" + two + R"(,"layers":[{"type":"dense","name":"d","inputs":"c","units":2},)" + out + "]}")
        << QStringList{"layers[0] (dense \"d\")", "input \"c\" names no layer", "inputs are \"a\", \"b\""};
    QTest::newRow("a dense branch no one reads")
        << QByteArray("{" + two + R"(,"layers":[{"type":"dense","name":"d","inputs":"b","units":2},{"type":"output","inputs":"a","units":2}]})")
        << QStringList{"layers[0] (dense \"d\")", "cannot be a model output"};
    QTest::newRow("outputs names an unknown layer")
        << QByteArray(R"({"input":{"size":3},"outputs":["nope"],"layers":[)" + out + "]}")
        << QStringList{"outputs", "\"nope\" names no layer"};
    QTest::newRow("outputs leaves one out")
        << QByteArray(R"({"input":{"size":3},"outputs":["o2"],"layers":[{"type":"output","name":"o1","units":2},{"type":"output","name":"o2","inputs":"input","units":2}]})")
        << QStringList{"layers[0] (output \"o1\")", "\"outputs\" does not list it"};
    QTest::newRow("unknown layer type")
        << with(R"({"type":"lstm2d","units":3},)" + out) << QStringList{"layers[0]", "\"type\"", "lstm2d", "expected one of"};
    QTest::newRow("non-positive units")
        << with(R"({"type":"dense","units":0},)" + out) << QStringList{"layers[0] (dense)", "\"units\"", "got 0"};
    QTest::newRow("kernel with a zero")
        << with(R"({"type":"convolution","filters":4,"kernel":[5,0]},)" + out)
        << QStringList{"layers[0] (convolution)", "\"kernel\"", "positive integers", "[5,0]"};
    QTest::newRow("kernel larger than input")
        << with(R"({"type":"convolution","filters":4,"kernel":[9,9]},)" + out)
        << QStringList{"layers[0] (convolution)", "kernel 9x9 does not fit", "1x8x8"};
    QTest::newRow("shape mismatch: convolution after dense")
        << with(R"({"type":"dense","units":10},{"type":"convolution","filters":2,"kernel":2},)" + out)
        << QStringList{"layers[1] (convolution)", "needs image input", "10 flat features"};
    QTest::newRow("misspelt optional field")
        << with(R"({"type":"convolution","filters":2,"kernel":[2,2],"strides":[2,2]},)" + out)
        << QStringList{"layers[0] (convolution)", "unknown field \"strides\"", "stride"};
    QTest::newRow("misspelt required field")
        << with(R"({"type":"convolution","filters":2,"kernal":[2,2]},)" + out)
        << QStringList{"layers[0] (convolution)", "\"kernel\": is required"};
    QTest::newRow("output not last")
        << with(out + R"(,{"type":"dense","units":3})") << QStringList{"layers[0] (output)", "an output layer ends the model"};
    QTest::newRow("no output layer")
        << with(R"({"type":"dense","units":3})") << QStringList{"layers[0] (dense)", "last layer must be an output layer"};
    QTest::newRow("loss and activation disagree")
        << with(R"({"type":"output","units":2,"activation":"tanh","loss":"mcxent"})")
        << QStringList{"layers[0] (output)", "\"loss\"", "needs activation softmax"};
    QTest::newRow("missing input")
        << QByteArray(R"({"layers":[{"type":"output","units":2}]})") << QStringList{"model", "\"input\"", "is required"};
    QTest::newRow("wrong type of value")
        << with(R"({"type":"dense","units":"ten"},)" + out) << QStringList{"layers[0] (dense)", "\"units\"", "integer"};
    QTest::newRow("dropout retain out of range")
        << with(R"({"type":"dropout","retain":1.5},)" + out) << QStringList{"layers[0] (dropout)", "\"retain\"", "1.5"};
    QTest::newRow("named layer appears in messages")
        << with(R"({"type":"dense","name":"hidden","units":-1},)" + out) << QStringList{"(dense \"hidden\")", "\"units\""};
    QTest::newRow("activation layer without its activation")
        << with(R"({"type":"activation"},)" + out) << QStringList{"layers[0] (activation)", "\"activation\": is required"};
    QTest::newRow("activation layer with a loss, not last")
        << with(R"({"type":"activation","activation":"relu","loss":"mse"},)" + out)
        << QStringList{"layers[0] (activation)", "\"loss\"", "only an output"};
    QTest::newRow("softmax activation layer on an image")
        << with(R"({"type":"activation","activation":"softmax"},)" + out)
        << QStringList{"layers[0] (activation)", "softmax over a 1x8x8 image", "only on a model output with loss mcxent"};
    // Image outputs: a layer producing an image with a "loss" (engine/config/README.md, outputs).
    QTest::newRow("last convolution without a loss")
        << with(R"({"type":"convolution","filters":2,"kernel":[3,3]})")
        << QStringList{"layers[0] (convolution)", "the last layer must be", "got convolution without one"};
    QTest::newRow("convolution softmax without a loss")
        << with(R"({"type":"convolution","filters":2,"kernel":[3,3],"activation":"softmax"},)" + out)
        << QStringList{"layers[0] (convolution)", "\"activation\"", "softmax over its channels at each pixel"};
    QTest::newRow("image loss on a layer others read")
        << with(R"({"type":"convolution","filters":2,"kernel":[3,3],"loss":"mse"},)" + out)
        << QStringList{"layers[0] (convolution)", "\"loss\"", "only an output"};
    QTest::newRow("image output: upsampling with mcxent and no softmax")
        << with(R"({"type":"upsampling","size":2,"loss":"mcxent"})")
        << QStringList{"layers[0] (upsampling)", "\"loss\"", "needs activation softmax"};
    QTest::newRow("image output: a convolution down to flat features")
        << with(R"({"type":"convolution","filters":2,"kernel":[8,8],"loss":"mse"})")
        << QStringList{"layers[0] (convolution)", "only when it produces an image", "2 flat features"};
    QTest::newRow("spatial dropout on flat features")
        << with(R"({"type":"dense","units":4},{"type":"dropout","retain":0.5,"spatial":true},)" + out)
        << QStringList{"layers[1] (dropout)", "spatial dropout drops whole channels", "4 flat features"};
    QTest::newRow("last activation layer: loss and activation disagree")
        << with(R"({"type":"dense","units":3},{"type":"activation","activation":"relu","loss":"mcxent"})")
        << QStringList{"layers[1] (activation)", "\"loss\"", "needs activation softmax"};
    QTest::newRow("cropping leaves nothing")
        << with(R"({"type":"cropping","cropping":[4,4,0,0]},)" + out)
        << QStringList{"layers[0] (cropping)", "leaves nothing", "1x8x8"};
    QTest::newRow("zero padding on flat features")
        << with(R"({"type":"dense","units":4},{"type":"zero_padding","padding":1},)" + out)
        << QStringList{"layers[1] (zero_padding)", "needs image input", "4 flat features"};
    QTest::newRow("zero padding of three numbers")
        << with(R"({"type":"zero_padding","padding":[1,2,3]},)" + out)
        << QStringList{"layers[0] (zero_padding)", "\"padding\"", "[top, bottom, left, right]", "[1,2,3]"};
    QTest::newRow("upsampling by 0")
        << with(R"({"type":"upsampling","size":0},)" + out) << QStringList{"layers[0] (upsampling)", "\"size\""};
    // Graphs: an error names the vertex (or layer) and the edge in the file's own names.
    QTest::newRow("graph: input names no layer")
        << with(R"({"type":"dense","name":"a","units":3},{"type":"add","inputs":["a","b"]},)" + out)
        << QStringList{"layers[1] (add)", "input \"b\" names no layer", "\"input\""};
    QTest::newRow("graph: input comes later")
        << with(R"({"type":"dense","name":"a","units":3,"inputs":"b"},{"type":"dense","name":"b","units":3},)" + out)
        << QStringList{"layers[0] (dense \"a\")", "input \"b\" comes after it"};
    QTest::newRow("graph: a layer reads itself")
        << with(R"({"type":"dense","name":"a","units":3,"inputs":"a"},)" + out)
        << QStringList{"layers[0] (dense \"a\")", "is the layer itself"};
    QTest::newRow("graph: add of two shapes")
        << with(R"({"type":"convolution","name":"c","filters":2,"kernel":[3,3]},{"type":"add","inputs":["c","input"]},)" + out)
        << QStringList{"layers[1] (add)", "one shape", "input \"input\" is 1x8x8", "input \"c\" is 2x6x6"};
    QTest::newRow("graph: concatenate of two image sizes")
        << with(R"({"type":"convolution","name":"c","filters":2,"kernel":[3,3]},{"type":"concatenate","inputs":["input","c"]},)" + out)
        << QStringList{"layers[1] (concatenate)", "one height and width", "\"c\" is 2x6x6"};
    QTest::newRow("graph: a branch no one reads")
        << with(R"({"type":"dense","name":"a","units":3,"inputs":"input"},{"type":"dense","name":"b","units":3,"inputs":"input"},)" + out)
        << QStringList{"layers[0] (dense \"a\")", "no layer reads its output"};
    QTest::newRow("graph: a layer with two inputs")
        << with(R"({"type":"dense","name":"a","units":3},{"type":"dense","units":3,"inputs":["a","input"]},)" + out)
        << QStringList{"layers[1] (dense)", "reads 2 inputs", "only vertices"};
    QTest::newRow("graph: a vertex with no inputs")
        << with(R"({"type":"dense","units":3},{"type":"concatenate"},)" + out)
        << QStringList{"layers[1] (concatenate)", "list them in \"inputs\""};
    QTest::newRow("graph: ambiguous name")
        << with(R"({"type":"dense","name":"a","units":3},{"type":"dense","name":"a","units":3},{"type":"add","inputs":["a","a"]},)" + out)
        << QStringList{"layers[2] (add)", "ambiguous"};
    QTest::newRow("graph: subset beyond the channels")
        << with(R"({"type":"subset","channels":[0,3]},)" + out)
        << QStringList{"layers[0] (subset)", "keeps channels 0 to 3", "has 1 channels"};
    QTest::newRow("graph: subtract of three")
        << with(R"({"type":"dense","name":"a","units":3,"inputs":"input"},{"type":"subtract","inputs":["a","a","a"]},)" + out)
        << QStringList{"layers[1] (subtract)", "exactly two inputs"};
    QTest::newRow("graph: inputs not names")
        << with(R"({"type":"dense","units":3,"inputs":[1]},)" + out)
        << QStringList{"layers[0] (dense)", "\"inputs\"", "must name layers"};
    // Shared layers: the owner is named, earlier, of the same type and settings, and the sharer's
    // input fits the owner's weights.
    QTest::newRow("shares: names no layer")
        << with(R"({"type":"dense","name":"a","units":3,"shares":"b"},)" + out)
        << QStringList{"layers[0] (dense \"a\")", "\"shares\"", "\"b\" names no layer"};
    QTest::newRow("shares: a later layer")
        << with(R"({"type":"dense","name":"a","units":3,"shares":"b"},{"type":"dense","name":"b","units":3},)" + out)
        << QStringList{"layers[0] (dense \"a\")", "\"b\" comes after it"};
    QTest::newRow("shares: another type")
        << with(R"({"type":"convolution","name":"c","filters":2,"kernel":[3,3]},{"type":"dense","units":3,"shares":"c"},)" + out)
        << QStringList{"layers[1] (dense)", "\"c\" is a convolution layer", "this one a dense"};
    QTest::newRow("shares: other settings")
        << with(R"({"type":"dense","name":"a","units":64,"inputs":"input"},{"type":"dense","name":"b","units":3,"shares":"a","inputs":"input"},{"type":"add","inputs":["a","b"]},)" + out)
        << QStringList{"layers[1] (dense \"b\")", "parameters of \"a\"", "settings"};
    QTest::newRow("shares: an input the weights do not fit")
        << with(R"({"type":"dense","name":"a","units":10},{"type":"dense","name":"b","units":10,"shares":"a"},)" + out)
        << QStringList{"layers[1] (dense \"b\")", "made for its 1x8x8 input", "650 parameters", "reads 10 (110)"};
    QTest::newRow("unknown updater")
        << QByteArray("{" + in + R"(,"updater":{"type":"lbfgs"},"layers":[)" + out + "]}")
        << QStringList{"updater", "\"type\"", "lbfgs"};
}

// The ResNet template: two branches meet at each add; the shortcut convolutions read the block's
// input; parameters stay one buffer laid out in the listed order.
void TestModelConfig::resnet_graph() {
    const auto m = config::ModelConfig::load((source_dir() + "/resources/models/resnet.json").toStdString());
    QVERIFY(m.is_graph());
    QVERIFY(!config::ModelConfig::load((source_dir() + "/resources/models/lenet.json").toStdString()).is_graph());
    auto at = [&](const char* name) {
        for (std::size_t i = 0; i < m.layers.size(); ++i)
            if (m.layers[i].name == name) return static_cast<int>(i);
        return -2;
    };
    const auto& add = m.layers[static_cast<std::size_t>(at("b2_add"))];
    QCOMPARE(add.sources, (std::vector<int>{at("b2_bn2"), at("b2_shortcut")}));
    QCOMPARE(add.out_shape, (config::Shape{32, 14, 14}));
    QCOMPARE(m.layers[static_cast<std::size_t>(at("b2_shortcut"))].sources, std::vector<int>{at("b1_out")});
    QCOMPARE(m.layers[0].sources, std::vector<int>{config::LayerConfig::kModelInput});
    std::size_t offset = 0;
    for (const auto& l : m.layers) {
        QCOMPARE(l.param_offset, offset);
        offset += l.param_count;
    }
    QCOMPARE(m.param_count(), std::size_t(78378));
}

void TestModelConfig::errors() {
    QFETCH(QByteArray, json);
    QFETCH(QStringList, expected);
    try {
        config::ModelConfig::parse(json.toStdString(), "cfg.json");
        QFAIL("no error");
    } catch (const ConfigError& e) {
        const QString msg = QString::fromStdString(e.what());
        QVERIFY2(msg.startsWith("cfg.json"), qPrintable(msg));
        for (const auto& fragment : expected)
            QVERIFY2(msg.contains(fragment), qPrintable("\"" + fragment + "\" not in: " + msg));
    }
}

// An activation layer: no parameters, the shape of its input; last, it is the output with the
// loss (DL4J's LossLayer), its outputs the features it receives. Saved and read back unchanged.
void TestModelConfig::activation_layers() {
    const auto m = config::ModelConfig::parse(R"({"input":{"size":6},"layers":[
        {"type":"dense","units":5,"activation":"relu"},{"type":"activation","activation":"leakyrelu","alpha":0.2},
        {"type":"dense","units":3,"activation":"tanh"},{"type":"activation","activation":"softmax","loss":"negativeloglikelihood"}]})",
                                              "act.json");
    QCOMPARE(m.layers[1].type, config::LayerType::Activation);
    QCOMPARE(m.layers[1].param_count, std::size_t(0));
    QCOMPARE(m.layers[1].out_shape, (config::Shape{5, 1, 1}));
    QCOMPARE(m.layers[1].activation.alpha, 0.2f);
    QVERIFY(!m.layers[1].is_output);
    QVERIFY(m.layers[3].is_output);
    QCOMPARE(m.output_size(), 3);
    QCOMPARE(m.layers[3].loss, config::LossKind::NegativeLogLikelihood);
    QVERIFY(m.is_classifier());
    QCOMPARE(m.param_count(), std::size_t(6 * 5 + 5 + 5 * 3 + 3));
    const auto again = config::ModelConfig::from_json(m.to_json(), "again");
    QCOMPARE(QString::fromStdString(again.to_json().dump()), QString::fromStdString(m.to_json().dump()));
    QCOMPARE(QString::fromStdString(m.to_json()["layers"][1].dump()),
             QString(R"({"activation":"leakyrelu","alpha":0.2,"type":"activation"})"));
}

// Zero padding, cropping and upsampling: the image grows, shrinks or repeats each pixel; no
// parameters; n and [h, w] spell the margins too, saved as [top, bottom, left, right].
void TestModelConfig::resize_layers() {
    const auto m = config::ModelConfig::parse(R"({"input":{"channels":3,"height":8,"width":6},"layers":[
        {"type":"zero_padding","padding":[1,2,3,4]},{"type":"cropping","cropping":[2,1]},
        {"type":"upsampling","size":[2,3]},{"type":"zero_padding","padding":1},{"type":"output","units":2}]})",
                                              "resize.json");
    QCOMPARE(m.layers[0].out_shape, (config::Shape{3, 11, 13}));
    QCOMPARE(m.layers[1].margins, (std::array<int, 4>{2, 2, 1, 1}));
    QCOMPARE(m.layers[1].out_shape, (config::Shape{3, 7, 11}));
    QCOMPARE(m.layers[2].out_shape, (config::Shape{3, 14, 33}));
    QCOMPARE(m.layers[3].out_shape, (config::Shape{3, 16, 35}));
    QCOMPARE(m.param_count(), std::size_t(3 * 16 * 35 * 2 + 2));
    const auto j = m.to_json();
    QCOMPARE(QString::fromStdString(j["layers"][1].dump()), QString(R"({"cropping":[2,2,1,1],"type":"cropping"})"));
    QCOMPARE(QString::fromStdString(j["layers"][2].dump()), QString(R"({"size":[2,3],"type":"upsampling"})"));
    const auto again = config::ModelConfig::from_json(j, "again");
    QCOMPARE(QString::fromStdString(again.to_json().dump()), QString::fromStdString(j.dump()));
}

void TestModelConfig::same_mode_padding() {
    // in 7, kernel 3, stride 2, same: out = ceil(7/2) = 4; total pad = (4-1)*2 + 3 - 7 = 2 -> 1 + 1
    // in 6: out 3, total pad = (3-1)*2 + 3 - 6 = 1 -> 0 before, 1 after
    const auto m = config::ModelConfig::parse(R"({"input":{"channels":1,"height":7,"width":6},
      "layers":[{"type":"convolution","filters":1,"kernel":3,"stride":2,"mode":"same"},{"type":"output","units":2}]})",
                                          "same");
    QCOMPARE(m.layers[0].out_shape, (config::Shape{1, 4, 3}));
    QCOMPARE(m.layers[0].pads, (std::array<int, 4>{1, 0, 1, 1}));
}

void TestModelConfig::missing_file() {
    QVERIFY_THROWS_EXCEPTION(ConfigError, config::ModelConfig::load("/nonexistent/model.json"));
}

// Sequence inputs and layers (seq_spec.md): shapes, the parameter blocks' layout and counts,
// the row's length float, per-step outputs' targets.
void TestModelConfig::sequence_layers() {
    const auto m = config::ModelConfig::parse(R"({"input":[{"name":"ids","steps":12,"features":1},{"name":"extra","steps":5,"features":2},{"name":"flat","size":3}],
        "layers":[
        {"name":"emb","type":"embedding","vocabulary":50,"units":8,"inputs":"ids"},
        {"name":"conv","type":"convolution1d","filters":6,"kernel":3,"dilation":2,"mode":"causal"},
        {"name":"lstm","type":"lstm","units":5,"return_sequences":true,"bidirectional":"concat","peepholes":true},
        {"name":"gru","type":"gru","units":4,"return_sequences":true},
        {"name":"gru2","type":"gru","units":4,"reset_after":false,"bidirectional":"sum"},
        {"name":"rep","type":"repeat_vector","times":7},
        {"name":"rnn","type":"simple_rnn","units":3,"activation":"relu","return_sequences":true},
        {"name":"pool","type":"subsampling","kernel":2,"pooling":"avg"},
        {"name":"steps","type":"output","units":2,"activation":"softmax","loss":"mcxent"},
        {"name":"s2","type":"simple_rnn","units":2,"inputs":"extra"},
        {"name":"f","type":"dense","units":2,"inputs":"flat"},
        {"name":"sum","type":"add","inputs":["s2","f"]},
        {"name":"last","type":"output","units":3,"activation":"softmax"}],
        "outputs":["last","steps"]})",
                                              "seq.json");
    QCOMPARE(m.input.t, 12);
    QCOMPARE(m.input.str(), std::string("12 steps x 1"));
    QVERIFY(!m.input.flat() && m.input.sequence());
    // 1 + 12 (ids) + 1 + 10 (extra) + 3 (flat).
    QCOMPARE(m.input_size(), std::size_t{1 + 12 + 1 + 10 + 3});
    QCOMPARE(m.layers[0].out_shape, config::sequence_shape(12, 8));
    QCOMPARE(m.layers[0].param_count, std::size_t{50 * 8});
    // Causal: ceil(12 / 1) steps, (3 - 1) * 2 padded before.
    QCOMPARE(m.layers[1].out_shape, config::sequence_shape(12, 6));
    QCOMPARE(m.layers[1].pads[0], 4);
    QCOMPARE(m.layers[1].param_count, std::size_t{6 * 8 * 3 + 6});
    // lstm: per direction W 6x20, R 5x20, b 20, P 3x5.
    const auto& lstm = m.layers[2];
    QCOMPARE(lstm.out_shape, config::sequence_shape(12, 10));
    QCOMPARE(lstm.param_count, std::size_t{2 * (6 * 20 + 5 * 20 + 20 + 15)});
    QCOMPARE(lstm.blocks.size(), std::size_t{8});
    QCOMPARE(lstm.blocks[1].role, config::ParamRole::Recurrent);
    QCOMPARE(lstm.blocks[1].offset, std::size_t{6 * 20});
    QCOMPARE(lstm.blocks[4].role, config::ParamRole::Weight);
    QCOMPARE(lstm.blocks[4].offset, std::size_t{6 * 20 + 5 * 20 + 20 + 15});
    // gru, reset after: b [4H]; reset before: b [3H]; sum keeps H features, the last step only.
    QCOMPARE(m.layers[3].param_count, std::size_t{10 * 12 + 4 * 12 + 16});
    QCOMPARE(m.layers[4].param_count, std::size_t{2 * (4 * 12 + 4 * 12 + 12)});
    QCOMPARE(m.layers[4].out_shape, (config::Shape{4, 1, 1}));
    QCOMPARE(m.layers[5].out_shape, config::sequence_shape(7, 4));
    QCOMPARE(m.layers[6].param_count, std::size_t{4 * 3 + 3 * 3 + 3});
    QCOMPARE(m.layers[7].out_shape, config::sequence_shape(3, 3));  // floor((7 - 2) / 2) + 1
    // A per-step output: dense per step, targets T * K.
    QCOMPARE(m.layers[8].out_shape, config::sequence_shape(3, 2));
    QCOMPARE(m.layers[8].param_count, std::size_t{3 * 2 + 2});
    QCOMPARE(m.layers[9].out_shape, (config::Shape{2, 1, 1}));
    QCOMPARE(m.target_size(), std::size_t{3 + 3 * 2});
    QCOMPARE(m.output_size(), 5);
    const auto text = QString::fromStdString(m.summary());
    QVERIFY2(text.contains("12 steps x 1 -> 12 steps x 8"), qPrintable(text));
    QVERIFY2(text.contains("bidirectional concat"), qPrintable(text));

    // Global pooling over time gives flat features; reshape flattens a sequence (Keras Flatten).
    const auto g = config::ModelConfig::parse(R"({"input":{"steps":6,"features":4},"layers":[
        {"type":"subsampling","global":true,"pooling":"max"},{"type":"repeat_vector","times":6},
        {"type":"reshape","shape":{"size":24}},{"type":"output","units":2}]})", "g.json");
    QCOMPARE(g.layers[0].out_shape, (config::Shape{4, 1, 1}));
    QCOMPARE(g.layers[2].out_shape, (config::Shape{24, 1, 1}));
    QCOMPARE(g.input_size(), std::size_t{25});
}

void TestModelConfig::sequence_round_trip() {
    const auto a = config::ModelConfig::parse(R"({"input":[{"name":"x","steps":9,"features":2},{"name":"y","steps":4,"features":1}],"layers":[
        {"name":"l","type":"lstm","units":3,"return_sequences":true,"bidirectional":"average","forget_bias":0.5,"inputs":"x"},
        {"name":"g","type":"gru","units":2,"reset_after":false,"return_sequences":true,"activation":"relu","gate_activation":"hardsigmoid","gate_alpha":0.16666667},
        {"name":"c","type":"convolution1d","filters":2,"kernel":2,"stride":2,"mode":"same","activation":"relu"},
        {"name":"r","type":"simple_rnn","units":2,"activation":"softsign"},
        {"name":"o1","type":"output","units":2},
        {"name":"e","type":"embedding","vocabulary":7,"units":3,"inputs":"y"},
        {"name":"rs","type":"reshape","shape":{"steps":2,"features":6}},
        {"name":"o2","type":"output","units":1,"activation":"sigmoid","loss":"xent"}]})", "rt.json");
    const auto b = config::ModelConfig::from_json(a.to_json(), "round trip");
    QCOMPARE(QString::fromStdString(b.to_json().dump()), QString::fromStdString(a.to_json().dump()));
    QCOMPARE(b.param_count(), a.param_count());
    QCOMPARE(b.layers[0].bidirectional, config::BiMode::Average);
    QCOMPARE(b.layers[0].forget_bias, 0.5f);
    QVERIFY(!b.layers[1].reset_after);
    // Activations: defaults (tanh cell, sigmoid gates) and Keras 3's hard sigmoid slope 1/6.
    QCOMPARE(b.layers[0].cell_activation.kind, config::Activation::Tanh);
    QCOMPARE(b.layers[0].gate_activation.kind, config::Activation::Sigmoid);
    QCOMPARE(b.layers[1].cell_activation.kind, config::Activation::Relu);
    QCOMPARE(b.layers[1].gate_activation.kind, config::Activation::HardSigmoid);
    QCOMPARE(b.layers[1].gate_activation.alpha, 0.16666667f);
    QCOMPARE(b.layers[3].activation.kind, config::Activation::Softsign);
    QCOMPARE(b.layers[2].mode, config::ConvMode::Same);
    QCOMPARE(b.layers[2].out_shape, config::sequence_shape(5, 2));
    QCOMPARE(b.layers[6].out_shape, config::sequence_shape(2, 6));
    QCOMPARE(b.input_shape(1), config::sequence_shape(4, 1));
}

QTEST_APPLESS_MAIN(TestModelConfig)
#include "test_model_config.moc"
