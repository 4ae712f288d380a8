// RunSpec: valid specs (model file, inline model, SSH hosts and hostfile) load with their
// defaults; every kind of bad spec is refused with a message naming the file and the JSON path;
// to_json() round-trips; engine_arguments() builds the engine command line each node needs.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <functional>
#include <thread>
#include <tuple>

#include "hostfile.h"
#include "run_spec.h"

using thresher::launcher::ClusterSettings;
using thresher::launcher::EngineFiles;
using thresher::launcher::RunSpec;
using thresher::launcher::SpecError;

namespace {

const char* kModel = R"({"name":"mn","input":{"size":16},"layers":[{"type":"dense","units":12},{"type":"output","units":3}]})";

// A complete local spec; the bad-spec rows change one thing in it.
const char* kLocal = R"({
  "format": "thresher-run", "version": 1, "name": "tiny",
  "model": "../models/m.json", "data": "../data/d.csv",
  "training": {"strategy": "gradient-sharing", "epochs": 2, "batch": 8, "seed": 7, "threshold": 0.002,
               "threshold_algorithm": "fixed", "residual": "none", "max_staleness": 2, "limit": 64, "threads": 1},
  "cluster": {"kind": "local", "nodes": 2, "workers_per_node": 2},
  "udp_port": 45000, "save": "out/tiny.thr"
})";

const char* kSsh = R"({
  "format": "thresher-run", "version": 1, "name": "cluster",
  "model": "../models/m.json",
  "training": {"strategy": "parameter-averaging", "averaging_frequency": 3, "save_updater": false},
  "cluster": {"kind": "ssh",
              "hosts": [{"address": "gpu1", "port": 2222, "user": "ann", "identity_file": "~/.ssh/id_ed25519", "workers": 2}],
              "hostfile": "hosts.txt"}
})";

const char* kSlurm = R"({
  "format": "thresher-run", "version": 1, "name": "queued",
  "model": "../models/m.json",
  "training": {"epochs": 1},
  "cluster": {"kind": "slurm", "partition": "gpu", "nodes": 2, "tasks_per_node": 2, "cpus_per_task": 4,
              "gpus_per_node": 2, "time": "1-02:03:04", "account": "lab", "qos": "high", "constraint": "a100",
              "sbatch_args": ["--mem=8G", "--exclusive"], "workers_per_node": 2, "network_mask": "10.1.0.0/16"},
  "udp_port": 45000, "save": "out/q.thr"
})";

QJsonObject parse(const QByteArray& text) { return QJsonDocument::fromJson(text).object(); }

// kLocal with `key` (top level or "section.key") set to the JSON `value`, or removed when
// `value` is empty.
QByteArray patched(const QString& key, const QByteArray& value, const QByteArray& base = kLocal) {
    QJsonObject o = parse(base);
    const QJsonValue v = value.isEmpty() ? QJsonValue() : QJsonDocument::fromJson("[" + value + "]").array().at(0);
    const QStringList parts = key.split('.');
    if (parts.size() == 1) {
        if (value.isEmpty()) o.remove(key); else o[key] = v;
    } else {
        QJsonObject inner = o.value(parts[0]).toObject();
        if (value.isEmpty()) inner.remove(parts[1]); else inner[parts[1]] = v;
        o[parts[0]] = inner;
    }
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

bool write(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

}  // namespace

class TestRunSpec : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void local_spec_loads();
    void defaults();
    void inline_model();
    void ssh_spec_loads();
    void bad_specs_data();
    void bad_specs();
    void hostfile_lines_data();
    void hostfile_lines();
    void round_trip_data();
    void round_trip();
    void validate_typed_values();
    void engine_arguments_local();
    void engine_arguments_strategies_data();
    void engine_arguments_strategies();
    void engine_arguments_need_files();
    void engine_arguments_over_ssh();
    void shard_placement();
    void slurm_spec_loads();
    void slurm_times_data();
    void slurm_times();
    void engine_arguments_on_slurm();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    RunSpec load_text(const QByteArray& text, const QString& name = "runs/spec.json") {
        const QString file = path(name);
        if (!write(file, text)) qFatal("cannot write %s", qPrintable(file));
        return RunSpec::load(file);
    }
    QTemporaryDir dir_;
};

void TestRunSpec::initTestCase() {
    QVERIFY(dir_.isValid());
    for (const char* d : {"runs", "models", "data"}) QVERIFY(QDir(dir_.path()).mkpath(d));
    QVERIFY(write(path("models/m.json"), kModel));
    QVERIFY(write(path("data/d.csv"), "1,2,0\n3,4,1\n"));
    // A shard set as validate() recognises one: a folder with index.json.
    QVERIFY(QDir(dir_.path()).mkpath("data/shards"));
    QVERIFY(write(path("data/shards/index.json"), R"({"format":"thresher-shards"})"));
    QVERIFY(write(path("runs/hosts.txt"), "# two more hosts\ngpu2 slots=2\n\n10.0.0.3 slots=2 max_slots=4  # spare\n"));
}

void TestRunSpec::local_spec_loads() {
    const RunSpec s = load_text(kLocal);
    QCOMPARE(s.name, QString("tiny"));
    QCOMPARE(s.model_file(), path("models/m.json"));
    QCOMPARE(s.data_argument(), path("data/d.csv"));
    QCOMPARE(s.save_file(), path("runs/out/tiny.thr"));
    QCOMPARE(s.training.epochs, 2);
    QCOMPARE(s.training.batch, 8);
    QCOMPARE(s.training.seed, std::optional<qint64>(7));
    QCOMPARE(s.training.threshold, std::optional<double>(0.002));
    QCOMPARE(s.training.limit, std::optional<qint64>(64));
    QCOMPARE(s.node_count(), 2);
    QCOMPARE(s.workers_per_node(), 2);
    QCOMPARE(s.total_workers(), 4);
    QCOMPARE(s.node_endpoints(), QStringList({"127.0.0.1:45000", "127.0.0.1:45001"}));
}

