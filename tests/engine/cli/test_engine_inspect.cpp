// `thresher-engine inspect` on the import fixtures of tests/engine/config/data, as a user runs it:
// the table and --json name the file's layers and locations, the notes go to stderr, a refusal
// exits 1 with the importer's message; and imported DL4J/Keras files train on Fashion-MNIST.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <QTemporaryDir>

#include "engine_process.h"

namespace {

QString fixture(const QString& name) { return source_dir() + "/tests/engine/config/data/" + name; }

}  // namespace

class TestEngineInspect : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void table();
    void json();
    void refusal();
    void imported_models_train_data();
    void imported_models_train();
    void schedule_shown_and_trained();
    void swish_gelu_prelu_shown_data();
    void swish_gelu_prelu_shown();
    void trained_model_file();
};

void TestEngineInspect::table() {
    const auto r = run_engine({"inspect", fixture("dl4j_0.9.1_mlp_wrapped.json")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    for (const char* want : {"443610 parameters", "confs[0] dense \"layer0\"", "dense 500 relu", "retain 0.5",
                             "output 10 softmax loss negativeloglikelihood", "\"learning_rate\":0.006"})
        QVERIFY2(r.stdout_text.contains(want), qPrintable(QString(want) + " not in:\n" + r.stdout_text));
}

void TestEngineInspect::json() {
    const auto r = run_engine({"inspect", "--json", fixture("keras3_cnn_compiled_logits.json")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    const auto doc = QJsonDocument::fromJson(r.stdout_text.toUtf8());
    QVERIFY2(doc.isObject(), qPrintable(r.stdout_text));
    const auto o = doc.object();
    QCOMPARE(o["format"].toString(), QString("keras"));
    QCOMPARE(o["params"].toInteger(), 34826);
    QCOMPARE(o["loss"].toString(), QString("mcxent"));
    QCOMPARE(o["task"].toString(), QString("classification"));
    QCOMPARE(o["updater"].toObject()["learning_rate"].toDouble(), 0.001);
    const auto layers = o["layers"].toArray();
    QCOMPARE(layers.size(), 6);
    QCOMPARE(layers[5].toObject()["file_location"].toString(), QString("config.layers[7]"));
    QCOMPARE(layers[5].toObject()["file_layer"].toString(), QString("Dense \"dense\""));
    QCOMPARE(layers[2].toObject()["output_shape"].toString(), QString("64x11x11"));
    // The notes are in the JSON and, one per line, on stderr.
    QVERIFY(o["notes"].toArray().size() >= 2);
    QVERIFY2(r.stderr_text.contains("keras3_cnn_compiled_logits.json: config.layers[7] (Dense \"dense\"): from_logits"),
             qPrintable(r.stderr_text));
}

void TestEngineInspect::refusal() {
    const auto r = run_engine({"inspect", fixture("keras2_imdb_embedding_lstm.json")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.stderr_text.contains("keras2_imdb_embedding_lstm.json: config.layers[0] (Embedding \"embedding_1\")") &&
                 r.stderr_text.contains("has no fixed number of steps"),
             qPrintable(r.stderr_text));
    QVERIFY2(r.stdout_text.isEmpty(), qPrintable(r.stdout_text));
}

void TestEngineInspect::swish_gelu_prelu_shown_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QStringList>("lines");
    QTest::newRow("keras") << "keras2_swish_gelu_prelu.json"
                           << QStringList{"config.layers[2] PReLU \"prelu\"", "prelu 4 alphas shared height", "dense 5 swish", "dense 4 gelu "};
    QTest::newRow("dl4j") << "dl4j_1.0.0_swish_gelu_prelu.json"
                          << QStringList{"confs[1] PReLULayer \"prelu\"", "prelu 4 alphas shared height", "dense 5 swish", "dense 4 gelu_sigmoid"};
}

// Issue 13 class 6: swish, GELU (each file's own form) and PReLU as Thresher will train them.
void TestEngineInspect::swish_gelu_prelu_shown() {
    QFETCH(QString, file);
    QFETCH(QStringList, lines);
    const auto r = run_engine({"inspect", fixture(file)});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    for (const auto& want : lines) QVERIFY2(r.stdout_text.contains(want), qPrintable(want + " not in:\n" + r.stdout_text));
}

void TestEngineInspect::imported_models_train_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("dl4j 0.9.1 wrapped MLP") << "dl4j_0.9.1_mlp_wrapped.json";
    QTest::newRow("dl4j 0.8.0 wrapped LeNet") << "dl4j_0.8.0_lenet_wrapped.json";
    QTest::newRow("keras 1 CNN") << "keras1_mnist_cnn.json";
    QTest::newRow("keras 3 compile_config") << "keras3_cnn_compiled_logits.json";
    QTest::newRow("tfjs training_config") << "tfjs_keras2_mlp_sgd.json";
    QTest::newRow("dl4j 0.9.1 lrPolicy Step") << "dl4j_0.9.1_mlp_step_policy.json";
}

void TestEngineInspect::imported_models_train() {
    QFETCH(QString, file);
    const auto r = run_engine({"train", "--model", fixture(file), "--data", "fashion-mnist", "--limit", "256",
                               "--epochs", "1", "--batch", "64", "--threads", "2"});
    check_finished_ok(r, 0);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(r.of("epoch_end").size(), 1);
}

// A Keras 3 SGD(ExponentialDecay(0.1, decay_steps 2, rate 0.5, staircase)): inspect names the
// schedule, and training's iteration events carry 0.1, 0.1, 0.05, 0.05 (4 batches of 64).
void TestEngineInspect::schedule_shown_and_trained() {
    const auto file = fixture("keras3_mlp_exponential_decay.json");
    const auto i = run_engine({"inspect", file});
    QVERIFY2(i.exit_code == 0, qPrintable(i.summary()));
    QVERIFY2(i.stdout_text.contains("learning-rate schedule: exponential by iteration: 0.1·0.5^floor(i/2)"), qPrintable(i.stdout_text));
    const auto r = run_engine({"train", "--model", file, "--data", "fashion-mnist", "--limit", "256", "--epochs", "1",
                               "--batch", "64", "--threads", "2"});
    check_finished_ok(r, 0);
    if (QTest::currentTestFailed()) return;
    const auto its = r.of("iteration");
    QCOMPARE(its.size(), 4);
    const double want[] = {0.1, 0.1, 0.05, 0.05};
    for (int k = 0; k < 4; ++k) QCOMPARE(its[k]["lr"].toDouble(), want[k]);
}

// A trained .thr (the two-input template): inspect shows both inputs, and the weights it holds.
// (It used to read the binary file as JSON.)
void TestEngineInspect::trained_model_file() {
    QTemporaryDir dir;
    const QString thr = dir.filePath("two_input.thr");
    const auto r = run_engine({"train", "--model", source_dir() + "/resources/models/two_input.json", "--data", "fashion-mnist",
                               "--limit", "128", "--epochs", "1", "--batch", "64", "--threads", "2", "--save", thr});
    check_finished_ok(r, 0);
    if (QTest::currentTestFailed()) return;
    const auto i = run_engine({"inspect", "--json", thr});
    QVERIFY2(i.exit_code == 0, qPrintable(i.summary()));
    QCOMPARE(i.events[0]["input"].toString(), QString("top 1x14x28, bottom 1x14x28"));
    QCOMPARE(i.events[0]["params"].toInteger(), 418836);
    QVERIFY(i.events[0]["weights"].toBool());
}

QTEST_GUILESS_MAIN(TestEngineInspect)
#include "test_engine_inspect.moc"
