// --run-nonce keeps runs that share a secret apart (engine/dist/net/run_key.h), shown on real
// thresher-engine processes and real loopback sockets:
//   1. Run A (secret S, nonce A): its node 1 is started alone and a UDP socket standing at node
//      0's address records the first authentic datagram it sends (a hello, greeting node 0).
//   2. Run B (the same secret S): node 0 starts; a socket at node 1's address replays that
//      recording to it, then sends a hello of its own, made with run B's key for an incarnation
//      (1) no real process has, which node 0 answers. Node 0 handles datagrams in order, so what
//      it sent back before that answer shows what it made of the recording:
//        - nonce B != A: nothing (the recording is another run's: dropped, counted in
//          run_finished's "dropped");
//        - nonce B == A (the control): a hello addressed to the recording's incarnation, i.e. the
//          recording passed the run id and MAC checks; only the incarnation rules keep it out.
//   3. The socket goes, run B's node 1 starts, and the run finishes with both replicas equal.
// And: two nodes given different nonces never form a run (node 0 trains alone after --join-wait);
// without --run-nonce the engine says on stderr that runs reusing the secret are not separated.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>
#include <arpa/inet.h>
#include <chrono>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dist/net/datagram.h"
#include "dist/net/run_key.h"
#include "engine_process.h"
#include "tcp_relay.h"

using namespace thresher;
using Clock = std::chrono::steady_clock;

namespace {

const char* kSecretHex = "6b1f0e2d3c4a59687786a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const char* kNonceA = "a1a2a3a4a5a6a7a8a9aaabacadaeafa0";
const char* kNonceB = "b1b2b3b4b5b6b7b8b9babbbcbdbebfb0";
const char* kModel = R"({"name":"rn","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.05},
  "layers":[{"type":"dense","units":32,"activation":"tanh"},{"type":"output","units":3}]})";
constexpr std::uint8_t kHelloType = 0x81;  // the UDP transport's hello (udp_transport.cpp)

// A UDP socket bound at 127.0.0.1:port, closed when it goes.
class UdpSocket {
public:
    explicit UdpSocket(int port) : fd_(::socket(AF_INET, SOCK_DGRAM, 0)) {
        sockaddr_in a = address(port);
        if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    ~UdpSocket() {
        if (fd_ >= 0) ::close(fd_);
    }
    UdpSocket(const UdpSocket&) = delete;
    UdpSocket& operator=(const UdpSocket&) = delete;
    bool ok() const { return fd_ >= 0; }
    bool send_to(int port, const std::vector<std::uint8_t>& bytes) const {
        sockaddr_in a = address(port);
        return ::sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a) ==
               static_cast<ssize_t>(bytes.size());
    }
    // The next datagram, or nullopt when none came within `timeout_ms`.
    std::optional<std::vector<std::uint8_t>> receive(int timeout_ms) const {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) != 1) return std::nullopt;
        std::vector<std::uint8_t> buffer(2048);
        const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
        if (n < 0) return std::nullopt;
        buffer.resize(static_cast<std::size_t>(n));
        return buffer;
    }

private:
    static sockaddr_in address(int port) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return a;
    }
    int fd_;
};

dist::Secret secret() {
    const QByteArray bytes = QByteArray::fromHex(kSecretHex);
    return dist::Secret(std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
}

std::uint64_t load_u64(const std::vector<std::uint8_t>& b, std::size_t at) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i) v = v << 8 | b[at + i];
    return v;
}

}  // namespace

class TestRunNonce : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void stale_datagram_of_a_run_with_the_same_secret_data();
    void stale_datagram_of_a_run_with_the_same_secret();
    void nodes_with_different_nonces_never_meet();

