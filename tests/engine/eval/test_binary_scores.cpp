// AUC from score histograms: the header's worked example, the exact pairwise AUC on random data
// (scores in distinct bins), merging shards equals one pass, undefined with one class only, and
// from_json refusing malformed counts.
#include <QtTest>

#include <cmath>
#include <limits>
#include <random>

#include "core/error.h"
#include "eval/binary_scores.h"

using thresher::eval::BinaryScores;

class TestBinaryScores : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void worked_example() {
        BinaryScores s;
        const float scores[] = {0.9f, 0.4f, 0.3f, 0.4f};
        const std::int32_t labels[] = {1, 1, 0, 0};
        s.add(scores, labels, 4);
        QCOMPARE(s.auc(), 0.875);
    }
    void matches_pairwise_auc_and_merges() {
        std::mt19937 rng(4);
        std::uniform_real_distribution<float> u(0.f, 1.f);
        std::vector<float> sc(400);
        std::vector<std::int32_t> lb(400);
        for (std::size_t i = 0; i < sc.size(); ++i) {
            lb[i] = static_cast<std::int32_t>(rng() % 2);
            // Scores at bin centres; the positives half the time shifted up (a learnable signal).
            sc[i] = (static_cast<float>((i * 2) % 1000) + 0.5f) / 1000.f;
            if (lb[i] == 1 && u(rng) < 0.5f) sc[i] = std::min(0.9995f, sc[i] + 0.25f);
        }
        double pairs = 0, wins = 0;
        for (std::size_t a = 0; a < sc.size(); ++a)
            for (std::size_t b = 0; b < sc.size(); ++b)
                if (lb[a] == 1 && lb[b] == 0) {
                    const int ba = static_cast<int>(sc[a] * 1000), bb = static_cast<int>(sc[b] * 1000);
                    pairs += 1;
                    wins += ba > bb ? 1.0 : ba == bb ? 0.5 : 0.0;
                }
        BinaryScores one, left, right;
        one.add(sc.data(), lb.data(), sc.size());
        left.add(sc.data(), lb.data(), 150);
        right.add(sc.data() + 150, lb.data() + 150, sc.size() - 150);
        left.merge(BinaryScores::from_json(right.to_json()));
        QVERIFY(std::abs(one.auc() - wins / pairs) < 1e-12);
        QCOMPARE(left.auc(), one.auc());
        QVERIFY(one.auc() > 0.55);
    }
    void undefined_with_one_class() {
        BinaryScores s;
        const float scores[] = {0.2f, 0.7f};
        const std::int32_t labels[] = {1, 1};
        s.add(scores, labels, 2);
        QVERIFY(std::isnan(s.auc()));
    }
    void from_json_refuses_bad_counts() {
        auto j = BinaryScores().to_json();
        j["pos"][3] = -1;
        QVERIFY_THROWS_EXCEPTION(thresher::Error, BinaryScores::from_json(j));
        QVERIFY_THROWS_EXCEPTION(thresher::Error, BinaryScores::from_json(nlohmann::json{{"pos", {1, 2}}, {"neg", {}}}));
    }
    void merge_refuses_an_overflowing_count() {
        // A node's histogram may hold counts up to 2^63 - 1: two of them overflowed int64 (seen
        // reviewing the merge fuzz_evaluation_payload drives).
        auto big = BinaryScores().to_json();
        big["neg"][999] = std::numeric_limits<std::int64_t>::max();
        BinaryScores s;
        const float scores[] = {0.1f, 0.9999f};
        const std::int32_t labels[] = {1, 0};
        s.add(scores, labels, 2);
        const double before = s.auc();
        QVERIFY_THROWS_EXCEPTION(thresher::Error, s.merge(BinaryScores::from_json(big)));
        QCOMPARE(s.auc(), before);  // nothing added
    }
};

QTEST_APPLESS_MAIN(TestBinaryScores)
#include "test_binary_scores.moc"
