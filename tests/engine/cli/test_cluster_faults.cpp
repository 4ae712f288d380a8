// Multi-node gradient sharing under faults, with real thresher-engine processes over real UDP:
//   - packet loss on a real link: two engines in two network namespaces joined by a veth pair,
//     iptables dropping 5% of the UDP datagrams each side receives. Replicas still end equal and
//     both nodes retransmitted. (Reordering and duplication are not injected here: this kernel has
//     no netem qdisc. The transport's own tests, test_udp_transport, cover them through a lossy,
//     reordering, duplicating proxy.) Needs root and the `ip`/`iptables` tools; skipped otherwise.
//   - a node killed mid-run (SIGKILL): the others report it in a warning event, finish, and still
//     hold equal replicas.
//   - hostile datagrams at a node's port (random bytes, forged and truncated headers, another
//     run's datagrams, authentic datagrams replayed from a foreign address): all dropped and
//     counted, and the run ends exactly as it would have without them.
#include <QtTest>

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QMessageAuthenticationCode>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QThread>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine_process.h"
#include "netns_pair.h"

namespace {

const char* kSecretHex = "8f3a2c1d0e9b7a6554433221100ffeeddccbbaa99887766554433221100a1b2c";

// A small model for the loss test, a wider one so the hostile-datagram run lasts a few seconds.
const char* kSmallModel = R"({"name":"cf","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.1},
  "layers":[{"type":"dense","units":12,"activation":"tanh"},{"type":"output","units":3}]})";
const char* kWideModel = R"({"name":"cfw","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.05},
  "layers":[{"type":"dense","units":256,"activation":"tanh"},{"type":"dense","units":256,"activation":"tanh"},
            {"type":"output","units":3}]})";

const QStringList kSharing{"--strategy", "gradient-sharing", "--threshold-algorithm", "fixed:0.01", "--residual", "none"};

using test_support::find_tool;
using test_support::NetnsPair;
using test_support::run_tool;

// ---- hand-built datagrams (layout: engine/dist/net/datagram.h) ----

void put_be(QByteArray& out, quint64 v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out.append(static_cast<char>((v >> (8 * i)) & 0xff));
}

QByteArray header(quint8 type, quint64 run_id, quint32 sender, quint64 message_id, quint16 chunk, quint16 chunks,
                  quint16 payload_length) {
    QByteArray h;
    put_be(h, 0x54485253, 4);  // "THRS"
    h.append(char(2));         // version
    h.append(static_cast<char>(type));
    h.append(char(0));  // flags
    h.append(char(0));  // reserved
    put_be(h, run_id, 8);
    put_be(h, sender, 4);
    put_be(h, message_id, 8);
    put_be(h, chunk, 2);
    put_be(h, chunks, 2);
    put_be(h, payload_length, 2);
    put_be(h, 1, 8);  // sender incarnation: a process that started long ago
    put_be(h, 0, 8);  // destination incarnation: not known (real data names node 0's, see datagram.h)
    return h;
}

// The engine's run id when none is given: the first 8 bytes of SHA-256(secret), big-endian.
quint64 run_id_of(const QByteArray& secret) {
    const QByteArray d = QCryptographicHash::hash(secret, QCryptographicHash::Sha256);
    quint64 id = 0;
    for (int i = 0; i < 8; ++i) id = id << 8 | static_cast<quint8>(d[i]);
    return id;
}

QByteArray sealed(const QByteArray& head_and_payload, const QByteArray& key) {
    return head_and_payload + QMessageAuthenticationCode::hash(head_and_payload, key, QCryptographicHash::Sha256);
}

QByteArray random_bytes(QRandomGenerator& rng, int n) {
    QByteArray b(n, Qt::Uninitialized);
    for (int i = 0; i < n; ++i) b[i] = static_cast<char>(rng.bounded(256));
    return b;
}

