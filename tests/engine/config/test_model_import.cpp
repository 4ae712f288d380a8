// Model import: DL4J MultiLayerConfiguration JSON (current "@class" and older name-keyed forms) and
// Keras Sequential JSON (Keras 2 and 3) become the configs we expect, down to shapes, parameter
// counts, updater and init; the LeNet imports match resources/models/lenet.json; format detection
// goes by content; and what cannot be imported is refused naming the file, the layer and why.
// The fixtures in data/ follow the field layout of real DL4J toJson() and Keras to_json() output.
#include <QtTest>

#include "config/model_format.h"
#include "core/error.h"

using namespace thresher;

namespace {

QString source_dir() { return qEnvironmentVariable("THRESHER_SOURCE_DIR", QStringLiteral(THRESHER_SOURCE_DIR_DEFAULT)); }
std::string fixture(const QString& name) { return (source_dir() + "/tests/engine/config/data/" + name).toStdString(); }

QString types(const nn::ModelConfig& m) {
    QStringList t;
    for (const auto& l : m.layers) t << QString::fromUtf8(nn::to_string(l.type).data(), int(nn::to_string(l.type).size()));
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
};

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

    nn::ImportResult r;
    try {
        r = nn::import_model_file(fixture(file));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    const auto& m = r.model;
    const QString all_notes = joined(r.notes);
    QCOMPARE(QString::fromUtf8(nn::to_string(r.format).data()), format);
    QCOMPARE(types(m), layers);
    QCOMPARE(QString::fromStdString(m.input.str()), input);
    QCOMPARE(qulonglong(m.param_count()), params);
    const auto u = m.effective_updater(0);
    QCOMPARE(QString::fromUtf8(nn::to_string(u.kind).data()), updater);
    QCOMPARE(u.learning_rate, float(lr));
    if (u.kind == nn::UpdaterKind::Nesterovs) QCOMPARE(u.momentum, float(momentum));
    QCOMPARE(QString::fromUtf8(nn::to_string(m.effective_weight_init(0)).data()), init);
    QCOMPARE(u.l2, float(l2));
    QCOMPARE(QString::fromUtf8(nn::to_string(m.layers.back().loss).data()), loss);
    for (const auto& n : notes) QVERIFY2(all_notes.contains(n), qPrintable(n + " not in:\n" + all_notes));
    // The fixtures follow real output: every field they carry must be known, none "ignored".
    QVERIFY2(!all_notes.contains("ignored field"), qPrintable(all_notes));
    // What the importer returns is a Thresher config like any other: it round-trips.
    const auto again = nn::ModelConfig::from_json(m.to_json(), "round trip");
    QCOMPARE(QString::fromStdString(again.to_json().dump()), QString::fromStdString(m.to_json().dump()));
    // ModelConfig::load (what `thresher-engine train --model` uses) reads the same file the same way.
    QCOMPARE(nn::ModelConfig::load(fixture(file)).param_count(), m.param_count());
}

void TestModelImport::lenet_matches_resources_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("dl4j current") << "dl4j_lenet.json";
    QTest::newRow("dl4j 0.x") << "dl4j_lenet_legacy.json";
    QTest::newRow("keras 2") << "keras2_lenet.json";
}

