// thresher-engine as a process: bad input of every kind gives one clear message naming the file
// and place, a non-zero exit and nothing but contract events on stdout; a small run trains,
// saves, evaluates, predicts and compares; a resumed run repeats the uninterrupted one exactly.
#include <QtTest>

#include <QJsonDocument>

#include <QDataStream>
#include <QFile>
#include <QJsonArray>
#include <QTemporaryDir>

#include "engine_process.h"

namespace {

// An IDX file: magic 0 0 0x08 ndims, big-endian dims, bytes.
QByteArray idx(const QList<quint32>& dims, const QByteArray& data) {
    QByteArray out;
    QDataStream s(&out, QIODevice::WriteOnly);
    s.setByteOrder(QDataStream::BigEndian);
    s << quint8(0) << quint8(0) << quint8(0x08) << quint8(dims.size());
    for (auto d : dims) s << d;
    out.append(data);
    return out;
}

void write(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

const char* kTinyModel = R"({"name":"tiny","input":{"channels":1,"height":4,"width":4},
  "updater":{"type":"nesterovs","learning_rate":0.05,"momentum":0.9},
  "layers":[{"type":"convolution","filters":2,"kernel":2,"activation":"relu"},
            {"type":"dropout","retain":0.8},{"type":"dense","units":8,"activation":"tanh"},
            {"type":"output","units":3}]})";

}  // namespace

class TestEngineCli : public QObject {
    Q_OBJECT
    void write_sequence_folder();

private Q_SLOTS:
    void initTestCase();
    void devices();
    void bad_input_data();
    void bad_input();
    void train_save_evaluate_predict_compare();
    void resume_matches_uninterrupted_run();
    void normalisation_travels_with_the_model();
    void several_workers_data();
    void several_workers();
    void a_device_per_worker();
    void imported_model_trains_data();
    void imported_model_trains();
    void sequence_folder_trains();
    void open_steps_given_on_the_command_line();
    void text_corpus_trains_with_its_vocabulary();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    // A folder of IDX files: 4x4 images of three classes (bright row 0, 1 or 2), 90 train, 30 test.
    void write_idx_folder(const QString& folder);
    QTemporaryDir dir_;
};

void TestEngineCli::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFile::exists(engine_binary()), qPrintable(engine_binary()));
    write(path("tiny.json"), kTinyModel);
    QDir().mkpath(path("idx"));
    write_idx_folder(path("idx"));
}

void TestEngineCli::write_idx_folder(const QString& folder) {
    for (const auto& [prefix, n] : {std::pair{QString("train"), 90}, std::pair{QString("t10k"), 30}}) {
        QByteArray images, labels;
        for (int i = 0; i < n; ++i) {
            const int c = i % 3;
            for (int p = 0; p < 16; ++p) images.append(char(p / 4 == c ? 200 + (i * 7 + p) % 50 : (i * 13 + p) % 40));
            labels.append(char(c));
        }
        write(folder + "/" + prefix + "-images-idx3-ubyte", idx({quint32(n), 4, 4}, images));
        write(folder + "/" + prefix + "-labels-idx1-ubyte", idx({quint32(n)}, labels));
    }
}

