// Model import: DL4J MultiLayerConfiguration JSON (current "@class" and older name-keyed forms) and
// Keras Sequential JSON (Keras 2 and 3) become the configs we expect, down to shapes, parameter
// counts, updater and init; the LeNet imports match resources/models/lenet.json; format detection
// goes by content; and what cannot be imported is refused naming the file, the layer and why.
// The fixtures in data/ follow the field layout of real DL4J toJson() and Keras to_json() output.
#include <QtTest>

#include <algorithm>

#include "source_dir.h"
#include "config/model_format.h"
#include "core/error.h"

using namespace thresher;

using test_support::source_dir;

namespace {

std::string fixture(const QString& name) { return (source_dir() + "/tests/engine/config/data/" + name).toStdString(); }

QString types(const config::ModelConfig& m) {
    QStringList t;
    for (const auto& l : m.layers) t << QString::fromUtf8(config::to_string(l.type).data(), int(config::to_string(l.type).size()));
    return t.join(',');
}

QString joined(const std::vector<std::string>& notes) {
    QStringList out;
    for (const auto& n : notes) out << QString::fromStdString(n);
    return out.join('\n');
}

// Small DL4J and Keras configs for the detection and refusal tables.
QByteArray dl4j_layer(const QByteArray& cls, const QByteArray& fields) {
    return R"({"layer":{"@class":"org.deeplearning4j.nn.conf.layers.)" + cls + R"(",)" + fields + "}}";
}
const QByteArray kDl4jDense = dl4j_layer("DenseLayer",
    R"("nin":4,"nout":3,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationReLU"},
       "iupdater":{"@class":"org.nd4j.linalg.learning.config.Sgd","learningRate":0.1},
       "weightInitFn":{"@class":"org.deeplearning4j.nn.weights.WeightInitXavier"})");
const QByteArray kDl4jOutput = dl4j_layer("OutputLayer",
    R"("nin":3,"nout":2,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
       "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"},
       "iupdater":{"@class":"org.nd4j.linalg.learning.config.Sgd","learningRate":0.1},
       "weightInitFn":{"@class":"org.deeplearning4j.nn.weights.WeightInitXavier"})");
QByteArray dl4j(const QByteArrayList& confs, const QByteArray& extra = {}) {
    return R"({"confs":[)" + confs.join(',') + "]" + (extra.isEmpty() ? "" : "," + extra) + "}";
}

QByteArray keras_layer(const QByteArray& cls, const QByteArray& config) {
    return R"({"class_name":")" + cls + R"(","config":{)" + config + "}}";
}
QByteArray keras(const QByteArrayList& layers, const QByteArray& cls = "Sequential") {
    return R"({"class_name":")" + cls + R"(","config":{"name":"k","layers":[)" + layers.join(',') + "]}}";
}
const QByteArray kKerasInput = keras_layer("InputLayer", R"("batch_input_shape":[null,8,8,1],"name":"in")");
const QByteArray kKerasFlatInput = keras_layer("InputLayer", R"("batch_shape":[null,6],"name":"in")");
const QByteArray kKerasOut = keras_layer("Dense", R"("name":"out","units":3,"activation":"softmax")");

}  // namespace

class TestModelImport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void legacy_nan_epsilon_is_dl4j_default();
    void zero_padding_imports();
    void global_pooling_imports();
    void thresholded_relu_imports();
    void fixtures_data();
    void fixtures();
    void lenet_matches_resources_data();
    void lenet_matches_resources();
    void per_layer_details();
    void dl4j_input_size_from_flattening();
    void approximations_are_noted_data();
    void approximations_are_noted();
    void detection_data();
    void detection();
    void refused_data();
    void refused();
    // Classes of real files from issue 13, each on its own fixtures.
    void fixture_refusals_data();
    void fixture_refusals();
    void keras2_hard_sigmoid_lstm_imports();
    void bad_numbers_refused_data();
    void bad_numbers_refused();
    void unsupported_layer_named_first_data();
    void unsupported_layer_named_first();
    void numbers_keep_their_decimals();
    void first_layer_dropout_keeps_nin();
    void keras1_details();
    void training_config_read();
    void training_config_refused_data();
    void training_config_refused();
    void nan_where_unused();
    void activation_layers_data();
    void activation_layers();
    void image_outputs_data();
    void image_outputs();
    void activations_of_imported_files_data();
    void activations_of_imported_files();
    // Keras sequence layers in Keras 1 and Keras 3 spellings (keras_recurrent.h).
    void sequence_layers_import_data();
    void sequence_layers_import();
    void open_steps_given_data();
    void open_steps_given();
    void steps_given_must_fit();
    void keras_cell_dropout_imports();
    void keras_go_backwards_imports();
};

void TestModelImport::sequence_layers_import_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("layers");
    QTest::addColumn<QString>("input");
    QTest::addColumn<qulonglong>("params");
    QTest::addColumn<QString>("note");  // a fragment some note must contain
    // emb 50*8; conv 6*8*3+6; lstm 4*5*(6+5)+4*5; per-step output 5*3+3.
    QTest::newRow("keras 1") << QByteArray(R"({"class_name":"Sequential","config":[
        {"class_name":"Embedding","config":{"name":"emb","input_dim":50,"output_dim":8,"input_length":10,"batch_input_shape":[null,10],
            "mask_zero":true,"dropout":0.0,"init":"uniform"}},
        {"class_name":"Convolution1D","config":{"name":"conv","nb_filter":6,"filter_length":3,"border_mode":"same","subsample_length":1,
            "activation":"relu","init":"glorot_uniform"}},
        {"class_name":"MaxPooling1D","config":{"name":"pool","pool_length":2,"stride":2,"border_mode":"valid"}},
        {"class_name":"LSTM","config":{"name":"lstm","output_dim":5,"inner_activation":"sigmoid","activation":"tanh","return_sequences":true,
            "dropout_W":0.0,"dropout_U":0.0,"forget_bias_init":"one","init":"glorot_uniform","inner_init":"orthogonal","consume_less":"gpu"}},
        {"class_name":"TimeDistributedDense","config":{"name":"td","output_dim":3,"activation":"softmax","init":"glorot_uniform"}}]})")
        << "embedding,convolution1d,subsampling,lstm,output" << "10 steps x 1" << qulonglong(400 + 150 + 240 + 18) << "mask_zero";
    // bi: per direction W 4x9, R 3x9, b 12 (reset_after); rnn 3x2+2x2+2; out (4*2)*2+2.
    QTest::newRow("keras 3") << QByteArray(R"({"module":"keras","class_name":"Sequential","config":{"name":"s","layers":[
        {"module":"keras.layers","class_name":"InputLayer","config":{"batch_shape":[null,6,4],"name":"in"}},
        {"module":"keras.layers","class_name":"Bidirectional","config":{"name":"bi","merge_mode":"ave",
            "layer":{"module":"keras.layers","class_name":"GRU","config":{"name":"gru","units":3,"reset_after":true,
                     "recurrent_activation":"sigmoid","return_sequences":true}},
            "backward_layer":{"module":"keras.layers","class_name":"GRU","config":{"name":"gru_b","units":3,"go_backwards":true}}}},
        {"module":"keras.layers","class_name":"GlobalAveragePooling1D","config":{"name":"gap"}},
        {"module":"keras.layers","class_name":"RepeatVector","config":{"name":"rep","n":4}},
        {"module":"keras.layers","class_name":"SimpleRNN","config":{"name":"rnn","units":2,"activation":"relu","return_sequences":true}},
        {"module":"keras.layers","class_name":"Dropout","config":{"name":"drop","rate":0.25}},
        {"module":"keras.layers","class_name":"Flatten","config":{"name":"flat"}},
        {"module":"keras.layers","class_name":"Dense","config":{"name":"out","units":2,"activation":"softmax"}}]}})")
        << "gru,subsampling,repeat_vector,simple_rnn,dropout,reshape,output" << "6 steps x 4" << qulonglong(150 + 12 + 18)
        << "file holds no loss";
    // A functional Keras 2 model: Masking passes its input on (lstm 4*3*(2+3)+4*3; out 3*2+2).
    QTest::newRow("keras 2 functional masking") << QByteArray(R"({"class_name":"Model","config":{"name":"m","layers":[
        {"class_name":"InputLayer","name":"in","config":{"batch_input_shape":[null,7,2],"name":"in"},"inbound_nodes":[]},
        {"class_name":"Masking","name":"mask","config":{"name":"mask","mask_value":0.0},"inbound_nodes":[[["in",0,0,{}]]]},
        {"class_name":"LSTM","name":"lstm","config":{"name":"lstm","units":3,"recurrent_activation":"sigmoid"},"inbound_nodes":[[["mask",0,0,{}]]]},
        {"class_name":"Dense","name":"out","config":{"name":"out","units":2,"activation":"softmax"},"inbound_nodes":[[["lstm",0,0,{}]]]}],
        "input_layers":[["in",0,0]],"output_layers":[["out",0,0]]}})")
        << "lstm,output" << "7 steps x 2" << qulonglong(72 + 8) << "Masking (mask_value 0)";
}

void TestModelImport::sequence_layers_import() {
    QFETCH(QByteArray, json);
    QFETCH(QString, layers);
    QFETCH(QString, input);
    QFETCH(qulonglong, params);
    QFETCH(QString, note);
    config::ImportResult r;
    try {
        r = config::import_model_text(json.toStdString(), "cfg.json");
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
    QStringList types;
    for (const auto& l : r.model.layers) types << QString::fromUtf8(config::to_string(l.type).data(), static_cast<int>(config::to_string(l.type).size()));
    QCOMPARE(types.join(','), layers);
    QCOMPARE(QString::fromStdString(r.model.input.str()), input);
    QCOMPARE(static_cast<qulonglong>(r.model.param_count()), params);
    const auto notes = QString::fromStdString([&] {
        std::string all;
        for (const auto& n : r.notes) all += n + "\n";
        return all;
    }());
    QVERIFY2(notes.contains(note), qPrintable(notes));
}

// Files that leave a sequence input's length open import with the steps the user gives
// (ImportOptions::steps, --steps): the same model as the file with those steps written in.
void TestModelImport::open_steps_given_data() {
    QTest::addColumn<QByteArray>("open");   // the file as saved, its steps open
    QTest::addColumn<QByteArray>("fixed");  // the same with 7 steps in the file
    const auto lstm = keras_layer("LSTM", R"("name":"lstm","units":4,"recurrent_activation":"sigmoid")");
    QTest::newRow("keras Input(shape=(None, 3))")
        << keras({keras_layer("InputLayer", R"("batch_input_shape":[null,null,3],"name":"in")"), lstm, kKerasOut})
        << keras({keras_layer("InputLayer", R"("batch_input_shape":[null,7,3],"name":"in")"), lstm, kKerasOut});
    QTest::newRow("keras 3 batch_shape")
        << keras({keras_layer("InputLayer", R"("batch_shape":[null,null,3],"name":"in")"), lstm, kKerasOut})
        << keras({keras_layer("InputLayer", R"("batch_shape":[null,7,3],"name":"in")"), lstm, kKerasOut});
    QTest::newRow("keras 1 input_shape without the batch")
        << keras({keras_layer("LSTM", R"("name":"lstm","units":4,"input_shape":[null,3],"recurrent_activation":"sigmoid")"), kKerasOut})
        << keras({keras_layer("LSTM", R"("name":"lstm","units":4,"input_shape":[7,3],"recurrent_activation":"sigmoid")"), kKerasOut});
    const auto emb = [](const QByteArray& shape) {
        return keras_layer("Embedding", R"("name":"emb","input_dim":50,"output_dim":5,"input_length":null,"batch_input_shape":)" + shape);
    };
    QTest::newRow("keras Embedding without input_length")
        << keras({emb("[null,null]"), lstm, kKerasOut}) << keras({emb("[null,7]"), lstm, kKerasOut});
    // DL4J: a MultiLayer keeps no input type; a graph's InputType.recurrent(3) without a length.
    const auto dl4j_lstm = R"({"layer":{"@class":"org.deeplearning4j.nn.conf.layers.LSTM","nin":3,"nout":4,
        "activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationTanH"},
        "gateActivationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSigmoid"},
        "iupdater":{"@class":"org.nd4j.linalg.learning.config.Sgd","learningRate":0.1}}})";
    const auto dl4j_out = R"({"layer":{"@class":"org.deeplearning4j.nn.conf.layers.RnnOutputLayer","nin":4,"nout":2,
        "activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
        "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"},
        "iupdater":{"@class":"org.nd4j.linalg.learning.config.Sgd","learningRate":0.1}}})";
    const auto graph = [&](const QByteArray& length) {
        return QByteArray(R"({"networkInputs":["in"],"networkOutputs":["out"],
            "networkInputTypes":[{"@class":"org.deeplearning4j.nn.conf.inputs.InputType$InputTypeRecurrent","size":3,"timeSeriesLength":)") +
               length + R"(}],
            "vertexInputs":{"lstm":["in"],"out":["lstm"]},
            "vertices":{"lstm":{"@class":"org.deeplearning4j.nn.conf.graph.LayerVertex","layerConf":)" + dl4j_lstm +
               R"(},"out":{"@class":"org.deeplearning4j.nn.conf.graph.LayerVertex","layerConf":)" + dl4j_out + "}}}";
    };
    QTest::newRow("dl4j graph, recurrent input without timeSeriesLength") << graph("-1") << graph("7");
    // The MultiLayer's fixed twin: the same layers as a graph with the length (a MultiLayer
    // cannot state one).
    QTest::newRow("dl4j MultiLayer starting with an LSTM") << dl4j({dl4j_lstm, dl4j_out}) << QByteArray();
}

void TestModelImport::open_steps_given() {
    QFETCH(QByteArray, open);
    QFETCH(QByteArray, fixed);
    // Without steps: refused, saying how to give them.
    try {
        config::import_model_text(open.toStdString(), "cfg.json");
        QFAIL("imported without its steps");
    } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("--steps N"), e.what());
    }
    const auto r = config::import_model_text(open.toStdString(), "cfg.json", {.steps = 7});
    QCOMPARE(r.model.input.t, 7);
    QVERIFY(r.model.input.sequence());
    if (!fixed.isEmpty()) {
        const auto f = config::import_model_text(fixed.toStdString(), "cfg.json");
        QCOMPARE(QString::fromStdString(r.model.to_json().dump()), QString::fromStdString(f.model.to_json().dump()));
    } else {
        QCOMPARE(r.model.input, config::sequence_shape(7, 3));
        QCOMPARE(types(r.model), QString("lstm,output"));
    }
}

