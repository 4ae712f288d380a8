// The attacks on a node's TCP port from issue #12, each against two real thresher-engine
// processes training with parameter averaging (an averaging round over the TCP bulk channel every
// step) on loopback. Each time the run must finish with both replicas equal (`compare`) and the
// model saved:
//   - idle connections at a descriptor limit: node 0 runs under `prlimit --nofile=128` and 200
//     connections that never say anything are opened to its port;
//   - header-only frames: connections that send a frame header claiming 1 GiB (the old format)
//     or a handshake's first bytes, and nothing more; node 0's resident memory (VmRSS) is read
//     before and after and must stay within 64 MB of where it was;
//   - a replayed authentic connection: a handshake and frame made with the run's secret are
//     recorded on the path and replayed 50 times while the real node 1 trains;
//   - a stale run with the same secret: that recording, from the previous run, replayed at a new
//     run of the same two nodes;
//   - slowloris: 60 connections that send one byte of a handshake every 300 ms.
#include <QtTest>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>
#include <sys/socket.h>
#include <unistd.h>

#include "dist/net/bulk_channel.h"
#include "engine_process.h"
#include "tcp_relay.h"

using test_support::connect_to;
using test_support::RecordingRelay;

namespace {

const char* kSecretHex = "5a3a2c1d0e9b7a6554433221100ffeeddccbbaa99887766554433221100a1b77";
// ~70k parameters: each averaging round moves ~280 KB each way over TCP.
const char* kModel = R"({"name":"atk","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.05},
  "layers":[{"type":"dense","units":256,"activation":"tanh"},{"type":"dense","units":256,"activation":"tanh"},
            {"type":"output","units":3}]})";

// The engine's run id when none is given: the first 8 bytes of SHA-256(secret), big-endian.
quint64 run_id_of(const QByteArray& secret) {
    const QByteArray d = QCryptographicHash::hash(secret, QCryptographicHash::Sha256);
    quint64 id = 0;
    for (int i = 0; i < 8; ++i) id = id << 8 | static_cast<quint8>(d[i]);
    return id;
}

long rss_kb(qint64 pid) {
    QFile f(QString("/proc/%1/status").arg(pid));
    if (!f.open(QIODevice::ReadOnly)) return -1;
    for (const auto& line : QString::fromUtf8(f.readAll()).split('\n'))
        if (line.startsWith("VmRSS:")) return line.section(':', 1).trimmed().section(' ', 0, 0).toLong();
    return -1;
}

void send_all(int fd, const std::vector<std::uint8_t>& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const auto n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace

class TestClusterAttacks : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void idle_connections_at_a_descriptor_limit();
    void header_only_frames_keep_memory_bounded();
    void replayed_authentic_connection();
    void stale_run_with_the_same_secret();
    void slowloris();

private:
    QString path(const QString& n) const { return dir_.filePath(n); }
    // Starts both nodes (node 0 first, through `prefix` when given) and returns once node 0 has
    // bound its ports. `before_node1` runs between the two starts.
    template <typename F>
    void start(NodeGroup& group, const QString& tag, const QStringList& prefix, F before_node1);
    void start(NodeGroup& group, const QString& tag, const QStringList& prefix = {}) {
        start(group, tag, prefix, [] {});
    }
    // Waits for both; checks each finished ok, the replicas are equal and the model was saved.
    void finish(NodeGroup& group, const QString& tag, bool attack_ended_in_time);
    QStringList args(int rank, const QString& tag) const {
        return {"train", "--model", path("m.json"), "--data", path("d.csv"), "--epochs", QString::number(epochs_), "--batch", "8",
                "--seed", "3", "--threads", "1", "--nodes", nodes_, "--node-rank", QString::number(rank),
                "--secret-file", path("secret"), "--save", path(QString("%1%2.thr").arg(tag).arg(rank)),
                "--strategy", "parameter-averaging", "--averaging-frequency", "1"};
    }
    QTemporaryDir dir_;
    QList<int> ports_;
    QString nodes_;
    std::vector<std::uint8_t> recording_;
    int epochs_ = 40;  // ~3000 averaging rounds: the attacks all happen while node 0 trains  // from replayed_authentic_connection, for the stale run
};

void TestClusterAttacks::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY(write_file(path("secret"), QByteArray(kSecretHex) + "\n"));
    QVERIFY(write_file(path("m.json"), kModel));
    QVERIFY(write_file(path("d.csv"), test_support::three_class_csv(1200)));
    QVERIFY(!QStandardPaths::findExecutable("prlimit").isEmpty());
}

