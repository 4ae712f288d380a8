// Training from exported shards (thresher-engine export, then train --data DIR): a slice of
// Fashion-MNIST trained from its IDX files and from its shards with the same seed and steps ends
// at the same accuracy; two nodes sharing gradients from shards end with equal replicas, also with
// --shard-placement per-node from folders that each hold only that node's files (and within a
// point of the shared placement's accuracy); export refuses a non-empty --out and a batch other
// than the export's is refused by train, per-node placement with fewer train shards than nodes too.
// predict --data SHARDDIR streams the test part and prints what predict on the IDX files prints.
#include <QtTest>

#include <array>

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include "data/idx_reader.h"
#include "engine_process.h"

namespace {

const char* kModel = R"({"name":"fm","seed":3,"input":{"channels":1,"height":28,"width":28},
  "updater":{"type":"nesterovs","learning_rate":0.01,"momentum":0.9},
  "layers":[{"type":"dense","units":64,"activation":"relu"},{"type":"output","units":10}]})";

const QString kFashion = "/usr/share/datasets/fashion-mnist";

// The first `n` images and labels of an IDX pair, written plain to `dir` under `prefix`.
void slice_idx(const QString& prefix, std::uint32_t n, const QString& dir) {
    using thresher::data::IdxArray;
    for (const char* kind : {"images-idx3-ubyte", "labels-idx1-ubyte"}) {
        IdxArray a = thresher::data::read_idx((kFashion + "/" + prefix + "-" + kind + ".gz").toStdString());
        const std::size_t per = a.element_count() / a.dims[0];
        a.dims[0] = n;
        a.data.resize(per * n);
        const auto bytes = thresher::data::encode_idx(a);
        QVERIFY(write_file(dir + "/" + prefix + "-" + kind,
                           QByteArray(reinterpret_cast<const char*>(bytes.data()), qsizetype(bytes.size()))));
    }
}

double final_accuracy(const EngineRun& r) {
    const auto ends = r.of("epoch_end");
    return ends.isEmpty() ? -1 : ends.last().value("accuracy").toDouble();
}

}  // namespace

class TestShardTraining : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void sameAccuracyFromIdxAndShards();
    void twoNodesFromShardsEndEqual();
    void twoNodesPerNodeFromTheirOwnFiles();
    void threeNodesPerNodeWarnUnequalWork();
    void importedNormalisationAppliedPerBatch();
    void withoutTestPartEvaluatesTheFirstShard();
    void perNodeWithoutTestPartEvaluatesEachNodesFirstFile();
    void predictStreamsTheTestPart();
    void refusals();

private:
    QString path(const QString& n) const { return dir_.filePath(n); }
    QTemporaryDir dir_;
    double shared_accuracy_ = -1;  // twoNodesFromShardsEndEqual's, for the per-node run
};

void TestShardTraining::initTestCase() {
    if (!QFile::exists(kFashion + "/train-images-idx3-ubyte.gz")) QSKIP("Fashion-MNIST is not installed");
    QVERIFY(QDir().mkpath(path("idx")));
    slice_idx("train", 3000, path("idx"));
    slice_idx("t10k", 1000, path("idx"));
    QVERIFY(write_file(path("fm.json"), kModel));
    QVERIFY(write_file(path("secret"), "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"));
    const auto exported = run_engine({"export", "--data", path("idx"), "--out", path("shards"), "--batch", "32", "--shards", "4",
                                      "--model", path("fm.json")});
    QVERIFY2(exported.exit_code == 0, qPrintable(exported.summary()));
    const auto lines = exported.stdout_text.trimmed().split('\n');
    const auto summary = QJsonDocument::fromJson(lines.last().toUtf8()).object();
    QCOMPARE(summary.value("train").toObject().value("records").toInt(), 3000);
    QCOMPARE(summary.value("train").toObject().value("shards").toInt(), 4);
    QCOMPARE(summary.value("test").toObject().value("records").toInt(), 1000);
    QCOMPARE(summary.value("seed").toInt(), 3);  // the model's
    QVERIFY2(exported.stdout_text.contains("\"data_progress\""), qPrintable(exported.summary()));
}