void TestRunSpec::defaults() {
    const RunSpec s = load_text(R"({"format":"thresher-run","version":1,"model":"../models/m.json"})", "runs/minimal.json");
    QCOMPARE(s.name, QString("minimal"));  // the file's name
    QCOMPARE(s.data, QString("fashion-mnist"));
    QCOMPARE(s.data_argument(), QString("fashion-mnist"));
    QCOMPARE(s.training, thresher::launcher::TrainingSettings{});
    QCOMPARE(s.training.strategy, QString("gradient-sharing"));
    QCOMPARE(s.training.epochs, 1);
    QCOMPARE(s.training.batch, 64);
    QCOMPARE(s.cluster.kind, ClusterSettings::Kind::Local);
    QCOMPARE(s.node_count(), 1);
    QCOMPARE(s.udp_port, 40123);
    QVERIFY(s.save.isEmpty());
}

void TestRunSpec::inline_model() {
    QJsonObject o = parse(kLocal);
    o["model"] = parse(kModel);
    const RunSpec s = load_text(QJsonDocument(o).toJson());
    QVERIFY(s.model_is_inline());
    QVERIFY(s.model_file().isEmpty());
    QCOMPARE(s.model_inline, parse(kModel));
    QCOMPARE(s.to_json().value("model").toObject(), parse(kModel));
}

void TestRunSpec::ssh_spec_loads() {
    const RunSpec s = load_text(kSsh);
    QCOMPARE(s.cluster.kind, ClusterSettings::Kind::Ssh);
    QCOMPARE(s.cluster.hosts.size(), 1);
    QCOMPARE(s.cluster.hosts[0].port, 2222);
    QCOMPARE(s.cluster.hosts[0].user, QString("ann"));
    QCOMPARE(s.cluster.hosts[0].identity_file, QString("~/.ssh/id_ed25519"));
    const auto hosts = s.cluster.all_hosts();
    QCOMPARE(hosts.size(), 3);
    QCOMPARE(hosts[1].address, QString("gpu2"));
    QCOMPARE(hosts[1].port, 22);
    QCOMPARE(hosts[2].address, QString("10.0.0.3"));
    QCOMPARE(hosts[2].workers, 2);
    QCOMPARE(s.node_count(), 3);
    QCOMPARE(s.total_workers(), 6);
    // Nodes on different hosts share one port number.
    QCOMPARE(s.node_endpoints(), QStringList({"gpu1:40123", "gpu2:40123", "10.0.0.3:40123"}));
}

