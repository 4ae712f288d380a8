// SweepSpec: a 2-axis sweep expands into typed, validated points in the documented order; every
// bad sweep is one error naming the file, the place and the value, in the user's terms.
#include <QtTest>

#include <QTemporaryDir>

#include "sweep_spec.h"

using thresher::launcher::SpecError;
using thresher::launcher::sweep::SweepSpec;

namespace {

const char* const kBase = R"("base": {"format": "thresher-run", "version": 1, "model": "mlp.json",
  "training": {"batch": 16}, "cluster": {"kind": "local"}})";

QByteArray sweep(const QString& axes, const QString& extra = {}) {
    return QString(R"({"format": "thresher-sweep", "version": 1, "name": "s", %1, "axes": %2%3})")
        .arg(kBase, axes, extra.isEmpty() ? QString() : ", " + extra)
        .toUtf8();
}

// The base's model resolves against this folder (a local cluster's model must exist).
QString models() { return qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/resources/models"; }

}  // namespace

class TestSweepSpec : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void expands_two_axes_in_order();
    void base_from_a_file();
    void nodes_of_an_ssh_cluster_are_its_first_hosts();
    void errors_data();
    void errors();
};

void TestSweepSpec::expands_two_axes_in_order() {
    const auto s = SweepSpec::from_json(
        sweep(R"([{"field": "strategy", "values": ["gradient-sharing", "parameter-averaging"]},
                  {"field": "nodes", "values": [1, 2]},
                  {"field": "training.averaging_frequency", "name": "k", "values": [3]}])", R"("repeats": 2)"),
        "s.json", models());
    QCOMPARE(s.points.size(), 4);
    QCOMPARE(s.repeats, 2);
    QCOMPARE(s.run_count(), 8);
    QCOMPARE(s.axis_names(), (QStringList{"strategy", "nodes", "k"}));
    QCOMPARE(s.axes[1].field, QString("cluster.nodes"));
    QVERIFY(s.axes[1].varies_workers());
    QVERIFY(!s.axes[0].varies_workers());
    // The last axis varies fastest: gs×1, gs×2, pa×1, pa×2.
    const QStringList strategies{"gradient-sharing", "gradient-sharing", "parameter-averaging", "parameter-averaging"};
    const QList<int> nodes{1, 2, 1, 2};
    for (int i = 0; i < 4; ++i) {
        QCOMPARE(s.points[i].index, i);
        QCOMPARE(s.points[i].spec.training.strategy, strategies[i]);
        QCOMPARE(s.points[i].spec.cluster.nodes, nodes[i]);
        QCOMPARE(s.points[i].spec.training.averaging_frequency, 3);
        QCOMPARE(s.points[i].spec.training.batch, 16);  // from the base
        QCOMPARE(s.points[i].spec.base_dir, models());
        QCOMPARE(s.points[i].spec_json, s.points[i].spec.to_json());
    }
    QCOMPARE(s.points[1].label, QString("strategy = gradient-sharing, nodes = 2, k = 3"));
    QCOMPARE(s.points[3].spec.name, QString("s-4"));
}

void TestSweepSpec::base_from_a_file() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QDir(dir.path()).mkpath("runs");
    QFile spec(dir.filePath("runs/base.json"));
    QVERIFY(spec.open(QIODevice::WriteOnly));
    spec.write(R"({"format": "thresher-run", "version": 1, "model": "../models/m.json"})");
    spec.close();
    QDir(dir.path()).mkpath("models");
    QVERIFY(QFile::copy(models() + "/mlp.json", dir.filePath("models/m.json")));
    QFile sw(dir.filePath("s.json"));
    QVERIFY(sw.open(QIODevice::WriteOnly));
    sw.write(R"({"format": "thresher-sweep", "version": 1, "base": "runs/base.json",
                 "axes": [{"field": "batch", "values": [8, 32]}]})");
    sw.close();
    const auto s = SweepSpec::load(dir.filePath("s.json"));
    QCOMPARE(s.name, QString("s"));  // the file's name
    QCOMPARE(s.points.size(), 2);
    QCOMPARE(s.points[1].spec.training.batch, 32);
    // Paths resolve against the base spec's folder, as for `thresher-launch run runs/base.json`.
    QCOMPARE(QFileInfo(s.points[0].spec.model_file()).absoluteFilePath(), QFileInfo(dir.filePath("models/m.json")).absoluteFilePath());
}