// Steps given for a file that fixes its own, or for a model that reads no sequence, are refused
// (not ignored): the user meant something the file does not do.
void TestModelImport::steps_given_must_fit() {
    const auto fixed = keras({keras_layer("InputLayer", R"("batch_input_shape":[null,6,3],"name":"in")"),
                              keras_layer("LSTM", R"("name":"lstm","units":4,"recurrent_activation":"sigmoid")"), kKerasOut});
    try {
        config::import_model_text(fixed.toStdString(), "cfg.json", {.steps = 9});
        QFAIL("imported 6 steps as 9");
    } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("fixes its input at 6 time steps; the 9 given (--steps) differ"), e.what());
    }
    QCOMPARE(config::import_model_text(fixed.toStdString(), "cfg.json", {.steps = 6}).model.input.t, 6);
    try {
        config::import_model_text(keras({kKerasFlatInput, kKerasOut}).toStdString(), "cfg.json", {.steps = 9});
        QFAIL("steps given for flat features");
    } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("is not a sequence"), e.what());
    }
    // A Thresher file always fixes its steps.
    const auto char_lstm = source_dir().toStdString() + "/resources/models/char_lstm.json";
    const int t = config::import_model_file(char_lstm).model.input.t;
    QCOMPARE(config::import_model_file(char_lstm, {.steps = t}).model.input.t, t);
    try {
        config::import_model_file(char_lstm, {.steps = t + 1});
        QFAIL("a Thresher file's steps changed");
    } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("fixes its input at " + QString::number(t) + " time steps"), e.what());
    }
}

// Keras's dropout / recurrent_dropout (Keras 1: dropout_W / dropout_U) become the layer's
// input_retain / recurrent_retain; the file that used to be refused for them (Keras's own
// imdb_lstm example, saved by Keras 2) imports with its steps given, and the JSON keeps them.
void TestModelImport::keras_cell_dropout_imports() {
    const auto r = config::import_model_file(fixture("keras2_imdb_embedding_lstm.json"), {.steps = 80});
    QCOMPARE(types(r.model), QString("embedding,lstm,output"));
    const auto& lstm = r.model.layers[1];
    QCOMPARE(lstm.input_retain, 0.8f);
    QCOMPARE(lstm.recurrent_retain, 0.8f);
    QVERIFY2(joined(r.notes).contains("a mask per gate here (implementation 1)"), qPrintable(joined(r.notes)));
    const auto again = config::ModelConfig::from_json(r.model.to_json(), "again");
    QCOMPARE(again.layers[1].input_retain, 0.8f);
    QCOMPARE(again.layers[1].recurrent_retain, 0.8f);
    const auto gru = keras({keras_layer("InputLayer", R"("batch_input_shape":[null,6,3],"name":"in")"),
                            keras_layer("GRU", R"("name":"g","units":4,"dropout":0.1,"recurrent_dropout":0.25,"implementation":2,
                                                  "recurrent_activation":"sigmoid")"), kKerasOut});
    const auto g = config::import_model_text(gru.toStdString(), "cfg.json");
    QCOMPARE(g.model.layers[0].input_retain, 0.9f);
    QCOMPARE(g.model.layers[0].recurrent_retain, 0.75f);
    QVERIFY2(!joined(g.notes).contains("a mask per gate"), qPrintable(joined(g.notes)));
    QVERIFY2(joined(g.notes).contains("reads h' whole"), qPrintable(joined(g.notes)));
}

void TestModelImport::fixtures_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("format");
    QTest::addColumn<QString>("layers");
    QTest::addColumn<QString>("input");
    QTest::addColumn<qulonglong>("params");
    QTest::addColumn<QString>("updater");
    QTest::addColumn<double>("lr");
    QTest::addColumn<double>("momentum");  // Nesterovs only
    QTest::addColumn<QString>("init");
    QTest::addColumn<double>("l2");  // effective on layer 0 (Keras l2 is doubled: see keras_import.cpp)
    QTest::addColumn<QString>("loss");
    QTest::addColumn<QStringList>("notes");  // fragments some note must contain

    const QString lenet = "convolution,subsampling,convolution,subsampling,dense,output";
    // 20*1*25+20 + 50*20*25+50 + 800*500+500 + 500*10+10, as resources/models/lenet.json
    const qulonglong lenet_params = 431080;
    QTest::newRow("dl4j current LeNet") << "dl4j_lenet.json" << "dl4j" << lenet << "1x28x28" << lenet_params
        << "nesterovs" << 0.02 << 0.9 << "xavier" << 5e-4 << "negativeloglikelihood" << QStringList{};
    QTest::newRow("dl4j 0.x LeNet") << "dl4j_lenet_legacy.json" << "dl4j" << lenet << "1x28x28" << lenet_params
        << "nesterovs" << 0.01 << 0.9 << "xavier" << 5e-4 << "mcxent" << QStringList{};
    // 784*500+500 + 500*100+100 + 100*10+10; dropOut(0.8) on layer1 drops its input
    QTest::newRow("dl4j 0.x MLP") << "dl4j_mlp_legacy.json" << "dl4j" << "dense,dropout,dense,output" << "784"
        << qulonglong(443610) << "nesterovs" << 0.006 << 0.9 << "xavier" << 1e-4 << "negativeloglikelihood" << QStringList{};
    QTest::newRow("keras 2 LeNet") << "keras2_lenet.json" << "keras" << lenet << "1x28x28" << lenet_params
        << "adam" << 1e-3 << 0.0 << "xavier_uniform" << 0.0 << "mcxent"
        << QStringList{"Flatten", "no loss", "no optimizer"};
    // 784*512+512 + 512*10+10
    QTest::newRow("keras 2.1 list config") << "keras21_mlp.json" << "keras" << "dense,dropout,output" << "784"
        << qulonglong(407050) << "adam" << 1e-3 << 0.0 << "xavier_uniform" << 0.0 << "mcxent" << QStringList{"no loss"};
    QTest::newRow("keras 3 MLP") << "keras3_mlp.json" << "keras" << "dense,dropout,output" << "784"
        << qulonglong(407050) << "adam" << 1e-3 << 0.0 << "xavier_uniform" << 1e-3 << "mcxent"
        << QStringList{"\"kernel_regularizer\": l2 0.0005 becomes Thresher l2 0.001", "no loss"};
    // conv 16x1x3x3+16 (same: 16x28x28), max 2x2 -> 16x14x14, BN 4*16, output 3136*10+10
    // Issue 13 class 1 (and 2): DL4J 0.9.1's wrapper objects {"ReLU": {}}, {"NegativeLogLikelihood": {...}},
    // with .dropOut(0.5) on every layer, the first too.
    QTest::newRow("dl4j 0.9.1 wrapped MLP") << "dl4j_0.9.1_mlp_wrapped.json" << "dl4j"
        << "dropout,dense,dropout,dense,dropout,output" << "784" << qulonglong(443610) << "nesterovs" << 0.006 << 0.9
        << "xavier" << 1e-4 << "negativeloglikelihood" << QStringList{};
    // Issue 22: DL4J 0.x writes "NaN" for fields never set. With "useRegularization": false no
    // l1/l2 is read, and an Sgd layer has no momentum: those NaNs are unused, so the file imports
    // (a note names them); a NaN that would be used is still refused (fixture_refusals, refused).
    QTest::newRow("dl4j 0.9.1 NaN where unused") << "dl4j_0.9.1_mlp_nan_unused.json" << "dl4j"
        << "dropout,dense,dropout,dense,dropout,output" << "784" << qulonglong(443610) << "nesterovs" << 0.006 << 0.9
        << "xavier" << 0.0 << "negativeloglikelihood"
        << QStringList{"confs[1] (dense \"layer1\"): \"l1\": \"NaN\", \"l2\": \"NaN\", \"l1Bias\": \"NaN\", \"l2Bias\": \"NaN\" "
                       "not used: the conf says \"useRegularization\": false"};
    // Class 1: DL4J 0.8.0 LeNet, {"LReLU": {"alpha": 0.1}}, {"MCXENT": {...}}, "updater": "ADAM" with
    // adamMeanDecay/adamVarDecay, wrapper-keyed preprocessors, a DISTRIBUTION weight init.
    QTest::newRow("dl4j 0.8.0 wrapped LeNet") << "dl4j_0.8.0_lenet_wrapped.json" << "dl4j" << lenet << "1x28x28"
        << lenet_params << "adam" << 1e-3 << 0.0 << "xavier" << 5e-4 << "mcxent" << QStringList{"DISTRIBUTION approximated"};
    // Class 2: DL4J 1.0.0-beta2 idropout on every layer; the input size is the first DenseLayer's nIn.
    QTest::newRow("dl4j 1.0.0-beta2 idropout") << "dl4j_1.0.0-beta2_iris_idropout.json" << "dl4j"
        << "dropout,dense,dropout,output" << "4" << qulonglong(4 * 16 + 16 + 16 * 3 + 3) << "adam" << 0.005 << 0.0
        << "relu" << 1e-4 << "mcxent" << QStringList{};
    // Class 7: Keras 1.2.2 mnist_cnn.py (Convolution2D nb_filter/nb_row/nb_col, border_mode, subsample,
    // init, Dropout p): 32*9+32, 32*32*9+32, 4608*128+128, 128*10+10.
    QTest::newRow("keras 1 CNN") << "keras1_mnist_cnn.json" << "keras"
        << "convolution,convolution,subsampling,dropout,dense,dropout,output" << "1x28x28" << qulonglong(600810)
        << "adam" << 1e-3 << 0.0 << "xavier_uniform" << 0.0 << "mcxent" << QStringList{"Flatten", "no loss"};
    // Class 7: Keras 1 mnist_mlp.py with W_regularizer l2(0.01), written as float32 0.009999999776482582.
    QTest::newRow("keras 1 MLP l2") << "keras1_mnist_mlp_l2.json" << "keras" << "dense,dropout,dense,dropout,output"
        << "784" << qulonglong(669706) << "adam" << 1e-3 << 0.0 << "xavier_uniform" << 0.02 << "mcxent"
        << QStringList{"config[0] (Dense \"dense_1\"): \"W_regularizer\": l2 0.01 becomes Thresher l2 0.02"};
    // Class 4: TensorFlow.js model.json converted from tf.keras 2.9 with its training_config:
    // SGD(0.01, momentum 0.9, nesterov) and categorical_crossentropy. 784*128+128 + 128*10+10.
    QTest::newRow("tfjs training_config") << "tfjs_keras2_mlp_sgd.json" << "keras" << "dense,dropout,output" << "784"
        << qulonglong(101770) << "nesterovs" << 0.01 << 0.9 << "xavier_uniform" << 0.0 << "mcxent"
        << QStringList{"weightsManifest"};
    // Class 4: Keras 3 compile_config: Adam(1e-3), SparseCategoricalCrossentropy(from_logits=True).
    // 32*9+32 + 64*32*9+64 + 1600*10+10.
    QTest::newRow("keras 3 compile_config") << "keras3_cnn_compiled_logits.json" << "keras"
        << "convolution,subsampling,convolution,subsampling,dropout,output" << "1x28x28" << qulonglong(34826)
        << "adam" << 1e-3 << 0.0 << "xavier_uniform" << 0.0 << "mcxent"
        << QStringList{"config.layers[7] (Dense \"dense\"): from_logits"};
    QTest::newRow("keras 3 CNN") << "keras3_cnn.json" << "keras" << "convolution,subsampling,batch_norm,output"
        << "1x28x28" << qulonglong(160 + 64 + 31370) << "adam" << 1e-3 << 0.0 << "relu" << 0.0 << "mcxent"
        << QStringList{"Flatten"};
}

void TestModelImport::fixtures() {
    QFETCH(QString, file);
    QFETCH(QString, format);
    QFETCH(QString, layers);
    QFETCH(QString, input);
    QFETCH(qulonglong, params);
    QFETCH(QString, updater);
    QFETCH(double, lr);
    QFETCH(double, momentum);
    QFETCH(QString, init);
    QFETCH(double, l2);
    QFETCH(QString, loss);
    QFETCH(QStringList, notes);

    config::ImportResult r;
    try {
        r = config::import_model_file(fixture(file));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    const auto& m = r.model;
    const QString all_notes = joined(r.notes);
    QCOMPARE(QString::fromUtf8(config::to_string(r.format).data()), format);
    QCOMPARE(types(m), layers);
    QCOMPARE(QString::fromStdString(m.input.str()), input);
    QCOMPARE(qulonglong(m.param_count()), params);
    const auto u = m.effective_updater(0);
    QCOMPARE(QString::fromUtf8(config::to_string(u.kind).data()), updater);
    QCOMPARE(u.learning_rate, float(lr));
    if (u.kind == config::UpdaterKind::Nesterovs) QCOMPARE(u.momentum, float(momentum));
    QCOMPARE(QString::fromUtf8(config::to_string(m.effective_weight_init(0)).data()), init);
    QCOMPARE(u.l2, float(l2));
    QCOMPARE(QString::fromUtf8(config::to_string(m.layers.back().loss).data()), loss);
    for (const auto& n : notes) QVERIFY2(all_notes.contains(n), qPrintable(n + " not in:\n" + all_notes));
    // The fixtures follow real output: every field they carry must be known, none "ignored".
    QVERIFY2(!all_notes.contains("ignored field"), qPrintable(all_notes));
    // What the importer returns is a Thresher config like any other: it round-trips.
    const auto again = config::ModelConfig::from_json(m.to_json(), "round trip");
    QCOMPARE(QString::fromStdString(again.to_json().dump()), QString::fromStdString(m.to_json().dump()));
    // ModelConfig::load (what `thresher-engine train --model` uses) reads the same file the same way.
    QCOMPARE(config::ModelConfig::load(fixture(file)).param_count(), m.param_count());
}

void TestModelImport::lenet_matches_resources_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("dl4j current") << "dl4j_lenet.json";
    QTest::newRow("dl4j 0.x") << "dl4j_lenet_legacy.json";
    QTest::newRow("keras 2") << "keras2_lenet.json";
}

void TestModelImport::lenet_matches_resources() {
    QFETCH(QString, file);
    const auto ours = config::ModelConfig::load((source_dir() + "/resources/models/lenet.json").toStdString());
    const auto imported = config::ModelConfig::load(fixture(file));
    QCOMPARE(imported.layers.size(), ours.layers.size());
    for (std::size_t i = 0; i < ours.layers.size(); ++i) {
        QCOMPARE(imported.layers[i].type, ours.layers[i].type);
        QCOMPARE(imported.layers[i].out_shape, ours.layers[i].out_shape);
        QCOMPARE(imported.layers[i].param_count, ours.layers[i].param_count);
        QCOMPARE(imported.layers[i].activation.kind, ours.layers[i].activation.kind);
    }
    QCOMPARE(imported.param_count(), ours.param_count());
}

void TestModelImport::per_layer_details() {
    // DL4J: dropOut(0.8) is the retain probability of layer1's input; per-layer names survive.
    const auto mlp = config::import_model_file(fixture("dl4j_mlp_legacy.json")).model;
    QCOMPARE(mlp.layers[1].retain, 0.8f);
    QCOMPARE(QString::fromStdString(mlp.layers[2].name), QString("layer1"));
    QCOMPARE(mlp.seed, std::uint64_t(123));
    // Keras: rate 0.5 is the drop probability; Activation("softmax") folded into the last Dense.
    const auto k3 = config::import_model_file(fixture("keras3_mlp.json")).model;
    QCOMPARE(k3.layers[1].retain, 0.5f);
    QCOMPARE(k3.layers[2].activation.kind, config::Activation::Softmax);
    QCOMPARE(k3.effective_updater(2).l2, 0.f);  // only the first Dense had a regularizer
    QCOMPARE(k3.effective_updater(2).epsilon, 1e-7f);
    // Keras 3 CNN: "same" padding, LeakyReLU(0.1) folded across max pooling into the conv,
    // BatchNormalization's momentum/epsilon as decay/eps.
    const auto cnn = config::import_model_file(fixture("keras3_cnn.json")).model;
    QCOMPARE(cnn.layers[0].mode, config::ConvMode::Same);
    QCOMPARE(cnn.layers[0].out_shape, (config::Shape{16, 28, 28}));
    QCOMPARE(cnn.layers[0].activation.kind, config::Activation::LeakyRelu);
    QCOMPARE(cnn.layers[0].activation.alpha, 0.1f);
    QCOMPARE(cnn.layers[2].bn_decay, 0.99f);
    QCOMPARE(cnn.layers[2].bn_eps, 1e-3f);
    QCOMPARE(cnn.layers[3].in_shape.size(), std::size_t(3136));
}

void TestModelImport::dl4j_input_size_from_flattening() {
    // InputType.convolutional(28, 28, 1) leaves only the CnnToFeedForward preprocessor's 12x12:
    // the smallest input that a 5x5 conv and a 2x2 pool turn into 12x12 is 28x28.
    const QByteArray conv = dl4j_layer("ConvolutionLayer",
        R"("nin":1,"nout":4,"kernelSize":[5,5],"stride":[1,1],"padding":[0,0],"convolutionMode":"Truncate",
           "activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationReLU"})");
    const QByteArray pool = dl4j_layer("SubsamplingLayer", R"("poolingType":"MAX","kernelSize":[2,2],"stride":[2,2])");
    const QByteArray out = dl4j_layer("OutputLayer",
        R"("nin":576,"nout":10,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
           "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"})");
    const QByteArray text = dl4j({conv, pool, out},
        R"("inputPreProcessors":{"2":{"@class":"org.deeplearning4j.nn.conf.preprocessor.CnnToFeedForwardPreProcessor",
            "inputHeight":12,"inputWidth":12,"numChannels":4}})");
    const auto r = config::import_model_text(text.toStdString(), "cfg.json");
    QCOMPARE(r.model.input, (config::Shape{1, 28, 28}));
    QVERIFY2(joined(r.notes).contains("inferred"), qPrintable(joined(r.notes)));
}

