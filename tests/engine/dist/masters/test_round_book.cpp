// RoundBook (dist/masters/round_book.h): sums kept per round and node (a restarted node's replace
// its predecessor's), a late sender of a finished round gets that round's result, results and
// acknowledgements of earlier rounds go with the one taken, only the last kKeep finished rounds
// are kept for asks, and asks are capped -- a peer asking without end cannot grow the book.
#include <QtTest>

#include <thread>

#include "dist/masters/round_book.h"

using namespace thresher::dist;

namespace {
Message msg(int sender, std::uint8_t tag) {
    Message m;
    m.sender = sender;
    m.type = MessageType::Average;
    m.payload = {tag};
    return m;
}
}  // namespace

class TestRoundBook : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sums_by_round_and_node() {
        RoundBook book;
        QVERIFY(!book.add_sums(3, msg(1, 10)));
        QVERIFY(!book.add_sums(3, msg(1, 11)));  // a restarted node's sums replace the earlier ones
        QVERIFY(!book.add_sums(3, msg(2, 20)));
        QVERIFY(book.has_sums(3, 1) && book.has_sums(3, 2) && !book.has_sums(4, 1));
        const auto taken = book.take_sums(3, [](int node) { return node == 1; });
        QCOMPARE(taken.size(), std::size_t(1));
        QCOMPARE(taken[0].payload.at(0), std::uint8_t(11));
        QVERIFY(!book.has_sums(3, 2));  // the round is forgotten, kept or not
    }
    void late_sums_get_the_result() {
        RoundBook book;
        book.finished(5, {42});
        const auto late = book.add_sums(5, msg(2, 1));
        QVERIFY(late && *late == std::vector<std::uint8_t>{42});
        QVERIFY(!book.has_sums(5, 2));
    }
    void taking_a_result_drops_earlier_ones() {
        RoundBook book;
        for (std::uint64_t r = 0; r < 4; ++r) {
            auto m = msg(0, static_cast<std::uint8_t>(r));
            book.add_result(r, std::move(m));
            book.acknowledged(r, 0);
        }
        book.add_result(2, msg(0, 99));  // a duplicate: the first copy counts
        QCOMPARE(book.take_result(2), std::vector<std::uint8_t>{2});
        QVERIFY(!book.has_result(0) && !book.has_result(1) && !book.has_result(2) && book.has_result(3));
        QVERIFY(!book.acknowledged_by(2) && book.acknowledged_by(3) == 0);
        book.forget_ack(3);
        QVERIFY(!book.acknowledged_by(3));
    }
    void asks_are_bounded() {
        RoundBook book;
        for (std::uint64_t r = 0; r < 10; ++r) book.finished(r, {static_cast<std::uint8_t>(r)});
        book.asked(1, 0);  // no longer kept: ignored
        for (int i = 0; i < 1000; ++i) book.asked(1, 9);
        const auto asks = book.take_asks();
        QCOMPARE(asks.size(), RoundBook::kMaxAsks);
        QCOMPARE(asks.front().second, std::vector<std::uint8_t>{9});
        QVERIFY(book.take_asks().empty());
    }
    void concurrent_use() {
        // The receive threads fill it while a round reads it: no lost entry, no race (TSan/ASan).
        RoundBook book;
        std::thread writer([&] {
            for (int r = 0; r < 2000; ++r) book.add_sums(static_cast<std::uint64_t>(r), msg(1, 1));
        });
        std::size_t seen = 0;
        for (int r = 0; r < 2000; ++r) {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (!book.has_sums(static_cast<std::uint64_t>(r), 1) && std::chrono::steady_clock::now() < deadline)
                std::this_thread::yield();
            seen += book.take_sums(static_cast<std::uint64_t>(r), [](int) { return true; }).size();
        }
        writer.join();
        QCOMPARE(seen, std::size_t(2000));
    }
};

QTEST_GUILESS_MAIN(TestRoundBook)
#include "test_round_book.moc"