void TestEngineCli::devices() {
    const auto r = run_engine({"devices"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    QVERIFY(!r.events.isEmpty());
    QCOMPARE(r.events.first().value("device").toString(), QString("cpu"));
}

void TestEngineCli::bad_input_data() {
    QTest::addColumn<QString>("setup");  // which broken input to create
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("config: kernel too large") << "bad-kernel" << QStringList{"bad-kernel.json", "layers[0] (convolution)", "does not fit"};
    QTest::newRow("config: invalid JSON") << "bad-json" << QStringList{"bad-json.json:2:", "invalid JSON"};
    // 400 KB of '[': refused from the text before anything recurses (it was a stack overflow).
    QTest::newRow("config: 400 KB of nested arrays") << "deep-json" << QStringList{"deep.json:1:73:", "nested deeper than 64 levels"};
    QTest::newRow("data: missing folder") << "missing-data" << QStringList{"no-such-folder"};
    QTest::newRow("data: truncated IDX") << "truncated" << QStringList{"train-images-idx3-ubyte", "truncated"};
    QTest::newRow("data: IDX header of 2^31 elements") << "huge-header" << QStringList{"train-images-idx3-ubyte", "declares 2147483648 data bytes"};
    QTest::newRow("data: wrong magic") << "magic" << QStringList{"train-images-idx3-ubyte", "magic"};
    QTest::newRow("data: label count != image count") << "count" << QStringList{"train-labels-idx1-ubyte", "train-images-idx3-ubyte"};
    QTest::newRow("data: CSV non-numeric cell") << "csv" << QStringList{"bad.csv", "line 3", "abc"};
    QTest::newRow("model and data disagree") << "mismatch" << QStringList{"features", "tiny", "1x4x4"};
    QTest::newRow("resume: corrupt model file") << "corrupt" << QStringList{"corrupt.thr", "not a Thresher model file"};
}

void TestEngineCli::bad_input() {
    QFETCH(QString, setup);
    QFETCH(QStringList, expected);
    QStringList args{"train", "--model", path("tiny.json"), "--data", path("idx"), "--epochs", "1"};
    const QString folder = path("broken-" + setup);
    QDir().mkpath(folder);
    auto use_folder = [&] { args[4] = folder; write_idx_folder(folder); };
    if (setup == "bad-kernel") {
        write(path("bad-kernel.json"), R"({"input":{"channels":1,"height":4,"width":4},"layers":[
            {"type":"convolution","filters":2,"kernel":5},{"type":"output","units":3}]})");
        args[2] = path("bad-kernel.json");
    } else if (setup == "bad-json") {
        write(path("bad-json.json"), "{\n  \"input\": {\"size\": 16},, \n}");
        args[2] = path("bad-json.json");
    } else if (setup == "deep-json") {
        write(path("deep.json"), "{\"input\":" + QByteArray(400 * 1024, '['));
        args[2] = path("deep.json");
    } else if (setup == "missing-data") {
        args[4] = path("no-such-folder");
    } else if (setup == "truncated") {
        use_folder();
        QFile f(folder + "/train-images-idx3-ubyte");
        QVERIFY(f.open(QIODevice::ReadWrite));
        f.resize(f.size() - 100);
    } else if (setup == "huge-header") {
        use_folder();
        write(folder + "/train-images-idx3-ubyte", idx({32768, 256, 256}, QByteArray(1000, 7)));
    } else if (setup == "magic") {
        use_folder();
        write(folder + "/train-images-idx3-ubyte", QByteArray("\x1f\x00\x08\x03junkjunkjunkjunk", 20));
    } else if (setup == "count") {
        use_folder();
        write(folder + "/train-labels-idx1-ubyte", idx({80}, QByteArray(80, 1)));
    } else if (setup == "csv") {
        write(path("bad.csv"), "1,2,3,0\n4,5,6,1\n7,abc,9,2\n");
        args[4] = path("bad.csv");
    } else if (setup == "mismatch") {
        write(path("good.csv"), "1,2,3,0\n4,5,6,1\n7,8,9,2\n");
        args[4] = path("good.csv");
    } else if (setup == "corrupt") {
        write(path("corrupt.thr"), "garbage that is not a model");
        args = QStringList{"train", "--resume", path("corrupt.thr"), "--data", path("idx")};
    }
    const auto r = run_engine(args);
    QVERIFY2(r.finished, "engine hung on bad input");
    QVERIFY2(r.exit_code != 0, qPrintable(r.summary()));
    QVERIFY2(r.exit_code > 0 && r.exit_code < 128, qPrintable("crashed: " + r.summary()));
    for (const auto& fragment : expected)
        QVERIFY2(r.stderr_text.contains(fragment), qPrintable("\"" + fragment + "\" not in: " + r.stderr_text));
    QVERIFY2(r.stderr_text.count("error:") == 1, qPrintable(r.stderr_text));
    QVERIFY2(r.contract_errors.isEmpty(), qPrintable(r.contract_errors.join('\n')));
    const auto finished = r.of("run_finished");
    QCOMPARE(finished.size(), 1);
    QCOMPARE(finished.first().value("status").toString(), QString("failed"));
    QCOMPARE(r.of("error").size(), 1);
}