// The 3000 datagrams fired at node 0 (node 1 being rank 1 of a 2-node run):
//   1000 random byte strings of 1..1400 bytes           (TooShort / BadMagic / Oversize)
//    500 THRS v1 headers for this run, random MAC        (BadMac)
//    500 truncated copies of such datagrams              (TooShort / BadLength)
//    400 correctly MACed datagrams of another run id     (WrongRun)
//    600 authentic datagrams (right run id and MAC), 150 distinct ones sent 4 times each, claiming
//        to be node 1 (or node 0 itself, or a rank outside the run) but sent from the test's own
//        address: a captured datagram replayed from elsewhere (UnknownSender). Half are a "done,
//        I sent 0 updates" control message, which would end node 0's drain early if it were
//        believed; half an Update whose payload is garbage, which would show as a warning.
QList<QByteArray> hostile_datagrams(const QByteArray& key, quint64 run_id) {
    QRandomGenerator rng(20240611);
    QList<QByteArray> out;
    for (int i = 0; i < 1000; ++i) out << random_bytes(rng, 1 + static_cast<int>(rng.bounded(1400)));
    for (int i = 0; i < 1000; ++i) {
        const int n = static_cast<int>(rng.bounded(1, 400));
        QByteArray d = header(1, run_id, 1, 1 + rng.bounded(1000u), 0, 1, static_cast<quint16>(n)) + random_bytes(rng, n) +
                       random_bytes(rng, 32);
        if (i % 2 == 1) d.truncate(1 + static_cast<int>(rng.bounded(d.size() - 1)));
        out << d;
    }
    for (int i = 0; i < 400; ++i) {
        const int n = static_cast<int>(rng.bounded(1, 400));
        out << sealed(header(1, run_id ^ (1 + rng.bounded(1u << 30)), 1, 1 + i, 0, 1, static_cast<quint16>(n)) +
                          random_bytes(rng, n),
                      key);
    }
    for (int i = 0; i < 150; ++i) {
        const quint32 sender = i % 10 == 0 ? 0 : (i % 10 == 1 ? 7 : 1);
        const quint64 id = i % 3 == 0 ? 1 + i / 3 : 1000000 + i;  // ids already delivered, and fresh ones
        QByteArray payload;
        quint8 type = 8;  // Control
        if (i % 2 == 0) {
            payload.append(char(1));                       // kind: done
            payload.append(QByteArray(8, char(0)));        // u64 count 0
        } else {
            type = 1;  // Update: u32 worker, then bytes that are no encoded update
            payload = QByteArray(4, char(0)) + random_bytes(rng, 64);
        }
        const QByteArray d = sealed(header(type, run_id, sender, id, 0, 1, static_cast<quint16>(payload.size())) + payload, key);
        for (int copy = 0; copy < 4; ++copy) out << d;
    }
    return out;
}

}  // namespace

class TestClusterFaults : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void gradient_sharing_survives_loss_and_reordering();
    void killed_node_is_reported_and_others_finish_data();
    void killed_node_is_reported_and_others_finish();
    void hostile_datagrams_change_nothing();

private:
    QString path(const QString& n) const { return dir_.filePath(n); }
    QStringList train_args(const QString& model, const QString& data, int epochs, int batch, const QString& nodes, int rank,
                           const QString& save) const {
        return QStringList{"train", "--model", model, "--data", data, "--epochs", QString::number(epochs), "--batch",
                           QString::number(batch), "--seed", "3", "--threads", "1", "--nodes", nodes, "--node-rank",
                           QString::number(rank), "--secret-file", path("secret"), "--save", save} +
               kSharing;
    }
    QTemporaryDir dir_;
};

void TestClusterFaults::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY(write_file(path("secret"), QByteArray(kSecretHex) + "\n"));
    QVERIFY(write_file(path("small.json"), kSmallModel));
    QVERIFY(write_file(path("wide.json"), kWideModel));
    QVERIFY(write_file(path("loss.csv"), test_support::three_class_csv(3600)));
    QVERIFY(write_file(path("hostile.csv"), test_support::three_class_csv(4000)));
}

void TestClusterFaults::cleanupTestCase() {
    // The pair in the test removes them; this catches a run that died between creating them and
    // arming it. Deleting a namespace that does not exist is harmless.
    NetnsPair("thr").remove_leftovers();
}