void TestModelImport::approximations_are_noted_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("layers");
    QTest::addColumn<QString>("note");  // a fragment some note must contain ("" for none expected)

    const QByteArray identity_dense = dl4j_layer("DenseLayer",
        R"("layerName":"d","nin":4,"nout":3,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationIdentity"},
           "regularization":[{"@class":"org.nd4j.linalg.learning.regularization.WeightDecay","applyLR":true,
             "coeff":{"@class":"org.nd4j.linalg.schedule.FixedSchedule","value":0.001}}])");
    const QByteArray relu = dl4j_layer("ActivationLayer", R"("activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationReLU"})");
    QTest::newRow("dl4j ActivationLayer folded, WeightDecay as l2")
        << dl4j({identity_dense, relu, kDl4jOutput}) << "dense,output" << "WeightDecay 0.001 approximated as l2";
    QTest::newRow("dl4j unknown field named")
        << dl4j({dl4j_layer("DenseLayer", R"("nin":4,"nout":3,"frobnicate":true)"), kDl4jOutput}) << "dense,output"
        << "ignored field(s) \"frobnicate\"";
    // A learning-rate schedule is trained (issue 13 class 3); the note says which one.
    const QByteArray exp_updater = R"("iupdater":{"@class":"org.nd4j.linalg.learning.config.Adam",
               "learningRate":"NaN","learningRateSchedule":{"@class":"org.nd4j.linalg.schedule.ExponentialSchedule",
               "gamma":0.96,"initialValue":0.01,"scheduleType":"EPOCH"}})";
    QTest::newRow("dl4j learning-rate schedule")
        << dl4j({dl4j_layer("DenseLayer", R"("nin":4,"nout":3,)" + exp_updater),
                 dl4j_layer("OutputLayer", R"("nin":3,"nout":2,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
                    "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"},)" + exp_updater)})
        << "dense,output" << "learning rate: exponential by epoch: 0.01·0.96^epoch";
    QTest::newRow("keras relu folded across dropout and max pooling")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":3)"),
                  keras_layer("MaxPooling2D", R"("name":"p","pool_size":[2,2])"),
                  keras_layer("Dropout", R"("name":"drop","rate":0.25)"),
                  keras_layer("Activation", R"("name":"a","activation":"relu")"),
                  keras_layer("Flatten", R"("name":"f")"), kKerasOut})
        << "convolution,subsampling,dropout,output" << "Flatten";
    QTest::newRow("keras sigmoid output gets mse")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"out","units":1,"activation":"sigmoid")")})
        << "output" << "using mse";
    QTest::newRow("keras HeUniform approximated")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"out","units":2,"activation":"softmax",
               "kernel_initializer":{"class_name":"HeUniform","config":{"seed":null}})")})
        << "output" << "HeUniform approximated by relu";
}

void TestModelImport::approximations_are_noted() {
    QFETCH(QByteArray, json);
    QFETCH(QString, layers);
    QFETCH(QString, note);
    const auto r = config::import_model_text(json.toStdString(), "cfg.json");
    QCOMPARE(types(r.model), layers);
    QVERIFY2(joined(r.notes).contains(note), qPrintable(joined(r.notes)));
    if (layers.startsWith("dense,")) QCOMPARE(r.model.layers[0].activation.kind != config::Activation::Identity, true);
    if (layers.startsWith("convolution,")) QCOMPARE(r.model.layers[0].activation.kind, config::Activation::Relu);
}

// DL4J 0.x's "NaN" in fields nothing reads: layer1's Sgd updater has no momentum ("momentum":
// "NaN" beside it), and with "useRegularization": false no layer is regularised.
void TestModelImport::nan_where_unused() {
    const auto r = config::import_model_file(fixture("dl4j_0.9.1_mlp_nan_unused.json"));
    const auto& m = r.model;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const auto u = m.effective_updater(i);
        QCOMPARE(u.l1, 0.f);
        QCOMPARE(u.l2, 0.f);
        if (m.layers[i].name == "layer1") {
            QCOMPARE(u.kind, config::UpdaterKind::Sgd);
            QCOMPARE(u.learning_rate, 0.006f);
        }
    }
    QCOMPARE(std::count_if(r.notes.begin(), r.notes.end(),
                           [](const std::string& n) { return n.find("not used: the conf says") != std::string::npos; }),
             std::ptrdiff_t(3));
}

// Activation layers that cannot be fused into the layer before them (it has an activation of its
// own, or a layer the activation does not commute with sits between) import as layers of their
// own; the last one, after the last Dense, is the output and takes the loss (DL4J LossLayer too).
void TestModelImport::activation_layers_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("layers");
    QTest::addColumn<QString>("activations");  // of every layer, as Thresher runs them
    QTest::addColumn<int>("outputs");

    QTest::newRow("keras Dense relu, Activation relu")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":4,"activation":"relu")"),
                  keras_layer("Activation", R"("name":"a","activation":"tanh")"), kKerasOut})
        << "dense,activation,output" << "relu,tanh,softmax" << 3;
    QTest::newRow("keras Dense relu, Activation softmax last")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":4,"activation":"relu")"),
                  keras_layer("Dense", R"("name":"out","units":3,"activation":"relu")"),
                  keras_layer("Activation", R"("name":"sm","activation":"softmax")")})
        << "dense,dense,activation" << "relu,relu,softmax" << 3;
    QTest::newRow("keras Dense then Activation softmax still fused")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"out","units":3)"),
                  keras_layer("Activation", R"("name":"sm","activation":"softmax")")})
        << "output" << "softmax" << 3;
    QTest::newRow("keras linear Activation after relu is nothing to run")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":4,"activation":"relu")"),
                  keras_layer("Activation", R"("name":"a","activation":"linear")"), kKerasOut})
        << "dense,output" << "relu,softmax" << 3;
    QTest::newRow("keras swish after max pooling")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":3)"),
                  keras_layer("MaxPooling2D", R"("name":"p","pool_size":[2,2])"),
                  keras_layer("Activation", R"("name":"a","activation":"swish")"), keras_layer("Flatten", R"("name":"f")"), kKerasOut})
        << "convolution,subsampling,activation,output" << "identity,identity,swish,softmax" << 3;
    QTest::newRow("keras activation after batch norm")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":4)"),
                  keras_layer("BatchNormalization", R"("name":"bn","axis":-1)"),
                  keras_layer("Activation", R"("name":"act","activation":"relu")"), kKerasOut})
        << "dense,batch_norm,activation,output" << "identity,identity,relu,softmax" << 3;
    QTest::newRow("keras ReLU layer after a relu Dense")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":4,"activation":"relu")"),
                  keras_layer("LeakyReLU", R"("name":"lr","alpha":0.2)"), kKerasOut})
        << "dense,activation,output" << "relu,leakyrelu,softmax" << 3;
    const QByteArray dl4j_tanh = dl4j_layer("ActivationLayer", R"("layerName":"act","activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationTanH"})");
    QTest::newRow("dl4j ActivationLayer after a relu dense")
        << dl4j({kDl4jDense, dl4j_tanh, kDl4jOutput}) << "dense,activation,output" << "relu,tanh,softmax" << 2;
    QTest::newRow("dl4j 0.x ActivationLayer after a relu dense")
        << dl4j({R"({"layer":{"dense":{"nin":4,"nout":3,"activationFn":{"ReLU":{}},"iupdater":{"@class":"org.nd4j.linalg.learning.config.Sgd","learningRate":0.1}}}})",
                 R"({"layer":{"activation":{"layerName":"act","activationFn":{"Sigmoid":{}}}}})", kDl4jOutput})
        << "dense,activation,output" << "relu,sigmoid,softmax" << 2;
    QTest::newRow("dl4j LossLayer")
        << dl4j({kDl4jDense, dl4j_layer("LossLayer", R"("activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
                     "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"})")})
        << "dense,activation" << "relu,softmax" << 3;
}

