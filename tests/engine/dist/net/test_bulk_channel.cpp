// The TCP bulk channel between the nodes, on real sockets: large messages arrive intact both ways;
// a connection that sends garbage, a wrong MAC or another run's handshake is closed and counted and
// delivers nothing, while the real peers carry on; a replayed recording of an authentic connection
// delivers nothing and takes no rank's place; idle and slow connections are closed at the handshake
// deadline and never exceed the cap; a peer that stops reading makes send() fail by its deadline,
// naming it; a taken port is refused with a message naming it.
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <poll.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "dist/net/bulk_channel.h"
#include "free_ports.h"
#include "tcp_relay.h"

using namespace thresher;
using namespace thresher::dist;
using test_support::connect_to;
using test_support::RecordingRelay;

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
    void replayed_connection_delivers_nothing();
    void idle_and_slow_connections_are_shed();
    void stalled_reader_fails_the_write_by_its_deadline();
};

void TestBulkChannel::large_messages_both_ways() {
    const auto peers = loopback_peers(3);
    BulkChannel controller(0, peers, "127.0.0.1", 77, key(5));
    BulkChannel one(1, peers, "127.0.0.1", 77, key(5)), two(2, peers, "127.0.0.1", 77, key(5));
    for (auto* c : {&controller, &one, &two}) c->set_param_count(6 << 20);
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
    controller.set_param_count(1000);
    BulkChannel wrong_key(1, peers, "127.0.0.1", 9, key(2));
    BulkChannel wrong_run(2, peers, "127.0.0.1", 10, key(1));
    raw_send(port, pattern(5000, 9));  // garbage
    std::vector<std::uint8_t> header(104, 0);
    const std::uint8_t hello_magic[] = {'T', 'H', 'R', 'H'};
    std::memcpy(header.data(), hello_magic, 4);
    header[4] = 1;
    header[5] = 1;
    raw_send(port, header);  // a handshake without a valid MAC
    // Neither gets through the handshake, so neither can send anything.
    QVERIFY_THROWS_EXCEPTION(Error, wrong_key.send(0, MessageType::Average, pattern(1000, 4), std::chrono::milliseconds(300)));
    QVERIFY_THROWS_EXCEPTION(Error, wrong_run.send(0, MessageType::Average, pattern(1000, 5), std::chrono::milliseconds(300)));
    QTRY_VERIFY_WITH_TIMEOUT(controller.rejected() >= 4, 10000);
    QVERIFY(!controller.receive(std::chrono::milliseconds(300)));
    BulkChannel honest(3, peers, "127.0.0.1", 9, key(1));
    honest.send(0, MessageType::Average, pattern(1000, 6));
    auto m = controller.receive(std::chrono::seconds(10));
    QVERIFY(m);
    QVERIFY(m->payload == pattern(1000, 6));
    // A frame longer than its type's limit (1000 parameters) closes the connection unread.
    const auto before = controller.rejected();
    try {
        honest.send(0, MessageType::Average, pattern(1 << 20, 7), std::chrono::milliseconds(500));
    } catch (const Error&) {
        // closed under it (whether the write failed depends on how much the kernel buffered)
    }
    QTRY_VERIFY_WITH_TIMEOUT(controller.rejected() > before, 10000);
    QVERIFY(!controller.receive(std::chrono::milliseconds(200)));
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


void TestBulkChannel::replayed_connection_delivers_nothing() {
    // Node 1 reaches node 0 through a relay that records node 1's side: handshake and frames.
    auto peers = loopback_peers(3);
    const int relay_port = peers[2].port;  // node 2 never starts: its port serves as the relay's
    auto via_relay = peers;
    via_relay[0].port = static_cast<std::uint16_t>(relay_port);
    RecordingRelay relay(relay_port, peers[0].port);
    QVERIFY(relay.ok());
    BulkOptions o0, o1;
    o0.incarnation = 100;
    o1.incarnation = 200;
    BulkChannel controller(0, peers, "127.0.0.1", 5, key(3), o0);
    BulkChannel one(1, via_relay, "127.0.0.1", 5, key(3), o1);
    controller.set_param_count(1000);
    one.set_param_count(1000);
    one.send(0, MessageType::ParamsRequest, pattern(16, 1));
    one.send(0, MessageType::Average, pattern(3000, 2));
    for (int i = 0; i < 2; ++i) {
        auto m = controller.receive(std::chrono::seconds(10));
        QVERIFY(m);
        QCOMPARE(m->sender, 1);
        QCOMPARE(m->incarnation, std::uint64_t(200));
    }
    QTRY_VERIFY_WITH_TIMEOUT(relay.recorded().size() >= 104 + 2 * 24 + 4 * 32 + 16 + 3000, 5000);
    const auto recording = relay.recorded();
    // The attacker replays the whole recording on new connections, twice.
    const auto before = controller.rejected();
    for (int i = 0; i < 2; ++i) raw_send(peers[0].port, recording);
    QTRY_VERIFY_WITH_TIMEOUT(controller.rejected() >= before + 2, 10000);
    QVERIFY2(!controller.receive(std::chrono::milliseconds(300)), "a replayed frame was delivered");
    // Node 1's place was not taken: what node 0 sends to rank 1 still reaches node 1.
    controller.send(1, MessageType::AverageResult, pattern(2000, 3));
    auto m = one.receive(std::chrono::seconds(10));
    QVERIFY(m);
    QVERIFY(m->payload == pattern(2000, 3));
}

void TestBulkChannel::idle_and_slow_connections_are_shed() {
    const auto peers = loopback_peers(2);
    BulkOptions o;
    o.handshake_timeout = std::chrono::milliseconds(700);
    o.max_unidentified = 8;
    BulkChannel controller(0, peers, "127.0.0.1", 5, key(3), o);
    controller.set_param_count(1000);
    // 30 connections that say nothing, and 5 that send a byte of the handshake every 200 ms.
    std::vector<int> idle, slow;
    for (int i = 0; i < 30; ++i) idle.push_back(connect_to(peers[0].port));
    for (int i = 0; i < 5; ++i) slow.push_back(connect_to(peers[0].port));
    QTRY_VERIFY_WITH_TIMEOUT(controller.rejected() >= 27, 5000);  // shed beyond the cap of 8
    QVERIFY2(controller.unidentified() <= 8, qPrintable(QString::number(controller.unidentified())));
    const auto start = std::chrono::steady_clock::now();
    bool all_closed = false;
    while (!all_closed && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
        all_closed = true;
        for (int fd : slow) {
            const char byte = 'T';
            if (::send(fd, &byte, 1, MSG_NOSIGNAL) == 1) all_closed = false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    QVERIFY2(all_closed, "slow connections were still open 5 s later");
    qInfo("slow handshakes closed after %.2f s (deadline 0.7 s)", took);
    QTRY_COMPARE_WITH_TIMEOUT(controller.unidentified(), std::size_t(0), 3000);
    for (int fd : idle) ::close(fd);
    for (int fd : slow) ::close(fd);
    // An honest node is served the whole time.
    BulkChannel one(1, peers, "127.0.0.1", 5, key(3));
    one.send(0, MessageType::Average, pattern(1000, 6));
    auto m = controller.receive(std::chrono::seconds(10));
    QVERIFY(m);
    QCOMPARE(m->sender, 1);
}

void TestBulkChannel::stalled_reader_fails_the_write_by_its_deadline() {
    // Node 1 is authenticated but stops reading (its receive() is never called, and a 64 MiB
    // frame needs parameters it has not been told of: the frame waits unread on its connection).
    const auto peers = loopback_peers(2);
    BulkOptions o;
    o.write_timeout = std::chrono::milliseconds(1500);
    BulkChannel controller(0, peers, "127.0.0.1", 5, key(3), o);
    BulkChannel one(1, peers, "127.0.0.1", 5, key(3));
    controller.set_param_count(100 << 20);
    const auto big = pattern(64 << 20, 1);
    const auto start = std::chrono::steady_clock::now();
    try {
        controller.send(1, MessageType::AverageResult, big);
        QFAIL("a 64 MiB write to a peer that does not read finished");
    } catch (const Error& e) {
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        qInfo("failed after %.2f s: %s", took, e.what());
        QVERIFY2(QString(e.what()).contains("node 1") && QString(e.what()).contains("not reading"), e.what());
        QVERIFY2(took < 6, qPrintable(QString::number(took)));
    }
}

QTEST_GUILESS_MAIN(TestBulkChannel)
#include "test_bulk_channel.moc"