void TestRunSpec::bad_specs_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("expected");  // what follows "<file>" in the message
    QTest::newRow("batch 0") << patched("training.batch", "0") << ": training.batch: must be a positive integer, got 0";
    QTest::newRow("device not a device") << patched("training.device", "\"gpu0\"")
                                         << ": training.device \"gpu0\": entry \"gpu0\" is not a device";
    QTest::newRow("device as a number") << patched("training.device", "1") << ": training.device: must be a non-empty string, got 1";
    QTest::newRow("three devices for two workers") << patched("training.device", "\"cuda:0,cuda:1,cuda:2\"")
                                                   << ": training.device \"cuda:0,cuda:1,cuda:2\" lists 3 devices for 2 "
                                                      "worker(s) on this node";
    QTest::newRow("epochs as a string") << patched("training.epochs", "\"2\"") << ": training.epochs: must be a positive integer, got \"2\"";
    QTest::newRow("epochs fractional") << patched("training.epochs", "1.5") << ": training.epochs: must be a positive integer, got 1.5";
    QTest::newRow("unknown strategy") << patched("training.strategy", "\"ring\"")
                                      << ": training.strategy: must be one of gradient-sharing, parameter-averaging, single; got \"ring\"";
    QTest::newRow("misspelt field") << patched("training.epoch", "3") << ": training.epoch: unknown field (known: strategy, epochs,";
    QTest::newRow("unknown top-level field") << patched("udp", "1") << ": udp: unknown field";
    QTest::newRow("negative seed") << patched("training.seed", "-1") << ": training.seed: must be a non-negative integer below 2^53, got -1";
    QTest::newRow("threshold 0") << patched("training.threshold", "0") << ": training.threshold: must be a positive number, got 0";
    QTest::newRow("threshold algorithm") << patched("training.threshold_algorithm", "\"magic:1\"")
                                         << ": training.threshold_algorithm: \"magic:1\": unknown threshold algorithm \"magic\" (expected fixed[:τ], adaptive";
    // The engine's rules, in the spec's words (codec/threshold_spec.h).
    QTest::newRow("fixed without τ") << patched("training", R"({"threshold_algorithm":"fixed"})")
                                     << ": training.threshold_algorithm: \"fixed\" needs its threshold: fixed:<τ>, or training.threshold";
    QTest::newRow("τ twice") << patched("training", R"({"threshold":0.01,"threshold_algorithm":"adaptive:1e-3"})")
                             << ": training.threshold: 0.01 conflicts with training.threshold_algorithm \"adaptive:0.001\", which sets τ already";
    QTest::newRow("threshold numbers") << patched("training.threshold_algorithm", "\"adaptive:1e-3:0.5:0.1\"")
                                       << ": training.threshold_algorithm: \"adaptive:1e-3:0.5:0.1\": the minimum density 0.5 is above the maximum density 0.1";
    QTest::newRow("threshold object") << patched("training.threshold_algorithm", R"({"algorithm":"target","min_density":0.1})")
                                      << ": training.threshold_algorithm.min_density: not a field of target";
    QTest::newRow("residual") << patched("training.residual", "\"trim\"")
                              << ": training.residual: \"trim\": unknown residual processing (expected clip, clip:<every>:<multiple> or none)";
    QTest::newRow("residual numbers") << patched("training.residual", "\"clip:0:5\"") << ": training.residual: \"clip:0:5\": ";
    QTest::newRow("max_staleness negative") << patched("training.max_staleness", "-1")
                                            << ": training.max_staleness: must be a whole number from 0 to 1000, or \"off\", got -1";
    QTest::newRow("max_staleness word") << patched("training.max_staleness", "\"never\"")
                                        << ": training.max_staleness: must be a whole number of iterations (0: synchronous) or \"off\", got \"never\"";
    QTest::newRow("save_updater") << patched("training.save_updater", "\"yes\"") << ": training.save_updater: must be true or false, got \"yes\"";
    QTest::newRow("threads negative") << patched("training.threads", "-2") << ": training.threads: must be a non-negative integer (0: automatic), got -2";
    QTest::newRow("training not an object") << patched("training", "[1]") << ": training: must be an object, got an array";
    QTest::newRow("single on two nodes") << patched("training.strategy", "\"single\"") << ": training.strategy: \"single\" trains one worker";
    QTest::newRow("no format") << patched("format", "") << ": format: must be \"thresher-run\", got nothing";
    QTest::newRow("a model file") << QByteArray(kModel).replace("{\"name\"", "{\"format\":\"thresher-model\",\"name\"")
                                  << ": format: must be \"thresher-run\", got \"thresher-model\" (this looks like a model file";
    QTest::newRow("version 2") << patched("version", "2") << ": version: must be 1 (the only version so far), got 2";
    QTest::newRow("no version") << patched("version", "") << ": version: missing (1)";
    QTest::newRow("no model") << patched("model", "") << ": model: missing (a model file path, or an inline model object)";
    QTest::newRow("model file missing") << patched("model", "\"nope.json\"") << ": model: file not found: " + path("runs/nope.json");
    QTest::newRow("model a number") << patched("model", "3") << ": model: must be a model file path or an inline model object, got 3";
    QTest::newRow("model inline but empty") << patched("model", "{}") << ": model: the inline model is empty";
    QTest::newRow("data missing") << patched("data", "\"nowhere.csv\"") << ": data: not found: " + path("runs/nowhere.csv");
    QTest::newRow("data empty string") << patched("data", "\"\"") << ": data: must be a non-empty string, got \"\"";
    QTest::newRow("udp_port too large") << patched("udp_port", "70000") << ": udp_port: must be an integer in 1..65535, got 70000";
    QTest::newRow("local ports past 65535") << patched("udp_port", "65535") << ": udp_port: 2 local nodes use ports 65535..65536, past 65535";
    QTest::newRow("cluster kind") << patched("cluster.kind", "\"pbs\"") << ": cluster.kind: must be one of local, ssh, slurm; got \"pbs\"";
    QTest::newRow("slurm: partition on a local cluster") << patched("cluster.partition", "\"main\"")
                                                         << ": cluster.partition: only for \"kind\": \"slurm\"";
    QTest::newRow("slurm: hosts") << patched("cluster", R"({"kind":"slurm","hosts":[{"address":"a"}]})")
                                  << ": cluster.hosts: only for \"kind\": \"ssh\"";
    QTest::newRow("slurm: tasks 0") << patched("cluster", R"({"kind":"slurm","tasks_per_node":0})")
                                    << ": cluster.tasks_per_node: must be an integer in 1..1024, got 0";
    QTest::newRow("slurm: cpus as a string") << patched("cluster", R"({"kind":"slurm","cpus_per_task":"4"})")
                                             << ": cluster.cpus_per_task: must be a positive integer, got \"4\"";
    QTest::newRow("slurm: negative gpus") << patched("cluster", R"({"kind":"slurm","gpus_per_node":-1})")
                                          << ": cluster.gpus_per_node: must be an integer in 0..1024, got -1";
    QTest::newRow("slurm: bad time") << patched("cluster", R"({"kind":"slurm","time":"1h"})")
                                     << ": cluster.time: must be a positive Slurm time limit";
    QTest::newRow("slurm: zero time") << patched("cluster", R"({"kind":"slurm","time":"0"})")
                                      << ": cluster.time: must be a positive Slurm time limit";
    QTest::newRow("slurm: sbatch_args not a list") << patched("cluster", R"({"kind":"slurm","sbatch_args":"--mem=4G"})")
                                                   << ": cluster.sbatch_args: must be an array of sbatch options";
    QTest::newRow("slurm: sbatch_args item") << patched("cluster", R"({"kind":"slurm","sbatch_args":["--mem=4G","4G"]})")
                                             << ": cluster.sbatch_args[1]: must be one sbatch option on one line";
    QTest::newRow("slurm: network mask") << patched("cluster", R"({"kind":"slurm","network_mask":"10.0.0.0"})")
                                         << ": cluster.network_mask: must be an IPv4 network in CIDR form";
    QTest::newRow("slurm: field misspelt") << patched("cluster", R"({"kind":"slurm","partiton":"main"})")
                                           << ": cluster.partiton: unknown field";
    QTest::newRow("slurm: ports past 65535") << patched("cluster", R"({"kind":"slurm","tasks_per_node":4})").replace("45000", "65534")
                                             << ": udp_port: 4 tasks per node use ports 65534..65537, past 65535";
    QTest::newRow("topology") << patched("cluster.topology", "\"ring\"")
                              << ": cluster.topology: must be one of auto, mesh, relay, tree; got \"ring\"";
    QTest::newRow("fanout 0") << patched("cluster.fanout", "0") << ": cluster.fanout: must be an integer in 1..1024, got 0";
    QTest::newRow("overlap without staleness") << patched("training", R"({"max_staleness":0,"overlap_comm":"encode"})")
                                               << ": training.overlap_comm: \"encode\" needs max_staleness 1 or more";
    QTest::newRow("overlap unknown") << patched("training", R"({"overlap_comm":true})")
                                     << ": training.overlap_comm: must be a non-empty string";
    QTest::newRow("augment unknown") << patched("training", R"({"augment":"rotate:5"})")
                                     << ": training.augment: augmentation \"rotate:5\": unknown part \"rotate:5\"";
    QTest::newRow("normalize unknown") << patched("training", R"({"normalize":"zscore"})") << ": training.normalize:";
    QTest::newRow("top_k negative") << patched("training", R"({"top_k":-1})") << ": training.top_k:";
    QTest::newRow("link loss 1") << patched("cluster.link", R"({"loss":1})")
                                 << ": cluster.link.loss: must be a probability in [0, 1), got 1";
    QTest::newRow("link rate text") << patched("cluster.link", R"({"rate_mbit":"1gbit"})")
                                    << ": cluster.link.rate_mbit: must be megabits per second";
    QTest::newRow("link field misspelt") << patched("cluster.link", R"({"delay":2})") << ": cluster.link.delay: unknown field";
    QTest::newRow("local nodes 0") << patched("cluster.nodes", "0") << ": cluster.nodes: must be a positive integer, got 0";
    QTest::newRow("hosts on a local cluster") << patched("cluster.hosts", "[]") << ": cluster.hosts: only for \"kind\": \"ssh\"";
    QTest::newRow("ssh: no hosts") << patched("cluster", R"({"kind":"ssh"})")
                                   << ": cluster.hosts: an SSH cluster needs at least one host";
    QTest::newRow("ssh: nodes field") << patched("cluster", R"({"kind":"ssh","nodes":2,"hosts":[{"address":"a"}]})")
                                      << ": cluster.nodes: only for \"kind\": \"local\"";
    QTest::newRow("ssh: host without address") << patched("cluster", R"({"kind":"ssh","hosts":[{"port":22}]})")
                                               << ": cluster.hosts[0].address: missing (a non-empty string)";
    QTest::newRow("ssh: port 0") << patched("cluster", R"({"kind":"ssh","hosts":[{"address":"a"},{"address":"b","port":0}]})")
                                 << ": cluster.hosts[1].port: must be an integer in 1..65535, got 0";
    QTest::newRow("ssh: host not an object") << patched("cluster", R"({"kind":"ssh","hosts":["a"]})")
                                             << ": cluster.hosts[0]: must be an object";
    QTest::newRow("ssh: host field misspelt") << patched("cluster", R"({"kind":"ssh","hosts":[{"address":"a","usr":"x"}]})")
                                              << ": cluster.hosts[0].usr: unknown field";
    QTest::newRow("ssh: uneven workers") << patched("cluster", R"({"kind":"ssh","hosts":[{"address":"a"},{"address":"b","workers":2}]})")
                                         << ": cluster.hosts[1].workers: every host needs the same number of workers";
    QTest::newRow("ssh: hostfile missing") << patched("cluster", R"({"kind":"ssh","hostfile":"none.txt"})")
                                           << ": cluster.hostfile: none.txt: cannot read";
    QTest::newRow("ssh: hostfile bad slots") << patched("cluster", R"({"kind":"ssh","hostfile":"bad-hosts.txt"})")
                                             << ": cluster.hostfile: bad-hosts.txt:2: slots must be a positive integer, got \"four\"";
    QTest::newRow("shard placement unknown") << patched("training.shard_placement", "\"per-host\"")
                                             << ": training.shard_placement: must be one of shared, per-node; got \"per-host\"";
    QTest::newRow("per-node on a CSV") << patched("training.shard_placement", "\"per-node\"")
                                       << ": training.shard_placement: \"per-node\" needs a shard set as data (a folder with "
                                          "index.json that thresher-engine export wrote), got \"../data/d.csv\"";
    QTest::newRow("per-node on fashion-mnist") << patched("training.shard_placement", "\"per-node\"", patched("data", "\"fashion-mnist\""))
                                               << ": training.shard_placement: \"per-node\" needs a shard set as data";
    QTest::newRow("invalid JSON") << QByteArray("{\n  \"format\": \"thresher-run\",,\n}") << ":2:29: invalid JSON";
    QTest::newRow("not an object") << QByteArray("[1, 2]") << ": a run spec is a JSON object";
}

