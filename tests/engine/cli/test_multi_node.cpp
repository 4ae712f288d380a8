// Multi-node runs as separate thresher-engine processes on loopback, over real UDP: gradient
// sharing leaves every node's replica equal (`compare` ≤ 1e-5); parameter averaging with plain
// SGD and frequency 1 equals one node training on the combined batch; and the refusals: no
// secret, a secret file others can read, a port already taken.
#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QProcess>
#include <QTemporaryDir>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine_process.h"

namespace {

const char* kModel = R"({"name":"mn","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.1},
  "layers":[{"type":"dense","units":12,"activation":"tanh"},{"type":"output","units":3}]})";
// A graph (issue 22): the input read by two branches, one branch read twice (fan-out), joined by
// add and concatenate (fan-in). No batch norm: averaging equals one machine only where a batch of
// 16 computes what two batches of 8 do.
const char* kGraphModel = R"({"name":"mng","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.1},
  "layers":[{"type":"dense","name":"a","units":12,"activation":"tanh"},
            {"type":"dense","name":"b","inputs":"input","units":12,"activation":"sigmoid"},
            {"type":"add","name":"sum","inputs":["a","b"]},
            {"type":"dense","name":"c","inputs":"a","units":6,"activation":"relu"},
            {"type":"concatenate","name":"cat","inputs":["sum","c"]},
            {"type":"output","units":3}]})";
// Batch norm in a graph: its running statistics travel in the update vector (as DL4J's do), so
// gradient sharing keeps them equal on every replica too (before, each node blended its own).
const char* kNormGraphModel = R"({"name":"mnb","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.1},
  "layers":[{"type":"dense","name":"a","units":12,"activation":"identity"},
            {"type":"batch_norm","name":"bn"},
            {"type":"activation","name":"relu","activation":"relu"},
            {"type":"dense","name":"b","inputs":"input","units":12,"activation":"tanh"},
            {"type":"add","name":"sum","inputs":["relu","b"]},
            {"type":"output","units":3}]})";

// Two inputs (the CSV's 16 features split 10 + 6) and two outputs (an auxiliary head on one
// branch, trained toward the same classes): the loss is the sum of both.
const char* kTwoInputModel = R"({"name":"mni","input":[{"name":"left","size":10},{"name":"right","size":6}],
  "outputs":["main","aux"],"updater":{"type":"sgd","learning_rate":0.1},
  "layers":[{"type":"dense","name":"l","inputs":"left","units":8,"activation":"tanh"},
            {"type":"dense","name":"r","inputs":"right","units":8,"activation":"sigmoid"},
            {"type":"output","name":"aux","inputs":"r","units":3},
            {"type":"concatenate","name":"cat","inputs":["l","r"]},
            {"type":"output","name":"main","units":3}]})";

}  // namespace

class TestMultiNode : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void gradient_sharing_replicas_equal_data();
    void gradient_sharing_replicas_equal();
    void distributed_predict_equals_single_node();
    void averaging_equals_combined_batch_data();
    void averaging_equals_combined_batch();
    void topologies_relay_and_reduce_data();
    void topologies_relay_and_reduce();
    void refusals_data();
    void refusals();

private:
    QString path(const QString& n) const { return dir_.filePath(n); }
    QStringList node_args(int rank, const QString& nodes, const QString& save, const QStringList& extra,
                          const QString& model = "mn.json") const {
        return QStringList{"train", "--model", path(model), "--data", path("data.csv"), "--epochs", "2", "--batch", "8",
                           "--seed", "3", "--threads", "1", "--nodes", nodes, "--node-rank", QString::number(rank),
                           "--secret-file", path("secret"), "--save", save} + extra;
    }
    QTemporaryDir dir_;
};

void TestMultiNode::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY(write_file(path("mn.json"), kModel));
    QVERIFY(write_file(path("mng.json"), kGraphModel));
    QVERIFY(write_file(path("mnb.json"), kNormGraphModel));
    QVERIFY(write_file(path("mni.json"), kTwoInputModel));
    QVERIFY(write_file(path("secret"), "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"));
    QVERIFY(write_file(path("data.csv"), test_support::three_class_csv(96)));
}