void TestShardTraining::sameAccuracyFromIdxAndShards() {
    const QStringList common{"train", "--model", path("fm.json"), "--epochs", "1", "--batch", "32", "--seed", "3", "--threads", "2"};
    const auto from_idx = run_engine(common + QStringList{"--data", path("idx")}, 300000);
    const auto from_shards = run_engine(common + QStringList{"--data", path("shards")}, 300000);
    check_finished_ok(from_idx, 0);
    check_finished_ok(from_shards, 0);
    if (QTest::currentTestFailed()) return;
    const double a = final_accuracy(from_idx), b = final_accuracy(from_shards);
    qInfo("accuracy after 1 epoch of 3000 samples: from IDX %.4f, from shards %.4f", a, b);
    QVERIFY2(a > 0.6, qPrintable(QString("accuracy from IDX %1: the model did not learn").arg(a)));
    QVERIFY2(std::abs(a - b) <= 0.005, qPrintable(QString("accuracy from IDX %1, from shards %2").arg(a).arg(b)));
    QCOMPARE(from_shards.of("iteration").size(), from_idx.of("iteration").size());
}

void TestShardTraining::twoNodesFromShardsEndEqual() {
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    QList<QStringList> args;
    for (int rank = 0; rank < 2; ++rank)
        args << QStringList{"train", "--model", path("fm.json"), "--data", path("shards"), "--epochs", "2", "--batch", "32",
                            "--seed", "3", "--threads", "1", "--nodes", nodes, "--node-rank", QString::number(rank),
                            "--secret-file", path("secret"), "--save", path(QString("n%1.thr").arg(rank)),
                            "--strategy", "gradient-sharing", "--threshold-algorithm", "fixed:0.01", "--residual", "none"};
    const auto runs = run_nodes(args, 300000);
    for (int node = 0; node < 2; ++node) check_finished_ok(runs[node], node);
    if (QTest::currentTestFailed()) return;
    // 3000 records in blocks of 32: 94 blocks, 47 steps per epoch on each of 2 nodes.
    QCOMPARE(runs[0].of("run_finished").last().value("iters").toInt(), 94);
    QVERIFY(final_accuracy(runs[0]) > 0.6);
    shared_accuracy_ = final_accuracy(runs[0]);
    const auto cmp = run_engine({"compare", path("n0.thr"), path("n1.thr"), "--tolerance", "1e-5"});
    QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
}

// Each node holds only its own files (file f of each part on node f mod 2, as the launcher uploads
// them): node 0 train/shard-00000 and -00002, node 1 -00001 and -00003, and the same of test/.
void TestShardTraining::twoNodesPerNodeFromTheirOwnFiles() {
    QFile index_file(path("shards/index.json"));
    QVERIFY(index_file.open(QIODevice::ReadOnly));
    const auto index = QJsonDocument::fromJson(index_file.readAll()).object();
    std::array<int, 2> blocks{};  // each node's train blocks: the steps per epoch are the larger
    for (int node = 0; node < 2; ++node) {
        const QString folder = path(QString("own%1").arg(node));
        QVERIFY(QDir().mkpath(folder + "/train") && QDir().mkpath(folder + "/test"));
        QVERIFY(QFile::copy(path("shards/index.json"), folder + "/index.json"));
        for (const char* part : {"train", "test"}) {
            const auto shards = index.value(part).toObject().value("shards").toArray();
            QCOMPARE(shards.size(), 4);
            for (int f = node; f < shards.size(); f += 2) {
                const QString file = shards[f].toObject().value("file").toString();
                QVERIFY(QFile::copy(path("shards/" + file), folder + "/" + file));
                if (QString(part) == "train") blocks[node] += (shards[f].toObject().value("records").toInt() + 31) / 32;
            }
        }
    }
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    QList<QStringList> args;
    for (int rank = 0; rank < 2; ++rank)
        args << QStringList{"train", "--model", path("fm.json"), "--data", path(QString("own%1").arg(rank)), "--epochs", "2",
                            "--batch", "32", "--seed", "3", "--threads", "1", "--nodes", nodes, "--node-rank",
                            QString::number(rank), "--secret-file", path("secret"), "--save", path(QString("p%1.thr").arg(rank)),
                            "--strategy", "gradient-sharing", "--threshold-algorithm", "fixed:0.01", "--residual", "none",
                            "--shard-placement", "per-node"};
    const auto runs = run_nodes(args, 300000);
    for (int node = 0; node < 2; ++node) check_finished_ok(runs[node], node);
    if (QTest::currentTestFailed()) return;
    for (int node = 0; node < 2; ++node) {
        const auto totals = runs[node].of("run_finished").last();
        QCOMPARE(totals.value("iters").toInt(), 2 * std::max(blocks[0], blocks[1]));
        QVERIFY2(runs[node].of("warning").isEmpty(), qPrintable(runs[node].summary()));  // 4 shards: equal work
        // The replicas before the final reconcile: every message delivered, nothing of a missing file.
        QVERIFY2(totals.contains("reconcile_gap") && totals.value("reconcile_gap").toDouble() <= 1e-5,
                 qPrintable(QString("node %1: reconcile_gap %2").arg(node).arg(totals.value("reconcile_gap").toDouble())));
    }
    const auto end = runs[0].of("epoch_end").last();
    QCOMPARE(end.value("count").toInt(), 1000);  // both nodes' test files, merged
    const double accuracy = final_accuracy(runs[0]);
    qInfo("accuracy after 2 epochs, 2 nodes: shared placement %.4f, per-node %.4f", shared_accuracy_, accuracy);
    QVERIFY2(shared_accuracy_ > 0, "twoNodesFromShardsEndEqual did not run first");
    QVERIFY2(std::abs(accuracy - shared_accuracy_) <= 0.01,
             qPrintable(QString("per-node %1, shared %2").arg(accuracy).arg(shared_accuracy_)));
    const auto cmp = run_engine({"compare", path("p0.thr"), path("p1.thr"), "--tolerance", "1e-5"});
    QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
}

