// Binary classification and regression, as a user runs them: synthetic CSVs with a known relation
// (generated here with a fixed seed), the task following from the output layer. One sigmoid unit
// with xent learns a linear boundary (accuracy, F1, AUC in epoch_end); an identity output with
// mse or mae learns a linear function of real-valued targets (MSE, MAE, R²); both also on two
// nodes with gradient sharing and with parameter averaging (loopback UDP). Bad labels are refused
// naming the file and line.
#include <QtTest>

#include <QJsonArray>
#include <QTemporaryDir>
#include <random>

#include "engine_process.h"

namespace {

// y = 1 when x0 − 2·x1 + 0.5·x2 > 0 (binary) or y = 2·x0 − 3·x1 + 0.5·x2 + 1 + N(0, 0.05).
QByteArray csv(int rows, bool binary, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> n(0.0, 1.0), noise(0.0, 0.05);
    QByteArray out;
    for (int i = 0; i < rows; ++i) {
        const double a = n(rng), b = n(rng), c = n(rng);
        const double y = binary ? (a - 2 * b + 0.5 * c > 0 ? 1.0 : 0.0) : 2 * a - 3 * b + 0.5 * c + 1 + noise(rng);
        out += QByteArray::number(a, 'g', 7) + "," + QByteArray::number(b, 'g', 7) + "," + QByteArray::number(c, 'g', 7) +
               "," + (binary ? QByteArray::number(int(y)) : QByteArray::number(y, 'g', 7)) + "\n";
    }
    return out;
}

const char* kBinary = R"({"name":"bin","input":{"size":3},"seed":5,"updater":{"type":"adam","learning_rate":0.02},
  "layers":[{"type":"dense","units":8,"activation":"tanh"},{"type":"output","units":1,"activation":"sigmoid","loss":"xent"}]})";
const char* kMse = R"({"name":"lin","input":{"size":3},"seed":5,"updater":{"type":"adam","learning_rate":0.05},
  "layers":[{"type":"output","units":1,"activation":"identity","loss":"mse"}]})";
const char* kMae = R"({"name":"lin1","input":{"size":3},"seed":5,"updater":{"type":"adam","learning_rate":0.05},
  "layers":[{"type":"output","units":1,"activation":"identity","loss":"mae"}]})";

}  // namespace

class TestTasks : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void binary_converges();
    void regression_converges_data();
    void regression_converges();
    void distributed_data();
    void distributed();
    void bad_labels_refused();

private:
    QString path(const QString& n) const { return dir_.filePath(n); }
    QStringList train_args(const QString& model, const QString& data, int epochs) const {
        return {"train", "--model", path(model), "--data", path(data), "--epochs", QString::number(epochs), "--batch", "16",
                "--seed", "3", "--threads", "1"};
    }
    QTemporaryDir dir_;
};

void TestTasks::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY(write_file(path("bin.csv"), csv(480, true, 11)));
    QVERIFY(write_file(path("reg.csv"), csv(480, false, 12)));
    QVERIFY(write_file(path("bin.json"), kBinary));
    QVERIFY(write_file(path("mse.json"), kMse));
    QVERIFY(write_file(path("mae.json"), kMae));
    QVERIFY(write_file(path("secret"), "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"));
}

void TestTasks::binary_converges() {
    const auto r = run_engine(train_args("bin.json", "bin.csv", 12));
    check_finished_ok(r, 0);
    if (QTest::currentTestFailed()) return;
    const auto ends = r.of("epoch_end");
    QCOMPARE(ends.size(), 12);
    const auto first = ends.first(), last = ends.last();
    QCOMPARE(last["task"].toString(), QString("binary"));
    QVERIFY2(last["accuracy"].toDouble() >= 0.95, qPrintable(r.summary()));
    QVERIFY2(last["auc"].toDouble() >= 0.98, qPrintable(r.summary()));
    QVERIFY2(last["f1"].toDouble() >= 0.9, qPrintable(r.summary()));
    QVERIFY(last["eval_loss"].toDouble() < first["eval_loss"].toDouble());
    QVERIFY(!last.contains("auc_hist"));
    // The confusion matrix is 2x2 over all 480 rows.
    const auto confusion = last["confusion"].toArray();
    QCOMPARE(confusion.size(), 2);
    int total = 0;
    for (const auto& row : confusion)
        for (const auto& v : row.toArray()) total += v.toInt();
    QCOMPARE(total, 480);
    // predict gives P(class 1) and the class at 0.5.
    QVERIFY(run_engine(train_args("bin.json", "bin.csv", 3) << "--save" << path("bin.thr")).exit_code == 0);
    const auto p = run_engine({"predict", "--model-file", path("bin.thr"), "--data", path("bin.csv"), "--limit", "5"});
    QVERIFY2(p.exit_code == 0, qPrintable(p.summary()));
    QCOMPARE(p.events.size(), 5);
    for (const auto& e : p.events) {
        const double prob = e["probabilities"].toArray()[0].toDouble();
        QCOMPARE(e["class"].toInt(), prob >= 0.5 ? 1 : 0);
    }
}