// Image outputs (issue 22): a Keras model ending in a Conv2D, Conv2DTranspose, UpSampling2D or an
// activation over an image, and DL4J's CnnLossLayer after a ConvolutionLayer or Deconvolution2D,
// become outputs whose loss applies at every pixel; Keras's SpatialDropout2D and DL4J's
// SpatialDropout become dropout of whole channels.
void TestModelImport::image_outputs_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("layers");
    QTest::addColumn<QString>("activations");
    QTest::addColumn<QString>("output_shape");
    QTest::addColumn<QString>("loss");
    const QByteArray compile_ce = R"("training_config":{"loss":"categorical_crossentropy","optimizer_config":{"class_name":"Adam","config":{"learning_rate":0.001}}})";
    auto compiled = [&](const QByteArray& model, const QByteArray& training) { return model.left(model.size() - 1) + "," + training + "}"; };
    QTest::newRow("keras Conv2D softmax last (segmentation head)")
        << compiled(keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":4,"kernel_size":3,"padding":"same","activation":"relu")"),
                           keras_layer("SpatialDropout2D", R"("name":"sd","rate":0.25)"),
                           keras_layer("Conv2D", R"("name":"seg","filters":3,"kernel_size":1,"activation":"softmax")")}), compile_ce)
        << "convolution,dropout,convolution" << "relu,identity,softmax" << "3x8x8" << "mcxent";
    QTest::newRow("keras Conv2D then Activation softmax")
        << compiled(keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":3,"kernel_size":3)"),
                           keras_layer("Activation", R"("name":"sm","activation":"softmax")")}), compile_ce)
        << "convolution,activation" << "identity,softmax" << "3x6x6" << "mcxent";
    QTest::newRow("keras Conv2D then Softmax layer (axis -1: the channels)")
        << compiled(keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":3,"kernel_size":3)"),
                           keras_layer("Softmax", R"("name":"sm","axis":-1)")}), compile_ce)
        << "convolution,activation" << "identity,softmax" << "3x6x6" << "mcxent";
    QTest::newRow("keras Conv2DTranspose sigmoid (autoencoder), no loss saved: mse")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":2,"strides":2,"activation":"relu")"),
                  keras_layer("Conv2DTranspose", R"("name":"up","filters":1,"kernel_size":2,"strides":2,"activation":"sigmoid")")})
        << "convolution,transposed_convolution" << "relu,sigmoid" << "1x8x8" << "mse";
    QTest::newRow("keras UpSampling2D last")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":2,"strides":2,"activation":"sigmoid")"),
                  keras_layer("UpSampling2D", R"("name":"u","size":[2,2])")})
        << "convolution,upsampling" << "sigmoid,identity" << "2x8x8" << "mse";
    const QByteArray pre = R"("inputPreProcessors":{"0":{"@class":"org.deeplearning4j.nn.conf.preprocessor.FeedForwardToCnnPreProcessor",
        "inputHeight":6,"inputWidth":6,"numChannels":1}})";
    const QByteArray conv = dl4j_layer("ConvolutionLayer", R"("layerName":"c","nin":1,"nout":3,"kernelSize":[3,3],"stride":[1,1],"padding":[1,1],
        "convolutionMode":"Truncate","activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationIdentity"},
        "idropout":{"@class":"org.deeplearning4j.nn.conf.dropout.SpatialDropout","p":0.8})");
    QTest::newRow("dl4j ConvolutionLayer, CnnLossLayer softmax mcxent")
        << dl4j({conv, dl4j_layer("CnnLossLayer", R"("layerName":"loss","format":"NCHW","activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
                     "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"})")}, pre)
        << "dropout,convolution,activation" << "identity,identity,softmax" << "3x6x6" << "mcxent";
    QTest::newRow("dl4j Deconvolution2D, CnnLossLayer sigmoid xent")
        << dl4j({dl4j_layer("Deconvolution2D", R"("layerName":"d","nin":1,"nout":2,"kernelSize":[2,2],"stride":[2,2],"padding":[0,0],
                     "convolutionMode":"Truncate","activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationIdentity"})"),
                 dl4j_layer("CnnLossLayer", R"("activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSigmoid"},
                     "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossBinaryXENT"})")}, pre)
        << "transposed_convolution,activation" << "identity,sigmoid" << "2x12x12" << "xent";
}

void TestModelImport::image_outputs() {
    QFETCH(QByteArray, json);
    QFETCH(QString, layers);
    QFETCH(QString, activations);
    QFETCH(QString, output_shape);
    QFETCH(QString, loss);
    const auto r = config::import_model_text(json.toStdString(), "cfg.json");
    QCOMPARE(types(r.model), layers);
    QStringList acts;
    for (const auto& l : r.model.layers) acts << QString::fromUtf8(config::to_string(l.activation.kind).data());
    QCOMPARE(acts.join(','), activations);
    const auto& out = r.model.main_output();
    QVERIFY(out.image_output());
    QCOMPARE(QString::fromStdString(out.out_shape.str()), output_shape);
    QCOMPARE(QString::fromUtf8(config::to_string(out.loss).data()), loss);
    QCOMPARE(r.model.output_size(), int(out.out_shape.size()));
    for (const auto& l : r.model.layers)
        if (l.type == config::LayerType::Dropout) QVERIFY2(l.spatial, "SpatialDropout2D / SpatialDropout drop whole channels");
    const auto again = config::ModelConfig::from_json(r.model.to_json(), "again.json");
    QCOMPARE(again.to_json().dump(), r.model.to_json().dump());
}

void TestModelImport::activation_layers() {
    QFETCH(QByteArray, json);
    QFETCH(QString, layers);
    QFETCH(QString, activations);
    QFETCH(int, outputs);
    const auto r = config::import_model_text(json.toStdString(), "cfg.json");
    QCOMPARE(types(r.model), layers);
    QStringList acts;
    for (const auto& l : r.model.layers) acts << QString::fromUtf8(config::to_string(l.activation.kind).data());
    QCOMPARE(acts.join(','), activations);
    QCOMPARE(r.model.output_size(), outputs);
    QCOMPARE(r.model.layers.back().loss, config::LossKind::MultiClassCrossEntropy);
    // Saved as Thresher JSON and read back: the same model.
    const auto again = config::ModelConfig::from_json(r.model.to_json(), "again.json");
    QCOMPARE(again.to_json().dump(), r.model.to_json().dump());
}

void TestModelImport::detection_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("format");
    QTest::newRow("thresher") << QByteArray(R"({"input":{"size":4},"layers":[{"type":"output","units":2}]})") << "thresher";
    QTest::newRow("dl4j") << dl4j({kDl4jDense, kDl4jOutput}) << "dl4j";
    QTest::newRow("keras") << keras({kKerasFlatInput, kKerasOut}) << "keras";
    // An HDF5 file's model_config attribute and a TensorFlow.js model.json wrap the same object.
    QTest::newRow("keras in tfjs model.json")
        << QByteArray(R"({"format":"layers-model","modelTopology":{"keras_version":"2.6.0","model_config":)" +
                      keras({kKerasFlatInput, kKerasOut}) + "}}")
        << "keras";
}

void TestModelImport::detection() {
    QFETCH(QByteArray, json);
    QFETCH(QString, format);
    const auto r = config::import_model_text(json.toStdString(), "cfg.json");
    QCOMPARE(QString::fromUtf8(config::to_string(r.format).data()), format);
    QVERIFY(r.model.param_count() > 0);
}