void TestRunSpec::bad_specs() {
    QFETCH(QByteArray, text);
    QFETCH(QString, expected);
    QVERIFY(write(path("runs/bad-hosts.txt"), "gpu1 slots=2\ngpu2 slots=four\n"));
    try {
        load_text(text, "runs/bad.json");
        QFAIL("accepted a bad spec");
    } catch (const SpecError& e) {
        const QString message = QString::fromStdString(e.what());
        QVERIFY2(message.startsWith(path("runs/bad.json") + expected), qPrintable(message));
    }
}

void TestRunSpec::hostfile_lines_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("expected");  // "address:workers ..." or the error
    QTest::newRow("slots") << QByteArray("a slots=2\nb slots=2\n") << "a:2 b:2";
    QTest::newRow("no slots: one worker") << QByteArray("a\n") << "a:1";
    QTest::newRow("comments, blanks, tabs") << QByteArray("# x\n\n\ta\tslots=3 # y\r\n") << "a:3";
    QTest::newRow("max_slots ignored") << QByteArray("a slots=1 max_slots=8\n") << "a:1";
    QTest::newRow("slots 0") << QByteArray("a\nb slots=0\n") << "h.txt:2: slots must be a positive integer, got \"0\"";
    QTest::newRow("unknown entry") << QByteArray("a gpus=2\n") << "h.txt:1: unknown entry \"gpus=2\"";
    QTest::newRow("empty") << QByteArray("# nothing\n") << "h.txt: no hosts";
}

void TestRunSpec::hostfile_lines() {
    QFETCH(QByteArray, text);
    QFETCH(QString, expected);
    QString got;
    try {
        QStringList parts;
        for (const auto& h : thresher::launcher::parse_hostfile(text, "h.txt")) parts << QString("%1:%2").arg(h.address).arg(h.workers);
        got = parts.join(' ');
    } catch (const SpecError& e) {
        got = QString::fromStdString(e.what());
    }
    QVERIFY2(got.startsWith(expected), qPrintable(got));
}