void TestTasks::regression_converges_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("mse") << "mse.json";
    QTest::newRow("mae") << "mae.json";
}

void TestTasks::regression_converges() {
    QFETCH(QString, model);
    const auto r = run_engine(train_args(model, "reg.csv", 15));
    check_finished_ok(r, 0);
    if (QTest::currentTestFailed()) return;
    const auto last = r.of("epoch_end").last();
    // The relation is linear with noise σ = 0.05 on targets of variance 13.25: R² close to 1.
    QVERIFY2(last["average_r2"].toDouble() > 0.995, qPrintable(r.summary()));
    QVERIFY2(last["average_mse"].toDouble() < 0.05, qPrintable(r.summary()));
    QVERIFY2(last["average_mae"].toDouble() < 0.2, qPrintable(r.summary()));
    QVERIFY2(r.stderr_text.contains("R"), qPrintable(r.stderr_text));
    // evaluate reads the CSV as regression too.
    QVERIFY(run_engine(train_args(model, "reg.csv", 2) << "--save" << path("reg.thr")).exit_code == 0);
    const auto e = run_engine({"evaluate", "--model-file", path("reg.thr"), "--data", path("reg.csv")});
    QVERIFY2(e.exit_code == 0, qPrintable(e.summary()));
    QVERIFY2(e.stdout_text.contains("average_r2"), qPrintable(e.stdout_text));
}

void TestTasks::distributed_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("data");
    QTest::addColumn<QStringList>("strategy");
    const QStringList gs{"--strategy", "gradient-sharing", "--threshold-algorithm", "adaptive"};
    const QStringList pa{"--strategy", "parameter-averaging", "--averaging-frequency", "2"};
    QTest::newRow("binary, gradient sharing") << "bin.json" << "bin.csv" << gs;
    QTest::newRow("binary, parameter averaging") << "bin.json" << "bin.csv" << pa;
    QTest::newRow("regression, gradient sharing") << "mse.json" << "reg.csv" << gs;
    QTest::newRow("regression, parameter averaging") << "mse.json" << "reg.csv" << pa;
}

void TestTasks::distributed() {
    QFETCH(QString, model);
    QFETCH(QString, data);
    QFETCH(QStringList, strategy);
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    QList<QStringList> args;
    for (int rank = 0; rank < 2; ++rank)
        args << train_args(model, data, 15) + QStringList{"--nodes", nodes, "--node-rank", QString::number(rank),
                                                          "--secret-file", path("secret")} + strategy;
    const auto runs = run_nodes(args, 240000);
    for (int node = 0; node < 2; ++node) {
        check_finished_ok(runs[node], node);
        if (QTest::currentTestFailed()) return;
    }
    const auto last = runs[0].of("epoch_end").last();
    if (model == "bin.json") {
        QCOMPARE(last["nodes_evaluated"].toInt(), 2);  // sharded evaluation, merged on node 0
        QVERIFY2(last["accuracy"].toDouble() >= 0.93, qPrintable(runs[0].summary()));
        QVERIFY2(last["auc"].toDouble() >= 0.97, qPrintable(runs[0].summary()));
    } else {
        QVERIFY2(last["average_r2"].toDouble() > 0.99, qPrintable(runs[0].summary()));
    }
}

void TestTasks::bad_labels_refused() {
    // A binary model on a CSV whose labels are not 0/1: the file and line are named.
    QVERIFY(write_file(path("three.csv"), "0.1,0.2,0.3,1\n0.4,0.5,0.6,2\n"));
    const auto r = run_engine(train_args("bin.json", "three.csv", 1));
    QVERIFY(r.exit_code != 0);
    QVERIFY2(r.stderr_text.contains("three.csv") && r.stderr_text.contains("line 2"), qPrintable(r.stderr_text));
    // A regression model refuses a non-numeric target, naming it.
    QVERIFY(write_file(path("words.csv"), "0.1,0.2,0.3,1.5\n0.4,0.5,0.6,high\n"));
    const auto w = run_engine(train_args("mse.json", "words.csv", 1));
    QVERIFY(w.exit_code != 0);
    QVERIFY2(w.stderr_text.contains("words.csv") && w.stderr_text.contains("high"), qPrintable(w.stderr_text));
}

QTEST_GUILESS_MAIN(TestTasks)
#include "test_tasks.moc"
