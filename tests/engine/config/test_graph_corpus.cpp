// The graph corpus (data/graphs/corpus, 53 public files written by others: SOURCES.md): every file
// ends as expected.tsv says: "imports" (and then builds into a network whose parameter count the
// config states, and round-trips as Thresher JSON), or refused with a ConfigError containing the
// listed message (which names the file's own layer or field); a third column gives the time steps
// a file leaves open (--steps) when they are needed. Nothing may end another way: any
// other exception, a crash or a hang fails. Every .json in the folder must be listed, so a new
// file cannot be skipped by accident.
#include <QtTest>

#include <algorithm>

#include <cmath>

#include <QDir>
#include <QFile>

#include "backend/registry.h"
#include "config/model_format.h"
#include "core/error.h"
#include "nn/network.h"
#include "source_dir.h"

using namespace thresher;

namespace {

QString corpus_dir() { return test_support::source_dir() + "/tests/engine/config/data/graphs/corpus"; }

}  // namespace

class TestGraphCorpus : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void every_file_is_listed();
    void outcomes_data();
    void outcomes();
};

void TestGraphCorpus::every_file_is_listed() {
    QFile f(corpus_dir() + "/expected.tsv");
    QVERIFY(f.open(QIODevice::ReadOnly));
    QStringList listed;
    for (const auto& line : QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts)) listed << line.section('\t', 0, 0);
    const auto files = QDir(corpus_dir()).entryList({"*.json"}, QDir::Files, QDir::Name);
    QCOMPARE(listed, files);
    QVERIFY2(files.size() >= 50, "the corpus holds at least 50 public graph files");
}

void TestGraphCorpus::outcomes_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("expected");
    QTest::addColumn<int>("steps");  // a third column: the time steps the file leaves open (--steps)
    QFile f(corpus_dir() + "/expected.tsv");
    QVERIFY(f.open(QIODevice::ReadOnly));
    for (const auto& line : QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts))
        QTest::newRow(qPrintable(line.section('\t', 0, 0))) << line.section('\t', 0, 0) << line.section('\t', 1, 1)
                                                             << line.section('\t', 2, 2).toInt();
}

void TestGraphCorpus::outcomes() {
    QFETCH(QString, file);
    QFETCH(QString, expected);
    QFETCH(int, steps);
    const std::string path = (corpus_dir() + "/" + file).toStdString();
    try {
        const auto r = config::import_model_file(path, {.steps = steps});
        QVERIFY2(expected == "imports", qPrintable("imported, but expected.tsv says: " + expected));
        const auto again = config::ModelConfig::from_json(r.model.to_json(), "round trip");
        QCOMPARE(again.param_count(), r.model.param_count());
        auto be = backend::create_backend("cpu", {1});
        nn::Network net(r.model, *be);
        QCOMPARE(net.param_count(), r.model.param_count());
        // It trains: one step on two samples (the inputs side by side, the outputs' targets too)
        // gives a finite loss and moves the parameters.
        const int batch = 2;
        // A sequence input's part of a row is its length, then steps x features: the full
        // length, and values 0 or 1 (valid token ids for an embedding too).
        const auto& cfg = net.config();
        std::vector<float> x, t(batch * cfg.target_size(), 0.f);
        for (int s = 0; s < batch; ++s)
            for (std::size_t k = 0; k < cfg.input_count(); ++k) {
                const auto& in = cfg.input_shape(k);
                if (in.sequence()) x.push_back(static_cast<float>(in.t));
                for (std::size_t i = 0; i < in.size(); ++i)
                    x.push_back(in.sequence() ? static_cast<float>((i * 7919 + s) % 2)
                                              : static_cast<float>((x.size() * 7919) % 13) / 13.f - 0.5f);
            }
        QCOMPARE(x.size(), batch * cfg.input_size());
        for (std::size_t i = 0; i < t.size(); i += 3) t[i] = 1.f;
        const double loss = net.compute_gradients(x.data(), t.data(), batch, 1);
        QVERIFY2(std::isfinite(loss), qPrintable(QString("loss %1").arg(loss)));
        const auto before = net.get_params();
        net.compute_update(0);
        net.apply_update();
        // Or, for a file whose output is one ReLU unit (keras2_embedding_lstm_calculator): that
        // unit can be dead for every sample of this fixed batch, so nothing moves. Only then is a
        // still step accepted, and only when the output really is exactly zero there.
        if (net.get_params() == before) {
            std::vector<float> y(batch * cfg.target_size());
            net.predict(x.data(), batch, y.data());
            const bool dead_relu = cfg.main_output().activation.kind == vocab::Activation::Relu &&
                                   std::all_of(y.begin(), y.end(), [](float v) { return v == 0.f; });
            QVERIFY2(dead_relu, "one training step left every parameter where it was");
            qInfo("%s: its ReLU output is 0 for this batch (dead unit): no gradient", qPrintable(file));
        }
        qInfo("%s: %zu layers, %zu parameters, input %s%s", qPrintable(file), r.model.layers.size(), r.model.param_count(),
              r.model.input.str().c_str(), r.model.is_graph() ? ", a graph" : "");
    } catch (const ConfigError& e) {
        const QString msg = QString::fromStdString(e.what());
        QVERIFY2(expected != "imports", qPrintable("refused: " + msg));
        QVERIFY2(msg.contains(expected), qPrintable("\"" + expected + "\" not in: " + msg));
    }
}

QTEST_GUILESS_MAIN(TestGraphCorpus)
#include "test_graph_corpus.moc"