void TestRunSpec::round_trip_data() {
    QTest::addColumn<QByteArray>("text");
    QJsonObject inline_model = parse(kLocal);
    inline_model["model"] = parse(kModel);
    QTest::newRow("local, every field") << QByteArray(kLocal);
    QTest::newRow("minimal") << QByteArray(R"({"format":"thresher-run","version":1,"model":"../models/m.json"})");
    QTest::newRow("inline model") << QJsonDocument(inline_model).toJson();
    QTest::newRow("ssh hosts and hostfile") << QByteArray(kSsh);
    QTest::newRow("slurm, every field") << QByteArray(kSlurm);
    QTest::newRow("slurm, defaults") << patched("cluster", R"({"kind":"slurm"})");
    QTest::newRow("tree topology") << patched("cluster", R"({"kind":"local","nodes":3,"topology":"tree","fanout":3})");
    QTest::newRow("emulated link") << patched("cluster", R"({"kind":"local","nodes":2,"link":{"rate_mbit":1000,"delay_ms":2.5,"loss":0.01}})");
    QTest::newRow("threshold text") << patched("training.threshold_algorithm", "\"target:0.01\"");
    QTest::newRow("a GPU per worker") << patched("training.device", "\"cuda:0,cuda:1\"");
    QTest::newRow("one GPU") << patched("training.device", "\"cuda:1\"");
    QTest::newRow("threshold object") << patched("training.threshold_algorithm", R"({"algorithm":"adaptive","max_density":0.05})");
    QTest::newRow("threshold object, decay only") << patched("training.threshold_algorithm", R"({"algorithm":"target","decay":0.9})");
    QTest::newRow("data options") << patched("training", R"({"augment":"flip, crop:4","normalize":"standardize","top_k":3})");
    QTest::newRow("shards per node") << patched("training.shard_placement", "\"per-node\"", patched("data", "\"../data/shards\""));
    QTest::newRow("shards shared") << patched("training.shard_placement", "\"shared\"", patched("data", "\"../data/shards\""));
}

void TestRunSpec::round_trip() {
    QFETCH(QByteArray, text);
    const RunSpec s = load_text(text);
    const RunSpec again = RunSpec::from_json(s.to_json(), s.source, s.base_dir);
    QVERIFY(again == s);
    QCOMPARE(again.to_json(), s.to_json());
    // Through a file, as the GUI saves it.
    s.save_to(path("runs/saved.json"));
    RunSpec loaded = RunSpec::load(path("runs/saved.json"));
    QCOMPARE(loaded.source, path("runs/saved.json"));
    loaded.source = s.source;
    QVERIFY(loaded == s);
}

// validate() on values set in code, as the app's form sets them: each mistake is refused with
// the JSON path, and with exactly the words reading the JSON that spec would write gives.
void TestRunSpec::validate_typed_values() {
    using Change = std::function<void(RunSpec&)>;
    const QString source = path("runs/spec.json");
    const QList<std::tuple<const char*, Change, QString>> cases{
        {"batch 0", [](RunSpec& s) { s.training.batch = 0; }, "training.batch: must be a positive integer, got 0"},
        {"epochs -1", [](RunSpec& s) { s.training.epochs = -1; }, "training.epochs: must be a positive integer, got -1"},
        {"threads", [](RunSpec& s) { s.training.threads = 5000; },
         "training.threads: must be a non-negative integer (0: automatic), got 5000"},
        {"staleness", [](RunSpec& s) { s.training.max_staleness = 1001; },
         "training.max_staleness: must be a whole number from 0 to 1000, or \"off\", got 1001"},
        {"strategy", [](RunSpec& s) { s.training.strategy = "ring"; },
         "training.strategy: must be one of gradient-sharing, parameter-averaging, single; got \"ring\""},
        {"fixed without τ",
         [](RunSpec& s) {
             s.training.threshold.reset();
             s.training.threshold_algorithm = thresher::dist::parse_threshold_spec("fixed");
         },
         "training.threshold_algorithm: \"fixed\" needs its threshold: fixed:<τ>, or training.threshold"},
        {"τ twice", [](RunSpec& s) { s.training.threshold_algorithm = thresher::dist::parse_threshold_spec("fixed:0.1"); },
         "training.threshold: 0.002 conflicts with training.threshold_algorithm \"fixed:0.1\", which sets τ already"},
        {"residual", [](RunSpec& s) { s.training.residual = "clip:5"; },
         "training.residual: \"clip:5\": expected clip:<every>:<multiple>, e.g. clip:5:5"},
        {"encode without staleness",
         [](RunSpec& s) {
             s.training.overlap_comm = "encode";
             s.training.max_staleness = 0;
         },
         "training.overlap_comm: \"encode\" needs max_staleness 1 or more"},
        {"single on 4 workers", [](RunSpec& s) { s.training.strategy = "single"; }, "training.strategy: \"single\" trains one worker"},
        {"nodes 0", [](RunSpec& s) { s.cluster.nodes = 0; }, "cluster.nodes: must be a positive integer, got 0"},
        {"topology", [](RunSpec& s) { s.cluster.topology = "ring"; },
         "cluster.topology: must be one of auto, mesh, relay, tree; got \"ring\""},
        {"link loss", [](RunSpec& s) { s.cluster.link.loss = 1; }, "cluster.link.loss: must be a probability in [0, 1), got 1"},
        {"link rate", [](RunSpec& s) { s.cluster.link.rate_mbit = 0.001; },
         "cluster.link.rate_mbit: must be megabits per second in 0.008..1000000 (0: unlimited), got 0.001"},
        {"udp port", [](RunSpec& s) { s.udp_port = 70000; }, "udp_port: must be an integer in 1..65535, got 70000"},
        {"ports past 65535", [](RunSpec& s) { s.udp_port = 65535; }, "udp_port: 2 local nodes use ports 65535..65536, past 65535"},
        {"model gone", [](RunSpec& s) { s.model_path = "../models/gone.json"; }, "model: file not found: "},
        {"data gone", [](RunSpec& s) { s.data = "../data/gone.csv"; }, "data: not found: "},
        {"per-node on a CSV", [](RunSpec& s) { s.training.shard_placement = thresher::launcher::ShardPlacement::PerNode; },
         "training.shard_placement: \"per-node\" needs a shard set as data"},
        {"ssh without hosts", [](RunSpec& s) { s.cluster.kind = ClusterSettings::Kind::Ssh; },
         "cluster.hosts: an SSH cluster needs at least one host"},
        {"ssh host port",
         [](RunSpec& s) {
             s.cluster.kind = ClusterSettings::Kind::Ssh;
             s.cluster.hosts = {{"a", 22, {}, {}, 1}, {"b", 0, {}, {}, 1}};
         },
         "cluster.hosts[1].port: must be an integer in 1..65535, got 0"},
        {"ssh uneven workers",
         [](RunSpec& s) {
             s.cluster.kind = ClusterSettings::Kind::Ssh;
             s.cluster.hosts = {{"a", 22, {}, {}, 1}, {"b", 22, {}, {}, 2}};
         },
         "cluster.hosts[1].workers: every host needs the same number of workers"},
        {"slurm tasks",
         [](RunSpec& s) {
             s.cluster.kind = ClusterSettings::Kind::Slurm;
             s.cluster.slurm.tasks_per_node = 0;
         },
         "cluster.tasks_per_node: must be an integer in 1..1024, got 0"},
        {"slurm mask",
         [](RunSpec& s) {
             s.cluster.kind = ClusterSettings::Kind::Slurm;
             s.cluster.slurm.network_mask = "10.0.0.0";
         },
         "cluster.network_mask: must be an IPv4 network in CIDR form, e.g. \"10.0.0.0/24\", got \"10.0.0.0\""},
    };
    const RunSpec good = load_text(kLocal);
    good.validate();  // a loaded spec is valid
    for (const auto& [name, change, expected] : cases) {
        RunSpec s = good;
        change(s);
        QString typed, read;
        try {
            s.validate();
        } catch (const SpecError& e) {
            typed = QString::fromStdString(e.what());
        }
        QVERIFY2(typed.startsWith(source + ": " + expected), qPrintable(QString(name) + ": " + typed));
        try {
            (void)RunSpec::from_json(s.to_json(), s.source, s.base_dir);
        } catch (const SpecError& e) {
            read = QString::fromStdString(e.what());
        }
        QVERIFY2(read == typed, qPrintable(QString(name) + ": reading says: " + read));
    }
}

