// The TCP bulk channel between the controller and the other nodes, on real sockets: large
// messages arrive intact both ways; a connection that sends garbage, a wrong MAC or another run's
// frames is closed and counted and delivers nothing, while the real peers carry on; a taken port
// is refused with a message naming it.
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "core/error.h"
#include "dist/net/bulk_channel.h"
#include "free_ports.h"

using namespace thresher;
using namespace thresher::dist;

namespace {

Secret key(std::uint8_t fill) { return Secret(std::vector<std::uint8_t>(32, fill)); }

// `n` nodes on loopback, on ports nobody holds right now.
std::vector<UdpEndpoint> loopback_peers(int n) {
    std::vector<UdpEndpoint> peers;
    for (int port : test_support::free_node_ports(n)) peers.push_back({"127.0.0.1", static_cast<std::uint16_t>(port)});
    return peers;
}

// Writes raw bytes to the controller's port from a plain socket, as an attacker would.
void raw_send(int port, const std::vector<std::uint8_t>& bytes) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) (void)!::write(fd, bytes.data(), bytes.size());
    ::close(fd);
}

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 31 + seed + (i >> 12));
    return v;
}

}  // namespace

class TestBulkChannel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void large_messages_both_ways();
    void hostile_connections_deliver_nothing();
    void taken_port_is_named();
};

void TestBulkChannel::large_messages_both_ways() {
    const auto peers = loopback_peers(3);
    BulkChannel controller(0, peers, "127.0.0.1", 77, key(5));
    BulkChannel one(1, peers, "127.0.0.1", 77, key(5)), two(2, peers, "127.0.0.1", 77, key(5));
    const auto a = pattern(20 << 20, 1), b = pattern(3 << 20, 2);
    std::thread t1([&] { one.send(0, MessageType::Average, a); });
    std::thread t2([&] { two.send(0, MessageType::Average, b); });
    std::map<int, std::vector<std::uint8_t>> got;
    for (int i = 0; i < 2; ++i) {
        auto m = controller.receive(std::chrono::seconds(20));
        QVERIFY(m);
        QCOMPARE(int(m->type), int(MessageType::Average));
        got[m->sender] = std::move(m->payload);
    }
    t1.join();
    t2.join();
    QVERIFY(got[1] == a);
    QVERIFY(got[2] == b);
    const auto reply = pattern(7 << 20, 3);
    controller.send(1, MessageType::AverageResult, reply);
    controller.send(2, MessageType::AverageResult, reply);
    for (auto* node : {&one, &two}) {
        auto m = node->receive(std::chrono::seconds(20));
        QVERIFY(m);
        QCOMPARE(m->sender, 0);
        QVERIFY(m->payload == reply);
    }
    QVERIFY(controller.bytes_rx() > (23u << 20));
    QCOMPARE(controller.rejected(), std::uint64_t(0));
    // Any two nodes can talk (a tree's averaging rounds): node 1 to node 2 and back on the
    // connection node 1 opened.
    one.send(2, MessageType::Average, b);
    auto m = two.receive(std::chrono::seconds(20));
    QVERIFY(m);
    QCOMPARE(m->sender, 1);
    QVERIFY(m->payload == b);
    two.send(1, MessageType::AverageResult, a);
    m = one.receive(std::chrono::seconds(20));
    QVERIFY(m);
    QCOMPARE(m->sender, 2);
    QVERIFY(m->payload == a);
    QVERIFY_THROWS_EXCEPTION(Error, one.send(1, MessageType::Average, a));  // not to itself
    QVERIFY_THROWS_EXCEPTION(Error, one.send(3, MessageType::Average, a));  // no such node
}

void TestBulkChannel::hostile_connections_deliver_nothing() {
    const auto peers = loopback_peers(4);
    const int port = peers[0].port;
    BulkChannel controller(0, peers, "127.0.0.1", 9, key(1));
    BulkChannel wrong_key(1, peers, "127.0.0.1", 9, key(2));
    BulkChannel wrong_run(2, peers, "127.0.0.1", 10, key(1));
    raw_send(port, pattern(5000, 9));                                     // garbage
    std::vector<std::uint8_t> header(28, 0);
    const std::uint32_t magic = 0x42524854;
    std::memcpy(header.data(), &magic, 4);
    header[4] = 1;
    header[5] = 4;
    const std::uint64_t huge = std::uint64_t{1} << 40;
    std::memcpy(header.data() + 20, &huge, 8);
    raw_send(port, header);                                               // absurd length
    wrong_key.send(0, MessageType::Average, pattern(1000, 4));            // bad MAC
    wrong_run.send(0, MessageType::Average, pattern(1000, 5));            // another run
    QTRY_COMPARE_WITH_TIMEOUT(controller.rejected(), std::uint64_t(4), 10000);
    QVERIFY(!controller.receive(std::chrono::milliseconds(300)));
    BulkChannel honest(3, peers, "127.0.0.1", 9, key(1));
    honest.send(0, MessageType::Average, pattern(1000, 6));
    auto m = controller.receive(std::chrono::seconds(10));
    QVERIFY(m);
    QVERIFY(m->payload == pattern(1000, 6));
}

void TestBulkChannel::taken_port_is_named() {
    const auto peers = loopback_peers(2);
    const int port = peers[0].port;
    BulkChannel first(0, peers, "127.0.0.1", 1, key(1));
    try {
        BulkChannel second(0, peers, "127.0.0.1", 1, key(1));
        QFAIL("bound a taken port");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains(QString::number(port)), e.what());
    }
}

QTEST_GUILESS_MAIN(TestBulkChannel)
#include "test_bulk_channel.moc"
