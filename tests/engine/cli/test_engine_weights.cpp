// thresher-engine with model files that carry weights (engine/config/weight_import.h), as a user
// runs it: `inspect` says the weights came with the file, `predict` on a DL4J model zip gives
// what DL4J's parameters compute (a forward pass written here over DL4J's flattened layout), and
// `train --model model.zip` starts from those parameters -- with a learning rate of 0 the saved
// model predicts exactly what the zip does, where freshly initialised weights would not. A
// damaged zip is refused with exit 1 and a message naming it. A Keras .h5 goes through
// thresher-hdf5-reader beside the engine; without one, the message says where it was looked for.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine_process.h"
#include "weight_files.h"

using nlohmann::json;

namespace {

constexpr int IN = 16, HID = 8, OUT = 3;
// DL4J's flattened order: dense W [16, 8] 'f' (W[r, o] at r + o*16), b, output W [8, 3] 'f', b.
constexpr int kW1 = 0, kB1 = IN * HID, kW2 = kB1 + HID, kB2 = kW2 + HID * OUT, kCount = kB2 + OUT;

std::vector<float> coefficients() {
    std::vector<float> p(kCount);
    for (int i = 0; i < kCount; ++i) p[static_cast<std::size_t>(i)] = 0.4f * static_cast<float>(std::sin(0.37 * i + 1.0));
    return p;
}

// LeNet's DL4J configuration cut to its last two layers: dense 16 -> 8 relu, output 8 -> 3 softmax,
// with a learning rate of 0 (DL4J allows it): training keeps the parameters as they are.
std::string mlp_config() {
    std::ifstream in((source_dir() + "/tests/engine/config/data/dl4j_lenet.json").toStdString());
    json j = json::parse(in);
    json dense = j["confs"][4], out = j["confs"][5];
    dense["layer"]["nin"] = IN;
    dense["layer"]["nout"] = HID;
    out["layer"]["nin"] = HID;
    out["layer"]["nout"] = OUT;
    for (json* c : {&dense, &out}) (*c)["layer"]["iupdater"]["learningRate"] = 0.0;
    j["confs"] = json::array({dense, out});
    j.erase("inputPreProcessors");
    return j.dump(2);
}

std::vector<float> reference(const std::vector<float>& p, const std::vector<float>& x) {
    std::vector<float> h(HID), z(OUT);
    for (int o = 0; o < HID; ++o) {
        double s = p[kB1 + o];
        for (int r = 0; r < IN; ++r) s += x[static_cast<std::size_t>(r)] * p[static_cast<std::size_t>(kW1 + r + o * IN)];
        h[static_cast<std::size_t>(o)] = static_cast<float>(std::max(s, 0.0));
    }
    double mx = -1e30, sum = 0;
    std::vector<double> e(OUT);
    for (int o = 0; o < OUT; ++o) {
        double s = p[kB2 + o];
        for (int r = 0; r < HID; ++r) s += h[static_cast<std::size_t>(r)] * p[static_cast<std::size_t>(kW2 + r + o * HID)];
        e[static_cast<std::size_t>(o)] = s;
        mx = std::max(mx, s);
    }
    for (auto& v : e) sum += (v = std::exp(v - mx));
    for (int o = 0; o < OUT; ++o) z[static_cast<std::size_t>(o)] = static_cast<float>(e[static_cast<std::size_t>(o)] / sum);
    return z;
}

// A Keras model.save("m.h5") of one Dense 16 -> 3 softmax layer, which the engine reads through
// thresher-hdf5-reader (engine/config/hdf5_file.h).
void write_keras_h5(const QString& path) {
    test_support::H5Writer w(path.toStdString());
    w.strings("/", "model_config",
              {R"({"class_name": "Sequential", "config": {"name": "tiny", "layers": [{"class_name": "Dense", "config": )"
               R"({"name": "out", "units": 3, "activation": "softmax", "use_bias": true, "batch_input_shape": [null, 16]}}]}})"},
              true);
    w.strings("/", "keras_version", {"2.4.0"}, true);
    w.group("/model_weights");
    w.strings("/model_weights", "layer_names", {"out"}, false);
    std::vector<float> kernel(IN * OUT);
    for (std::size_t i = 0; i < kernel.size(); ++i) kernel[i] = 0.01f * static_cast<float>(i);
    w.keras_layer("/model_weights/out", "out", {{"kernel", {{IN, OUT}, kernel}}, {"bias", {{OUT}, {0.1f, 0.2f, 0.3f}}}});
}

struct Ran {
    int code = -1;
    QString err;
};

// `program` with `args` and the environment changed as `env` says (an empty value: unset).
Ran run_with(const QString& program, const QStringList& args, const QList<QPair<QString, QString>>& env) {
    QProcess p;
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    for (const auto& [name, value] : env) {
        if (value.isEmpty()) e.remove(name);
        else e.insert(name, value);
    }
    p.setProcessEnvironment(e);
    p.start(program, args);
    Ran r;
    if (!p.waitForFinished(120000)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.err = QString::fromUtf8(p.readAllStandardError());
    if (p.exitStatus() == QProcess::NormalExit) r.code = p.exitCode();
    return r;
}

// predict's stdout: one {"index", "class", "probabilities"} per row, by index.
std::vector<std::vector<float>> probabilities(const EngineRun& r) {
    std::vector<std::vector<float>> rows;
    for (const auto& line : r.stdout_text.split('\n', Qt::SkipEmptyParts)) {
        const auto o = QJsonDocument::fromJson(line.toUtf8()).object();
        if (!o.contains("probabilities")) continue;
        std::vector<float> v;
        for (const auto& p : o["probabilities"].toArray()) v.push_back(static_cast<float>(p.toDouble()));
        rows.push_back(v);
    }
    return rows;
}

}  // namespace

class TestEngineWeights : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void inspectSaysWeights();
    void predictUsesDl4jParameters();
    void trainStartsFromTheZip();
    void damagedZipIsRefused();
    void normalizerIsApplied();
    void kerasH5ThroughTheReaderBesideIt();
    void damagedH5IsRefused();

private:
    QTemporaryDir dir_;
    QString zip_, csv_;
    QByteArray csv_bytes_;
};