// 4 train shards over 3 nodes: node 0 owns files 0 and 3, so it takes about twice the steps' work
// of the others; the run works, every node says so once, and the nodes end equal.
void TestShardTraining::threeNodesPerNodeWarnUnequalWork() {
    const auto ports = free_node_ports(3);
    QStringList addresses;
    for (auto p : ports) addresses << QString("127.0.0.1:%1").arg(p);
    QList<QStringList> args;
    for (int rank = 0; rank < 3; ++rank)
        args << QStringList{"train", "--model", path("fm.json"), "--data", path("shards"), "--epochs", "1", "--batch", "32",
                            "--seed", "3", "--threads", "1", "--nodes", addresses.join(','), "--node-rank", QString::number(rank),
                            "--secret-file", path("secret"), "--save", path(QString("u%1.thr").arg(rank)), "--strategy",
                            "gradient-sharing", "--threshold-algorithm", "fixed:0.01", "--residual", "none",
                            "--shard-placement", "per-node"};
    const auto runs = run_nodes(args, 300000);
    for (int node = 0; node < 3; ++node) {
        check_finished_ok(runs[node], node);
        if (QTest::currentTestFailed()) return;
        const auto warnings = runs[node].of("warning");
        QCOMPARE(warnings.size(), 1);
        QVERIFY2(warnings[0].value("message").toString().contains(
                         "--shard-placement per-node: 4 train shards over 3 nodes: some nodes own 2 files, others 1, so the "
                         "work is unequal (export with --shards N, a multiple of the node count)"),
                 qPrintable(runs[node].summary()));
    }
    const auto cmp = run_engine({"compare", path("u0.thr"), path("u2.thr"), "--tolerance", "1e-5"});
    QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
}

// A DL4J zip carries its normaliser (normalizer.bin) and starts at epoch 0: fine-tuned from IDX
// (the set normalised whole when loaded) and from shards (each streamed batch normalised as it
// comes), epoch 0 takes the same batches, so the runs end at the same loss.
void TestShardTraining::importedNormalisationAppliedPerBatch() {
    const QStringList common{"--epochs", "1", "--batch", "32", "--seed", "3", "--threads", "2"};
    const auto fitted = run_engine(QStringList{"train", "--model", path("fm.json"), "--data", path("idx"), "--normalize", "standardize",
                                               "--limit", "320", "--save", path("norm.thr")} + common, 300000);
    check_finished_ok(fitted, 0);
    const auto zipped = run_engine({"export-model", path("norm.thr"), "--format", "dl4j", "--out", path("norm.zip")});
    QVERIFY2(zipped.exit_code == 0, qPrintable(zipped.summary()));
    const auto from_idx = run_engine(QStringList{"train", "--model", path("norm.zip"), "--data", path("idx")} + common, 300000);
    const auto from_shards = run_engine(QStringList{"train", "--model", path("norm.zip"), "--data", path("shards")} + common, 300000);
    check_finished_ok(from_idx, 0);
    check_finished_ok(from_shards, 0);
    if (QTest::currentTestFailed()) return;
    const double a = from_idx.of("epoch_end").last().value("eval_loss").toDouble();
    const double b = from_shards.of("epoch_end").last().value("eval_loss").toDouble();
    QVERIFY2(std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(a)), qPrintable(QString("eval loss from IDX %1, from shards %2").arg(a).arg(b)));
}