private:
    QString path(const QString& n) const { return dir_.filePath(n); }
    QStringList args(int rank, const QString& nodes, const QString& nonce, const QString& save) const {
        QStringList a{"train", "--model", path("m.json"), "--data", path("d.csv"), "--epochs", "3", "--batch", "8",
                      "--seed", "5", "--threads", "1", "--nodes", nodes, "--node-rank", QString::number(rank),
                      "--secret-file", path("secret"), "--strategy", "parameter-averaging", "--averaging-frequency", "1"};
        if (!nonce.isEmpty()) a << "--run-nonce" << nonce;
        if (!save.isEmpty()) a << "--save" << save;
        return a;
    }
    QTemporaryDir dir_;
};

void TestRunNonce::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY(write_file(path("secret"), QByteArray(kSecretHex) + "\n"));
    QVERIFY(write_file(path("m.json"), kModel));
    QVERIFY(write_file(path("d.csv"), test_support::three_class_csv(240)));
}

void TestRunNonce::stale_datagram_of_a_run_with_the_same_secret_data() {
    QTest::addColumn<QString>("nonce_b");
    QTest::addColumn<bool>("separated");
    QTest::newRow("another nonce") << QString(kNonceB) << true;
    QTest::newRow("the same nonce (control)") << QString(kNonceA) << false;
}

void TestRunNonce::stale_datagram_of_a_run_with_the_same_secret() {
    QFETCH(QString, nonce_b);
    QFETCH(bool, separated);
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);

    // 1. Run A's node 1, alone; what it sends to node 0's address is recorded.
    std::vector<std::uint8_t> recording;
    {
        UdpSocket at_node0(ports[0]);
        QVERIFY(at_node0.ok());
        NodeGroup a;
        a.start(args(1, nodes, kNonceA, {}));
        const auto deadline = Clock::now() + std::chrono::seconds(60);
        while (recording.empty() && Clock::now() < deadline) {
            a.wait_for([] { return false; }, 20);  // reads the engine's pipes meanwhile
            if (auto d = at_node0.receive(0); d && d->size() > dist::kHeaderBytes && (*d)[5] == kHelloType) recording = *d;
            if (a.process(0).state() == QProcess::NotRunning) break;
        }
        QVERIFY2(!recording.empty(), qPrintable("run A's node 1 sent nothing: " + a.stdout_so_far(0).right(1000)));
        a.process(0).kill();
        a.process(0).waitForFinished(10000);
    }
    const std::uint64_t stale_incarnation = load_u64(recording, 34);

    // 2. Run B's node 0; the recording is replayed from node 1's address, then a probe.
    NodeGroup b;
    b.start(args(0, nodes, nonce_b, path("b0.thr")));
    QVERIFY2(b.wait_for([&] {
                 const int fd = test_support::connect_to(ports[0]);
                 if (fd >= 0) ::close(fd);
                 return fd >= 0 || b.process(0).state() == QProcess::NotRunning;
             }, 60000),
             "run B's node 0 never listened");
    QVERIFY2(b.process(0).state() == QProcess::Running, qPrintable(b.stdout_so_far(0).right(2000)));
    const dist::Secret key_b = dist::run_key(secret(), dist::parse_run_nonce(nonce_b.toStdString(), "nonce"));
    const std::uint64_t run_b = dist::run_id_of(key_b);
    bool answered_stale = false, answered_probe = false;
    {
        UdpSocket at_node1(ports[1]);
        QVERIFY(at_node1.ok());
        QVERIFY(at_node1.send_to(ports[0], recording));
        dist::DatagramHeader probe;
        probe.type = kHelloType;
        probe.run_id = run_b;
        probe.sender = 1;
        probe.message_id = 0;
        probe.sender_incarnation = 1;  // below any real process's: never adopted over the real node 1
        const std::uint8_t please_answer[1] = {1};
        QVERIFY(at_node1.send_to(ports[0], dist::seal(probe, please_answer, key_b)));
        // Node 0 handles datagrams in order: an answer to the recording would come before the
        // probe's (and with one, the probe's may be held back by the answers' rate limit).
        const auto deadline = Clock::now() + std::chrono::seconds(30);
        while (!answered_probe && !answered_stale && Clock::now() < deadline) {
            b.wait_for([] { return false; }, 10);  // reads the engine's pipes meanwhile
            const auto d = at_node1.receive(0);
            if (!d) continue;
            dist::DropReason why{};
            const auto opened = dist::open(*d, key_b, run_b, why);
            QVERIFY2(opened, "node 0 sent a datagram that run B's key does not open");
            if (opened->header.type != kHelloType) continue;
            answered_stale = opened->header.dest_incarnation == stale_incarnation;
            answered_probe = opened->header.dest_incarnation == 1;
        }
    }
    qInfo("node 0 answered the probe: %d; answered run A's recorded hello: %d", answered_probe, answered_stale);
    if (separated) {
        QVERIFY2(answered_probe, "node 0 never answered a hello made with run B's key");
        QVERIFY2(!answered_stale, "run B's node 0 took a datagram of run A (same secret, other nonce) as authentic");
    } else {
        QVERIFY2(answered_stale, "with equal nonces the recording should pass the MAC: the control does not show the attack");
    }

    // 3. Run B's node 1; the run finishes, replicas equal.
    b.start(args(1, nodes, nonce_b, path("b1.thr")));
    const auto runs = b.wait_all(240000);
    for (int node = 0; node < 2; ++node) check_finished_ok(runs[node], node);
    if (QTest::currentTestFailed()) return;
    const auto totals = runs[0].of("run_finished").last();
    qInfo("run B: %d iterations; node 0 dropped %d datagrams", totals.value("iters").toInt(), totals.value("dropped").toInt());
    if (separated) QVERIFY2(totals.value("dropped").toInt() >= 1, "the stale datagram was not counted as dropped");
    const auto cmp = run_engine({"compare", path("b0.thr"), path("b1.thr"), "--tolerance", "1e-5"});
    QVERIFY2(cmp.exit_code == 0, qPrintable("replicas differ: " + cmp.summary()));
    QVERIFY2(runs[0].stderr_text.contains("(secret and --run-nonce)"), qPrintable(runs[0].stderr_text.right(1000)));
}