void TestMultiNode::gradient_sharing_replicas_equal_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("prefix");
    QTest::newRow("layer stack") << "mn.json" << "gs";
    QTest::newRow("graph") << "mng.json" << "graph_gs";
    QTest::newRow("graph with batch norm") << "mnb.json" << "bn_gs";
    QTest::newRow("two inputs, two outputs") << "mni.json" << "io_gs";
}

void TestMultiNode::gradient_sharing_replicas_equal() {
    QFETCH(QString, model);
    QFETCH(QString, prefix);
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    const QStringList gs{"--strategy", "gradient-sharing", "--threshold-algorithm", "fixed:0.01", "--residual", "none"};
    const auto runs = run_nodes({node_args(0, nodes, path(prefix + "0.thr"), gs, model),
                                 node_args(1, nodes, path(prefix + "1.thr"), gs, model)});
    for (int node = 0; node < 2; ++node) {
        const auto& r = runs[node];
        QVERIFY2(r.finished && r.exit_code == 0, qPrintable(r.summary()));
        QVERIFY2(r.contract_errors.isEmpty(), qPrintable(r.contract_errors.join('\n')));
        QVERIFY2(r.of("warning").isEmpty(), qPrintable(r.summary()));
        for (const auto& e : r.events) QCOMPARE(e.value("node").toInt(), node);
        const auto totals = r.of("run_finished").last();
        QVERIFY2(totals.value("bytes_tx").toDouble() > 0 && totals.value("bytes_rx").toDouble() > 0, "traffic counted");
        QCOMPARE(totals.value("dropped").toInt(), 0);
        // The final reconcile makes the replicas equal whatever came before it: how far apart they
        // were before is what shows the drain delivered every message (a broken drain leaves them
        // 1e-3 apart here, and `compare` below would still pass).
        QVERIFY2(totals.contains("reconcile_gap"), qPrintable(r.summary()));
        QVERIFY2(totals.value("reconcile_gap").toDouble() <= 1e-5,
                 qPrintable(QString("node %1: replicas %2 apart before the reconcile, at %3")
                                .arg(node).arg(totals.value("reconcile_gap").toDouble())
                                .arg(totals.value("reconcile_gap_at").toString())));
    }
    // Distributed evaluation: each node evaluates its shard, node 0 reports the merged result
    // over all 96 samples once per epoch; node 1 reports none.
    QCOMPARE(runs[0].of("epoch_end").size(), 2);
    QCOMPARE(runs[1].of("epoch_end").size(), 0);
    for (const auto& e : runs[0].of("epoch_end")) {
        QCOMPARE(e.value("count").toInt(), 96);
        QCOMPARE(e.value("nodes_evaluated").toInt(), 2);
        int total = 0;
        for (const auto& row : e.value("confusion").toArray())
            for (const auto& v : row.toArray()) total += v.toInt();
        QCOMPARE(total, 96);
    }
    const auto cmp = run_engine({"compare", path(prefix + "0.thr"), path(prefix + "1.thr"), "--tolerance", "1e-5"});
    QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
}

void TestMultiNode::distributed_predict_equals_single_node() {
    if (!QFile::exists(path("gs0.thr"))) QSKIP("needs the model gradient_sharing_replicas_equal saves");
    const auto single = run_engine({"predict", "--model-file", path("gs0.thr"), "--data", path("data.csv")});
    QVERIFY2(single.exit_code == 0, qPrintable(single.summary()));
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    QList<QStringList> args;
    for (int rank = 0; rank < 2; ++rank)
        args << QStringList{"predict", "--model-file", path("gs0.thr"), "--data", path("data.csv"), "--nodes", nodes,
                            "--node-rank", QString::number(rank), "--secret-file", path("secret")};
    const auto runs = run_nodes(args);
    for (const auto& r : runs) QVERIFY2(r.finished && r.exit_code == 0, qPrintable(r.summary()));
    // Node 0 prints all 96 lines in input order, exactly what one node prints; node 1 prints none.
    QCOMPARE(runs[0].stdout_text, single.stdout_text);
    QCOMPARE(single.events.size(), 96);
    QVERIFY(runs[1].stdout_text.isEmpty());
}