void TestModelImport::lenet_matches_resources() {
    QFETCH(QString, file);
    const auto ours = nn::ModelConfig::load((source_dir() + "/resources/models/lenet.json").toStdString());
    const auto imported = nn::ModelConfig::load(fixture(file));
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
    const auto mlp = nn::import_model_file(fixture("dl4j_mlp_legacy.json")).model;
    QCOMPARE(mlp.layers[1].retain, 0.8f);
    QCOMPARE(QString::fromStdString(mlp.layers[2].name), QString("layer1"));
    QCOMPARE(mlp.seed, std::uint64_t(123));
    // Keras: rate 0.5 is the drop probability; Activation("softmax") folded into the last Dense.
    const auto k3 = nn::import_model_file(fixture("keras3_mlp.json")).model;
    QCOMPARE(k3.layers[1].retain, 0.5f);
    QCOMPARE(k3.layers[2].activation.kind, nn::Activation::Softmax);
    QCOMPARE(k3.effective_updater(2).l2, 0.f);  // only the first Dense had a regularizer
    QCOMPARE(k3.effective_updater(2).epsilon, 1e-7f);
    // Keras 3 CNN: "same" padding, LeakyReLU(0.1) folded across max pooling into the conv,
    // BatchNormalization's momentum/epsilon as decay/eps.
    const auto cnn = nn::import_model_file(fixture("keras3_cnn.json")).model;
    QCOMPARE(cnn.layers[0].mode, nn::ConvMode::Same);
    QCOMPARE(cnn.layers[0].out_shape, (nn::Shape{16, 28, 28}));
    QCOMPARE(cnn.layers[0].activation.kind, nn::Activation::LeakyRelu);
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
    const auto r = nn::import_model_text(text.toStdString(), "cfg.json");
    QCOMPARE(r.model.input, (nn::Shape{1, 28, 28}));
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
    QTest::newRow("dl4j learning-rate schedule")
        << dl4j({dl4j_layer("DenseLayer", R"("nin":4,"nout":3,"iupdater":{"@class":"org.nd4j.linalg.learning.config.Adam",
               "learningRate":"NaN","learningRateSchedule":{"@class":"org.nd4j.linalg.schedule.ExponentialSchedule",
               "gamma":0.96,"initialValue":0.01,"scheduleType":"EPOCH"}})"), kDl4jOutput})
        << "dense,output" << "ExponentialSchedule imported as its initial value";
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
    const auto r = nn::import_model_text(json.toStdString(), "cfg.json");
    QCOMPARE(types(r.model), layers);
    QVERIFY2(joined(r.notes).contains(note), qPrintable(joined(r.notes)));
    if (layers.startsWith("dense,")) QCOMPARE(r.model.layers[0].activation.kind != nn::Activation::Identity, true);
    if (layers.startsWith("convolution,")) QCOMPARE(r.model.layers[0].activation.kind, nn::Activation::Relu);
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
    const auto r = nn::import_model_text(json.toStdString(), "cfg.json");
    QCOMPARE(QString::fromUtf8(nn::to_string(r.format).data()), format);
    QVERIFY(r.model.param_count() > 0);
}

void TestModelImport::refused_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QStringList>("expected");  // fragments the message must contain

    auto dl4j_with = [](const QByteArray& cls, const QByteArray& fields) {
        return dl4j({dl4j_layer(cls, fields), kDl4jOutput});
    };
    QTest::newRow("dl4j LSTM") << dl4j({kDl4jDense, dl4j_layer("LSTM", R"("layerName":"lstm1","nin":3,"nout":3)"), kDl4jOutput})
        << QStringList{"confs[1] (LSTM \"lstm1\")", "LSTM is not supported"};
    QTest::newRow("dl4j 0.x GravesLSTM") << dl4j({R"({"layer":{"gravesLSTM":{"nin":4,"nout":3}}})", kDl4jOutput})
        << QStringList{"confs[0] (gravesLSTM)", "not supported"};
    QTest::newRow("dl4j ComputationGraph")
        << QByteArray(R"({"vertices":{},"networkInputs":["in"],"networkOutputs":["out"]})")
        << QStringList{"ComputationGraph", "MultiLayerConfiguration"};
    QTest::newRow("dl4j unknown activation")
        << dl4j_with("DenseLayer", R"("nin":4,"nout":3,"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationELU","alpha":1.0})")
        << QStringList{"confs[0] (DenseLayer)", "\"activationFn\"", "ELU", "not supported"};
    QTest::newRow("dl4j 0.x unknown activation")
        << dl4j({R"({"layer":{"dense":{"nin":4,"nout":3,"activationFunction":"softsign"}}})", kDl4jOutput})
        << QStringList{"confs[0] (dense)", "\"activationFunction\"", "softsign"};
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
    QTest::newRow("dl4j RnnToFeedForward") << dl4j({kDl4jDense, kDl4jOutput},
        R"("inputPreProcessors":{"1":{"@class":"org.deeplearning4j.nn.conf.preprocessor.RnnToFeedForwardPreProcessor"}})")
        << QStringList{"inputPreProcessors[1]", "RnnToFeedForwardPreProcessor is not supported"};

    QTest::newRow("keras functional Model") << keras({kKerasFlatInput, kKerasOut}, "Functional")
        << QStringList{"cfg.json: model:", "functional", "Sequential"};
    QTest::newRow("keras LSTM") << keras({kKerasFlatInput, keras_layer("LSTM", R"("name":"lstm","units":4)"), kKerasOut})
        << QStringList{"layers[1] (LSTM \"lstm\")", "LSTM is not supported"};
    QTest::newRow("keras Embedding")
        << keras({keras_layer("Embedding", R"("name":"emb","input_dim":100,"output_dim":8,"batch_input_shape":[null,6])"), kKerasOut})
        << QStringList{"layers[0] (Embedding \"emb\")", "not supported"};
    QTest::newRow("keras grouped Conv2D")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":4,"kernel_size":[3,3],"groups":2)"),
                  keras_layer("Flatten", R"("name":"f")"), kKerasOut})
        << QStringList{"layers[1] (Conv2D \"c\")", "\"groups\"", "grouped"};
    QTest::newRow("keras unknown activation")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":4,"activation":"elu")"), kKerasOut})
        << QStringList{"layers[1] (Dense \"d\")", "\"activation\"", "elu"};
    QTest::newRow("keras Dense on an image")
        << keras({kKerasInput, keras_layer("Conv2D", R"("name":"c","filters":4,"kernel_size":3)"), kKerasOut})
        << QStringList{"layers[2] (Dense \"out\")", "Flatten"};
    QTest::newRow("keras last layer not Dense")
        << keras({kKerasFlatInput, kKerasOut, keras_layer("Dropout", R"("name":"drop","rate":0.5)")})
        << QStringList{"cfg.json: model:", "last layer must be Dense"};
    QTest::newRow("keras no input shape") << keras({kKerasOut}) << QStringList{"cfg.json: model:", "input shape"};
    QTest::newRow("keras activation after batch norm")
        << keras({kKerasFlatInput, keras_layer("Dense", R"("name":"d","units":4)"),
                  keras_layer("BatchNormalization", R"("name":"bn","axis":-1)"),
                  keras_layer("Activation", R"("name":"act","activation":"relu")"), kKerasOut})
        << QStringList{"layers[3] (Activation \"act\")", "across \"bn\""};
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
        const auto r = nn::import_model_text(json.toStdString(), "cfg.json");
        QFAIL(qPrintable("imported; expected an error containing " + expected.join(" | ") + "\nnotes:\n" + joined(r.notes)));
    } catch (const ConfigError& e) {
        const QString msg = QString::fromUtf8(e.what());
        QVERIFY2(msg.startsWith("cfg.json"), qPrintable(msg));
        for (const auto& fragment : expected) QVERIFY2(msg.contains(fragment), qPrintable(fragment + " not in: " + msg));
    }
}

QTEST_APPLESS_MAIN(TestModelImport)
#include "test_model_import.moc"