void TestEngineCli::train_save_evaluate_predict_compare() {
    const QString model = path("trained.thr");
    const auto r = run_engine({"train", "--model", path("tiny.json"), "--data", path("idx"), "--epochs", "12",
                               "--batch", "10", "--seed", "4", "--save", model, "--threads", "1"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    QVERIFY2(r.contract_errors.isEmpty(), qPrintable(r.contract_errors.join('\n')));
    // The event contract's required fields.
    const auto started = r.of("run_started");
    QCOMPARE(started.size(), 1);
    for (const char* f : {"run", "nodes", "workers", "params", "strategy", "backend"})
        QVERIFY2(started.first().contains(f), f);
    const auto iters = r.of("iteration");
    QCOMPARE(iters.size(), 12 * 9);
    for (const char* f : {"worker", "epoch", "iter", "loss", "iter_ms", "etl_ms", "samples", "samples_per_s", "bytes_tx", "bytes_rx"})
        QVERIFY2(iters.last().contains(f), f);
    QCOMPARE(iters.last().value("samples").toInt(), 12 * 90);
    const auto epochs = r.of("epoch_end");
    QCOMPARE(epochs.size(), 12);
    for (const char* f : {"epoch", "loss", "accuracy", "f1"}) QVERIFY2(epochs.last().contains(f), f);
    QVERIFY2(epochs.last().value("accuracy").toDouble() > 0.9, qPrintable(r.summary()));
    QCOMPARE(r.of("run_finished").first().value("status").toString(), QString("ok"));
    QVERIFY(r.stderr_text.contains("actual"));  // the confusion table goes to stderr

    const auto ev = run_engine({"evaluate", "--model-file", model, "--data", path("idx")});
    QVERIFY2(ev.exit_code == 0, qPrintable(ev.summary()));
    QCOMPARE(ev.events.size(), 1);
    QCOMPARE(ev.events.first().value("accuracy").toDouble(), epochs.last().value("accuracy").toDouble());
    QCOMPARE(ev.events.first().value("count").toInt(), 30);

    const auto pr = run_engine({"predict", "--model-file", model, "--data", path("idx"), "--limit", "5"});
    QVERIFY2(pr.exit_code == 0, qPrintable(pr.summary()));
    QCOMPARE(pr.events.size(), 5);
    for (int i = 0; i < 5; ++i) {
        const auto o = pr.events[i];
        QCOMPARE(o.value("index").toInt(), i);
        const auto probs = o.value("probabilities").toArray();
        QCOMPARE(probs.size(), 3);
        double sum = 0, best = -1;
        int arg = -1;
        for (int k = 0; k < 3; ++k) {
            sum += probs[k].toDouble();
            if (probs[k].toDouble() > best) best = probs[k].toDouble(), arg = k;
        }
        QVERIFY(std::abs(sum - 1.0) < 1e-4);
        QCOMPARE(o.value("class").toInt(), arg);
    }

    const auto same = run_engine({"compare", model, model, "--tolerance", "0"});
    QVERIFY2(same.exit_code == 0, qPrintable(same.summary()));
    QCOMPARE(same.events.first().value("max_abs_diff").toDouble(), 0.0);
    const QString other = path("other.thr");
    QVERIFY(run_engine({"train", "--model", path("tiny.json"), "--data", path("idx"), "--epochs", "1", "--seed", "5",
                        "--save", other}).exit_code == 0);
    const auto differ = run_engine({"compare", model, other, "--tolerance", "1e-5"});
    QCOMPARE(differ.exit_code, 1);
    QVERIFY(differ.events.first().value("max_abs_diff").toDouble() > 1e-5);
}

void TestEngineCli::resume_matches_uninterrupted_run() {
    const QStringList common{"--model", path("tiny.json"), "--data", path("idx"), "--batch", "16", "--seed", "9", "--threads", "1"};
    const auto full = run_engine(QStringList{"train", "--epochs", "3", "--save", path("full.thr")} + common);
    QVERIFY2(full.exit_code == 0, qPrintable(full.summary()));
    const auto first = run_engine(QStringList{"train", "--epochs", "1", "--save", path("half.thr")} + common);
    QVERIFY2(first.exit_code == 0, qPrintable(first.summary()));
    const auto rest = run_engine({"train", "--resume", path("half.thr"), "--data", path("idx"), "--epochs", "3",
                                  "--batch", "16", "--threads", "1", "--save", path("resumed.thr")});
    QVERIFY2(rest.exit_code == 0, qPrintable(rest.summary()));

    QList<QJsonObject> stitched = first.of("iteration") + rest.of("iteration");
    const auto expected = full.of("iteration");
    QCOMPARE(stitched.size(), expected.size());
    for (int i = 0; i < expected.size(); ++i) {
        QCOMPARE(stitched[i].value("iter").toInt(), expected[i].value("iter").toInt());
        QCOMPARE(stitched[i].value("loss").toDouble(), expected[i].value("loss").toDouble());
    }
    const auto cmp = run_engine({"compare", path("full.thr"), path("resumed.thr"), "--tolerance", "0"});
    QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
}

void TestEngineCli::normalisation_travels_with_the_model() {
    // Features around 1000 with spreads of 50: hopeless raw, easy once standardised.
    QByteArray csv = "f0,f1,f2,label\n";
    for (int i = 0; i < 120; ++i) {
        const int c = i % 3;
        for (int j = 0; j < 3; ++j) csv += QByteArray::number(1000 + 50 * (j == c ? 1 : -1) + (i * 37 % 17) - 8) + ",";
        csv += QByteArray::number(c) + "\n";
    }
    write(path("scaled.csv"), csv);
    write(path("csv-model.json"), R"({"input":{"size":3},"updater":{"type":"adam","learning_rate":0.05},
        "layers":[{"type":"dense","units":8,"activation":"tanh"},{"type":"output","units":3}]})");
    const auto r = run_engine({"train", "--model", path("csv-model.json"), "--data", path("scaled.csv"), "--epochs", "15",
                               "--batch", "12", "--normalize", "standardize", "--save", path("scaled.thr"), "--threads", "1"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    const double trained = r.of("epoch_end").last().value("accuracy").toDouble();
    QVERIFY2(trained > 0.95, qPrintable(r.summary()));
    const auto ev = run_engine({"evaluate", "--model-file", path("scaled.thr"), "--data", path("scaled.csv")});
    QVERIFY2(ev.exit_code == 0, qPrintable(ev.summary()));
    QCOMPARE(ev.events.first().value("accuracy").toDouble(), trained);
    QVERIFY(!r.stderr_text.contains("--test-fraction"));
    // --test-fraction only splits image folders and text files: with a CSV it says so.
    const auto split = run_engine({"train", "--model", path("csv-model.json"), "--data", path("scaled.csv"), "--epochs", "1",
                                   "--batch", "12", "--test-fraction", "0.3", "--threads", "1"});
    QVERIFY2(split.exit_code == 0, qPrintable(split.summary()));
    QVERIFY2(split.stderr_text.contains("--test-fraction splits image folders and text files") &&
                 split.stderr_text.contains("scaled.csv is a CSV, read whole with no test split"),
             qPrintable(split.stderr_text));
}

// --device lists one device per worker (here the CPU twice: this machine may have no GPU); a list
// that fits neither one device nor one per worker is refused before anything runs.
void TestEngineCli::a_device_per_worker() {
    const QStringList base{"train", "--model", path("tiny.json"), "--data", path("idx"), "--epochs", "1", "--batch", "8",
                           "--workers-per-node", "2", "--strategy", "parameter-averaging", "--threads", "1"};
    const auto r = run_engine(base + QStringList{"--device", "cpu, cpu"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    QCOMPARE(r.of("run_started").first().value("devices").toArray(), (QJsonArray{"cpu", "cpu"}));
    const auto bad = run_engine(base + QStringList{"--device", "cpu,cpu,cpu"});
    QVERIFY2(bad.exit_code != 0, qPrintable(bad.summary()));
    QVERIFY2(bad.stderr_text.contains("--device \"cpu,cpu,cpu\" lists 3 devices for 2 worker(s) on this node"),
             qPrintable(bad.stderr_text));
    QVERIFY2(bad.of("iteration").isEmpty(), "a refused device list trained");
}

void TestEngineCli::several_workers_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QStringList>("fields");  // strategy-specific iteration fields
    QTest::newRow("gradient sharing") << "gradient-sharing" << QStringList{"encode_ms", "threshold", "density"};
    QTest::newRow("parameter averaging") << "parameter-averaging" << QStringList{};
}

void TestEngineCli::several_workers() {
    QFETCH(QString, strategy);
    QFETCH(QStringList, fields);
    const auto r = run_engine({"train", "--model", path("tiny.json"), "--data", path("idx"), "--epochs", "3", "--batch", "8",
                               "--workers-per-node", "3", "--strategy", strategy, "--averaging-frequency", "2",
                               "--threshold", "0.01", "--threads", "1"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    QVERIFY2(r.contract_errors.isEmpty(), qPrintable(r.contract_errors.join('\n')));
    const auto started = r.of("run_started").first();
    QCOMPARE(started.value("workers").toInt(), 3);
    QCOMPARE(started.value("strategy").toString(), strategy);
    QSet<int> workers;
    int samples = 0;
    for (const auto& it : r.of("iteration")) {
        workers.insert(it.value("worker").toInt());
        for (const auto& f : fields) QVERIFY2(it.contains(f), qPrintable(f));
    }
    QCOMPARE(workers, (QSet<int>{0, 1, 2}));
    // 90 samples per epoch, shared by the workers without overlap: 3 epochs = 270 samples.
    for (int w = 0; w < 3; ++w) {
        int last = 0;
        for (const auto& it : r.of("iteration"))
            if (it.value("worker").toInt() == w) last = it.value("samples").toInt();
        samples += last;
    }
    QCOMPARE(samples, 270);
    QCOMPARE(r.of("epoch_end").size(), 3);
    QCOMPARE(r.of("run_finished").first().value("status").toString(), QString("ok"));
}

// `--model` takes DL4J and Keras JSON as it takes Thresher's: the fixtures of the import tests
// train on real Fashion-MNIST.
void TestEngineCli::imported_model_trains_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("params");
    QTest::newRow("dl4j current LeNet") << "dl4j_lenet.json" << 431080;
    QTest::newRow("dl4j 0.x MLP") << "dl4j_mlp_legacy.json" << 443610;
    QTest::newRow("keras 3 MLP") << "keras3_mlp.json" << 407050;
}

void TestEngineCli::imported_model_trains() {
    QFETCH(QString, file);
    QFETCH(int, params);
    if (!QFile::exists(qEnvironmentVariable("THRESHER_FASHION_MNIST") + "/train-images-idx3-ubyte.gz"))
        QSKIP("Fashion-MNIST is not installed");
    const QString model = source_dir() + "/tests/engine/config/data/" + file;
    const auto r = run_engine({"train", "--model", model, "--data", "fashion-mnist", "--limit", "512", "--epochs", "1",
                               "--seed", "1", "--threads", "2"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    QVERIFY2(r.contract_errors.isEmpty(), qPrintable(r.contract_errors.join('\n')));
    QCOMPARE(r.of("run_started").first().value("params").toInt(), params);
    QVERIFY(!r.of("iteration").isEmpty());
    QCOMPARE(r.of("epoch_end").size(), 1);
    QCOMPARE(r.of("run_finished").first().value("status").toString(), QString("ok"));
}

// A folder of sequence CSVs (features/ + labels/, train/ and test/): lengths 3 to 8 of two
// features, the class whether the first feature rises or falls; an LSTM learns it.
// seqs/{train,test}/{features,labels}: 120 and 40 sequences of 3..8 steps x 2 features; the
// label is whether the first feature rises or falls.
void TestEngineCli::write_sequence_folder() {
    for (const char* part : {"train", "test"}) {
        QDir().mkpath(path(QString("seqs/%1/features").arg(part)));
        QDir().mkpath(path(QString("seqs/%1/labels").arg(part)));
        const int n = part == QString("train") ? 120 : 40;
        for (int i = 0; i < n; ++i) {
            const int len = 3 + (i * 7) % 6, label = (i / 2) % 2;
            QByteArray f;
            for (int t = 0; t < len; ++t) {
                const double v = label ? double(t) / len : 1.0 - double(t) / len;
                f += QByteArray::number(v, 'f', 3) + "," + QByteArray::number(((i * 13 + t * 7) % 10) / 10.0) + "\n";
            }
            write(path(QString("seqs/%1/features/%2.csv").arg(part).arg(i)), f);
            write(path(QString("seqs/%1/labels/%2.csv").arg(part).arg(i)), QByteArray::number(label) + "\n");
        }
    }
}

// A Keras model saved with Input(shape=(None, 2)) trains with --steps, the longest sequence; without
// them it is refused saying so. inspect and evaluate take --steps too.
void TestEngineCli::open_steps_given_on_the_command_line() {
    write_sequence_folder();
    write(path("open.json"), R"({"class_name":"Sequential","config":{"name":"open","layers":[
      {"class_name":"InputLayer","config":{"name":"in","batch_input_shape":[null,null,2]}},
      {"class_name":"LSTM","config":{"name":"lstm","units":12,"recurrent_activation":"sigmoid"}},
      {"class_name":"Dense","config":{"name":"out","units":2,"activation":"softmax"}}]},
      "compile_config":{"optimizer":{"class_name":"Adam","config":{"learning_rate":0.02}},"loss":"categorical_crossentropy"}})");
    const auto refused = run_engine({"train", "--model", path("open.json"), "--data", path("seqs"), "--epochs", "1"});
    QCOMPARE(refused.exit_code, 1);
    QVERIFY2(refused.stderr_text.contains("[null,null,2] has no fixed number of steps") && refused.stderr_text.contains("--steps N"),
             qPrintable(refused.summary()));
    const auto shown = run_engine({"inspect", path("open.json"), "--steps", "8", "--json"});
    QVERIFY2(shown.exit_code == 0, qPrintable(shown.summary()));
    QVERIFY2(shown.stdout_text.contains("8 steps x 2"), qPrintable(shown.summary()));
    const auto r = run_engine({"train", "--model", path("open.json"), "--steps", "8", "--data", path("seqs"), "--epochs", "8",
                               "--batch", "16", "--seed", "3", "--threads", "1", "--save", path("open.thr")});
    check_finished_ok(r, 0);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(r.of("epoch_end").last().value("accuracy").toDouble() > 0.9, qPrintable(r.summary()));
    // Fewer steps than the data's longest sequence: the data reader says where.
    const auto short_steps = run_engine({"train", "--model", path("open.json"), "--steps", "4", "--data", path("seqs"), "--epochs", "1"});
    QCOMPARE(short_steps.exit_code, 1);
    QVERIFY2(short_steps.stderr_text.contains("more than the 4"), qPrintable(short_steps.summary()));
    // A saved model fixes its steps: --steps for it must agree.
    const auto ev = run_engine({"evaluate", "--model-file", path("open.thr"), "--data", path("seqs"), "--steps", "8"});
    QVERIFY2(ev.exit_code == 0, qPrintable(ev.summary()));
    QCOMPARE(ev.events.first().value("count").toInt(), 40);
    const auto mismatch = run_engine({"evaluate", "--model-file", path("open.thr"), "--data", path("seqs"), "--steps", "5"});
    QCOMPARE(mismatch.exit_code, 1);
    QVERIFY2(mismatch.stderr_text.contains("fixes its input at 8 time steps; the 5 given (--steps) differ"), qPrintable(mismatch.summary()));
}

void TestEngineCli::sequence_folder_trains() {
    write_sequence_folder();
    write(path("seq.json"), R"({"name":"seq","input":{"steps":8,"features":2},"updater":{"type":"adam","learning_rate":0.02},
      "layers":[{"type":"lstm","units":12},{"type":"output","units":2,"activation":"softmax","loss":"mcxent"}]})");
    const auto r = run_engine({"train", "--model", path("seq.json"), "--data", path("seqs"), "--epochs", "8", "--batch", "16",
                               "--seed", "3", "--threads", "1", "--save", path("seq.thr")});
    check_finished_ok(r, 0);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(r.of("epoch_end").last().value("accuracy").toDouble() > 0.9, qPrintable(r.summary()));
    const auto ev = run_engine({"evaluate", "--model-file", path("seq.thr"), "--data", path("seqs")});
    QVERIFY2(ev.exit_code == 0, qPrintable(ev.summary()));
    QCOMPARE(ev.events.first().value("count").toInt(), 40);
    // --normalize on sequences: fitted per feature over the valid steps, saved with the model and
    // applied again by evaluate (the same accuracy as the run's last epoch).
    const auto norm = run_engine({"train", "--model", path("seq.json"), "--data", path("seqs"), "--epochs", "8", "--batch", "16",
                                  "--seed", "3", "--threads", "1", "--normalize", "standardize", "--save", path("seqn.thr")});
    check_finished_ok(norm, 0);
    if (QTest::currentTestFailed()) return;
    const double trained = norm.of("epoch_end").last().value("accuracy").toDouble();
    QVERIFY2(trained > 0.9, qPrintable(norm.summary()));
    const auto evn = run_engine({"evaluate", "--model-file", path("seqn.thr"), "--data", path("seqs")});
    QVERIFY2(evn.exit_code == 0, qPrintable(evn.summary()));
    QCOMPARE(evn.events.first().value("accuracy").toDouble(), trained);
    // Token ids into an embedding are not normalised.
    write(path("ids.txt"), "abcabcabcabcabcabcabcabcabcabcabcabc\n");
    write(path("ids.json"), R"({"name":"ids","input":{"steps":6,"features":1},"layers":[{"type":"embedding","name":"emb",
      "vocabulary":4,"units":3},{"type":"lstm","units":4,"return_sequences":true},{"type":"output","units":4,"loss":"mcxent"}]})");
    const auto ids = run_engine({"train", "--model", path("ids.json"), "--data", path("ids.txt"), "--normalize", "minmax"});
    QCOMPARE(ids.exit_code, 1);
    QVERIFY2(ids.stderr_text.contains("--normalize minmax: the model reads token ids (embedding \"emb\"); ids are not normalised"),
             qPrintable(ids.summary()));
    // A model of 4 steps refuses the 8-step sequences, naming the file and line, unless asked to cut them.
    write(path("seq4.json"), R"({"name":"seq4","input":{"steps":4,"features":2},
      "layers":[{"type":"lstm","units":4},{"type":"output","units":2,"activation":"softmax","loss":"mcxent"}]})");
    const auto refused = run_engine({"train", "--model", path("seq4.json"), "--data", path("seqs"), "--epochs", "1"});
    QCOMPARE(refused.exit_code, 1);
    QVERIFY2(refused.stderr_text.contains("seqs/train/features/2.csv: line 5, column 1: the sequence has 5 steps, more than the 4"),
             qPrintable(refused.summary()));
    const auto cut = run_engine({"train", "--model", path("seq4.json"), "--data", path("seqs"), "--epochs", "1",
                                 "--truncate-sequences", "--sequence-align", "end"});
    QVERIFY2(cut.exit_code == 0, qPrintable(cut.summary()));
    // The model's 2 outputs are the classes: a label 2 is refused where it is.
    QDir().mkpath(path("seqs3/features"));
    QDir().mkpath(path("seqs3/labels"));
    write(path("seqs3/features/0.csv"), "1,2\n3,4\n");
    write(path("seqs3/labels/0.csv"), "2\n");
    const auto label = run_engine({"train", "--model", path("seq.json"), "--data", path("seqs3"), "--epochs", "1"});
    QCOMPARE(label.exit_code, 1);
    QVERIFY2(label.stderr_text.contains("seqs3/labels/0.csv: line 1, column 1: class label 2 is out of range for 2 classes"),
             qPrintable(label.summary()));
}