// A CSV has no test set: its shards are evaluated on the first shard's records (or --test-limit),
// not read whole, so evaluation keeps memory flat too.
void TestShardTraining::withoutTestPartEvaluatesTheFirstShard() {
    QVERIFY(write_file(path("table.csv"), test_support::three_class_csv(96)));
    QVERIFY(write_file(path("mn.json"), R"({"name":"mn","seed":2,"input":{"size":16},"updater":{"type":"sgd","learning_rate":0.1},
      "layers":[{"type":"dense","units":12,"activation":"tanh"},{"type":"output","units":3}]})"));
    const auto exported = run_engine({"export", "--data", path("table.csv"), "--out", path("table"), "--batch", "8", "--shards", "2"});
    QVERIFY2(exported.exit_code == 0, qPrintable(exported.summary()));
    for (auto [extra, count] : {std::pair{QStringList{}, 48}, {QStringList{"--test-limit", "20"}, 20}}) {
        const auto r = run_engine(QStringList{"train", "--model", path("mn.json"), "--data", path("table"), "--batch", "8",
                                              "--epochs", "1", "--threads", "1"} + extra);
        check_finished_ok(r, 0);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(r.of("epoch_end").last().value("eval_set").toString(), QString("train"));
        QCOMPARE(r.of("epoch_end").last().value("count").toInt(), count);  // 12 blocks of 8: 6 in the first shard
        QCOMPARE(r.of("iteration").size(), 12);
    }
}

// Per node without a test part (a CSV's shards, 2 files of 6 blocks of 8): each node evaluates the
// first of its own files, never the other's, and the controller merges the two samples.
void TestShardTraining::perNodeWithoutTestPartEvaluatesEachNodesFirstFile() {
    QVERIFY2(QFile::exists(path("table/index.json")), "withoutTestPartEvaluatesTheFirstShard exports the table first");
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    QList<QStringList> args;
    for (int rank = 0; rank < 2; ++rank)
        args << QStringList{"train", "--model", path("mn.json"), "--data", path("table"), "--batch", "8", "--epochs", "1",
                            "--threads", "1", "--nodes", nodes, "--node-rank", QString::number(rank), "--secret-file",
                            path("secret"), "--strategy", "gradient-sharing", "--shard-placement", "per-node"};
    const auto runs = run_nodes(args, 300000);
    for (int node = 0; node < 2; ++node) check_finished_ok(runs[node], node);
    if (QTest::currentTestFailed()) return;
    const auto end = runs[0].of("epoch_end").last();
    QCOMPARE(end.value("eval_set").toString(), QString("train"));
    QCOMPARE(end.value("count").toInt(), 96);  // 48 records in each node's file, merged
    QCOMPARE(runs[0].of("run_finished").last().value("iters").toInt(), 6);  // 6 blocks per node
}

// predict from a shard set streams its test part block by block, in the set's stored order (the
// export's shuffle), each line carrying its sample's index in the data the set was exported
// from: every line is the line predict prints for that index from the IDX files, each index once.
// --limit keeps the first N of the stored order.
void TestShardTraining::predictStreamsTheTestPart() {
    const auto trained = run_engine({"train", "--model", path("fm.json"), "--data", path("shards"), "--epochs", "1", "--batch", "32",
                                     "--seed", "3", "--threads", "2", "--save", path("predict.thr")}, 300000);
    check_finished_ok(trained, 0);
    if (QTest::currentTestFailed()) return;
    const auto from_shards = run_engine({"predict", "--model-file", path("predict.thr"), "--data", path("shards"), "--threads", "2"});
    const auto from_idx = run_engine({"predict", "--model-file", path("predict.thr"), "--data", path("idx"), "--threads", "2"});
    QVERIFY2(from_shards.exit_code == 0, qPrintable(from_shards.summary()));
    QVERIFY2(from_idx.exit_code == 0, qPrintable(from_idx.summary()));
    const auto a = from_shards.stdout_text.trimmed().split('\n'), b = from_idx.stdout_text.trimmed().split('\n');
    QCOMPARE(a.size(), qsizetype(1000));
    QCOMPARE(b.size(), a.size());
    std::vector<bool> seen(1000, false);
    bool reordered = false;
    for (qsizetype i = 0; i < a.size(); ++i) {
        const auto row = QJsonDocument::fromJson(a[i].toUtf8()).object();
        const int index = row.value("index").toInt(-1);
        QVERIFY2(index >= 0 && index < 1000 && !seen[std::size_t(index)], qPrintable(a[i]));
        seen[std::size_t(index)] = true;
        reordered = reordered || index != int(i);
        QCOMPARE(row.value("probabilities").toArray().size(), qsizetype(10));
        QCOMPARE(a[i], b[index]);  // predict on the IDX files prints sample i on line i
    }
    QVERIFY(reordered);  // the export shuffled: the indices are the source's, not the line numbers
    const auto first = run_engine({"predict", "--model-file", path("predict.thr"), "--data", path("shards"), "--limit", "40"});
    QVERIFY2(first.exit_code == 0, qPrintable(first.summary()));
    const auto c = first.stdout_text.trimmed().split('\n');
    QCOMPARE(c.size(), qsizetype(40));
    QCOMPARE(c, a.mid(0, 40));
}