void TestRunSpec::engine_arguments_local() {
    const RunSpec s = load_text(kLocal);
    const EngineFiles files{{}, "/private/secret"};
    const QStringList a0 = s.engine_arguments(0, files), a1 = s.engine_arguments(1, files);
    const auto value = [](const QStringList& a, const QString& option) {
        const auto i = a.indexOf(option);
        return i >= 0 && i + 1 < a.size() ? a[i + 1] : QString("<absent>");
    };
    QCOMPARE(a0.first(), QString("train"));
    for (const auto& a : {a0, a1}) {
        QCOMPARE(value(a, "--model"), path("models/m.json"));
        QCOMPARE(value(a, "--data"), path("data/d.csv"));
        QCOMPARE(value(a, "--epochs"), QString("2"));
        QCOMPARE(value(a, "--batch"), QString("8"));
        QCOMPARE(value(a, "--seed"), QString("7"));
        QCOMPARE(value(a, "--limit"), QString("64"));
        QCOMPARE(value(a, "--threads"), QString("1"));
        QCOMPARE(value(a, "--workers-per-node"), QString("2"));
        QCOMPARE(value(a, "--strategy"), QString("gradient-sharing"));
        QCOMPARE(value(a, "--threshold"), QString("0.002"));
        QCOMPARE(value(a, "--threshold-algorithm"), QString("fixed"));
        QCOMPARE(value(a, "--residual"), QString("none"));
        QCOMPARE(value(a, "--max-staleness"), QString("2"));
        QCOMPARE(value(a, "--nodes"), QString("127.0.0.1:45000,127.0.0.1:45001"));
        QCOMPARE(value(a, "--secret-file"), QString("/private/secret"));
        QVERIFY(!a.contains("--averaging-frequency"));
    }
    QVERIFY(!a0.contains("--device"));  // the CPU, the engine's default
    RunSpec gpus = s;
    gpus.training.device = thresher::DeviceList::parse("cuda:0,cuda:1");
    QCOMPARE(value(gpus.engine_arguments(1, files), "--device"), QString("cuda:0,cuda:1"));
    QCOMPARE(value(a0, "--node-rank"), QString("0"));
    QCOMPARE(value(a1, "--node-rank"), QString("1"));
    // Only node 0 saves: local nodes would otherwise write the same file.
    QCOMPARE(value(a0, "--save"), path("runs/out/tiny.thr"));
    QVERIFY(!a1.contains("--save"));
    // Automatic threads split this machine's cores between the local nodes.
    const RunSpec automatic = load_text(patched("training.threads", "0"));
    QCOMPARE(value(automatic.engine_arguments(0, files), "--threads"),
             QString::number(std::max(1, int(std::thread::hardware_concurrency()) / 2)));
}