void TestEngineWeights::initTestCase() {
    QVERIFY(dir_.isValid());
    zip_ = dir_.path() + "/mlp_model.zip";
    csv_ = dir_.path() + "/three.csv";
    csv_bytes_ = test_support::three_class_csv(48);
    QVERIFY(write_file(csv_, csv_bytes_));
    test_support::write_zip(zip_.toStdString(), {{"configuration.json", test_support::text_bytes(mlp_config())},
                                                 {"coefficients.bin", test_support::nd4j_row(coefficients(), false, false)}});
}

void TestEngineWeights::inspectSaysWeights() {
    const auto r = run_engine({"inspect", "--json", zip_});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    const auto o = QJsonDocument::fromJson(r.stdout_text.toUtf8()).object();
    QCOMPARE(o["format"].toString(), QString("dl4j"));
    QCOMPARE(o["params"].toInteger(), kCount);
    QCOMPARE(o["weights"].toBool(), true);
    QVERIFY2(r.stderr_text.contains("weights: " + QString::number(kCount) + " parameters from coefficients.bin"), qPrintable(r.stderr_text));
}

void TestEngineWeights::predictUsesDl4jParameters() {
    const auto r = run_engine({"predict", "--model-file", zip_, "--data", csv_});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    const auto got = probabilities(r);
    const auto lines = csv_bytes_.split('\n');
    QCOMPARE(got.size(), std::size_t{48});
    const auto p = coefficients();
    for (std::size_t i = 0; i < got.size(); ++i) {
        const auto cells = lines[static_cast<qsizetype>(i)].split(',');
        std::vector<float> x;
        for (int j = 0; j < IN; ++j) x.push_back(cells[j].toFloat());
        const auto want = reference(p, x);
        for (int o = 0; o < OUT; ++o)
            QVERIFY2(std::abs(got[i][static_cast<std::size_t>(o)] - want[static_cast<std::size_t>(o)]) < 1e-5f,
                     qPrintable(QString("row %1 class %2: engine %3, DL4J layout %4").arg(i).arg(o).arg(got[i][o]).arg(want[o])));
    }
}