void TestShardTraining::refusals() {
    const auto again = run_engine({"export", "--data", path("idx"), "--out", path("shards"), "--batch", "32"});
    QCOMPARE(again.exit_code, 1);
    QVERIFY2(again.stderr_text.contains("--out " + path("shards") + " exists and is not an empty folder"), qPrintable(again.summary()));
    const auto other_batch = run_engine({"train", "--model", path("fm.json"), "--data", path("shards"), "--batch", "64"});
    QCOMPARE(other_batch.exit_code, 1);
    QVERIFY2(other_batch.stderr_text.contains("--batch 64: the shards in " + path("shards") + " hold batches of 32"),
             qPrintable(other_batch.summary()));
    // Per-node placement: each node owns at least one train shard (4 here), and the data is a shard set.
    const auto ports = free_node_ports(5);
    QStringList five;
    for (auto p : ports) five << QString("127.0.0.1:%1").arg(p);
    const auto too_few = run_engine({"train", "--model", path("fm.json"), "--data", path("shards"), "--batch", "32",
                                     "--nodes", five.join(','), "--node-rank", "0", "--secret-file", path("secret"),
                                     "--shard-placement", "per-node"});
    QCOMPARE(too_few.exit_code, 1);
    QVERIFY2(too_few.stderr_text.contains("--shard-placement per-node: " + path("shards") + " holds 4 train shards for 5 nodes"),
             qPrintable(too_few.summary()));
    const auto not_shards = run_engine({"train", "--model", path("fm.json"), "--data", path("idx"), "--shard-placement", "per-node"});
    QCOMPARE(not_shards.exit_code, 1);
    QVERIFY2(not_shards.stderr_text.contains("--shard-placement per-node: --data " + path("idx") + " is not a shard set"),
             qPrintable(not_shards.summary()));
    const auto bad = run_engine({"train", "--model", path("fm.json"), "--data", path("shards"), "--shard-placement", "local"});
    QVERIFY(bad.exit_code != 0);
    QVERIFY2(bad.stderr_text.contains("--shard-placement local: expected shared or per-node"), qPrintable(bad.summary()));
    // Streamed block by block, a shard folder's test part evaluates like its source's test files:
    // the same confusion matrix over the same 1000 records (--limit: the first 100 in export order).
    if (!QFile::exists(path("n0.thr"))) return;
    auto evaluation = [&](const QString& data, QStringList extra = {}) -> QJsonObject {
        const auto r = run_engine(QStringList{"evaluate", "--model-file", path("n0.thr"), "--data", data} + extra);
        if (r.exit_code != 0) qWarning("%s", qPrintable(r.summary()));  // the comparisons below then fail
        const auto lines = r.stdout_text.trimmed().split('\n');
        return QJsonDocument::fromJson(lines.last().toUtf8()).object();
    };
    const auto streamed = evaluation(path("shards")), whole = evaluation(path("idx"));
    QCOMPARE(streamed.value("count").toInt(), 1000);
    QCOMPARE(streamed.value("confusion"), whole.value("confusion"));
    QCOMPARE(evaluation(path("shards"), {"--limit", "100"}).value("count").toInt(), 100);
}

QTEST_GUILESS_MAIN(TestShardTraining)
#include "test_shard_training.moc"
