// MemoryTransport: ranks as threads exchange messages exactly once whatever faults the hub
// injects (loss, duplication, reordering), broadcast and self-delivery, a cut-off rank showing up
// in unreachable_peers() and catching up when it comes back, and bad ranks refused.
#include <QtTest>

#include <atomic>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/rng.h"
#include "dist/net/memory_transport.h"

using namespace thresher;
using namespace thresher::dist;
using namespace std::chrono_literals;

namespace {

// Message k from s to d: its size and bytes follow from (s, d, k), so the receiver can check
// each message it gets without being told what was sent.
std::vector<std::uint8_t> payload_for(int s, int d, std::uint64_t k) {
    Rng rng(derive_seed(1234, static_cast<std::uint64_t>(s) * 1000 + static_cast<std::uint64_t>(d), k));
    const std::size_t size = k % 50 == 0 ? 0 : 1 + rng() % (k % 10 == 0 ? 100000 : 2000);
    std::vector<std::uint8_t> p(size);
    for (auto& b : p) b = static_cast<std::uint8_t>(rng());
    return p;
}

// Every rank sends `n` messages to every other rank and checks what it receives: each (sender,
// id) once, ids 1..n, bytes as payload_for says. Returns the first problem, or "" when none.
QString exchange_messages(std::vector<std::unique_ptr<MemoryTransport>>& ranks, std::uint64_t n) {
    const int world = static_cast<int>(ranks.size());
    std::mutex mutex;
    QString problem;
    auto fail = [&](const QString& what) {
        std::lock_guard lock(mutex);
        if (problem.isEmpty()) problem = what;
    };
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r) {
        threads.emplace_back([&, r] {
            Transport& t = *ranks[r];
            for (std::uint64_t k = 0; k < n; ++k)
                for (int d = 0; d < world; ++d)
                    if (d != r) t.send(d, MessageType::Update, payload_for(r, d, k));
            std::vector<std::vector<bool>> seen(world, std::vector<bool>(n, false));
            std::uint64_t got = 0;
            const auto deadline = std::chrono::steady_clock::now() + 20s;
            while (got < n * (world - 1) && std::chrono::steady_clock::now() < deadline) {
                auto m = t.receive(100ms);
                if (!m) continue;
                if (m->sender < 0 || m->sender >= world || m->sender == r || m->id < 1 || m->id > n)
                    return fail(QString("rank %1: message from %2 with id %3").arg(r).arg(m->sender).arg(m->id));
                if (seen[m->sender][m->id - 1])
                    return fail(QString("rank %1: message %2 from %3 twice").arg(r).arg(m->id).arg(m->sender));
                seen[m->sender][m->id - 1] = true;
                if (m->payload != payload_for(m->sender, r, m->id - 1))
                    return fail(QString("rank %1: message %2 from %3 corrupted").arg(r).arg(m->id).arg(m->sender));
                ++got;
            }
            if (got != n * (world - 1))
                return fail(QString("rank %1: %2 of %3 messages arrived").arg(r).arg(got).arg(n * (world - 1)));
            if (!t.flush(10s)) return fail(QString("rank %1: flush timed out").arg(r));
            if (auto extra = t.receive(50ms))
                return fail(QString("rank %1: extra message %2 from %3").arg(r).arg(extra->id).arg(extra->sender));
        });
    }
    for (auto& thread : threads) thread.join();
    return problem;
}

}  // namespace

class TestMemoryTransport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void exactly_once_data();
    void exactly_once();
    void broadcast_and_self();
    void cut_off_rank();
    void bad_ranks();
    void exit_and_restart();
};

void TestMemoryTransport::exactly_once_data() {
    QTest::addColumn<double>("drop");
    QTest::addColumn<double>("duplicate");
    QTest::addColumn<double>("reorder");
    QTest::addColumn<int>("world");
    QTest::newRow("clean, 3 ranks") << 0.0 << 0.0 << 0.0 << 3;
    QTest::newRow("20% loss") << 0.2 << 0.0 << 0.0 << 3;
    QTest::newRow("20% duplicated") << 0.0 << 0.2 << 0.0 << 3;
    QTest::newRow("50% reordered") << 0.0 << 0.0 << 0.5 << 3;
    QTest::newRow("all at once, 5 ranks") << 0.1 << 0.1 << 0.3 << 5;
    QTest::newRow("single rank") << 0.5 << 0.5 << 0.5 << 1;
}

void TestMemoryTransport::exactly_once() {
    QFETCH(double, drop);
    QFETCH(double, duplicate);
    QFETCH(double, reorder);
    QFETCH(int, world);
    MemoryFaults faults;
    faults.drop = drop;
    faults.duplicate = duplicate;
    faults.reorder = reorder;
    faults.seed = 99;
    MemoryHub hub(world, faults);
    std::vector<std::unique_ptr<MemoryTransport>> ranks;
    for (int r = 0; r < world; ++r) ranks.push_back(hub.connect(r));
    const QString problem = exchange_messages(ranks, 500);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    if (world < 2) return;
    TransportStats total;
    for (auto& t : ranks) {
        const TransportStats s = t->stats();
        total.retransmitted += s.retransmitted;
        total.duplicates += s.duplicates;
        total.datagrams_rx += s.datagrams_rx;
        for (const auto& [reason, count] : s.dropped) total.dropped[reason] += count;
    }
    // Faults happened and were absorbed: 3000+ messages give hundreds of each at these rates.
    QCOMPARE(total.retransmitted > 0, drop > 0);
    QCOMPARE(total.duplicates + total.dropped_total() > 0, duplicate > 0);
    QVERIFY(total.datagrams_rx >= 500u * world * (world - 1));
}

