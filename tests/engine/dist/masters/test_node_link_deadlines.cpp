// NodeLink's exchanges with deadlines, in one process over the in-memory transport (ranks as
// threads): an averaging result lost for good (as on a connection that reset under it) and a
// node's sums lost once are recovered by acknowledgement and resend, and every replica gets the
// cluster's sums; a node that is alive but never sends its sums makes the round fail within the
// round deadline with an error naming that node, on every node, instead of hanging. On a
// VirtualClock (core/virtual_clock.h) with the engine's own deadlines: seconds below are virtual,
// and a 10-minute round deadline costs no real time.
#include <QtTest>

#include <atomic>
#include <thread>

#include "core/error.h"
#include "core/virtual_clock.h"
#include "dist/masters/node_link.h"
#include "dist/masters/payload_io.h"
#include "dist/net/memory_transport.h"

using namespace thresher;
using namespace thresher::dist;

namespace {

struct Outcome {
    std::vector<double> params;
    int workers = 0;
    std::string error;
    double seconds = 0;
};

// One averaging round on `n` linked ranks; rank r contributes params {r+1, 10*(r+1)}.
std::vector<Outcome> one_round(VirtualClock& clock, MemoryHub& hub, int n, const LinkDeadlines& deadlines) {
    std::vector<std::unique_ptr<NodeLink>> links;
    for (int r = 0; r < n; ++r) {
        links.push_back(std::make_unique<NodeLink>(hub.connect(r), train::ClusterShape{n, r, 1}, 2, nullptr, nullptr, clock));
        links.back()->set_deadlines(deadlines);
        links.back()->start();
    }
    std::vector<Outcome> out(static_cast<std::size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
        threads.push_back(clock.spawn([&, r] {
            auto& o = out[static_cast<std::size_t>(r)];
            o.params = {double(r + 1), 10.0 * (r + 1)};
            std::vector<double> state;
            o.workers = 1;
            const auto start = clock.now();
            try {
                links[static_cast<std::size_t>(r)]->reducer()(o.params, state, o.workers);
            } catch (const Error& e) {
                o.error = e.what();
            }
            o.seconds = std::chrono::duration<double>(clock.now() - start).count();
        }));
    for (auto& t : threads) t.join();
    return out;
}

std::uint64_t round_of(std::span<const std::uint8_t> payload) {
    std::uint64_t round = 0;
    payload_io::get(payload, round);
    return round;
}

}  // namespace

class TestNodeLinkDeadlines : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void lost_result_and_sums_are_sent_again();
    void stalled_peer_fails_the_round_by_its_deadline();
};

void TestNodeLinkDeadlines::lost_result_and_sums_are_sent_again() {
    VirtualClock clock;
    MemoryHub hub(3, MemoryFaults{0.05, 0.05, 0.2, std::chrono::milliseconds(5), std::chrono::milliseconds(2), 7},
                  std::chrono::seconds(10), clock);
    std::atomic<int> lost_results{0}, lost_sums{0};
    hub.set_loss([&](int from, int to, MessageType type, std::span<const std::uint8_t> payload) {
        if (type == MessageType::AverageResult && from == 0 && to == 1 && round_of(payload) == 0 && lost_results == 0) {
            ++lost_results;
            return true;
        }
        if (type == MessageType::Average && from == 2 && lost_sums == 0) {
            ++lost_sums;
            return true;
        }
        return false;
    });
    const LinkDeadlines d;  // the engine's
    const auto out = one_round(clock, hub, 3, d);
    QCOMPARE(lost_results.load(), 1);
    QCOMPARE(lost_sums.load(), 1);
    for (int r = 0; r < 3; ++r) {
        const auto& o = out[static_cast<std::size_t>(r)];
        QVERIFY2(o.error.empty(), o.error.c_str());
        QCOMPARE(o.workers, 3);
        QCOMPARE(o.params[0], 6.0);
        QCOMPARE(o.params[1], 60.0);
        qInfo("node %d: round done in %.2f s", r, o.seconds);
        // A lost frame costs one ack_wait or result_ask, not the round deadline.
        const double limit = 2 * std::chrono::duration<double>(d.ack_wait + d.result_ask).count();
        QVERIFY2(o.seconds < limit, qPrintable(QString::number(o.seconds)));
    }
}

void TestNodeLinkDeadlines::stalled_peer_fails_the_round_by_its_deadline() {
    VirtualClock clock;
    MemoryHub hub(3, {}, std::chrono::seconds(10), clock);
    // Node 2 answers heartbeats but its sums never arrive (a stalled or broken process).
    hub.set_loss([](int from, int, MessageType type, std::span<const std::uint8_t>) {
        return from == 2 && type == MessageType::Average;
    });
    const LinkDeadlines d;  // the engine's: a round fails after 10 minutes
    const auto out = one_round(clock, hub, 3, d);
    const double round = std::chrono::duration<double>(d.round).count();
    for (int r = 0; r < 3; ++r) {
        const auto& o = out[static_cast<std::size_t>(r)];
        qInfo("node %d after %.2f s: %s", r, o.seconds, o.error.c_str());
        QVERIFY2(!o.error.empty(), "the round finished without node 2's sums");
        QVERIFY2(QString::fromStdString(o.error).contains("averaging round 0"), o.error.c_str());
        QVERIFY2(o.seconds >= round && o.seconds < round + 5, qPrintable(QString::number(o.seconds)));
    }
    QVERIFY2(QString::fromStdString(out[0].error).contains("node 2"), out[0].error.c_str());
    QVERIFY2(QString::fromStdString(out[2].error).contains("node 0"), out[2].error.c_str());
}

QTEST_GUILESS_MAIN(TestNodeLinkDeadlines)
#include "test_node_link_deadlines.moc"