template <typename F>
void TestClusterAttacks::start(NodeGroup& group, const QString& tag, const QStringList& prefix, F before_node1) {
    ports_ = free_node_ports(2);
    nodes_ = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports_[0]).arg(ports_[1]);
    if (prefix.isEmpty())
        group.start(args(0, tag));
    else
        group.start(prefix.mid(1) + QStringList{engine_binary()} + args(0, tag), prefix.first());
    // Its TCP port accepts once the bulk channel is bound (run_started comes only after the join).
    QVERIFY2(group.wait_for([&] {
                 const int fd = connect_to(ports_[0]);
                 if (fd >= 0) ::close(fd);
                 return fd >= 0 || group.process(0).state() == QProcess::NotRunning;
             }, 60000),
             "node 0 never listened");
    QVERIFY2(group.process(0).state() == QProcess::Running, qPrintable(group.stdout_so_far(0).right(2000)));
    before_node1();
    group.start(args(1, tag));
    QVERIFY2(group.wait_for([&] { return group.count_events(0, "run_started") > 0 ||
                                         group.process(0).state() == QProcess::NotRunning; },
                            60000),
             "node 0 never started");
}

void TestClusterAttacks::finish(NodeGroup& group, const QString& tag, bool attack_ended_in_time) {
    const auto runs = group.wait_all(240000);
    for (int node = 0; node < 2; ++node) check_finished_ok(runs[node], node);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(attack_ended_in_time, "the run finished before the attack was over: lengthen the run");
    const auto t = runs[0].of("run_finished").last();
    qInfo("run: %d iterations, %.1f s", t.value("iters").toInt(), t.value("wall_s").toDouble());
    const auto cmp = run_engine({"compare", path(tag + "0.thr"), path(tag + "1.thr"), "--tolerance", "1e-5"});
    QVERIFY2(cmp.exit_code == 0, qPrintable("replicas differ: " + cmp.summary()));
}

void TestClusterAttacks::idle_connections_at_a_descriptor_limit() {
    NodeGroup group;
    start(group, "fd", {"prlimit", "--nofile=128:128", "--"});
    if (QTest::currentTestFailed()) return;
    std::vector<int> idle;
    for (int i = 0; i < 200; ++i) idle.push_back(connect_to(ports_[0]));
    const int opened = static_cast<int>(std::count_if(idle.begin(), idle.end(), [](int fd) { return fd >= 0; }));
    group.wait_for([] { return false; }, 1500);  // held while the nodes train
    const bool running = group.count_events(0, "run_finished") == 0;
    const int fds = static_cast<int>(QDir(QString("/proc/%1/fd").arg(group.process(0).processId()))
                                         .entryList(QDir::NoDotAndDotDot | QDir::AllEntries | QDir::System)
                                         .size());
    qInfo("%d idle connections opened to node 0 (descriptor limit 128); node 0 holds %d descriptors", opened, fds);
    // Its own (sockets, files, pipes) plus at most 16 connections in their handshake.
    QVERIFY2(fds > 0 && fds < 100, qPrintable(QString::number(fds)));
    finish(group, "fd", running);
    for (int fd : idle)
        if (fd >= 0) ::close(fd);
}

void TestClusterAttacks::header_only_frames_keep_memory_bounded() {
    NodeGroup group;
    {
        // Under AddressSanitizer (the asan preset), freed memory waits in a quarantine of 256 MB
        // that the node's RSS counts: training alone filled it, and this test saw 270 MB of
        // "growth" (3.6 MB with no quarantine). Kept at 16 MB for these nodes, so RSS measures
        // what the node holds. Without ASan the variable is read by nobody.
        const QByteArray saved = qgetenv("ASAN_OPTIONS");
        qputenv("ASAN_OPTIONS", saved + ":quarantine_size_mb=16");
        start(group, "hdr");
        qputenv("ASAN_OPTIONS", saved);
    }
    if (QTest::currentTestFailed()) return;
    QVERIFY(group.wait_for([&] { return group.count_events(0, "iteration") > 5; }, 60000));
    const qint64 pid = group.process(0).processId();
    const long before = rss_kb(pid);
    // The old format's header: 'THRB', version 1, type Average, run id, sender 1, length 1 GiB.
    std::vector<std::uint8_t> old_header(28, 0);
    const std::uint32_t magic = 0x42524854;
    std::memcpy(old_header.data(), &magic, 4);
    old_header[4] = 1;
    old_header[5] = 4;
    const quint64 run = run_id_of(QByteArray::fromHex(kSecretHex));
    std::memcpy(old_header.data() + 8, &run, 8);
    old_header[16] = 1;
    const std::uint64_t gib = std::uint64_t{1} << 30;
    std::memcpy(old_header.data() + 20, &gib, 8);
    const std::vector<std::uint8_t> hello_start{'T', 'H', 'R', 'H', 1, 1, 0, 0};
    long peak = before;
    std::vector<int> open;
    for (int wave = 0; wave < 6; ++wave) {
        for (int i = 0; i < 20; ++i) {
            const int fd = connect_to(ports_[0]);
            if (fd < 0) continue;
            send_all(fd, i % 2 ? old_header : hello_start);
            open.push_back(fd);
        }
        QThread::msleep(500);
        peak = std::max(peak, rss_kb(pid));
    }
    const bool running = group.count_events(0, "run_finished") == 0;
    const long after = rss_kb(pid);
    qInfo("node 0 VmRSS: %ld kB before, peak %ld kB, %ld kB after 120 header-only connections", before, peak, after);
    QVERIFY2(before > 0 && peak - before < 64 * 1024, qPrintable(QString("grew by %1 kB").arg(peak - before)));
    for (int fd : open) ::close(fd);
    finish(group, "hdr", running);
}