void TestMultiNode::averaging_equals_combined_batch_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("prefix");
    QTest::newRow("layer stack") << "mn.json" << "pa";
    QTest::newRow("graph") << "mng.json" << "graph_pa";
    QTest::newRow("two inputs, two outputs") << "mni.json" << "io_pa";
}

void TestMultiNode::averaging_equals_combined_batch() {
    QFETCH(QString, model);
    QFETCH(QString, prefix);
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    const QStringList pa{"--strategy", "parameter-averaging", "--averaging-frequency", "1"};
    const auto runs = run_nodes({node_args(0, nodes, path(prefix + "0.thr"), pa, model),
                                 node_args(1, nodes, path(prefix + "1.thr"), pa, model)});
    for (const auto& r : runs) QVERIFY2(r.finished && r.exit_code == 0, qPrintable(r.summary()));
    // One node, batch 16 = the two nodes' batches of 8 together (strided shards, same order).
    const QString single_file = path(prefix + "_single.thr");
    const auto single = run_engine({"train", "--model", path(model), "--data", path("data.csv"), "--epochs", "2",
                                    "--batch", "16", "--seed", "3", "--threads", "1", "--save", single_file});
    QVERIFY2(single.exit_code == 0, qPrintable(single.summary()));
    for (const QString f : {prefix + "0.thr", prefix + "1.thr"}) {
        const auto cmp = run_engine({"compare", path(f), single_file, "--tolerance", "1e-5"});
        QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
    }
    // ... and the comparison is not vacuous: training moved the parameters.
    const QString early = path(prefix + "_early.thr");
    const auto init = run_engine({"train", "--model", path(model), "--data", path("data.csv"), "--epochs", "1",
                                  "--batch", "16", "--seed", "3", "--limit", "16", "--save", early});
    QVERIFY(init.exit_code == 0);
    QCOMPARE(run_engine({"compare", early, single_file, "--tolerance", "1e-3"}).exit_code, 1);
}

void TestMultiNode::topologies_relay_and_reduce_data() {
    QTest::addColumn<QString>("topology");
    QTest::addColumn<int>("nodes");
    QTest::addColumn<QList<int>>("relays");  // the nodes that pass messages on
    QTest::addColumn<int>("limit");          // samples: a whole number of steps for every node
    // Relay: a star on node 0. Tree, fanout 2 over 4 nodes: 0 -> 1, 2; 1 -> 3. Tree, fanout 1:
    // the chain 0 - 1 - 2, the longest path for its size. Auto over 9 nodes: messages in a mesh,
    // averaging rounds in a tree of fanout 4 (0 -> 1..4, 1 -> 5..8).
    QTest::newRow("relay, 3 nodes") << "relay" << 3 << QList<int>{0} << 96;
    QTest::newRow("tree fanout 2, 4 nodes") << "tree:2" << 4 << QList<int>{0, 1} << 96;
    QTest::newRow("tree fanout 1, 3 nodes") << "tree:1" << 3 << QList<int>{1} << 96;
    QTest::newRow("auto, 9 nodes") << "auto" << 9 << QList<int>{} << 72;
}