void TestSweepSpec::nodes_of_an_ssh_cluster_are_its_first_hosts() {
    const QString ssh = R"({"format": "thresher-sweep", "version": 1, "name": "s",
        "base": {"format": "thresher-run", "version": 1, "model": "mlp.json",
                 "cluster": {"kind": "ssh", "hosts": [{"address": "10.0.0.1"}, {"address": "10.0.0.2", "user": "u"},
                                                      {"address": "10.0.0.3"}]}},
        "axes": [{"field": "nodes", "values": %1}]})";
    const auto s = SweepSpec::from_json(ssh.arg("[1, 3]").toUtf8(), "s.json", models());
    QCOMPARE(s.points.size(), 2);
    QCOMPARE(s.points[0].spec.node_count(), 1);
    QCOMPARE(s.points[0].spec.cluster.hosts[0].address, QString("10.0.0.1"));
    QCOMPARE(s.points[1].spec.node_count(), 3);
    QCOMPARE(s.points[1].spec.cluster.hosts[1].user, QString("u"));
    try {
        SweepSpec::from_json(ssh.arg("[1, 4]").toUtf8(), "s.json", models());
        QFAIL("no error");
    } catch (const SpecError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith("s.json: axes[0].values[1] (nodes = 4): cluster.nodes: on an SSH "
                                                        "cluster, the first k hosts of the base's 3; k must be in 1..3, got 4"),
                 e.what());
    }
}

void TestSweepSpec::errors_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message");
    QTest::newRow("invalid JSON") << QByteArray("{\n  \"format\": ,") << "s.json:2:14: invalid JSON: illegal value";
    QTest::newRow("format") << QByteArray(R"({"format": "thresher-run", "version": 1})")
                            << "s.json: format: must be \"thresher-sweep\", got \"thresher-run\"";
    QTest::newRow("unknown field") << sweep(R"([{"field": "nodes", "values": [1]}])", R"("repeat": 2)")
                                   << "s.json: repeat: unknown field (known: format, version, name, base, axes, repeats)";
    QTest::newRow("no axes") << sweep("[]") << "s.json: axes: must be a non-empty array";
    QTest::newRow("no values") << sweep(R"([{"field": "nodes", "values": []}])")
                               << "s.json: axes[0].values: must be a non-empty array of values, got []";
    QTest::newRow("bad value") << sweep(R"([{"field": "strategy", "values": ["gradient-sharing"]}, {"field": "nodes", "values": [1, 0]}])")
                               << "s.json: axes[1].values[1] (nodes = 0): cluster.nodes: must be a positive integer, got 0";
    QTest::newRow("bad strategy") << sweep(R"([{"field": "strategy", "values": ["gossip"]}])")
                                  << "s.json: axes[0].values[0] (strategy = \"gossip\"): training.strategy: must be one of";
    QTest::newRow("unknown spec field") << sweep(R"([{"field": "training.epoch", "values": [2]}])")
                                        << "s.json: axes[0].values[0] (training.epoch = 2): training.epoch: unknown field";
    QTest::newRow("not a field") << sweep(R"([{"field": "speed", "values": [2]}])")
                                 << "s.json: axes[0].field: must be a run-spec field";
    QTest::newRow("same field twice") << sweep(R"([{"field": "nodes", "values": [1]}, {"field": "cluster.nodes", "values": [2]}])")
                                      << "s.json: axes[1].field: sets cluster.nodes again";
    QTest::newRow("repeated value") << sweep(R"([{"field": "nodes", "values": [1, 2, 1]}])")
                                    << "s.json: axes[0].values[2]: repeats values[0], 1";
    QTest::newRow("bad combination") << sweep(R"([{"field": "strategy", "values": ["single"]}, {"field": "nodes", "values": [1, 2]}])")
                                     << "s.json: point 2 (strategy = single, nodes = 2): training.strategy: \"single\" trains one worker";
    QTest::newRow("repeats") << sweep(R"([{"field": "nodes", "values": [1]}])", R"("repeats": 0)")
                             << "s.json: repeats: must be an integer in 1..100, got 0";
    QTest::newRow("missing base file") << QByteArray(R"({"format": "thresher-sweep", "version": 1, "base": "nope.json", "axes": []})")
                                       << "s.json: base (nope.json): cannot read";
    // Read until memory ran out before: only a regular file is read, and at most 16 MiB of it.
    QTest::newRow("base is a device") << QByteArray(R"({"format": "thresher-sweep", "version": 1, "base": "/dev/zero", "axes": []})")
                                      << "s.json: base (/dev/zero): not a regular file";
    QTest::newRow("base is a folder") << QByteArray(R"({"format": "thresher-sweep", "version": 1, "base": "/", "axes": []})")
                                      << "s.json: base (/): not a regular file";
}

void TestSweepSpec::errors() {
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    try {
        SweepSpec::from_json(text, "s.json", models());
        QFAIL("no error");
    } catch (const SpecError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(message), e.what());
    }
}

QTEST_MAIN(TestSweepSpec)
#include "test_sweep_spec.moc"