void TestClusterAttacks::replayed_authentic_connection() {
    NodeGroup group;
    const QByteArray secret = QByteArray::fromHex(kSecretHex);
    start(group, "rep", {}, [&] {
        // Before node 1 starts: a handshake and one frame made with the run's secret as rank 1, seen
        // by someone on the path (the relay), who records them.
        const int relay_port = free_node_port(), spare = free_node_port();
        RecordingRelay relay(relay_port, ports_[0]);
        QVERIFY(relay.ok());
        std::vector<thresher::dist::UdpEndpoint> via{{"127.0.0.1", static_cast<std::uint16_t>(relay_port)},
                                                     {"127.0.0.1", static_cast<std::uint16_t>(spare)}};
        thresher::dist::BulkOptions o;
        o.incarnation = 1;  // older than the real node 1's
        thresher::dist::BulkChannel recorded(1, via, "127.0.0.1", run_id_of(secret),
                                             thresher::dist::Secret(std::vector<std::uint8_t>(secret.begin(), secret.end())), o);
        std::vector<std::uint8_t> sums(8, 0xff);  // an averaging round far ahead: u64 round 2^64-1
        recorded.send(0, thresher::dist::MessageType::Average, sums);
        QVERIFY(QTest::qWaitFor([&] { return relay.recorded().size() >= 2 * 104 + 56 + 8 + 32; }, 5000));
        recording_ = relay.recorded();
    });
    if (QTest::currentTestFailed()) return;
    QVERIFY(group.wait_for([&] { return group.count_events(0, "iteration") > 5; }, 60000));
    for (int i = 0; i < 50; ++i) {
        const int fd = connect_to(ports_[0]);
        if (fd < 0) continue;
        send_all(fd, recording_);
        QThread::msleep(20);
        ::close(fd);
    }
    const bool running = group.count_events(0, "run_finished") == 0;
    qInfo("replayed a %zu-byte recording 50 times", recording_.size());
    finish(group, "rep", running);
}

void TestClusterAttacks::stale_run_with_the_same_secret() {
    if (recording_.empty()) QSKIP("needs the recording of replayed_authentic_connection");
    NodeGroup group;
    start(group, "stale");
    if (QTest::currentTestFailed()) return;
    // While node 1 is still joining, and during training.
    for (int i = 0; i < 40; ++i) {
        const int fd = connect_to(ports_[0]);
        if (fd >= 0) {
            send_all(fd, recording_);
            ::close(fd);
        }
        QThread::msleep(25);
    }
    const bool running = group.count_events(0, "run_finished") == 0;
    finish(group, "stale", running);
}

void TestClusterAttacks::slowloris() {
    epochs_ = 100;  // the attack lasts 7.2 s
    NodeGroup group;
    start(group, "slow");
    if (QTest::currentTestFailed()) return;
    std::vector<int> slow;
    for (int i = 0; i < 60; ++i) slow.push_back(connect_to(ports_[0]));
    const std::vector<std::uint8_t> hello{'T', 'H', 'R', 'H', 1, 1, 0, 0, 0, 0};
    int open_after = 0;
    for (std::size_t step = 0; step < 24; ++step) {  // 7.2 s: past the 5 s handshake deadline
        open_after = 0;
        for (int fd : slow) {
            if (fd < 0) continue;
            const auto byte = hello[step % hello.size()];
            if (::send(fd, &byte, 1, MSG_NOSIGNAL) == 1) ++open_after;
        }
        group.wait_for([] { return false; }, 300);  // keeps reading the nodes' output meanwhile
    }
    const bool running = group.count_events(0, "run_finished") == 0;
    qInfo("slow connections still accepting bytes after 7.2 s: %d of 60", open_after);
    QCOMPARE(open_after, 0);
    for (int fd : slow)
        if (fd >= 0) ::close(fd);
    finish(group, "slow", running);
}

QTEST_GUILESS_MAIN(TestClusterAttacks)
#include "test_cluster_attacks.moc"