void TestRunSpec::engine_arguments_strategies_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QStringList>("present");
    QTest::addColumn<QStringList>("absent");
    QTest::newRow("parameter averaging") << QByteArray(kSsh)
        << QStringList{"--strategy parameter-averaging", "--averaging-frequency 3", "--save-updater false",
                       "--nodes gpu1:40123,gpu2:40123,10.0.0.3:40123", "--workers-per-node 2", "--threads 0"}
        << QStringList{"--threshold-algorithm", "--residual", "--save", "--seed", "--limit"};
    QTest::newRow("single node: no network, no secret")
        << patched("cluster", R"({"kind":"local","nodes":1,"workers_per_node":1})")
        << QStringList{"--strategy gradient-sharing", "--save " + path("runs/out/tiny.thr")}
        << QStringList{"--nodes", "--node-rank", "--secret-file"};
    QTest::newRow("single strategy")
        << patched("training", R"({"strategy":"single"})", patched("cluster", R"({"kind":"local"})"))
        << QStringList{"--strategy single", "--epochs 1", "--batch 64"}
        << QStringList{"--threshold-algorithm", "--averaging-frequency", "--nodes"};
    QTest::newRow("tree topology")
        << patched("cluster", R"({"kind":"local","nodes":3,"topology":"tree","fanout":3})")
        << QStringList{"--topology tree", "--fanout 3"} << QStringList{};
    QTest::newRow("relay topology: no fanout")
        << patched("cluster", R"({"kind":"local","nodes":3,"topology":"relay","fanout":3})")
        << QStringList{"--topology relay"} << QStringList{"--fanout"};
    QTest::newRow("emulated link")
        << patched("cluster", R"({"kind":"local","nodes":2,"link":{"rate_mbit":1000,"delay_ms":2.5,"loss":0.01}})")
        << QStringList{"--link-rate 1000000000", "--link-delay 2500us", "--link-loss 0.01"} << QStringList{};
    QTest::newRow("overlap")
        << patched("training", R"({"strategy":"gradient-sharing","max_staleness":0,"overlap_comm":"send"})")
        << QStringList{"--max-staleness 0", "--overlap-comm send"} << QStringList{};
    QTest::newRow("no emulated link") << QByteArray(kLocal) << QStringList{} << QStringList{"--link-rate", "--link-delay", "--link-loss"};
    QTest::newRow("data options")
        << patched("training", R"({"augment":"flip,crop:4","normalize":"minmax","top_k":5})")
        << QStringList{"--augment crop:4,flip", "--normalize minmax", "--top-k 5"} << QStringList{};
    QTest::newRow("no data options") << QByteArray(kLocal) << QStringList{} << QStringList{"--augment", "--normalize", "--top-k"};
    QTest::newRow("automatic topology: the engine's default")
        << QByteArray(kLocal) << QStringList{} << QStringList{"--topology", "--fanout"};
}

void TestRunSpec::engine_arguments_strategies() {
    QFETCH(QByteArray, text);
    QFETCH(QStringList, present);
    QFETCH(QStringList, absent);
    const RunSpec s = load_text(text);
    const QString line = " " + s.engine_arguments(0, {{}, "/private/secret"}).join(' ') + " ";
    for (const auto& p : present) QVERIFY2(line.contains(" " + p + " "), qPrintable(p + " not in" + line));
    for (const auto& a : absent) QVERIFY2(!line.contains(" " + a + " "), qPrintable(a + " in" + line));
}

void TestRunSpec::engine_arguments_need_files() {
    QJsonObject o = parse(kLocal);
    o["model"] = parse(kModel);
    const RunSpec s = load_text(QJsonDocument(o).toJson());
    QVERIFY_THROWS_EXCEPTION(std::logic_error, s.engine_arguments(0, {{}, "/s"}));  // inline model not written
    QVERIFY_THROWS_EXCEPTION(std::logic_error, s.engine_arguments(0, {"/tmp/m.json", {}}));  // two nodes, no secret
    QVERIFY_THROWS_EXCEPTION(std::logic_error, s.engine_arguments(2, {"/tmp/m.json", "/s"}));  // no node 2
    const QStringList a = s.engine_arguments(1, {"/tmp/m.json", "/s"});
    QCOMPARE(a[a.indexOf("--model") + 1], QString("/tmp/m.json"));
}

void TestRunSpec::engine_arguments_over_ssh() {
    // What SshLauncher passes: the secret on stdin (also for one node: EOF on stdin then ends
    // the engine), the staged data and node 0's save file on the host.
    const RunSpec s = load_text(patched("save", "\"out.thr\"", QByteArray(kSsh)));
    EngineFiles files;
    files.model = "/r/run-1/model.json";
    files.secret_on_stdin = true;
    files.data = "/r/data/abc/d.csv";
    files.save = "/r/run-1/model.thr";
    const QStringList a0 = s.engine_arguments(0, files), a1 = s.engine_arguments(1, files);
    for (const auto& a : {a0, a1}) {
        QVERIFY(a.contains("--secret-stdin"));
        QVERIFY(!a.contains("--secret-file"));
        QCOMPARE(a[a.indexOf("--data") + 1], QString("/r/data/abc/d.csv"));
        QCOMPARE(a[a.indexOf("--model") + 1], QString("/r/run-1/model.json"));
    }
    QCOMPARE(a0[a0.indexOf("--save") + 1], QString("/r/run-1/model.thr"));
    QVERIFY(!a1.contains("--save"));
    const RunSpec one = load_text(patched("cluster", R"({"kind":"ssh","hosts":[{"address":"h"}]})"));
    QVERIFY(one.engine_arguments(0, files).contains("--secret-stdin"));
    QVERIFY(!one.engine_arguments(0, files).contains("--nodes"));

    // Two nodes on one address (two sessions to one machine) need two ports; others share one.
    const RunSpec same = load_text(patched("cluster", R"({"kind":"ssh","hosts":[{"address":"a"},{"address":"b"},{"address":"a"}]})"));
    QCOMPARE(same.node_endpoints(), QStringList({"a:45000", "b:45000", "a:45001"}));
}

