// NodeLink's parts, each on its own (engine/dist/README.md, "NodeLink's parts"): what membership
// decides about a new process, the ledger's per-process records (a newer process starts afresh
// whichever call names it first, an older one is refused), holes given up on the clock the caller
// passes, the drain's verdicts, the join desk's answers (repeats, replays, refusals), the
// evaluation parts, and the signal that never loses a change made between a look and a wait.
#include <QtTest>


#include "core/virtual_clock.h"
#include "dist/masters/evaluation_gather.h"
#include "dist/masters/join_desk.h"
#include "dist/masters/link_signal.h"
#include "dist/masters/membership.h"
#include "dist/masters/round_book.h"
#include "dist/masters/update_ledger.h"

using namespace thresher;
using namespace thresher::dist;
using namespace std::chrono_literals;

class TestLinkParts : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void membership_first_hearing_of_an_original_member() {
        Membership m(3, 0);
        const auto o = m.observe(1, 7, 40);
        QVERIFY(o.accept && o.new_process && !o.restarted && !o.tell_first);
        QCOMPARE(o.first_seq, std::uint64_t(1));  // it gets everything from our number 1 on
        QCOMPARE(m.state(1), PeerState::Member);
        QVERIFY(!m.observe(1, 7, 41).new_process);
        QVERIFY(!m.observe(1, 6, 41).accept);  // its predecessor's, still queued behind
    }
    void membership_a_restarted_peer_joins_again_and_gets_only_new_numbers() {
        Membership m(3, 0);
        std::vector<std::pair<int, bool>> told;
        m.set_hook([&](int node, bool waited) { told.emplace_back(node, waited); });
        QCOMPARE(told.size(), std::size_t(2));  // the replay of nodes 1 and 2
        told.clear();
        m.observe(2, 5, 0);
        const auto o = m.observe(2, 9, 40);
        QVERIFY(o.accept && o.new_process && o.restarted && o.tell_first);
        QCOMPARE(o.first_seq, std::uint64_t(41));
        QCOMPARE(m.state(2), PeerState::Joining);
        QCOMPARE(told, (std::vector<std::pair<int, bool>>{{2, false}}));
        QVERIFY(m.current(2, 9) && !m.current(2, 5) && m.current(2, 0));
        QVERIFY(m.make_member(2, false));
        QVERIFY(!m.make_member(2, false));  // known already: nothing to announce
        QVERIFY(m.make_member(2, true));    // served here: announced again
    }
    void membership_a_restarted_controller_is_ignored_for_good() {
        Membership m(3, 1);
        m.observe(0, 3, 0);
        const auto o = m.observe(0, 4, 10);
        QVERIFY(!o.accept && o.controller_restarted && !o.tell_first);
        QVERIFY(m.controller_replaced());
        QCOMPARE(m.state(0), PeerState::Gone);
        QVERIFY(!m.observe(0, 4, 10).accept);
        QVERIFY(!m.observe(0, 0, 10).accept);
    }
    void membership_gone_leave_and_routes() {
        Membership m(4, 1);
        bool joining = true;
        QVERIFY(m.make_gone(2, &joining));
        QVERIFY(!joining);
        QVERIFY(!m.make_gone(2));
        m.observe(3, 8, 0);
        QVERIFY(!m.leave(3, 7));  // an earlier process's word does not count
        QVERIFY(m.leave(3, 8));
        QVERIFY(!m.leave(3, 8));
        QCOMPARE(m.not_gone(), std::vector<int>{0});
        QCOMPARE(m.live(false), (std::vector<bool>{true, true, false, false}));
        m.observe(2, 4, 0);  // absent, here now: joining, alive for updates, not for rounds
        QCOMPARE(m.state(2), PeerState::Joining);
        QCOMPARE(m.live(false), (std::vector<bool>{true, true, true, false}));
        QCOMPARE(m.live(true), (std::vector<bool>{true, true, false, false}));
        QCOMPARE(m.members(), (std::vector<bool>{true, true, false, false}));
    }
    void membership_pokes_once_a_second() {
        Membership m(2, 0);
        const auto t0 = std::chrono::steady_clock::time_point{} + 10s;
        QVERIFY(m.due_poke(1, t0));
        QVERIFY(!m.due_poke(1, t0 + 999ms));
        QVERIFY(m.due_poke(1, t0 + 1s));
    }

    void ledger_claims_duplicates_and_processes() {
        UpdateLedger l(3);
        const auto t = std::chrono::steady_clock::time_point{} + 1s;
        QCOMPARE(l.claim(1, 5, 1, t), UpdateLedger::Claim::New);
        QCOMPARE(l.claim(1, 5, 1, t), UpdateLedger::Claim::Duplicate);
        QCOMPARE(l.duplicates(), std::uint64_t(1));
        // A newer process's message, heard of here before membership's reset: a fresh record.
        QCOMPARE(l.claim(1, 6, 1, t), UpdateLedger::Claim::New);
        l.reset(1, 6);  // the reset that follows changes nothing
        QCOMPARE(l.claim(1, 6, 1, t), UpdateLedger::Claim::Duplicate);
        QCOMPARE(l.claim(1, 5, 2, t), UpdateLedger::Claim::Stale);
        QCOMPARE(l.claim(1, 0, 2, t), UpdateLedger::Claim::New);  // 0: the current process
    }
    void ledger_drain_verdicts() {
        UpdateLedger l(2);
        const auto t = std::chrono::steady_clock::time_point{} + 1s;
        QCOMPARE(l.drain(1, t, 10s), UpdateLedger::Drain::Waiting);  // no "done" yet
        l.claim(1, 3, 1, t);
        l.claim(1, 3, 3, t);
        l.note_done(1, 3, 4, 1, 2, t);
        QCOMPARE(l.drain(1, t + 10s, 10s), UpdateLedger::Drain::Waiting);
        std::uint64_t missing = 0;
        QCOMPARE(l.drain(1, t + 10001ms, 10s, &missing), UpdateLedger::Drain::GaveUp);
        QCOMPARE(missing, std::uint64_t(2));  // 2 and 4 of 4
        QCOMPARE(l.drain(1, t + 20s, 10s), UpdateLedger::Drain::Drained);  // said once
        // A complete one drains at once; "first" says where its numbers start for us.
        l.note_done(1, 4, 5, 3, 2, t);  // a new process: 1 and 2 were never meant for us
        l.claim(1, 4, 3, t);
        l.claim(1, 4, 4, t);
        QCOMPARE(l.drain(1, t, 10s), UpdateLedger::Drain::Waiting);
        l.claim(1, 4, 5, t);
        QCOMPARE(l.drain(1, t, 10s), UpdateLedger::Drain::Drained);
        QVERIFY(l.stopped_before(1, 3) && !l.stopped_before(1, 2));
    }
    void ledger_gives_up_a_hole_on_the_callers_clock() {
        UpdateLedger l(2);
        const auto t = std::chrono::steady_clock::time_point{} + 1s;
        l.claim(1, 1, 1, t);
        l.claim(1, 1, 4, t);
        QVERIFY(!l.give_up_old_hole(1, t, 10s));  // seen now
        QVERIFY(!l.give_up_old_hole(1, t + 9s, 10s));
        const auto gone = l.give_up_old_hole(1, t + 10s, 10s);
        QVERIFY(gone && gone->first == 2 && gone->last == 3);
        QCOMPARE(l.claim(1, 1, 2, t), UpdateLedger::Claim::Duplicate);  // below the floor now
        QCOMPARE(l.claim(1, 1, 5, t), UpdateLedger::Claim::New);
        QVERIFY(!l.give_up_old_hole(1, t + 30s, 10s));  // no hole
    }

    void desk_start_repeat_and_snapshots() {
        JoinDesk d(3);
        d.set_policy(true, 5s);
        QCOMPARE(d.request(1, 7).kind, JoinDesk::Decision::Kind::Queued);
        QCOMPARE(d.take_requests().size(), std::size_t(1));
        d.begin({{1, 7}});
        d.answered(1, 7, {1, 2, 3});
        const auto again = d.request(1, 7);  // the answer was lost: the same one again
        QCOMPARE(again.kind, JoinDesk::Decision::Kind::Answer);
        QCOMPARE(again.answer, (std::vector<std::uint8_t>{1, 2, 3}));
        QCOMPARE(d.request(1, 6).kind, JoinDesk::Decision::Kind::Stale);
        // Node 2 comes late: a snapshot after the next step, not a rejoin; node 1 restarted: a rejoin.
        QCOMPARE(d.request(2, 4).kind, JoinDesk::Decision::Kind::Queued);
        QCOMPARE(d.request(1, 9).kind, JoinDesk::Decision::Kind::Queued);
        const auto q = d.take_requests();
        QCOMPARE(q.size(), std::size_t(2));
        QCOMPARE(d.serve_snapshot(q[0]), std::optional<bool>(false));
        QCOMPARE(d.serve_snapshot(q[1]), std::optional<bool>(true));
        QVERIFY(!d.serve_snapshot(q[1]));  // answered meanwhile
        // Its snapshot was lost: asked again, answered afresh after the next step, still a rejoin.
        QCOMPARE(d.request(1, 9).kind, JoinDesk::Decision::Kind::Queued);
        QCOMPARE(d.request(1, 9).kind, JoinDesk::Decision::Kind::Queued);  // queued once
        const auto q2 = d.take_requests();
        QCOMPARE(q2.size(), std::size_t(1));
        QVERIFY(q2[0].again);
        QCOMPARE(d.serve_snapshot(q2[0]), std::optional<bool>(true));
    }
    void desk_refuses_when_finishing_or_averaging() {
        JoinDesk avg(2);
        avg.set_policy(false, 5s);
        avg.begin({});
        auto r = avg.request(1, 3);
        QCOMPARE(r.kind, JoinDesk::Decision::Kind::Answer);
        auto reply = parse_join_reply(r.answer, 2, 0);
        QVERIFY(reply && reply->kind == JoinReply::Kind::Refused && reply->incarnation == 3);
        QVERIFY(reply->reason.find("parameter-averaging") != std::string::npos);
        QCOMPARE(avg.request(1, 3).answer, r.answer);  // the same refusal when asked again

        JoinDesk gs(2);
        gs.begin({});
        QCOMPARE(gs.request(1, 3).kind, JoinDesk::Decision::Kind::Queued);
        QCOMPARE(gs.finish().size(), std::size_t(1));  // refused by the drain
        r = gs.request(1, 4);
        reply = parse_join_reply(r.answer, 2, 0);
        QVERIFY(reply && reply->kind == JoinReply::Kind::Refused);
        QVERIFY(reply->reason.find("finishing") != std::string::npos);
    }
    void desk_reply_only_for_our_process() {
        JoinDesk d(2);
        JoinReply r;
        r.incarnation = 5;
        d.reply_arrived(r);
        QVERIFY(!d.take_reply(4));
        QVERIFY(d.take_reply(5));
        QVERIFY(!d.take_reply(5));
    }

    void evaluation_parts() {
        EvaluationGather g;
        QCOMPARE(g.last_sent(), -1);
        g.add(2, 1, nlohmann::json{{"n", 1}});
        g.add(2, 2, nlohmann::json{{"n", 2}});
        g.add(3, 1, nlohmann::json{{"n", 3}});
        QVERIFY(g.has(2, 1) && !g.has(3, 2));
        const auto parts = g.take(2, [](int node) { return node == 2; });
        QCOMPARE(parts.size(), std::size_t(1));
        QCOMPARE(parts.at(2).at("n").get<int>(), 2);
        QVERIFY(!g.has(2, 1) && g.has(3, 1));
        g.sent(4);
        QCOMPARE(g.last_sent(), 4);
    }
    void round_confirmations() {
        RoundBook book;
        book.expect_confirmations(3, {1, 2});
        book.confirmed(2, 1);  // an earlier round's confirmation does not count
        QCOMPARE(book.unconfirmed(), (std::vector<int>{1, 2}));
        book.confirmed(3, 1);
        book.forget_confirmation(2);
        QVERIFY(book.unconfirmed().empty());
    }

    // A change made after the waiter looked, but before it waits, wakes it at once: the waiter
    // returns from an hour-long poll without virtual time moving. Without a change the wait lasts
    // its interval, on the clock.
    void signal_loses_no_change() {
        VirtualClock clock;
        LinkSignal signal(clock);
        Clock::duration first{}, second{};
        auto t = clock.spawn([&] {
            const auto seen = signal.generation();
            signal.notify();
            const auto t0 = clock.now();
            signal.wait(seen, std::chrono::hours(1));
            first = clock.now() - t0;
            const auto t1 = clock.now();
            signal.wait(signal.generation(), 250ms);
            second = clock.now() - t1;
        });
        clock.join(t);
        QCOMPARE(first, Clock::duration::zero());
        QCOMPARE(second, Clock::duration(250ms));
    }
    // A notify from another participant ends the wait: virtual time moves only to the notifier's
    // own (short) sleep, not to the waiter's hour.
    void signal_wakes_a_waiter_on_another_thread() {
        VirtualClock clock;
        LinkSignal signal(clock);
        const auto seen = signal.generation();
        Clock::duration waited{};
        auto waiter = clock.spawn([&] {
            const auto t0 = clock.now();
            signal.wait(seen, std::chrono::hours(1));
            waited = clock.now() - t0;
        });
        auto notifier = clock.spawn([&] {
            clock.sleep_for(3s);
            signal.notify();
        });
        clock.join(notifier);
        clock.join(waiter);
        QCOMPARE(waited, Clock::duration(3s));
    }
};

QTEST_GUILESS_MAIN(TestLinkParts)
#include "test_link_parts.moc"