void TestModelImport::refused_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QStringList>("expected");  // fragments the message must contain

    auto dl4j_with = [](const QByteArray& cls, const QByteArray& fields) {
        return dl4j({dl4j_layer(cls, fields), kDl4jOutput});
    };
    QTest::newRow("dl4j LocalResponseNormalization")
        << dl4j({kDl4jDense, dl4j_layer("LocalResponseNormalization", R"("layerName":"lrn1")"), kDl4jOutput})
        << QStringList{"confs[1] (LocalResponseNormalization \"lrn1\")", "LocalResponseNormalization is not supported"};
    // Sequence layers import (test_dl4j_sequence_import); an LSTM cell Thresher cannot run is refused.
    // A MultiLayer JSON keeps no input type: a recurrent first layer leaves the steps unknown.
    QTest::newRow("dl4j 0.x GravesLSTM without its steps") << dl4j({R"({"layer":{"gravesLSTM":{"nin":4,"nout":3}}})", kDl4jOutput})
        << QStringList{"cannot tell the input shape: the first layer reads a sequence", "Thresher needs the number of time steps"};
    // Graphs import (test_graph_import); one without its vertexInputs is refused.
    QTest::newRow("dl4j ComputationGraph without vertexInputs")
        << QByteArray(R"({"vertices":{},"networkInputs":["in"],"networkOutputs":["out"]})")
        << QStringList{"ComputationGraph", "\"vertexInputs\""};
    QTest::newRow("dl4j unknown activation")
        << dl4j_with("DenseLayer", R"("nin":4,"nout":3,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationCube"})")
        << QStringList{"confs[0] (DenseLayer)", "\"activationFn\"", "Cube", "not supported"};
    QTest::newRow("dl4j 0.x unknown activation")
        << dl4j({R"({"layer":{"dense":{"nin":4,"nout":3,"activationFunction":"rationaltanh"}}})", kDl4jOutput})
        << QStringList{"confs[0] (dense)", "\"activationFunction\"", "rationaltanh"};
    QTest::newRow("dl4j AdaDelta") << dl4j_with("DenseLayer",
        R"("nin":4,"nout":3,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationReLU"},
           "iupdater":{"@class":"org.nd4j.linalg.learning.config.AdaDelta","rho":0.95})")
        << QStringList{"confs[0]", "\"iupdater\"", "AdaDelta is not supported"};
    QTest::newRow("dl4j loss") << dl4j({kDl4jDense, dl4j_layer("OutputLayer",
        R"("nin":3,"nout":2,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
           "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossKLD"})")})
        << QStringList{"confs[1] (OutputLayer)", "\"lossFn\"", "KLD is not supported"};
    QTest::newRow("dl4j nIn disagrees") << dl4j({kDl4jDense, dl4j_layer("OutputLayer",
        R"("layerName":"out","nin":7,"nout":2,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
           "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"})")})
        << QStringList{"confs[1] (OutputLayer \"out\")", "\"nIn\"", "is 7", "input is 3"};
    QTest::newRow("dl4j conv without input size") << dl4j({dl4j_layer("ConvolutionLayer",
        R"("nin":1,"nout":2,"kernelSize":[3,3],"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationReLU"})"), kDl4jOutput})
        << QStringList{"cfg.json: model:", "height and width"};
    QTest::newRow("dl4j sum pooling") << dl4j({dl4j_layer("SubsamplingLayer", R"("poolingType":"SUM")"), kDl4jOutput})
        << QStringList{"confs[0] (SubsamplingLayer)", "\"poolingType\"", "SUM"};
    QTest::newRow("dl4j causal convolution") << dl4j_with("ConvolutionLayer", R"("nin":1,"nout":2,"convolutionMode":"Causal")")
        << QStringList{"confs[0] (ConvolutionLayer)", "\"convolutionMode\"", "Causal"};
    QTest::newRow("dl4j alpha dropout") << dl4j_with("DenseLayer",
        R"("nin":4,"nout":3,"idropout":{"@class":"org.deeplearning4j.nn.conf.dropout.AlphaDropout","p":0.5})")
        << QStringList{"confs[0] (DenseLayer)", "\"idropout\"", "AlphaDropout"};
    QTest::newRow("dl4j CnnToRnn") << dl4j({kDl4jDense, kDl4jOutput},
        R"("inputPreProcessors":{"1":{"@class":"org.deeplearning4j.nn.conf.preprocessor.CnnToRnnPreProcessor"}})")
        << QStringList{"inputPreProcessors[1]", "CnnToRnnPreProcessor is not supported", "sequences are not made from images"};

    // A functional model (a graph) imports (test_graph_import); one without its inputs is refused.
    QTest::newRow("keras functional Model without input_layers") << keras({kKerasFlatInput, kKerasOut}, "Functional")
        << QStringList{"cfg.json: config:", "\"input_layers\"", "is required: the model's inputs"};
    QTest::newRow("keras LSTM on flat features") << keras({kKerasFlatInput, keras_layer("LSTM", R"("name":"lstm","units":4)"), kKerasOut})
        << QStringList{"layers[1] (LSTM \"lstm\")", "needs a sequence input [steps, features], but it reads flat features"};
    // Sequence layers Thresher's fixed cells cannot run: each names the layer and the one field.
    const QByteArray seq_in = keras_layer("InputLayer", R"("batch_input_shape":[null,6,3],"name":"in")");
    auto lstm = [](const QByteArray& extra) { return keras_layer("LSTM", R"("name":"lstm","units":4,)" + extra); };
    // Any element-wise activation runs in a cell (hard_sigmoid gates, relu: test below); softmax
    // and custom ones do not.
    QTest::newRow("keras LSTM softmax gates") << keras({seq_in, lstm(R"("recurrent_activation":"softmax")"), kKerasOut})
        << QStringList{"layers[1] (LSTM \"lstm\")", "\"recurrent_activation\"", "softmax is not supported in a recurrent cell"};
    QTest::newRow("keras SimpleRNN softmax")
        << keras({seq_in, keras_layer("SimpleRNN", R"("name":"rnn","units":2,"activation":"softmax")"), kKerasOut})
        << QStringList{"layers[1] (SimpleRNN \"rnn\")", "softmax is not supported in a recurrent cell"};
    QTest::newRow("keras LSTM custom activation") << keras({seq_in, lstm(R"("activation":{"class_name":"MyCell","config":{}})"), kKerasOut})
        << QStringList{"layers[1] (LSTM \"lstm\")", "custom activation"};
    QTest::newRow("keras LSTM return_state") << keras({seq_in, lstm(R"("return_state":true)"), kKerasOut})
        << QStringList{"layers[1] (LSTM \"lstm\")", "\"return_state\": true is not supported"};
    QTest::newRow("keras LSTM stateful") << keras({seq_in, lstm(R"("stateful":true)"), kKerasOut})
        << QStringList{"layers[1] (LSTM \"lstm\")", "\"stateful\": true is not supported"};
    QTest::newRow("keras Bidirectional of a go_backwards GRU")
        << keras({seq_in, keras_layer("Bidirectional", R"("name":"bi","layer":)" + keras_layer("GRU", R"("name":"g","units":2,"go_backwards":true)")),
                  kKerasOut})
        << QStringList{"layers[1] (Bidirectional \"bi\")", "\"go_backwards\"", "inside Bidirectional is not supported"};
    QTest::newRow("keras LSTM recurrent_dropout 1") << keras({seq_in, lstm(R"("recurrent_dropout":1.0)"), kKerasOut})
        << QStringList{"layers[1] (LSTM \"lstm\")", "\"recurrent_dropout\""};
    QTest::newRow("keras Bidirectional merge_mode None")
        << keras({seq_in, keras_layer("Bidirectional", R"("name":"bi","merge_mode":null,"layer":)" + keras_layer("GRU", R"("name":"g","units":2)")), kKerasOut})
        << QStringList{"layers[1] (Bidirectional \"bi\")", "\"merge_mode\": None (two outputs) is not supported"};
    QTest::newRow("keras TimeDistributed Conv2D")
        << keras({seq_in, keras_layer("TimeDistributed", R"("name":"td","layer":)" + keras_layer("Conv2D", R"("name":"c","filters":2)")), kKerasOut})
        << QStringList{"layers[1] (TimeDistributed \"td\")", "layer TimeDistributed(Conv2D) is not supported"};
    QTest::newRow("keras sequence without fixed steps")
        << keras({keras_layer("InputLayer", R"("batch_input_shape":[null,null,3],"name":"in")"), lstm(R"("recurrent_activation":"sigmoid")"), kKerasOut})
        << QStringList{"layers[0] (InputLayer \"in\")", "[null,null,3] has no fixed number of steps", "--steps N"};
    QTest::newRow("keras Embedding on an image")
        << keras({kKerasInput, keras_layer("Embedding", R"("name":"emb","input_dim":100,"output_dim":8)"), kKerasOut})
        << QStringList{"layers[1] (Embedding \"emb\")", "reads token ids"};
    QTest::newRow("keras grouped Conv2D")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":4,"kernel_size":[3,3],"groups":2)"),
                  keras_layer("Flatten", R"("name":"f")"), kKerasOut})
        << QStringList{"layers[1] (Conv2D \"c\")", "\"groups\"", "grouped"};
    QTest::newRow("keras unknown activation")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":4,"activation":"mish")"), kKerasOut})
        << QStringList{"layers[1] (Dense \"d\")", "\"activation\"", "mish"};
    QTest::newRow("dl4j precise GELU")
        << dl4j({dl4j_layer("DenseLayer", R"("nin":4,"nout":3,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationGELU","precise":true})"),
                 kDl4jOutput})
        << QStringList{"confs[0]", "activationFn", "precise=true"};
    QTest::newRow("keras gelu on the output layer")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"out","units":3,"activation":"gelu")")})
        << QStringList{"Dense \"out\"", "gelu", "output layer"};
    QTest::newRow("keras softmax over an image")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":3,"activation":"relu")"),
                  keras_layer("Activation", R"("name":"a","activation":"softmax")"), keras_layer("Flatten", R"("name":"f")"), kKerasOut})
        << QStringList{"config.layers[2] (Activation \"a\"", "softmax over a 2x6x6 image", "only on a model output with loss mcxent"};
    QTest::newRow("keras Softmax over an image's rows")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":3)"),
                  keras_layer("Softmax", R"("name":"sm","axis":1)")})
        << QStringList{"config.layers[2] (Softmax \"sm\")", "\"axis\"", "over its channels only"};
    QTest::newRow("keras pooling as the output")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":3)"),
                  keras_layer("MaxPooling2D", R"("name":"p","pool_size":[2,2])")})
        << QStringList{"cfg.json: model:", "got MaxPooling2D \"p\" (subsampling)"};
    QTest::newRow("dl4j 0.x NaN l2 with useRegularization true (read, so refused)")
        << dl4j({R"({"useRegularization":true,"layer":{"dense":{"layerName":"d","nin":4,"nout":3,"l1":0.0,"l2":"NaN",
                     "activationFn":{"ReLU":{}},"iupdater":{"@class":"org.nd4j.linalg.learning.config.Sgd","learningRate":0.1}}}})",
                 kDl4jOutput})
        << QStringList{"confs[0] (dense \"d\")", "\"l2\"", "\"NaN\""};
    QTest::newRow("dl4j 0.x NaN momentum of a legacy NESTEROVS layer (read, so refused)")
        << dl4j({R"({"layer":{"dense":{"layerName":"d","nin":4,"nout":3,"updater":"NESTEROVS","learningRate":0.1,
                     "momentum":"NaN","activationFn":{"ReLU":{}}}}})", kDl4jOutput})
        << QStringList{"confs[0] (dense \"d\")", "\"momentum\"", "\"NaN\""};
    QTest::newRow("dl4j LossLayer not last")
        << dl4j({kDl4jDense, dl4j_layer("LossLayer", R"("activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
                     "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"})"), kDl4jOutput})
        << QStringList{"confs[1] (LossLayer)", "must be the last layer"};
    QTest::newRow("keras PReLU shared axis out of range")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":4)"),
                  keras_layer("PReLU", R"("name":"pr","shared_axes":[2])"), kKerasOut})
        << QStringList{"PReLU \"pr\"", "shared_axes", "axis 2"};
    QTest::newRow("dl4j PReLULayer without inputShape")
        << dl4j({kDl4jDense, dl4j_layer("PReLULayer", R"("nin":3,"nout":3)"), kDl4jOutput})
        << QStringList{"confs[1]", "inputShape", "required"};
    QTest::newRow("keras Dense on an image")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":4,"kernel_size":3)"), kKerasOut})
        << QStringList{"layers[2] (Dense \"out\")", "Flatten"};
    QTest::newRow("keras last layer not Dense")
        << keras({kKerasFlatInput, kKerasOut, keras_layer("Dropout", R"("name":"drop","rate":0.5)")})
        << QStringList{"cfg.json: model:", "last layer must be Dense"};
    QTest::newRow("keras no input shape") << keras({kKerasOut}) << QStringList{"cfg.json: model:", "input shape"};
    QTest::newRow("keras 1 border_mode full") << keras({kKerasInput,
        keras_layer("Convolution2D", R"("name":"c","nb_filter":4,"nb_row":3,"nb_col":3,"border_mode":"full")"),
        keras_layer("Flatten", R"("name":"f")"), kKerasOut})
        << QStringList{"config.layers[1] (Convolution2D \"c\")", "\"border_mode\"", "full"};
    QTest::newRow("keras variable input") << keras({keras_layer("InputLayer", R"("batch_shape":[null,null,8,1])"), kKerasOut})
        << QStringList{"\"batch_shape\"", "variable"};
}

void TestModelImport::refused() {
    QFETCH(QByteArray, json);
    QFETCH(QStringList, expected);
    try {
        const auto r = config::import_model_text(json.toStdString(), "cfg.json");
        QFAIL(qPrintable("imported; expected an error containing " + expected.join(" | ") + "\nnotes:\n" + joined(r.notes)));
    } catch (const ConfigError& e) {
        const QString msg = QString::fromUtf8(e.what());
        QVERIFY2(msg.startsWith("cfg.json"), qPrintable(msg));
        for (const auto& fragment : expected) QVERIFY2(msg.contains(fragment), qPrintable(fragment + " not in: " + msg));
    }
}