// training.shard_placement: shared by default and not written back; per-node read, written back
// and passed to every node as --shard-placement per-node.
void TestRunSpec::shard_placement() {
    using thresher::launcher::ShardPlacement;
    const RunSpec shared = load_text(patched("data", "\"../data/shards\""));
    QVERIFY(shared.training.shard_placement == ShardPlacement::Shared);
    QVERIFY(!shared.to_json().value("training").toObject().contains("shard_placement"));
    QVERIFY(!shared.engine_arguments(0, {{}, "/s"}).contains("--shard-placement"));

    const RunSpec per_node = load_text(patched("training.shard_placement", "\"per-node\"", patched("data", "\"../data/shards\"")));
    QVERIFY(per_node.training.shard_placement == ShardPlacement::PerNode);
    QCOMPARE(per_node.to_json().value("training").toObject().value("shard_placement").toString(), QString("per-node"));
    for (int rank = 0; rank < 2; ++rank) {
        const QStringList a = per_node.engine_arguments(rank, {{}, "/s"});
        QCOMPARE(a.count("--shard-placement"), 1);
        QCOMPARE(a[a.indexOf("--shard-placement") + 1], QString("per-node"));
        QCOMPARE(a[a.indexOf("--data") + 1], path("data/shards"));
    }
    // A Slurm run's data folder may exist on the cluster only: not refused for being unseen here.
    QVERIFY(load_text(patched("training.shard_placement", "\"per-node\"", patched("data", "\"/cluster/only/shards\"", kSlurm)))
                .training.shard_placement == ShardPlacement::PerNode);
}

void TestRunSpec::slurm_spec_loads() {
    const RunSpec s = load_text(kSlurm);
    QCOMPARE(s.cluster.kind, ClusterSettings::Kind::Slurm);
    const auto& sl = s.cluster.slurm;
    QCOMPARE(sl.partition, QString("gpu"));
    QCOMPARE(s.cluster.nodes, 2);
    QCOMPARE(sl.tasks_per_node, 2);
    QCOMPARE(sl.cpus_per_task, 4);
    QCOMPARE(sl.gpus_per_node, 2);
    QCOMPARE(sl.time, std::optional<std::chrono::seconds>(86400 + 2 * 3600 + 3 * 60 + 4));
    QCOMPARE(sl.account, QString("lab"));
    QCOMPARE(sl.qos, QString("high"));
    QCOMPARE(sl.constraint, QString("a100"));
    QCOMPARE(sl.sbatch_args, QStringList({"--mem=8G", "--exclusive"}));
    QCOMPARE(sl.network_mask, QString("10.1.0.0/16"));
    // 2 hosts × 2 tasks: 4 engine nodes, each with 2 workers.
    QCOMPARE(s.node_count(), 4);
    QCOMPARE(s.workers_per_node(), 2);
    QCOMPARE(s.total_workers(), 8);
    QVERIFY(s.node_endpoints().isEmpty());  // the scheduler picks the hosts
    QCOMPARE(s.to_json().value("cluster").toObject().value("time").toString(), QString("1-02:03:04"));

    const RunSpec d = load_text(patched("cluster", R"({"kind":"slurm"})"));
    QCOMPARE(d.cluster.slurm, thresher::launcher::SlurmSettings{});
    QCOMPARE(d.node_count(), 1);

    // The example the README points at.
    const RunSpec example = RunSpec::load(qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/resources/runs/lenet-slurm.json");
    QCOMPARE(example.cluster.kind, ClusterSettings::Kind::Slurm);
    QCOMPARE(example.cluster.slurm.partition, QString("main"));
    QCOMPARE(example.node_count(), 2);
}

void TestRunSpec::slurm_times_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<qint64>("seconds");  // -1: refused
    QTest::newRow("minutes") << "90" << qint64(5400);
    QTest::newRow("MM:SS") << "2:30" << qint64(150);
    QTest::newRow("HH:MM:SS") << "01:00:05" << qint64(3605);
    QTest::newRow("D-HH") << "2-3" << qint64(2 * 86400 + 3 * 3600);
    QTest::newRow("D-HH:MM") << "1-00:30" << qint64(86400 + 1800);
    QTest::newRow("D-HH:MM:SS") << "0-00:00:09" << qint64(9);
    QTest::newRow("letters") << "1h" << qint64(-1);
    QTest::newRow("four fields") << "1:2:3:4" << qint64(-1);
    QTest::newRow("empty part") << "1::2" << qint64(-1);
    QTest::newRow("two dashes") << "1-2-3" << qint64(-1);
    QTest::newRow("negative") << "-5" << qint64(-1);
    // Past 100 years, however it is written: fields this large overflowed when multiplied into
    // seconds (tests/fuzz, fuzz_slurm_task_lines: signed overflow under UBSan).
    QTest::newRow("huge minutes") << "7777777777777777777:0" << qint64(-1);
    QTest::newRow("huge hours") << "9223372036854775807:00:00" << qint64(-1);
    QTest::newRow("huge days' hours") << "1-9223372036854775807" << qint64(-1);
    QTest::newRow("100 years of seconds") << "0:3153600000" << qint64(3153600000);
    QTest::newRow("one more") << "0:3153600001" << qint64(-1);
}

void TestRunSpec::slurm_times() {
    QFETCH(QString, text);
    QFETCH(qint64, seconds);
    const auto parsed = thresher::launcher::parse_slurm_time(text);
    QCOMPARE(parsed ? parsed->count() : qint64(-1), seconds);
    if (parsed) QCOMPARE(thresher::launcher::parse_slurm_time(thresher::launcher::format_slurm_time(*parsed)), parsed);
}

void TestRunSpec::engine_arguments_on_slurm() {
    // One command line for every task: --nodes as the job computes it, no rank, no --save (the
    // task of rank 0 adds it); threads 0 → the CPUs each task asked for.
    const RunSpec s = load_text(kSlurm);
    EngineFiles files{"/shared/run/model.json", "/shared/run/secret"};
    files.nodes = "$endpoints";
    const QStringList a = s.engine_arguments(0, files);
    QCOMPARE(a[a.indexOf("--nodes") + 1], QString("$endpoints"));
    QCOMPARE(a[a.indexOf("--threads") + 1], QString("4"));
    QCOMPARE(a[a.indexOf("--workers-per-node") + 1], QString("2"));
    QCOMPARE(a[a.indexOf("--secret-file") + 1], QString("/shared/run/secret"));
    QVERIFY(!a.contains("--node-rank"));
    QVERIFY(!a.contains("--save"));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, s.engine_arguments(0, EngineFiles{"/m.json", "/s"}));
}

QTEST_GUILESS_MAIN(TestRunSpec)
#include "test_run_spec.moc"
