// The staleness gate on its own: which messages a gradient must wait for under a bound S, lags as
// the receiver counts them, workers that are not waited for, and the adaptive deadline.
#include <QtTest>

#include "dist/masters/staleness_gate.h"

using namespace thresher;
using dist::StalenessGate;
using namespace std::chrono_literals;

class TestStalenessGate : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void synchronous_bound_waits_for_the_previous_iteration();
    void bound_two_lets_two_updates_be_missing();
    void no_bound_never_waits();
    void lag_counts_receiver_steps();
    void reordered_messages_never_leave_a_hole_to_wait_on();
    void workers_not_waited_for_are_skipped();
    void a_hole_is_skipped_up_to_the_message_past_it();
    void deadline_follows_the_step_time_within_limits();
    void a_silent_worker_is_told_from_a_slow_one();
    void negative_bound_is_refused();
};

void TestStalenessGate::synchronous_bound_waits_for_the_previous_iteration() {
    StalenessGate g(3, 0, 0);  // workers 0 (self), 1, 2
    QVERIFY(g.satisfied(0));   // nothing to wait for before the first gradient
    QVERIFY(!g.satisfied(1));
    QCOMPARE(g.missing(1), (std::vector<int>{1, 2}));
    g.applied(1, 0, 1);
    QCOMPARE(g.missing(1), (std::vector<int>{2}));
    g.applied(2, 0, 1);
    QVERIFY(g.satisfied(1));
    QVERIFY(!g.satisfied(2));
}

void TestStalenessGate::bound_two_lets_two_updates_be_missing() {
    StalenessGate g(2, 1, 2);
    QVERIFY(g.satisfied(2));  // needs worker 0's iteration -1: nothing
    QVERIFY(!g.satisfied(3));
    g.applied(0, 0, 3);
    QVERIFY(g.satisfied(3));
    QVERIFY(!g.satisfied(4));
}

void TestStalenessGate::no_bound_never_waits() {
    StalenessGate g(4, 2, std::nullopt);
    QVERIFY(g.satisfied(1000));
    QVERIFY(g.missing(1000).empty());
}

void TestStalenessGate::lag_counts_receiver_steps() {
    StalenessGate g(2, 0, 0);
    QCOMPARE(g.applied(1, 9, 10), 0L);  // the update of iteration 9 before gradient 10: fresh
    QCOMPARE(g.applied(1, 7, 10), 2L);  // two steps late
    QCOMPARE(g.applied(1, 12, 10), 0L); // from a worker that is ahead
}

void TestStalenessGate::reordered_messages_never_leave_a_hole_to_wait_on() {
    StalenessGate g(2, 0, 0);
    g.applied(1, 5, 6);  // 5 overtook 4 (a longer relay path); 4 lands later, or never
    QVERIFY(g.satisfied(6));
    QCOMPARE(g.latest(1), 5L);
    g.applied(1, 4, 6);
    QCOMPARE(g.latest(1), 5L);
}

void TestStalenessGate::a_hole_is_skipped_up_to_the_message_past_it() {
    StalenessGate g(2, 0, 0);
    g.applied(1, 2, 3);  // then 3..7 went with a dead relay; 8 is here, held for gradient 9
    QCOMPARE(g.missing(4), (std::vector<int>{1}));
    g.skip_to(1, 8);  // the wait for 3 timed out
    for (long next = 4; next <= 9; ++next) QVERIFY2(g.satisfied(next), qPrintable(QString("gradient %1").arg(next)));
    QCOMPARE(g.latest(1), 2L);  // nothing was applied by skipping
    QVERIFY(!g.satisfied(10));  // past the held message, it is waited for again
    g.skip_to(1, 5);            // an older skip never moves it back
    QVERIFY(g.satisfied(9));
}

void TestStalenessGate::workers_not_waited_for_are_skipped() {
    StalenessGate g(3, 0, 0);
    g.applied(1, 0, 1);
    g.set_waited(2, false);  // its node is gone
    QVERIFY(g.satisfied(1));
    g.set_waited(2, true);   // it rejoined
    QVERIFY(!g.satisfied(1));
    g.set_waited(0, true);   // never waits for itself
    QCOMPARE(g.missing(1), (std::vector<int>{2}));
}

void TestStalenessGate::deadline_follows_the_step_time_within_limits() {
    StalenessGate g(2, 0, 0);
    QCOMPARE(g.deadline(), StalenessGate::kMinWait);
    for (int i = 0; i < 50; ++i) g.record_step(std::chrono::duration<double, std::milli>(60.0));
    QVERIFY(g.deadline() >= 235ms && g.deadline() <= 240ms);  // 4 x 60 ms
    for (int i = 0; i < 80; ++i) g.record_step(std::chrono::duration<double, std::milli>(5000.0));
    QCOMPARE(g.deadline(), StalenessGate::kMaxWait);
    for (int i = 0; i < 100; ++i) g.record_step(std::chrono::duration<double, std::milli>(0.5));
    QCOMPARE(g.deadline(), StalenessGate::kMinWait);
}

void TestStalenessGate::a_silent_worker_is_told_from_a_slow_one() {
    StalenessGate g(3, 0, 0);
    g.applied(1, 4, 5);
    g.applied(2, 4, 5);
    for (int i = 0; i < 3; ++i) g.timed_out(g.missing(6));  // three waits for 5 timed out
    QVERIFY(!g.satisfied(6));                                // still waited for: the bound holds
    QCOMPARE(g.silent(3), (std::vector<int>{1, 2}));
    g.applied(1, 5, 6);  // worker 1 speaks: slow, not silent
    QCOMPARE(g.silent(3), (std::vector<int>{2}));
    QCOMPARE(g.silent(1), (std::vector<int>{2}));
    g.set_waited(2, false);  // declared gone: neither waited for nor reported
    QVERIFY(g.silent(1).empty());
    QVERIFY(g.satisfied(6));
}

void TestStalenessGate::negative_bound_is_refused() {
    QVERIFY_THROWS_EXCEPTION(std::exception, StalenessGate(2, 0, -1));
}

QTEST_APPLESS_MAIN(TestStalenessGate)
#include "test_staleness_gate.moc"