void TestEngineWeights::trainStartsFromTheZip() {
    const QString saved = dir_.path() + "/tuned.thrm";
    const auto t = run_engine({"train", "--model", zip_, "--data", csv_, "--epochs", "1", "--batch", "16", "--save", saved});
    check_finished_ok(t, 0);
    if (QTest::currentTestFailed()) return;
    const auto a = probabilities(run_engine({"predict", "--model-file", zip_, "--data", csv_}));
    const auto b = probabilities(run_engine({"predict", "--model-file", saved, "--data", csv_}));
    QCOMPARE(a.size(), std::size_t{48});
    QCOMPARE(b.size(), a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        for (int o = 0; o < OUT; ++o) QVERIFY(std::abs(a[i][static_cast<std::size_t>(o)] - b[i][static_cast<std::size_t>(o)]) < 1e-6f);
}

void TestEngineWeights::damagedZipIsRefused() {
    QFile in(zip_);
    QVERIFY(in.open(QIODevice::ReadOnly));
    const QByteArray whole = in.readAll();
    const QString cut = dir_.path() + "/cut.zip";
    QVERIFY(write_file(cut, whole.left(whole.size() / 2)));
    const auto r = run_engine({"inspect", cut});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.stderr_text.contains(cut + ": "), qPrintable(r.stderr_text));
}

// A zip with DL4J's normalizer.bin (NormalizerStandardize, written as NormalizerSerializer does):
// predict feeds the network (x - mean) / std as DL4J would, and a model trained from the zip (at
// learning rate 0) keeps that normalisation, so it predicts the same.
void TestEngineWeights::normalizerIsApplied() {
    std::vector<float> mean(IN), stddev(IN);
    for (int j = 0; j < IN; ++j) {
        mean[static_cast<std::size_t>(j)] = 0.3f * static_cast<float>(j % 5) - 0.4f;
        stddev[static_cast<std::size_t>(j)] = 0.5f + 0.25f * static_cast<float>(j % 3);
    }
    test_support::JavaOut o;
    o.utf("NORMALIZER");
    o.be(1, 4);
    o.utf("STANDARDIZE");
    o.be(0, 1);  // fitLabel false
    for (const auto& a : {test_support::nd4j_row(mean, false, false), test_support::nd4j_row(stddev, false, false)})
        o.b.insert(o.b.end(), a.begin(), a.end());
    const QString zip = dir_.path() + "/normalised.zip";
    test_support::write_zip(zip.toStdString(), {{"configuration.json", test_support::text_bytes(mlp_config())},
                                                {"coefficients.bin", test_support::nd4j_row(coefficients(), false, false)},
                                                {"normalizer.bin", o.b}});
    const auto r = run_engine({"predict", "--model-file", zip, "--data", csv_});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    QVERIFY2(r.stderr_text.contains("normalizer.bin: NormalizerStandardize"), qPrintable(r.stderr_text));
    const auto got = probabilities(r);
    QCOMPARE(got.size(), std::size_t{48});
    const auto lines = csv_bytes_.split('\n');
    const auto p = coefficients();
    double moved = 0;  // how far the normalisation moves the outputs: the check must be able to fail
    for (std::size_t i = 0; i < got.size(); ++i) {
        const auto cells = lines[static_cast<qsizetype>(i)].split(',');
        std::vector<float> x, raw;
        for (int j = 0; j < IN; ++j) {
            raw.push_back(cells[j].toFloat());
            x.push_back((raw.back() - mean[static_cast<std::size_t>(j)]) / stddev[static_cast<std::size_t>(j)]);
        }
        const auto want = reference(p, x), unnormalised = reference(p, raw);
        for (int o2 = 0; o2 < OUT; ++o2) {
            const auto k = static_cast<std::size_t>(o2);
            moved = std::max(moved, double(std::abs(want[k] - unnormalised[k])));
            QVERIFY2(std::abs(got[i][k] - want[k]) < 1e-5f,
                     qPrintable(QString("row %1 class %2: engine %3, DL4J %4").arg(i).arg(o2).arg(got[i][k]).arg(want[k])));
        }
    }
    QVERIFY2(moved > 1e-3, qPrintable(QString("normalising changes the outputs by only %1").arg(moved)));

    const QString saved = dir_.path() + "/normalised.thrm";
    const auto t = run_engine({"train", "--model", zip, "--data", csv_, "--epochs", "1", "--batch", "16", "--save", saved});
    check_finished_ok(t, 0);
    if (QTest::currentTestFailed()) return;
    const auto b = probabilities(run_engine({"predict", "--model-file", saved, "--data", csv_}));
    QCOMPARE(b.size(), got.size());
    for (std::size_t i = 0; i < b.size(); ++i)
        for (int o2 = 0; o2 < OUT; ++o2) QVERIFY(std::abs(b[i][static_cast<std::size_t>(o2)] - got[i][static_cast<std::size_t>(o2)]) < 1e-6f);
}