// A .txt corpus: windows of the model's steps, per-step targets; the vocabulary is saved with the
// model, evaluate scores every labelled step of the test tail, a character the model never saw is
// refused by line and column; predict prints each step's next character, and samples text.
void TestEngineCli::text_corpus_trains_with_its_vocabulary() {
    QByteArray text;
    for (int i = 0; i < 60; ++i) text += "abcd\n";  // 300 characters, V = 5
    write(path("abcd.txt"), text);
    write(path("chars.json"), R"({"name":"chars","input":{"steps":10,"features":5},"updater":{"type":"adam","learning_rate":0.05},
      "layers":[{"type":"lstm","units":16,"return_sequences":true},{"type":"output","units":5,"activation":"softmax","loss":"mcxent"}]})");
    const auto r = run_engine({"train", "--model", path("chars.json"), "--data", path("abcd.txt"), "--epochs", "15", "--batch", "8",
                               "--seed", "1", "--threads", "1", "--save", path("chars.thr")});
    check_finished_ok(r, 0);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(r.of("epoch_end").last().value("accuracy").toDouble() > 0.95, qPrintable(r.summary()));
    QFile f(path("chars.thr"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains(R"("vocabulary":["\n","a","b","c","d"])"));
    const auto ev = run_engine({"evaluate", "--model-file", path("chars.thr"), "--data", path("abcd.txt")});
    QVERIFY2(ev.exit_code == 0, qPrintable(ev.summary()));
    QCOMPARE(ev.events.first().value("count").toInt(), 3);  // windows of the 30 test characters: 10, 10, 9 steps
    int steps = 0;  // the confusion table counts steps: the 29 test characters with a next one
    for (const auto row : ev.events.first().value("confusion").toArray())
        for (const auto cell : row.toArray()) steps += cell.toInt();
    QCOMPARE(steps, 29);
    write(path("other.txt"), "abcd\nabxd\n");
    const auto bad = run_engine({"evaluate", "--model-file", path("chars.thr"), "--data", path("other.txt")});
    QCOMPARE(bad.exit_code, 1);
    QVERIFY2(bad.stderr_text.contains("other.txt: line 2, column 3: character \"x\" (U+0078) is not in the model's vocabulary of 5"),
             qPrintable(bad.summary()));
    // predict: per valid step, the class and the character it stands for; the text is what
    // follows each step of the window (the corpus repeats, so a trained model knows all of it).
    const auto pr = run_engine({"predict", "--model-file", path("chars.thr"), "--data", path("abcd.txt")});
    QVERIFY2(pr.exit_code == 0, qPrintable(pr.summary()));
    const auto lines = pr.stdout_text.trimmed().split('\n');
    QCOMPARE(lines.size(), 3);
    const auto first = QJsonDocument::fromJson(lines[0].toUtf8()).object();
    QCOMPARE(first.value("steps").toInt(), 10);
    QCOMPARE(first.value("classes").toArray().size(), 10);
    QCOMPARE(first.value("text").toString(), QString("bcd\nabcd\na"));
    QCOMPARE(first.value("probabilities").toArray().first().toArray().size(), 5);
    QCOMPARE(QJsonDocument::fromJson(lines[2].toUtf8()).object().value("steps").toInt(), 9);
    // predict --sample: text drawn from the model; greedy from "abcd" continues the pattern.
    // (6 characters: the 10-step window never slides, so each context starts as training's did.)
    const auto sample = run_engine({"predict", "--model-file", path("chars.thr"), "--sample", "6", "--prime", "abcd",
                                    "--temperature", "0"});
    QVERIFY2(sample.exit_code == 0, qPrintable(sample.summary()));
    const auto drawn = QJsonDocument::fromJson(sample.stdout_text.trimmed().toUtf8()).object();
    QCOMPARE(drawn.value("event").toString(), QString("sample"));
    QCOMPARE(drawn.value("text").toString(), QString("\nabcd\n"));
    const auto outside = run_engine({"predict", "--model-file", path("chars.thr"), "--sample", "5", "--prime", "abx"});
    QCOMPARE(outside.exit_code, 1);
    QVERIFY2(outside.stderr_text.contains("character 3 of the prime (\"x\", U+0078) is not in the model's vocabulary of 5"),
             qPrintable(outside.summary()));
}

QTEST_GUILESS_MAIN(TestEngineCli)
#include "test_engine_cli.moc"