void TestRunNonce::nodes_with_different_nonces_never_meet() {
    // Node 0 with nonce A, node 1 with nonce B, the same secret: node 0 waits --join-wait 3 s for
    // a node 1 that never shows up in its run, then trains alone; node 1 never gets to train.
    const auto ports = free_node_ports(2);
    const QString nodes = QString("127.0.0.1:%1,127.0.0.1:%2").arg(ports[0]).arg(ports[1]);
    NodeGroup g;
    g.start(args(0, nodes, kNonceA, {}) << "--join-wait" << "3");
    g.start(args(1, nodes, kNonceB, {}));
    QVERIFY(g.wait_for([&] { return g.process(0).state() == QProcess::NotRunning; }, 120000));
    g.process(1).terminate();
    const auto runs = g.wait_all(60000);
    check_finished_ok(runs[0], 0);
    if (QTest::currentTestFailed()) return;
    bool alone = false;
    for (const auto& w : runs[0].of("warning")) alone = alone || w.value("message").toString().contains("node 1 did not ask to join");
    QVERIFY2(alone, qPrintable(runs[0].summary()));
    QVERIFY(runs[0].of("iteration").size() > 0);
    QCOMPARE(runs[1].of("iteration").size(), 0);

    // Without a nonce the engine says what that means.
    const auto single = run_engine({"train", "--model", path("m.json"), "--data", path("d.csv"), "--epochs", "1",
                                   "--nodes", nodes, "--node-rank", "0", "--secret-file", path("secret"), "--join-wait", "0.5"},
                                  60000);
    QVERIFY2(single.stderr_text.contains("runs that reuse this secret are not separated"), qPrintable(single.summary()));
}

QTEST_GUILESS_MAIN(TestRunNonce)
#include "test_run_nonce.moc"