// The engine finds thresher-hdf5-reader beside itself; a copy of the engine alone in a folder,
// with neither THRESHER_HDF5_READER nor a $PATH that holds one, says so naming where it looked;
// THRESHER_HDF5_READER then points it at one.
void TestEngineWeights::kerasH5ThroughTheReaderBesideIt() {
    const QString h5 = dir_.path() + "/tiny.h5";
    write_keras_h5(h5);
    const auto r = run_engine({"inspect", "--json", h5});
    QVERIFY2(r.exit_code == 0, qPrintable(r.summary()));
    const auto o = QJsonDocument::fromJson(r.stdout_text.toUtf8()).object();
    QCOMPARE(o["format"].toString(), QString("keras"));
    QCOMPARE(o["params"].toInteger(), IN * OUT + OUT);
    QCOMPARE(o["weights"].toBool(), true);

    const QString alone = dir_.path() + "/alone";
    QVERIFY(QDir().mkpath(alone));
    QVERIFY(QFile::copy(engine_binary(), alone + "/thresher-engine"));
    const QString reader = QFileInfo(engine_binary()).absolutePath() + "/thresher-hdf5-reader";
    Ran lost = run_with(alone + "/thresher-engine", {"inspect", h5}, {{"PATH", "/usr/bin:/bin"}, {"THRESHER_HDF5_READER", ""}});
    QCOMPARE(lost.code, 1);
    QVERIFY2(lost.err.contains(h5 + ": cannot read the HDF5 file: thresher-hdf5-reader, the program that reads HDF5 files for "
                                    "Thresher, was not found: not beside this program (" + alone + "/thresher-hdf5-reader); "
                                    "THRESHER_HDF5_READER is not set; not in $PATH (/usr/bin:/bin). Install it beside this program"),
             qPrintable(lost.err));
    const Ran pointed = run_with(alone + "/thresher-engine", {"inspect", h5}, {{"PATH", "/usr/bin:/bin"}, {"THRESHER_HDF5_READER", reader}});
    QVERIFY2(pointed.code == 0, qPrintable(pointed.err));
    QVERIFY2(pointed.err.contains("weights: " + QString::number(IN * OUT + OUT) + " parameters"), qPrintable(pointed.err));
}

void TestEngineWeights::damagedH5IsRefused() {
    const QString h5 = dir_.path() + "/whole.h5";
    write_keras_h5(h5);
    QFile in(h5);
    QVERIFY(in.open(QIODevice::ReadOnly));
    const QByteArray whole = in.readAll();
    const QString cut = dir_.path() + "/cut.h5";
    QVERIFY(write_file(cut, whole.left(whole.size() / 2)));
    const auto r = run_engine({"inspect", cut});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.stderr_text.contains(cut + ": "), qPrintable(r.stderr_text));
    QVERIFY2(!r.stderr_text.contains("thresher-hdf5-reader"), qPrintable(r.stderr_text));
}

QTEST_GUILESS_MAIN(TestEngineWeights)
#include "test_engine_weights.moc"