void TestClusterFaults::gradient_sharing_survives_loss_and_reordering() {
    const QString iptables = find_tool("iptables");
    if (iptables.isEmpty())
        QSKIP("needs the iptables tool (Debian package iptables; scripts/install-deps.sh installs it)");
    // Addresses only inside our own namespaces; the subnet varies with the pid for readability
    // in `ip netns` listings, not for isolation (the namespaces already isolate it).
    const int x = static_cast<int>(::getpid() % 200) + 20;
    const QString addr_a = QString("10.231.%1.1").arg(x), addr_b = QString("10.231.%1.2").arg(x);
    NetnsPair pair("thr");
    if (!pair.create(addr_a, addr_b)) {
        if (!pair.skip_reason.isEmpty()) QSKIP(qPrintable(pair.skip_reason));
        QFAIL(qPrintable(pair.error));
    }
    const QString &ip = pair.ip, &a = pair.a, &b = pair.b;
    QString err;
    for (const auto& ns : {a, b})
        QVERIFY2(run_tool(ip, {"netns", "exec", ns, iptables, "-A", "INPUT", "-p", "udp", "-m", "statistic", "--mode",
                               "random", "--probability", "0.05", "-j", "DROP"},
                          &err),
                 qPrintable(err));

    // 3600 rows, 2 nodes, batch 8, 2 epochs: 450 one-datagram update messages per node, each lost
    // (or its ack lost) with probability ~0.1; runs of a third of this retransmitted 2 to 19
    // datagrams per node, so a run without a retransmission is far below a 1e-9 event.
    const QString nodes = QString("%1:40123,%2:40123").arg(addr_a, addr_b);
    QList<QStringList> args;
    for (int rank = 0; rank < 2; ++rank)
        args << QStringList{"netns", "exec", rank == 0 ? a : b, engine_binary()} +
                    train_args(path("small.json"), path("loss.csv"), 2, 8, nodes, rank, path(QString("loss%1.thr").arg(rank)));
    const auto runs = run_nodes(args, 180000, ip);
    for (int node = 0; node < 2; ++node) {
        const auto& r = runs[node];
        check_finished_ok(r, node);
        QVERIFY2(r.of("warning").isEmpty(), qPrintable(r.summary()));
        const auto totals = r.of("run_finished").last();
        QVERIFY2(totals.value("retransmitted").toDouble() > 0,
                 qPrintable(QString("node %1 never retransmitted: was the loss rule active? %2").arg(node).arg(r.summary())));
        QVERIFY(totals.value("bytes_rx").toDouble() > 0);
        qInfo("node %d: %d iterations, retransmitted %.0f datagrams, %.1f s", node, totals.value("iters").toInt(),
              totals.value("retransmitted").toDouble(), totals.value("wall_s").toDouble());
    }
    // The loss came from the rules: each namespace's DROP rule matched some datagrams.
    for (const auto& ns : {a, b}) {
        QProcess p;
        p.start(ip, {"netns", "exec", ns, iptables, "-L", "INPUT", "-v", "-x", "-n"});
        QVERIFY(p.waitForFinished(10000));
        const QString listing = QString::fromUtf8(p.readAllStandardOutput());
        qint64 matched = -1;
        for (const auto& line : listing.split('\n'))
            if (line.contains("DROP") && line.contains("statistic")) matched = line.simplified().section(' ', 0, 0).toLongLong();
        QVERIFY2(matched > 0, qPrintable(ns + ": the loss rule matched nothing:\n" + listing));
        qInfo("%s: the loss rule dropped %lld datagrams", qPrintable(ns), matched);
    }
    const auto cmp = run_engine({"compare", path("loss0.thr"), path("loss1.thr"), "--tolerance", "1e-5"});
    QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
}

void TestClusterFaults::killed_node_is_reported_and_others_finish_data() {
    QTest::addColumn<QStringList>("topology");
    QTest::addColumn<int>("killed");
    QTest::newRow("mesh, node 2") << QStringList{"--topology", "mesh"} << 2;
    // The chain 0 - 1 - 2: node 1 relays everything between 0 and 2; once it is gone, node 2
    // hangs on node 0 directly.
    QTest::newRow("tree fanout 1, the relay node 1") << QStringList{"--topology", "tree", "--fanout", "1"} << 1;
}

void TestClusterFaults::killed_node_is_reported_and_others_finish() {
    QFETCH(QStringList, topology);
    QFETCH(int, killed);
    // MLP on 6000 Fashion-MNIST samples, 3 epochs, 3 nodes: ~190 iterations per node over some
    // seconds, with real update traffic (density ~1e-4..1e-3 of 1.8M parameters).
    const auto ports = free_node_ports(3);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2,127.0.0.1:%3").arg(ports[0]).arg(ports[1]).arg(ports[2]);
    const QString model = source_dir() + "/resources/models/mlp.json";
    NodeGroup group;
    for (int rank = 0; rank < 3; ++rank)
        group.start(train_args(model, "fashion-mnist", 3, 32, nodes, rank, path(QString("kill%1.thr").arg(rank))) +
                    QStringList{"--limit", "6000", "--test-limit", "1000"} + topology);
    QVERIFY2(group.wait_for([&] { return group.count_events(killed, "iteration") >= 10 ||
                                         group.process(killed).state() == QProcess::NotRunning; },
                            120000),
             "the node to kill never reached its 10th iteration");
    QVERIFY2(group.process(killed).state() == QProcess::Running,
             qPrintable("the node to kill ended before it could be killed:\n" + group.stdout_so_far(killed).right(1000)));
    QVERIFY2(group.count_events(killed, "run_finished") == 0, "the node to kill finished before it was killed");
    group.process(killed).kill();  // SIGKILL: no goodbye, no last acknowledgements
    QElapsedTimer since_kill;
    since_kill.start();
    // The survivors give the node up after 10 s without acknowledgements (and, in the tree, the
    // messages it took with it after 10 s more); 90 s leaves room for a busy machine.
    const auto runs = group.wait_all(90000);
    const double waited_s = since_kill.elapsed() / 1000.0;
    QVERIFY2(runs[killed].exit_code == -1, qPrintable("the node was not killed: " + runs[killed].summary()));
    QList<int> survivors;
    for (int node = 0; node < 3; ++node)
        if (node != killed) survivors << node;
    const QString name = QString("node %1").arg(killed);
    for (int node : survivors) {
        const auto& r = runs[node];
        check_finished_ok(r, node);
        const auto warnings = r.of("warning");
        bool reported = false;
        for (const auto& w : warnings) {
            const QString message = w.value("message").toString();
            reported = reported || message.contains(name + " stopped answering");
            // Beyond the killed node itself: a node whose messages came through it, and the staleness
            // bound saying it waited for a node it heard nothing from (the dead one, or one behind it).
            QVERIFY2(message.contains(name) || message.contains("a node that relayed them is gone") ||
                         message.contains("has heard nothing from"),
                     qPrintable(QString("node %1: unexpected warning: %2").arg(node).arg(message)));
        }
        QVERIFY2(reported, qPrintable(QString("node %1 did not report %2: %3").arg(node).arg(name, r.summary())));
    }
    qInfo("survivors finished %.1f s after the kill", waited_s);
    QVERIFY2(waited_s < 60, qPrintable(QString("survivors took %1 s after the kill").arg(waited_s)));
    const auto cmp = run_engine({"compare", path(QString("kill%1.thr").arg(survivors[0])),
                                 path(QString("kill%1.thr").arg(survivors[1])), "--tolerance", "1e-5"});
    QVERIFY2(cmp.exit_code == 0, qPrintable("survivors' replicas differ: " + cmp.summary()));
    qInfo("survivors' replicas: %s", qPrintable(cmp.stdout_text.trimmed()));
}

