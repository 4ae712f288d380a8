// VirtualClock (core/virtual_clock.h): deadlines fire as soon as every participant waits, time
// stands still while one works, a wake through the clock moves no time, joins inside idle_while
// count as waiting, the stall valve unsticks a join the clock cannot see, and advance() drives a
// clock by hand. Real time is read only to show that a long virtual wait took little of it.
#include <QtTest>

#include <atomic>

#include "core/virtual_clock.h"

using namespace thresher;
using namespace std::chrono_literals;

namespace {

// Waits on `clock` for `d` from a fresh condition variable; returns the virtual time it took.
Clock::duration timed_sleep(Clock& clock, Clock::duration d) {
    const auto begun = clock.now();
    clock.sleep_for(d);
    return clock.now() - begun;
}

}  // namespace

class TestVirtualClock : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void a_long_deadline_fires_without_waiting_for_it();
    void time_stands_still_while_a_participant_works();
    void a_wake_through_the_clock_moves_no_time();
    void waits_end_in_deadline_order();
    void a_join_inside_idle_while_counts_as_waiting();
    void work_inside_idle_while_holds_time_still();
    void the_stall_valve_unsticks_a_hidden_join();
    void advance_drives_a_manual_clock();
};

void TestVirtualClock::a_long_deadline_fires_without_waiting_for_it() {
    VirtualClock clock;
    QElapsedTimer real;
    real.start();
    Clock::duration took{};
    auto t = clock.spawn([&] { took = timed_sleep(clock, 3600s); });
    clock.join(t);
    QCOMPARE(took, Clock::duration(3600s));
    QVERIFY2(real.elapsed() < 5000, qPrintable(QString("an hour of virtual time took %1 ms").arg(real.elapsed())));
    QCOMPARE(clock.elapsed(), Clock::duration(3600s));
}

void TestVirtualClock::time_stands_still_while_a_participant_works() {
    VirtualClock::Options o;
    o.stall = std::chrono::milliseconds(60000);  // only the worker's end may let time move
    VirtualClock clock(o);
    std::atomic<bool> release{false}, waiting{false};
    Clock::duration slept{};
    auto sleeper = clock.spawn([&] {
        waiting = true;
        slept = timed_sleep(clock, 1s);
    });
    auto worker = clock.spawn([&] {
        while (!release) std::this_thread::yield();  // "computing": nothing the clock sees
    });
    while (!waiting) std::this_thread::yield();
    // The sleeper waits, the worker works: however long that takes, time must not move.
    QTest::qWait(100);
    QCOMPARE(clock.elapsed(), Clock::duration(0));
    release = true;
    worker.join();
    sleeper.join();
    QCOMPARE(slept, Clock::duration(1s));
    QCOMPARE(clock.stalls(), 0u);
}

void TestVirtualClock::a_wake_through_the_clock_moves_no_time() {
    VirtualClock clock;
    std::mutex mutex;
    std::condition_variable cv;
    bool ready = false, got = false;
    auto waiter = clock.spawn([&] {
        std::unique_lock lock(mutex);
        got = clock.wait_for(cv, lock, 10s, [&] { return ready; });
    });
    auto setter = clock.spawn([&] {
        clock.sleep_for(2s);
        std::lock_guard lock(mutex);
        ready = true;
        clock.notify_all(cv);
    });
    clock.join(setter);
    clock.join(waiter);
    QVERIFY(got);
    QCOMPARE(clock.elapsed(), Clock::duration(2s));  // not the waiter's 10 s
}

void TestVirtualClock::waits_end_in_deadline_order() {
    VirtualClock clock;
    std::mutex mutex;
    std::vector<int> order;
    std::vector<std::thread> threads;
    for (int s : {3, 1, 2})
        threads.push_back(clock.spawn([&, s] {
            clock.sleep_for(std::chrono::seconds(s));
            std::lock_guard lock(mutex);
            order.push_back(s);
        }));
    for (auto& t : threads) clock.join(t);
    QCOMPARE(order, (std::vector<int>{1, 2, 3}));
    QCOMPARE(clock.elapsed(), Clock::duration(3s));
}

void TestVirtualClock::a_join_inside_idle_while_counts_as_waiting() {
    VirtualClock::Options o;
    o.stall = std::chrono::milliseconds(60000);  // a join the clock did not see would hang here
    VirtualClock clock(o);
    Clock::duration slept{};
    auto parent = clock.spawn([&] {
        auto child = clock.spawn([&] { slept = timed_sleep(clock, 5s); });
        clock.join(child);
    });
    parent.join();
    QCOMPARE(slept, Clock::duration(5s));
    QCOMPARE(clock.stalls(), 0u);
}

void TestVirtualClock::work_inside_idle_while_holds_time_still() {
    // A barrier's completion step: the last thread to arrive works inside its idle_while.
    VirtualClock::Options o;
    o.stall = std::chrono::milliseconds(60000);
    VirtualClock clock(o);
    std::atomic<bool> release{false}, working{false};
    Clock::duration slept{};
    auto sleeper = clock.spawn([&] { slept = timed_sleep(clock, 1s); });
    auto arriver = clock.spawn([&] {
        clock.idle_while([&] {
            clock.busy_while([&] {
                working = true;
                while (!release) std::this_thread::yield();
            });
        });
    });
    while (!working) std::this_thread::yield();
    QTest::qWait(100);
    QCOMPARE(clock.elapsed(), Clock::duration(0));
    release = true;
    arriver.join();
    sleeper.join();
    QCOMPARE(slept, Clock::duration(1s));
}

void TestVirtualClock::the_stall_valve_unsticks_a_hidden_join() {
    VirtualClock::Options o;
    o.stall = std::chrono::milliseconds(20);
    VirtualClock clock(o);
    auto parent = clock.spawn([&] {
        auto child = clock.spawn([&] { clock.sleep_for(1s); });
        child.join();  // not through the clock: the parent looks busy while it waits
    });
    parent.join();
    QVERIFY(clock.stalls() >= 1);
    QCOMPARE(clock.elapsed(), Clock::duration(1s));
    // Every move of the valve is at most its interval, and they are counted in full.
    QVERIFY(clock.stalled() > Clock::duration::zero() && clock.stalled() <= clock.stalls() * o.stall);
}

void TestVirtualClock::advance_drives_a_manual_clock() {
    VirtualClock::Options o;
    o.automatic = false;
    VirtualClock clock(o);
    std::atomic<bool> done{false};
    std::thread waiter([&] {
        clock.sleep_for(3s);
        done = true;
    });
    struct Join {  // a failed check below returns early: end the wait first
        VirtualClock& clock;
        std::thread& t;
        ~Join() {
            if (!t.joinable()) return;
            clock.advance(1h);
            t.join();
        }
    } join{clock, waiter};
    // Once the waiter has begun to wait, time moves only when advanced.
    QTRY_COMPARE_WITH_TIMEOUT(clock.waiting(), std::size_t(1), 5000);
    clock.advance(2s);
    QCOMPARE(clock.waiting(), std::size_t(1));  // its deadline not passed: still waiting, not woken
    QVERIFY(!done);
    clock.advance(1s);
    QTRY_VERIFY_WITH_TIMEOUT(done.load(), 5000);
    waiter.join();
    QCOMPARE(clock.elapsed(), Clock::duration(3s));
}

QTEST_GUILESS_MAIN(TestVirtualClock)
#include "test_virtual_clock.moc"