namespace {

// What importing `text` says, or "" when it imports.
QString refusal(const std::string& text, const std::string& source) {
    try {
        config::import_model_text(text, source);
    } catch (const ConfigError& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

std::string read_fixture(const QString& name) {
    QFile f(QString::fromStdString(fixture(name)));
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll().toStdString();
}

}  // namespace

void TestModelImport::fixture_refusals_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QStringList>("expected");   // fragments the message must contain
    QTest::addColumn<QStringList>("unexpected");  // fragments it must not
    // Class 8: a NaN momentum is refused, never replaced by 0.9. Its layer's updater is Nesterovs,
    // which reads the momentum (DL4J's NesterovsUpdater would turn every parameter into NaN), so
    // this NaN is used -- unlike those of dl4j_0.9.1_mlp_nan_unused.json, which imports.
    QTest::newRow("dl4j NaN momentum") << "dl4j_0.9.1_mlp_nan_momentum.json"
        << QStringList{"dl4j_0.9.1_mlp_nan_momentum.json: confs[1] (dense \"layer1\")", "\"momentum\"", "\"NaN\""}
        << QStringList{};
    // Class 10: the layer as the file numbers it, Thresher's numbering only in parentheses.
    QTest::newRow("keras shape in file terms") << "keras2_conv_does_not_fit.json"
        << QStringList{"keras2_conv_does_not_fit.json: config.layers[3] (Conv2D \"conv2d_1\"; Thresher layers[2] convolution)",
                       "5x5", "16x3x3"}
        << QStringList{": layers[2]"};
    QTest::newRow("keras Embedding without a fixed length") << "keras2_imdb_embedding_lstm.json"
        << QStringList{"config.layers[0] (Embedding \"embedding_1\")", "has no fixed number of steps"}
        << QStringList{"not supported"};
}

// Standalone Keras 2's LSTM defaults recurrent_activation to hard_sigmoid (clip(0.2x + 0.5)):
// a real file (keras2_mnist_lstm.json) imports with those gates, and the config round-trips them.
void TestModelImport::keras2_hard_sigmoid_lstm_imports() {
    config::ImportResult r;
    try {
        r = config::import_model_file(fixture("keras2_mnist_lstm.json"));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    const config::LayerConfig* lstm = nullptr;
    for (const auto& l : r.model.layers)
        if (l.type == config::LayerType::Lstm) lstm = &l;
    QVERIFY(lstm);
    QCOMPARE(lstm->gate_activation.kind, vocab::Activation::HardSigmoid);
    QCOMPARE(lstm->gate_activation.alpha, 0.2f);
    QCOMPARE(lstm->cell_activation.kind, vocab::Activation::Tanh);
    const auto again = config::ModelConfig::from_json(r.model.to_json(), "round trip");
    QCOMPARE(QString::fromStdString(again.to_json().dump()), QString::fromStdString(r.model.to_json().dump()));
    QVERIFY(r.model.to_json().dump().find("\"gate_activation\":\"hardsigmoid\"") != std::string::npos);
}

void TestModelImport::fixture_refusals() {
    QFETCH(QString, file);
    QFETCH(QStringList, expected);
    QFETCH(QStringList, unexpected);
    try {
        config::import_model_file(fixture(file));
        QFAIL("imported");
    } catch (const ConfigError& e) {
        const QString msg = QString::fromUtf8(e.what());
        QVERIFY2(msg.startsWith(QString::fromStdString(fixture(file))), qPrintable(msg));
        for (const auto& f : expected) QVERIFY2(msg.contains(f), qPrintable(f + " not in: " + msg));
        for (const auto& f : unexpected) QVERIFY2(!msg.contains(f), qPrintable(f + " in: " + msg));
    }
}

void TestModelImport::bad_numbers_refused_data() {
    // Class 8: one field of a real file made NaN, infinite, negative or out of range. Each must be
    // refused naming the file, the layer and the field as the file spells it.
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("pointer");  // JSON pointer of the field to change
    QTest::addColumn<QByteArray>("value");
    QTest::addColumn<QStringList>("expected");
    const QString lenet = "dl4j_0.8.0_lenet_wrapped.json", mlp = "dl4j_0.9.1_mlp_wrapped.json",
                  beta = "dl4j_1.0.0-beta2_iris_idropout.json", k3 = "keras3_cnn_compiled_logits.json",
                  tfjs = "tfjs_keras2_mlp_sgd.json", k1 = "keras1_mnist_mlp_l2.json", k1cnn = "keras1_mnist_cnn.json";
    QTest::newRow("0.x learningRate NaN") << lenet << "/confs/0/layer/convolution/learningRate" << QByteArray(R"("NaN")")
        << QStringList{"confs[0] (convolution \"cnn1\")", "\"learningRate\"", "NaN"};
    QTest::newRow("0.x adamVarDecay Infinity") << lenet << "/confs/2/layer/convolution/adamVarDecay" << QByteArray(R"("Infinity")")
        << QStringList{"confs[2] (convolution \"cnn2\")", "\"adamVarDecay\"", "Infinity"};
    QTest::newRow("0.x negative l2") << lenet << "/confs/4/layer/dense/l2" << QByteArray("-0.0005")
        << QStringList{"confs[4] (dense \"ffn1\")", "\"l2\"", "-0.0005"};
    QTest::newRow("0.x LReLU alpha") << lenet << "/confs/2/layer/convolution/activationFn/LReLU/alpha" << QByteArray("-1")
        << QStringList{"confs[2] (convolution \"cnn2\").activationFn", "\"alpha\""};
    QTest::newRow("0.x dropOut above 1") << mlp << "/confs/0/layer/dense/dropOut" << QByteArray("1.5")
        << QStringList{"confs[0] (dense \"layer0\")", "\"dropOut\"", "1.5"};
    QTest::newRow("0.9 iupdater learningRate NaN") << mlp << "/confs/2/layer/output/iupdater/learningRate" << QByteArray(R"("NaN")")
        << QStringList{"confs[2] (output \"layer2\").iupdater", "\"learningRate\""};
    QTest::newRow("1.0 idropout p NaN") << beta << "/confs/0/layer/idropout/p" << QByteArray(R"("NaN")")
        << QStringList{"confs[0] (DenseLayer \"hidden\").idropout", "\"p\""};
    QTest::newRow("1.0 negative learningRate") << beta << "/confs/1/layer/iupdater/learningRate" << QByteArray("-0.005")
        << QStringList{"confs[1] (OutputLayer \"out\").iupdater", "\"learningRate\"", "-0.005"};
    QTest::newRow("1.0 Adam beta1 of 1") << beta << "/confs/1/layer/iupdater/beta1" << QByteArray("1.0")
        << QStringList{"confs[1] (OutputLayer \"out\").iupdater", "\"beta1\"", "[0, 1)"};
    QTest::newRow("1.0 l2 schedule NaN") << beta << "/confs/0/layer/regularization/0/l2/value" << QByteArray(R"("NaN")")
        << QStringList{"confs[0] (DenseLayer \"hidden\")", "\"regularization.l2\""};
    QTest::newRow("keras 3 learning_rate negative") << k3 << "/compile_config/optimizer/config/learning_rate"
        << QByteArray("-0.001") << QStringList{"compile_config.optimizer (Adam)", "\"learning_rate\"", "-0.001"};
    QTest::newRow("keras 3 epsilon zero") << k3 << "/compile_config/optimizer/config/epsilon" << QByteArray("0")
        << QStringList{"compile_config.optimizer (Adam)", "\"epsilon\""};
    QTest::newRow("tfjs momentum above 1") << tfjs << "/modelTopology/training_config/optimizer_config/config/momentum"
        << QByteArray("1.5") << QStringList{"modelTopology.training_config.optimizer_config (SGD)", "\"momentum\""};
    QTest::newRow("keras 1 negative l2") << k1 << "/config/3/config/W_regularizer/l2" << QByteArray("-0.01")
        << QStringList{"config[3] (Dense \"dense_2\").W_regularizer", "\"l2\""};
    QTest::newRow("keras 1 dropout p of 1") << k1cnn << "/config/5/config/p" << QByteArray("1.0")
        << QStringList{"config[5] (Dropout \"dropout_1\")", "\"p\""};
    QTest::newRow("keras batch norm momentum") << "keras3_cnn.json" << "/config/layers/4/config/momentum" << QByteArray("2")
        << QStringList{"config.layers[4] (BatchNormalization", "\"momentum\""};
}

void TestModelImport::bad_numbers_refused() {
    QFETCH(QString, file);
    QFETCH(QString, pointer);
    QFETCH(QByteArray, value);
    QFETCH(QStringList, expected);
    auto j = nlohmann::json::parse(read_fixture(file));
    const nlohmann::json::json_pointer ptr(pointer.toStdString());
    QVERIFY2(j.contains(ptr), qPrintable(pointer + " not in " + file));
    j[ptr] = nlohmann::json::parse(value.toStdString());
    const QString msg = refusal(j.dump(), file.toStdString());
    QVERIFY2(!msg.isEmpty(), "imported");
    QVERIFY2(msg.startsWith(file + ": "), qPrintable(msg));
    for (const auto& f : expected) QVERIFY2(msg.contains(f), qPrintable(f + " not in: " + msg));
}

void TestModelImport::unsupported_layer_named_first_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("expected");
    // The first layer also has a problem (a NaN learning rate, a bad nIn); the LSTM is named anyway.
    QTest::newRow("dl4j NaN before LocalResponseNormalization") << dl4j({dl4j_layer("DenseLayer",
        R"("nin":4,"nout":3,"iupdater":{"@class":"org.nd4j.linalg.learning.config.Sgd","learningRate":"NaN"})"),
        dl4j_layer("LocalResponseNormalization", R"("layerName":"lrn1")"), kDl4jOutput})
        << "confs[1] (LocalResponseNormalization \"lrn1\"): layer type LocalResponseNormalization is not supported";
    QTest::newRow("dl4j 0.x LRN before shape") << dl4j({R"({"layer":{"convolution":{"nin":1,"nout":2,"kernelSize":[9,9]}}})",
        R"({"layer":{"localResponseNormalization":{"layerName":"g"}}})", kDl4jOutput})
        << "confs[1] (localResponseNormalization \"g\"): layer type localResponseNormalization is not supported";
    QTest::newRow("keras Dense on image before LocallyConnected2D") << keras({kKerasInput,
        keras_layer("Dense", R"("name":"d","units":4)"), keras_layer("LocallyConnected2D", R"("name":"lc")"), kKerasOut})
        << "config.layers[2] (LocallyConnected2D \"lc\"): layer LocallyConnected2D is not supported";
}

void TestModelImport::unsupported_layer_named_first() {
    QFETCH(QByteArray, json);
    QFETCH(QString, expected);
    const QString msg = refusal(json.toStdString(), "cfg.json");
    QVERIFY2(msg.startsWith("cfg.json: " + expected), qPrintable(msg));
}

void TestModelImport::numbers_keep_their_decimals() {
    // Class 10: float32 values from Keras (0.009999999776482582) and floats we store show as the
    // decimal the user wrote, in notes, saved configs and messages.
    const auto tfjs = config::import_model_file(fixture("tfjs_keras2_mlp_sgd.json"));
    const auto saved = QString::fromStdString(tfjs.model.to_json().dump());
    QVERIFY2(saved.contains(R"("learning_rate":0.01)") && saved.contains(R"("momentum":0.9)"), qPrintable(saved));
    QVERIFY2(!saved.contains("0.0099999") && !saved.contains("0.8999999"), qPrintable(saved));
    const auto k1 = config::import_model_file(fixture("keras1_mnist_mlp_l2.json"));
    const auto k1_saved = QString::fromStdString(k1.model.to_json().dump());
    QVERIFY2(k1_saved.contains(R"("l2":0.02)") && k1_saved.contains(R"("retain":0.8)"), qPrintable(k1_saved));
    QVERIFY2(!joined(k1.notes).contains("0.0099999"), qPrintable(joined(k1.notes)));
    // A Thresher file's numbers survive a load and save unchanged.
    const auto m = config::ModelConfig::parse(
        R"({"input":{"size":4},"updater":{"type":"adam","learning_rate":0.003,"epsilon":1e-7},"l2":0.0005,
            "layers":[{"type":"dropout","retain":0.9},{"type":"output","units":2}]})", "t.json");
    const auto text = QString::fromStdString(m.to_json().dump());
    for (const char* want : {R"("learning_rate":0.003)", R"("epsilon":1e-07)", R"("l2":0.0005)", R"("retain":0.9)"})
        QVERIFY2(text.contains(want), qPrintable(QString(want) + " not in " + text));
    QCOMPARE(config::decimal(0.1f), 0.1);
}

void TestModelImport::first_layer_dropout_keeps_nin() {
    // Class 2: DL4J's global .dropOut(p) puts a dropout on the first layer; the input is its nIn,
    // and a wrong nIn there is still caught.
    const auto r = config::import_model_file(fixture("dl4j_1.0.0-beta2_iris_idropout.json"));
    QCOMPARE(r.model.input, (config::Shape{4, 1, 1}));
    QCOMPARE(r.model.layers[0].retain, 0.8f);
    QCOMPARE(QString::fromStdString(r.model.layers[0].origin), QString("confs[0]"));
    const auto mlp = config::import_model_file(fixture("dl4j_0.9.1_mlp_wrapped.json")).model;
    QCOMPARE(mlp.input, (config::Shape{784, 1, 1}));
    QCOMPARE(mlp.layers[0].retain, 0.5f);
    QCOMPARE(mlp.layers[1].activation.kind, config::Activation::Relu);
    QCOMPARE(mlp.layers[5].activation.kind, config::Activation::Softmax);
    // A DropoutLayer first, then a dense layer whose nIn gives the input.
    const QByteArray text = dl4j({dl4j_layer("DropoutLayer", R"("layerName":"drop","idropout":{"@class":"org.deeplearning4j.nn.conf.dropout.Dropout","p":0.9})"),
                                  kDl4jDense, kDl4jOutput});
    const auto d = config::import_model_text(text.toStdString(), "cfg.json").model;
    QCOMPARE(d.input, (config::Shape{4, 1, 1}));
    QCOMPARE(types(d), QString("dropout,dense,output"));
    // LeNet 0.8.0: the LReLU wrapper's alpha.
    const auto lenet = config::import_model_file(fixture("dl4j_0.8.0_lenet_wrapped.json")).model;
    QCOMPARE(lenet.layers[2].activation.kind, config::Activation::LeakyRelu);
    QCOMPARE(lenet.layers[2].activation.alpha, 0.1f);
    QCOMPARE(lenet.effective_updater(0).epsilon, 1e-8f);
}

void TestModelImport::keras1_details() {
    // Class 7: Keras 1's border_mode same, subsample, init names, dim_ordering th.
    const QByteArray conv = keras_layer("Convolution2D",
        R"("name":"c","nb_filter":6,"nb_row":3,"nb_col":5,"border_mode":"same","subsample":[2,2],"init":"he_normal",
           "dim_ordering":"th","activation":"relu","batch_input_shape":[null,3,16,20],"bias":true)");
    const QByteArray text = R"({"class_name":"Sequential","config":[)" + conv + "," +
        keras_layer("Flatten", R"("name":"f")") + "," +
        keras_layer("Dense", R"("name":"out","output_dim":2,"activation":"softmax","init":"lecun_uniform")") + "]}";
    const auto r = config::import_model_text(text.toStdString(), "k1.json");
    const auto& m = r.model;
    QCOMPARE(m.input, (config::Shape{3, 16, 20}));
    QCOMPARE(m.layers[0].units, 6);
    QCOMPARE(m.layers[0].kernel, (std::array<int, 2>{3, 5}));
    QCOMPARE(m.layers[0].stride, (std::array<int, 2>{2, 2}));
    QCOMPARE(m.layers[0].mode, config::ConvMode::Same);
    QCOMPARE(m.layers[0].out_shape, (config::Shape{6, 8, 10}));
    QCOMPARE(m.effective_weight_init(0), config::WeightInit::Relu);
    QVERIFY2(joined(r.notes).contains("config[2] (Dense \"out\"): \"init\": lecun_uniform"), qPrintable(joined(r.notes)));
}