// Every node's replica ends equal with gradient sharing whatever the route, only the relays pass
// messages on; and parameter averaging reduced up the tree equals one node on the combined batch.
void TestMultiNode::topologies_relay_and_reduce() {
    QFETCH(QString, topology);
    QFETCH(int, nodes);
    QFETCH(QList<int>, relays);
    QFETCH(int, limit);
    QStringList top{"--topology", topology.section(':', 0, 0), "--limit", QString::number(limit)};
    if (topology.contains(':')) top << "--fanout" << topology.section(':', 1);
    const auto ports = free_node_ports(nodes);
    QStringList endpoints;
    for (int p : ports) endpoints << QString("127.0.0.1:%1").arg(p);
    const QString list = endpoints.join(',');
    const QStringList gs = QStringList{"--strategy", "gradient-sharing", "--threshold-algorithm", "fixed:0.01",
                                       "--residual", "none"} + top;
    QList<QStringList> args;
    for (int rank = 0; rank < nodes; ++rank) args << node_args(rank, list, path(QString("top%1.thr").arg(rank)), gs);
    auto runs = run_nodes(args);
    for (int node = 0; node < nodes; ++node) {
        check_finished_ok(runs[node], node);
        if (QTest::currentTestFailed()) return;
        QVERIFY2(runs[node].of("warning").isEmpty(), qPrintable(runs[node].summary()));
        // run_started names the topology the node runs (auto resolves to what it chose).
        const QString expected = topology == "relay"    ? "relay"
                                 : topology == "auto"   ? "mesh, averaging in a tree (fanout 4)"
                                                        : "tree (fanout " + topology.section(':', 1) + ")";
        QCOMPARE(runs[node].of("run_started").first().value("topology").toString(), expected);
        const double relayed = runs[node].of("run_finished").last().value("relayed").toDouble();
        QVERIFY2(relays.contains(node) ? relayed > 0 : relayed == 0,
                 qPrintable(QString("node %1 relayed %2 messages").arg(node).arg(relayed)));
    }
    for (int node = 1; node < nodes; ++node) {
        const auto cmp = run_engine({"compare", path("top0.thr"), path(QString("top%1.thr").arg(node)), "--tolerance", "1e-5"});
        QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
    }

    const QStringList pa = QStringList{"--strategy", "parameter-averaging", "--averaging-frequency", "1"} + top;
    args.clear();
    for (int rank = 0; rank < nodes; ++rank) args << node_args(rank, list, path(QString("tpa%1.thr").arg(rank)), pa);
    runs = run_nodes(args);
    for (int node = 0; node < nodes; ++node) {
        check_finished_ok(runs[node], node);
        if (QTest::currentTestFailed()) return;
    }
    const auto single = run_engine({"train", "--model", path("mn.json"), "--data", path("data.csv"), "--epochs", "2",
                                    "--batch", QString::number(8 * nodes), "--seed", "3", "--threads", "1", "--limit",
                                    QString::number(limit), "--save", path("tsingle.thr")});
    QVERIFY2(single.exit_code == 0, qPrintable(single.summary()));
    for (int node = 0; node < nodes; ++node) {
        const auto cmp = run_engine({"compare", path(QString("tpa%1.thr").arg(node)), path("tsingle.thr"), "--tolerance", "1e-5"});
        QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
    }
}

void TestMultiNode::refusals_data() {
    QTest::addColumn<QString>("setup");
    QTest::addColumn<QString>("expected");
    QTest::newRow("no secret") << "no-secret" << "THRESHER_SECRET";
    QTest::newRow("secret readable by others") << "open-secret" << "open-secret";
    QTest::newRow("port taken") << "port" << "in use";
    QTest::newRow("node rank outside --nodes") << "rank" << "--node-rank 5";
}

void TestMultiNode::refusals() {
    QFETCH(QString, setup);
    QFETCH(QString, expected);
    const auto ports = free_node_ports(2);
    const int port = ports[0];
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(port).arg(ports[1]);
    QStringList args = node_args(0, nodes, path("x.thr"), {});
    int holder = -1;
    if (setup == "no-secret") {
        const int i = args.indexOf("--secret-file");
        args.remove(i, 2);
    } else if (setup == "open-secret") {
        QVERIFY(write_file(path("open-secret"), "00112233445566778899aabbccddeeff\n",
                           QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup | QFile::ReadOther));
        args[args.indexOf("--secret-file") + 1] = path("open-secret");
    } else if (setup == "port") {
        holder = ::socket(AF_INET, SOCK_DGRAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        a.sin_port = htons(static_cast<uint16_t>(port));
        QVERIFY(::bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    } else if (setup == "rank") {
        args[args.indexOf("--node-rank") + 1] = "5";
    }
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("THRESHER_SECRET");
    p.setProcessEnvironment(env);
    p.start(engine_binary(), args);
    QVERIFY(p.waitForFinished(30000));
    if (holder >= 0) ::close(holder);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() != 0, qPrintable(err));
    QVERIFY2(err.contains(expected), qPrintable(err));
}

QTEST_GUILESS_MAIN(TestMultiNode)
#include "test_multi_node.moc"