void TestMemoryTransport::broadcast_and_self() {
    MemoryHub hub(4);
    std::vector<std::unique_ptr<MemoryTransport>> ranks;
    for (int r = 0; r < 4; ++r) ranks.push_back(hub.connect(r));
    const std::vector<std::uint8_t> hello{1, 2, 3};
    ranks[2]->broadcast(MessageType::Params, hello);
    ranks[2]->send(2, MessageType::Control, hello);
    for (int r = 0; r < 4; ++r) {
        auto m = ranks[r]->receive(1s);
        QVERIFY(m.has_value());
        QCOMPARE(m->sender, 2);
        QVERIFY(m->payload == hello);
        QCOMPARE(int(m->type), r == 2 ? int(MessageType::Control) : int(MessageType::Params));
        QVERIFY(!ranks[r]->receive(10ms).has_value());
    }
    QVERIFY(ranks[2]->flush(1s));
}

void TestMemoryTransport::cut_off_rank() {
    MemoryHub hub(3, {}, 100ms);
    auto r0 = hub.connect(0), r1 = hub.connect(1), r2 = hub.connect(2);
    const std::vector<std::uint8_t> bytes{42};
    hub.set_alive(1, false);
    r0->send(1, MessageType::Heartbeat, bytes);
    r0->send(2, MessageType::Heartbeat, bytes);
    r1->send(0, MessageType::Heartbeat, bytes);  // from the cut-off side: held too
    QVERIFY(r0->unreachable_peers().empty());    // not yet past the give-up time
    QVERIFY(!r0->flush(150ms));
    QCOMPARE(r0->unreachable_peers(), std::vector<int>{1});
    QCOMPARE(r1->unreachable_peers(), std::vector<int>{0});
    QVERIFY(r2->receive(1s).has_value());
    QVERIFY(!r1->receive(50ms).has_value());

    hub.set_alive(1, true);
    QVERIFY(r0->flush(1s));
    QVERIFY(r0->unreachable_peers().empty());
    auto m = r1->receive(1s);
    QVERIFY(m.has_value());
    QCOMPARE(m->sender, 0);
    m = r0->receive(1s);
    QVERIFY(m.has_value());
    QCOMPARE(m->sender, 1);
}

void TestMemoryTransport::bad_ranks() {
    MemoryHub hub(2);
    auto r0 = hub.connect(0);
    QVERIFY_THROWS_EXCEPTION(Error, hub.connect(0));
    QVERIFY_THROWS_EXCEPTION(Error, hub.connect(2));
    QVERIFY_THROWS_EXCEPTION(Error, r0->send(-1, MessageType::Update, {}));
    QVERIFY_THROWS_EXCEPTION(Error, r0->send(2, MessageType::Update, {}));
    QVERIFY_THROWS_EXCEPTION(Error, MemoryHub(0));
    MemoryFaults certain_loss;
    certain_loss.drop = 1.0;
    QVERIFY_THROWS_EXCEPTION(Error, MemoryHub(2, certain_loss));
}

// A rank's process ends when its transport is destroyed, and a new connect() is its restart:
// what was on its way to the old process is lost, peers give up on it after give_up_after, and
// the new process has a newer incarnation and numbering from 1 both ways.
void TestMemoryTransport::exit_and_restart() {
    MemoryHub hub(2, {}, 100ms);
    auto r0 = hub.connect(0);
    auto r1 = hub.connect(1);
    QCOMPARE(r0->incarnation(), std::uint64_t(1));
    QCOMPARE(r0->peer_incarnation(1), std::uint64_t(1));
    const std::vector<std::uint8_t> bytes{7};
    r1->send(0, MessageType::Heartbeat, bytes);
    auto m = r0->receive(1s);
    QVERIFY(m.has_value());
    QCOMPARE(m->incarnation, std::uint64_t(1));
    QCOMPARE(m->id, std::uint64_t(1));
    r0->send(1, MessageType::Heartbeat, bytes);  // on its way when the process ends: lost with it
    r1.reset();
    r0->send(1, MessageType::Heartbeat, bytes);  // to a process that is gone: lost, nothing held
    QVERIFY(r0->flush(1s));
    QTRY_COMPARE_WITH_TIMEOUT(r0->unreachable_peers(), std::vector<int>{1}, 2000);

    auto again = hub.connect(1);
    QCOMPARE(again->incarnation(), std::uint64_t(2));
    QCOMPARE(r0->peer_incarnation(1), std::uint64_t(2));
    QVERIFY(r0->unreachable_peers().empty());
    QVERIFY(!again->receive(50ms).has_value());  // nothing meant for its predecessor
    again->send(0, MessageType::Heartbeat, bytes);
    m = r0->receive(1s);
    QVERIFY(m.has_value());
    QCOMPARE(m->incarnation, std::uint64_t(2));
    QCOMPARE(m->id, std::uint64_t(1));
    r0->send(1, MessageType::Heartbeat, bytes);
    m = again->receive(1s);
    QVERIFY(m.has_value());
    QCOMPARE(m->id, std::uint64_t(1));
    QCOMPARE(m->incarnation, std::uint64_t(1));
}

QTEST_GUILESS_MAIN(TestMemoryTransport)
#include "test_memory_transport.moc"