void TestModelImport::training_config_read() {
    // Class 4: the optimizer and loss come from the file, and the notes no longer claim there are none.
    const auto tfjs = config::import_model_file(fixture("tfjs_keras2_mlp_sgd.json"));
    QVERIFY2(!joined(tfjs.notes).contains("no optimizer") && !joined(tfjs.notes).contains("no loss"), qPrintable(joined(tfjs.notes)));
    const auto k3 = config::import_model_file(fixture("keras3_cnn_compiled_logits.json"));
    QCOMPARE(k3.model.layers.back().activation.kind, config::Activation::Softmax);
    QCOMPARE(k3.model.effective_updater(0).epsilon, 1e-7f);
    // A binary classifier compiled with binary_crossentropy and RMSprop.
    const QByteArray bin = R"({"class_name":"Sequential","config":{"name":"b","layers":[)" + kKerasFlatInput + "," +
        keras_layer("Dense", R"("name":"out","units":1,"activation":"sigmoid")") +
        R"(]},"compile_config":{"optimizer":{"class_name":"RMSprop","config":{"learning_rate":0.01,"rho":0.8,"epsilon":1e-07,
           "momentum":0.0,"centered":false}},"loss":"binary_crossentropy","metrics":["accuracy"]}})";
    const auto b = config::import_model_text(bin.toStdString(), "b.json");
    QCOMPARE(b.model.layers.back().loss, config::LossKind::BinaryCrossEntropy);
    const auto u = b.model.effective_updater(0);
    QCOMPARE(u.kind, config::UpdaterKind::RmsProp);
    QCOMPARE(u.learning_rate, 0.01f);
    QCOMPARE(u.rms_decay, 0.8f);
    // A Keras 3 learning-rate schedule is imported as a schedule, its start as the rate.
    const QByteArray sched = R"({"class_name":"Sequential","config":{"name":"s","layers":[)" + kKerasFlatInput + "," + kKerasOut +
        R"(]},"compile_config":{"optimizer":{"class_name":"SGD","config":{"learning_rate":{"module":"keras.optimizers.schedules",
           "class_name":"ExponentialDecay","config":{"initial_learning_rate":0.1,"decay_steps":1000,"decay_rate":0.96,
           "staircase":false,"name":"ExponentialDecay"},"registered_name":null},"momentum":0.0,"nesterov":false}},
           "loss":"categorical_crossentropy"}})";
    const auto s = config::import_model_text(sched.toStdString(), "s.json");
    QCOMPARE(s.model.effective_updater(0).learning_rate, 0.1f);
    QCOMPARE(s.model.effective_updater(0).kind, config::UpdaterKind::Sgd);
    QVERIFY(s.model.lr_schedule.has_value());
    QCOMPARE(s.model.lr_schedule->kind, config::ScheduleKind::Exponential);
    QCOMPARE(s.model.lr_schedule->decay_steps, 1000.0);
    QVERIFY2(joined(s.notes).contains("learning rate: exponential by iteration: 0.1·0.96^i/1000"), qPrintable(joined(s.notes)));
}

void TestModelImport::training_config_refused_data() {
    QTest::addColumn<QByteArray>("compile");
    QTest::addColumn<QByteArray>("output_activation");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("AMSGrad") << QByteArray(R"({"optimizer":{"class_name":"Adam","config":{"learning_rate":0.001,"amsgrad":true}},"loss":"categorical_crossentropy"})")
        << QByteArray("softmax") << QStringList{"compile_config.optimizer (Adam)", "\"amsgrad\""};
    QTest::newRow("Adadelta") << QByteArray(R"({"optimizer":{"class_name":"Adadelta","config":{"learning_rate":1.0}},"loss":"categorical_crossentropy"})")
        << QByteArray("softmax") << QStringList{"compile_config.optimizer (Adadelta)", "Adadelta is not supported"};
    QTest::newRow("hinge loss") << QByteArray(R"({"optimizer":{"class_name":"Adam","config":{}},"loss":"hinge"})")
        << QByteArray("softmax") << QStringList{"compile_config", "\"loss\"", "hinge is not supported"};
    QTest::newRow("crossentropy on sigmoid") << QByteArray(R"({"loss":"categorical_crossentropy"})")
        << QByteArray("sigmoid") << QStringList{"config.layers[1] (Dense \"out\")", "needs a softmax output"};
    QTest::newRow("label smoothing") << QByteArray(R"({"loss":{"class_name":"CategoricalCrossentropy","config":{"label_smoothing":0.1}}})")
        << QByteArray("softmax") << QStringList{"\"label_smoothing\""};
    QTest::newRow("weight decay") << QByteArray(R"({"optimizer":{"class_name":"Adam","config":{"weight_decay":0.004}},"loss":"mse"})")
        << QByteArray("linear") << QStringList{"\"weight_decay\""};
}

void TestModelImport::training_config_refused() {
    QFETCH(QByteArray, compile);
    QFETCH(QByteArray, output_activation);
    QFETCH(QStringList, expected);
    const QByteArray text = R"({"class_name":"Sequential","config":{"name":"t","layers":[)" + kKerasFlatInput + "," +
        keras_layer("Dense", R"("name":"out","units":3,"activation":")" + output_activation + R"(")") +
        R"(]},"compile_config":)" + compile + "}";
    const QString msg = refusal(text.toStdString(), "cfg.json");
    QVERIFY2(msg.startsWith("cfg.json: "), qPrintable(msg));
    for (const auto& f : expected) QVERIFY2(msg.contains(f), qPrintable(f + " not in: " + msg));
}

void TestModelImport::activations_of_imported_files_data() {
    // Class 6: the activations real files use, in each spelling, with their parameters.
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("activation");
    QTest::addColumn<double>("alpha");  // -1: not compared
    auto dl4j_act = [](const QByteArray& fn) {
        return dl4j({dl4j_layer("DenseLayer", R"("nin":4,"nout":3,"activationFn":)" + fn), kDl4jOutput});
    };
    QTest::newRow("dl4j 1.0 ELU") << dl4j_act(R"({"@class":"org.nd4j.linalg.activations.impl.ActivationELU","alpha":0.5})") << "elu" << 0.5;
    QTest::newRow("dl4j 0.9 wrapper ELU") << dl4j_act(R"({"ELU":{"alpha":1.0}})") << "elu" << 1.0;
    QTest::newRow("dl4j SELU") << dl4j_act(R"({"@class":"org.nd4j.linalg.activations.impl.ActivationSELU"})") << "selu" << -1.0;
    QTest::newRow("dl4j HardSigmoid") << dl4j_act(R"({"HardSigmoid":{}})") << "hardsigmoid" << 0.2;
    QTest::newRow("dl4j SoftPlus") << dl4j_act(R"({"@class":"org.nd4j.linalg.activations.impl.ActivationSoftPlus"})") << "softplus" << -1.0;
    QTest::newRow("dl4j SoftSign") << dl4j_act(R"({"SoftSign":{}})") << "softsign" << -1.0;
    QTest::newRow("dl4j ReLU max 6") << dl4j_act(R"({"@class":"org.nd4j.linalg.activations.impl.ActivationReLU","max":6.0,"threshold":0.0,"negativeSlope":0.0})")
        << "relu6" << -1.0;
    QTest::newRow("dl4j 0.x elu string") << dl4j({R"({"layer":{"dense":{"nin":4,"nout":3,"activationFunction":"elu"}}})", kDl4jOutput})
        << "elu" << 1.0;
    auto keras_act = [](const QByteArray& dense_extra, const QByteArray& after = {}) {
        QByteArrayList layers{kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":4)" + dense_extra)};
        if (!after.isEmpty()) layers << after;
        layers << kKerasOut;
        return keras(layers);
    };
    QTest::newRow("keras selu") << keras_act(R"(,"activation":"selu")") << "selu" << -1.0;
    QTest::newRow("keras softsign") << keras_act(R"(,"activation":"softsign")") << "softsign" << -1.0;
    QTest::newRow("keras 2 hard_sigmoid") << keras_act(R"(,"activation":"hard_sigmoid")") << "hardsigmoid" << 0.2;
    QTest::newRow("keras ELU layer") << keras_act("", keras_layer("ELU", R"("name":"e","alpha":0.7)")) << "elu" << 0.7;
    QTest::newRow("keras ReLU max_value 6") << keras_act("", keras_layer("ReLU", R"("name":"r","max_value":6.0)")) << "relu6" << -1.0;
    // Keras 3 (its objects name their module) changed hard_sigmoid to relu6(x + 3) / 6.
    QByteArray k3 = keras_act(R"(,"activation":"hard_sigmoid")");
    k3.insert(1, R"("module":"keras",)");
    QTest::newRow("keras 3 hard_sigmoid") << k3 << "hardsigmoid" << double(1.f / 6.f);
    // Swish/SiLU and GELU: Keras's gelu is the erf form (approximate=False), DL4J's GELU
    // (precise=false, its default) libnd4j's x·sigmoid(1.702x).
    QTest::newRow("keras swish") << keras_act(R"(,"activation":"swish")") << "swish" << -1.0;
    QTest::newRow("keras 3 silu") << keras_act(R"(,"activation":"silu")") << "swish" << -1.0;
    QTest::newRow("keras gelu") << keras_act(R"(,"activation":"gelu")") << "gelu" << -1.0;
    QTest::newRow("keras Activation gelu layer")
        << keras_act("", keras_layer("Activation", R"("name":"a","activation":"gelu")")) << "gelu" << -1.0;
    QTest::newRow("dl4j 1.0 Swish") << dl4j_act(R"({"@class":"org.nd4j.linalg.activations.impl.ActivationSwish"})") << "swish" << -1.0;
    QTest::newRow("dl4j 1.0 GELU") << dl4j_act(R"({"@class":"org.nd4j.linalg.activations.impl.ActivationGELU","precise":false})")
        << "gelu_sigmoid" << -1.0;
    QTest::newRow("dl4j GELU default") << dl4j_act(R"({"@class":"org.nd4j.linalg.activations.impl.ActivationGELU"})")
        << "gelu_sigmoid" << -1.0;
}

void TestModelImport::activations_of_imported_files() {
    QFETCH(QByteArray, json);
    QFETCH(QString, activation);
    QFETCH(double, alpha);
    config::ImportResult r;
    try {
        r = config::import_model_text(json.toStdString(), "cfg.json");
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    const auto& a = r.model.layers[0].activation;
    QCOMPARE(QString::fromUtf8(config::to_string(a.kind).data()), activation);
    if (alpha >= 0) QCOMPARE(a.alpha, float(alpha));
    // Thresher JSON keeps it: the saved config reads back the same.
    const auto again = config::ModelConfig::from_json(r.model.to_json(), "again");
    QCOMPARE(again.layers[0].activation.kind, a.kind);
    QCOMPARE(again.layers[0].activation.alpha, a.alpha);
}

// Thresholded ReLU (x where x > θ, else 0) from DL4J's ActivationThresholdedReLU and ReLU
// threshold, and Keras's ThresholdedReLU layer and ReLU(threshold).
void TestModelImport::thresholded_relu_imports() {
    auto dl4j_act = [](const QByteArray& act) {
        return dl4j({dl4j_layer("DenseLayer", R"("nin":4,"nout":3,"activationFn":)" + act), kDl4jOutput});
    };
    const auto a = config::import_model_text(dl4j_act(R"({"@class":"org.nd4j.linalg.activations.impl.ActivationThresholdedReLU","theta":0.5})").toStdString(), "a.json");
    QCOMPARE(a.model.layers[0].activation.kind, config::Activation::ThresholdedRelu);
    QCOMPARE(a.model.layers[0].activation.alpha, 0.5f);
    const auto b = config::import_model_text(dl4j_act(R"({"@class":"org.nd4j.linalg.activations.impl.ActivationReLU","max":null,"threshold":0.25,"negativeSlope":0.0})").toStdString(), "b.json");
    QCOMPARE(b.model.layers[0].activation.kind, config::Activation::ThresholdedRelu);
    QCOMPARE(b.model.layers[0].activation.alpha, 0.25f);
    const auto k = config::import_model_text(keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":5,"activation":"linear")"),
                                                keras_layer("ThresholdedReLU", R"("name":"t","theta":0.7)"), kKerasOut})
                                             .toStdString(), "k.json");
    QCOMPARE(k.model.layers[0].activation.kind, config::Activation::ThresholdedRelu);
    QCOMPARE(k.model.layers[0].activation.alpha, 0.7f);
    const auto r = config::import_model_text(keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":5,"activation":"linear")"),
                                                keras_layer("ReLU", R"("name":"r","threshold":0.4,"max_value":null,"negative_slope":0.0)"), kKerasOut})
                                             .toStdString(), "r.json");
    QCOMPARE(r.model.layers[0].activation.alpha, 0.4f);
    QCOMPARE(r.model.to_json()["layers"][0]["activation"].get<std::string>(), std::string("thresholdedrelu"));
    // A threshold with a max is refused, naming the layer.
    try {
        config::import_model_text(keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":5,"activation":"linear")"),
                                     keras_layer("ReLU", R"("name":"r","threshold":0.4,"max_value":6)"), kKerasOut})
                                  .toStdString(), "m.json");
        QFAIL("accepted");
    } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("(ReLU \"r\")"), e.what());
    }
}