void TestClusterFaults::hostile_datagrams_change_nothing() {
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    NodeGroup group;
    for (int rank = 0; rank < 2; ++rank)
        group.start(train_args(path("wide.json"), path("hostile.csv"), 36, 8, nodes, rank, path(QString("host%1.thr").arg(rank))));
    // run_started comes after the transport bound its port.
    QVERIFY2(group.wait_for([&] { return group.count_events(0, "run_started") > 0 ||
                                         group.process(0).state() == QProcess::NotRunning; },
                            60000),
             "node 0 never started");
    QVERIFY2(group.process(0).state() == QProcess::Running, qPrintable(group.stdout_so_far(0).right(1000)));

    const QByteArray key = QByteArray::fromHex(kSecretHex);
    const auto datagrams = hostile_datagrams(key, run_id_of(key));
    QCOMPARE(datagrams.size(), 3000);
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    QVERIFY(fd >= 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(static_cast<quint16>(ports[0]));
    int sent = 0;
    for (int i = 0; i < datagrams.size(); ++i) {
        const auto& d = datagrams[i];
        if (::sendto(fd, d.constData(), static_cast<size_t>(d.size()), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) ==
            d.size())
            ++sent;
        if (i % 100 == 99) QThread::msleep(2);  // bursts of 100: node 0's socket buffer never overflows
    }
    ::close(fd);
    const bool still_running = group.process(0).state() == QProcess::Running;

    const auto runs = group.wait_all(180000);
    for (int node = 0; node < 2; ++node) {
        check_finished_ok(runs[node], node);
        QVERIFY2(runs[node].of("warning").isEmpty(), qPrintable(runs[node].summary()));
    }
    QVERIFY2(still_running, "node 0 finished before all 3000 datagrams were sent: lengthen the run");
    const auto dropped0 = runs[0].of("run_finished").last().value("dropped").toDouble();
    const auto dropped1 = runs[1].of("run_finished").last().value("dropped").toDouble();
    qInfo("sent %d hostile datagrams; node 0 dropped %.0f, node 1 %.0f; run %.1f s", sent, dropped0, dropped1,
          runs[0].of("run_finished").last().value("wall_s").toDouble());
    QVERIFY(sent >= 1000);
    QVERIFY2(dropped0 >= 1000 && dropped0 > 0, qPrintable(QString("node 0 dropped only %1").arg(dropped0)));
    // Node 1 drops only what the network itself duplicates (a retransmission whose original did
    // arrive): far fewer than the datagrams aimed at node 0.
    QVERIFY2(dropped0 - dropped1 >= 1000, qPrintable(QString("node 0 dropped %1, node 1 %2").arg(dropped0).arg(dropped1)));
    const auto cmp = run_engine({"compare", path("host0.thr"), path("host1.thr"), "--tolerance", "1e-5"});
    QVERIFY2(cmp.exit_code == 0, qPrintable(cmp.summary()));
}

QTEST_GUILESS_MAIN(TestClusterFaults)
#include "test_cluster_faults.moc"