// Global pooling: Keras GlobalAveragePooling2D / GlobalMaxPooling2D and DL4J GlobalPoolingLayer
// become a subsampling layer over the whole image (C x 1 x 1), which a Dense takes directly.
void TestModelImport::global_pooling_imports() {
    const auto k = config::import_model_text(keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":4,"kernel_size":3,"activation":"relu")"),
                                                keras_layer("GlobalAveragePooling2D", R"("name":"g","data_format":"channels_last","keepdims":false)"),
                                                kKerasOut}).toStdString(), "k.json");
    QCOMPARE(types(k.model), QString("convolution,subsampling,output"));
    QVERIFY(k.model.layers[1].global && !k.model.layers[1].max_pool);
    QCOMPARE(k.model.layers[1].out_shape, (config::Shape{4, 1, 1}));
    QCOMPARE(k.model.layers[1].kernel, (std::array<int, 2>{6, 6}));
    QCOMPARE(k.model.layers[2].param_count, std::size_t(4 * 3 + 3));
    QCOMPARE(k.model.to_json()["layers"][1]["global"].get<bool>(), true);
    const auto m = config::import_model_text(keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":3)"),
                                                keras_layer("GlobalMaxPooling2D", R"("name":"g")"), kKerasOut}).toStdString(), "m.json");
    QVERIFY(m.model.layers[1].global && m.model.layers[1].max_pool);
    const QByteArray conv = dl4j_layer("ConvolutionLayer", R"("nin":1,"nout":5,"kernelSize":[3,3],"stride":[1,1],"padding":[0,0],
        "convolutionMode":"Truncate","activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationReLU"})");
    const QByteArray pool = dl4j_layer("GlobalPoolingLayer", R"("poolingType":"AVG","collapseDimensions":true,"poolingDimensions":null)");
    const QByteArray out = dl4j_layer("OutputLayer", R"("nin":5,"nout":3,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
        "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"})");
    const auto d = config::import_model_text(dl4j({conv, pool, out}, R"("inputPreProcessors":{"0":{"@class":"org.deeplearning4j.nn.conf.preprocessor.FeedForwardToCnnPreProcessor",
        "inputHeight":10,"inputWidth":10,"numChannels":1}})").toStdString(), "d.json");
    QCOMPARE(types(d.model), QString("convolution,subsampling,output"));
    QCOMPARE(d.model.layers[1].out_shape, (config::Shape{5, 1, 1}));
    // Global pooling on flat features is refused, naming the layer.
    try {
        config::import_model_text(keras({kKerasFlatInput, keras_layer("GlobalAveragePooling2D", R"("name":"g")"), kKerasOut}).toStdString(), "f.json");
        QFAIL("accepted");
    } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("(GlobalAveragePooling2D \"g\")"), e.what());
    }
}

// Zero padding: a symmetric Keras ZeroPadding2D / DL4J ZeroPaddingLayer right before a valid
// convolution becomes that convolution's padding (exactly the same computation); any other
// (asymmetric, before pooling, before a "same" convolution) is a zero_padding layer of its own.
// Cropping2D and UpSampling2D (nearest) are layers of their own; bilinear upsampling is refused.
void TestModelImport::zero_padding_imports() {
    const auto k = config::import_model_text(keras({kKerasInput, keras_layer("ZeroPadding2D", R"("name":"z","padding":[[1,1],[2,2]])"),
                                                keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":3,"padding":"valid")"),
                                                keras_layer("Flatten", R"("name":"f")"), kKerasOut}).toStdString(), "k.json");
    QCOMPARE(types(k.model), QString("convolution,output"));
    QCOMPARE(k.model.layers[0].padding, (std::array<int, 2>{1, 2}));
    QCOMPARE(k.model.layers[0].out_shape, (config::Shape{2, 8, 10}));

    const auto asym = config::import_model_text(keras({kKerasInput, keras_layer("ZeroPadding2D", R"("name":"z","padding":[[1,0],[0,2]])"),
        keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":3)"), keras_layer("Flatten", R"("name":"f")"), kKerasOut}).toStdString(), "a.json");
    QCOMPARE(types(asym.model), QString("zero_padding,convolution,output"));
    QCOMPARE(asym.model.layers[0].margins, (std::array<int, 4>{1, 0, 0, 2}));
    QCOMPARE(asym.model.layers[0].out_shape, (config::Shape{1, 9, 10}));
    QCOMPARE(QString::fromStdString(asym.model.layers[0].origin_what), QString("ZeroPadding2D \"z\""));

    const auto pool = config::import_model_text(keras({kKerasInput, keras_layer("ZeroPadding2D", R"("name":"z","padding":1)"),
        keras_layer("MaxPooling2D", R"("name":"p")"), keras_layer("Flatten", R"("name":"f")"), kKerasOut}).toStdString(), "p.json");
    QCOMPARE(types(pool.model), QString("zero_padding,subsampling,output"));
    QCOMPARE(pool.model.layers[1].out_shape, (config::Shape{1, 5, 5}));

    const auto same = config::import_model_text(keras({kKerasInput, keras_layer("ZeroPadding2D", R"("name":"z","padding":1)"),
        keras_layer("Conv2D", R"("name":"c","filters":2,"kernel_size":3,"padding":"same")"), keras_layer("Flatten", R"("name":"f")"), kKerasOut}).toStdString(), "s.json");
    QCOMPARE(types(same.model), QString("zero_padding,convolution,output"));

    const auto crop_up = config::import_model_text(keras({kKerasInput,
        keras_layer("Cropping2D", R"("name":"crop","cropping":[[1,2],[0,3]],"data_format":"channels_last")"),
        keras_layer("UpSampling2D", R"("name":"up","size":[2,3],"interpolation":"nearest")"),
        keras_layer("Flatten", R"("name":"f")"), kKerasOut}).toStdString(), "c.json");
    QCOMPARE(types(crop_up.model), QString("cropping,upsampling,output"));
    QCOMPARE(crop_up.model.layers[0].margins, (std::array<int, 4>{1, 2, 0, 3}));
    QCOMPARE(crop_up.model.layers[0].out_shape, (config::Shape{1, 5, 5}));
    QCOMPARE(crop_up.model.layers[1].scale, (std::array<int, 2>{2, 3}));
    QCOMPARE(crop_up.model.layers[1].out_shape, (config::Shape{1, 10, 15}));
    // The defaults: ZeroPadding2D pads 1, UpSampling2D doubles.
    const auto defaults = config::import_model_text(keras({kKerasInput, keras_layer("ZeroPadding2D", R"("name":"z")"),
        keras_layer("UpSampling2D", R"("name":"up")"), keras_layer("Flatten", R"("name":"f")"), kKerasOut}).toStdString(), "d.json");
    QCOMPARE(defaults.model.layers[1].out_shape, (config::Shape{1, 20, 20}));

    auto refused = [](const QByteArray& json, const QStringList& want) {
        try {
            config::import_model_text(json.toStdString(), "z.json");
            QFAIL("accepted");
        } catch (const ConfigError& e) {
            for (const auto& w : want) QVERIFY2(QString(e.what()).contains(w), e.what());
        }
    };
    refused(keras({kKerasInput, keras_layer("UpSampling2D", R"("name":"up","size":2,"interpolation":"bilinear")"),
                   keras_layer("Flatten", R"("name":"f")"), kKerasOut}),
            {"config.layers[1] (UpSampling2D \"up\")", "\"interpolation\"", "bilinear"});
    refused(keras({kKerasInput, keras_layer("Cropping2D", R"("name":"crop","cropping":[[4,4],[0,0]])"),
                   keras_layer("Flatten", R"("name":"f")"), kKerasOut}),
            {"config.layers[1] (Cropping2D \"crop\"", "leaves nothing", "1x8x8"});
    refused(keras({kKerasFlatInput, keras_layer("ZeroPadding2D", R"("name":"z","padding":1)"), kKerasOut}),
            {"config.layers[1] (ZeroPadding2D \"z\")", "image-shaped input"});

    const QByteArray zp = dl4j_layer("ZeroPaddingLayer", R"("padding":[2,2,1,1])");
    const QByteArray conv = dl4j_layer("ConvolutionLayer", R"("nin":1,"nout":3,"kernelSize":[3,3],"stride":[1,1],"padding":[0,0],
        "convolutionMode":"Truncate","activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationReLU"})");
    const QByteArray out = dl4j_layer("OutputLayer", R"("nin":240,"nout":3,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
        "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"})");
    const QByteArray to_cnn = R"("inputPreProcessors":{"0":{"@class":"org.deeplearning4j.nn.conf.preprocessor.FeedForwardToCnnPreProcessor",
        "inputHeight":8,"inputWidth":8,"numChannels":1}})";
    const auto d = config::import_model_text(dl4j({zp, conv, out}, to_cnn).toStdString(), "d.json");
    QCOMPARE(types(d.model), QString("convolution,output"));
    QCOMPARE(d.model.layers[0].padding, (std::array<int, 2>{2, 1}));
    QCOMPARE(d.model.layers[0].out_shape, (config::Shape{3, 10, 8}));
    // Asymmetric, then cropped and upsampled: 8x8 -> 11x8 -> conv 9x6 -> crop 8x4 -> up 16x8.
    const QByteArray zp_asym = dl4j_layer("ZeroPaddingLayer", R"("padding":[2,1,0,0])");
    const QByteArray crop = dl4j_layer("Cropping2D", R"("layerName":"crop","cropping":[1,0,1,1])");
    const QByteArray up = dl4j_layer("Upsampling2D", R"("layerName":"up","size":[2,2])");
    const QByteArray out2 = dl4j_layer("OutputLayer", R"("nin":384,"nout":3,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
        "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"})");
    const auto d2 = config::import_model_text(dl4j({zp_asym, conv, crop, up, out2}, to_cnn).toStdString(), "d2.json");
    QCOMPARE(types(d2.model), QString("zero_padding,convolution,cropping,upsampling,output"));
    QCOMPARE(d2.model.layers[3].out_shape, (config::Shape{3, 16, 8}));
    // 0.9's wrapper spelling, one size for both axes.
    const auto d3 = config::import_model_text(dl4j({conv, R"({"layer":{"Upsampling2D":{"layerName":"up","size":3}}})",
        dl4j_layer("OutputLayer", R"("nin":972,"nout":3,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
        "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"})")}, to_cnn).toStdString(), "d3.json");
    QCOMPARE(d3.model.layers[1].scale, (std::array<int, 2>{3, 3}));
    refused(dl4j({conv, dl4j_layer("Cropping2D", R"("layerName":"crop","cropping":[1,1])"), out}, to_cnn),
            {"confs[1] (Cropping2D \"crop\")", "\"cropping\"", "[top, bottom, left, right]"});
}

// A 0.x layer's "updater": "RMSPROP" beside "epsilon": "NaN" (0.6 and 0.7 wrote it so): DL4J's own
// reader gives it RmsProp's default epsilon, 1e-8, and so does Thresher. A NaN learning rate stays refused.
void TestModelImport::legacy_nan_epsilon_is_dl4j_default() {
    const QByteArray rms = R"("updater":"RMSPROP","learningRate":0.1,"rmsDecay":0.95,"epsilon":"NaN")";
    const auto text = dl4j({R"({"layer":{"dense":{"nin":4,"nout":3,"activationFunction":"relu",)" + rms + "}}}",
                            R"({"layer":{"output":{"nin":3,"nout":2,"activationFunction":"softmax","lossFunction":"MCXENT",)" + rms + "}}}"});
    config::ImportResult r;
    try {
        r = config::import_model_text(text.toStdString(), "cfg.json");
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    const auto u = r.model.effective_updater(0);
    QCOMPARE(u.kind, config::UpdaterKind::RmsProp);
    QCOMPARE(u.epsilon, 1e-8f);
    QCOMPARE(u.rms_decay, 0.95f);
    auto bad = text;
    bad.replace(R"("learningRate":0.1)", R"("learningRate":"NaN")");
    QVERIFY_THROWS_EXCEPTION(ConfigError, config::import_model_text(bad.toStdString(), "cfg.json"));
}


// Keras's go_backwards on a lone LSTM or GRU (a Bidirectional's backward half is one): imported
// as LayerConfig::go_backwards, written back by to_json, and refused with a bidirectional layer.
void TestModelImport::keras_go_backwards_imports() {
    const auto m = config::import_model_text(R"({"class_name":"Sequential","config":{"name":"s","layers":[
        {"class_name":"InputLayer","config":{"batch_input_shape":[null,10,8]}},
        {"class_name":"LSTM","config":{"name":"back","units":16,"go_backwards":true,"return_sequences":true}},
        {"class_name":"GRU","config":{"name":"g","units":4,"go_backwards":false,"reset_after":true}},
        {"class_name":"Dense","config":{"name":"out","units":3,"activation":"softmax"}}]}})", "backwards.json").model;
    QVERIFY(m.layers[0].go_backwards);
    QVERIFY(!m.layers[1].go_backwards);
    const auto again = config::ModelConfig::parse(m.to_json().dump(), "again.json");
    QVERIFY(again.layers[0].go_backwards && again.layers[0].return_sequences);
    QVERIFY(!again.layers[1].go_backwards);
    try {
        config::ModelConfig::parse(R"({"input":{"steps":4,"features":2},"layers":[
            {"type":"lstm","units":3,"go_backwards":true,"bidirectional":"concat"},{"type":"output","units":2}]})", "bi.json");
        QFAIL("go_backwards with bidirectional was accepted");
    } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("go_backwards"), e.what());
    }
}

QTEST_APPLESS_MAIN(TestModelImport)
#include "test_model_import.moc"
