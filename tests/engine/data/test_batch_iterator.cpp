// Batching: each sample exactly once per epoch across ranks, determinism from (seed, epoch),
// the strided property that makes step b over all ranks equal one worker's combined batch, and
// the prefetching iterator yielding the same batches and shutting down cleanly mid-epoch.
#include "core/error.h"
#include "data/batch_iterator.h"
#include "data/prefetch_iterator.h"

#include <QtTest>

#include <algorithm>
#include <numeric>
#include <vector>

using namespace thresher::data;

namespace {

// Sample i has features (i, -i), label i % 3: a batch's contents reveal which samples it holds.
Dataset indexed_dataset(std::size_t n) {
    Dataset ds;
    ds.name = "indexed";
    ds.shape = SampleShape{1, 1, 2};
    ds.count = n;
    ds.num_classes = 3;
    ds.target_size = 3;
    ds.targets.assign(n * 3, 0.0f);
    for (std::size_t i = 0; i < n; ++i) {
        ds.features.push_back(float(i));
        ds.features.push_back(-float(i));
        ds.labels.push_back(std::int32_t(i % 3));
        ds.targets[i * 3 + i % 3] = 1.0f;
    }
    return ds;
}

BatchPlan plan(std::size_t batch, int world = 1, int rank = 0, int epoch = 0,
               std::uint64_t seed = 42) {
    BatchPlan p;
    p.batch_size = batch;
    p.seed = seed;
    p.epoch = epoch;
    p.rank = rank;
    p.world = world;
    return p;
}

std::vector<std::vector<std::size_t>> all_batches(const Dataset& ds, const BatchPlan& p) {
    std::vector<std::vector<std::size_t>> out;
    BatchIterator it(ds, p);
    Batch b;
    while (it.next(b)) out.push_back(b.indices);
    return out;
}

bool consistent(const Dataset& ds, const Batch& b) {
    if (b.indices.size() != b.count || b.features.size() != b.count * 2 ||
        b.targets.size() != b.count * 3 || b.labels.size() != b.count)
        return false;
    for (std::size_t k = 0; k < b.count; ++k) {
        const std::size_t i = b.indices[k];
        if (b.features[k * 2] != float(i) || b.features[k * 2 + 1] != -float(i)) return false;
        if (b.labels[k] != ds.labels[i] || b.targets[k * 3 + std::size_t(ds.labels[i])] != 1.0f)
            return false;
    }
    return true;
}

}  // namespace

class TestBatchIterator : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everySampleOncePerEpoch_data();
    void everySampleOncePerEpoch();
    void stridedCombinedBatch_data();
    void stridedCombinedBatch();
    void deterministicFromSeedAndEpoch();
    void noShuffleAndLimit();
    void reusesBuffers();
    void rejectsBadPlans_data();
    void rejectsBadPlans();
    void prefetchMatchesBatchIterator_data();
    void prefetchMatchesBatchIterator();
    void prefetchDestroyedMidEpoch();
    void prefetchRejectsBadPlan();
};

void TestBatchIterator::everySampleOncePerEpoch_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("batch");

    QTest::newRow("1 worker, exact") << 12 << 1 << 4;
    QTest::newRow("1 worker, short last batch") << 10 << 1 << 3;
    QTest::newRow("2 workers") << 10 << 2 << 2;
    QTest::newRow("3 workers, uneven shards") << 7 << 3 << 5;
    QTest::newRow("4 workers, batch 8") << 100 << 4 << 8;
    QTest::newRow("more workers than samples") << 5 << 8 << 2;
    QTest::newRow("batch larger than shard") << 9 << 2 << 100;
    QTest::newRow("one sample") << 1 << 3 << 1;
}

void TestBatchIterator::everySampleOncePerEpoch() {
    QFETCH(int, n);
    QFETCH(int, world);
    QFETCH(int, batch);
    const Dataset ds = indexed_dataset(std::size_t(n));
    const std::size_t steps = batches_per_epoch(ds, plan(std::size_t(batch), world));
    QCOMPARE(steps, (std::size_t(n) + std::size_t(world * batch) - 1) / std::size_t(world * batch));

    for (int epoch = 0; epoch < 3; ++epoch) {
        std::vector<int> seen(std::size_t(n), 0);
        for (int rank = 0; rank < world; ++rank) {
            BatchIterator it(ds, plan(std::size_t(batch), world, rank, epoch));
            QCOMPARE(it.batches(), steps);
            Batch b;
            std::size_t yielded = 0;
            while (it.next(b)) {
                ++yielded;
                QVERIFY(b.count <= std::size_t(batch));
                // Only the final step may come up empty or short.
                if (yielded < steps) QCOMPARE(b.count, std::size_t(batch));
                QVERIFY(consistent(ds, b));
                for (std::size_t i : b.indices) ++seen[i];
            }
            QCOMPARE(yielded, steps);  // every rank takes the same number of steps
            QVERIFY(!it.next(b));
        }
        for (int i = 0; i < n; ++i)
            QVERIFY2(
                seen[std::size_t(i)] == 1,
                qPrintable(QString("sample %1 seen %2 times").arg(i).arg(seen[std::size_t(i)])));
    }
}

void TestBatchIterator::stridedCombinedBatch_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("batch");
    QTest::newRow("2 x 4 of 64") << 64 << 2 << 4;
    QTest::newRow("4 x 3 of 50") << 50 << 4 << 3;
    QTest::newRow("3 x 7 of 100") << 100 << 3 << 7;
}

void TestBatchIterator::stridedCombinedBatch() {
    QFETCH(int, n);
    QFETCH(int, world);
    QFETCH(int, batch);
    const Dataset ds = indexed_dataset(std::size_t(n));
    const std::size_t B = std::size_t(batch), W = std::size_t(world);
    const int epoch = 5;
    const std::vector<std::size_t> order = epoch_order(std::size_t(n), 42, epoch, true);

    std::vector<std::vector<std::vector<std::size_t>>> per_rank;
    for (int r = 0; r < world; ++r) per_rank.push_back(all_batches(ds, plan(B, world, r, epoch)));

    // What one worker with batch world*B would take at each step.
    const std::vector<std::vector<std::size_t>> single = all_batches(ds, plan(B * W, 1, 0, epoch));
    QCOMPARE(single.size(), per_rank[0].size());

    for (std::size_t step = 0; step < single.size(); ++step) {
        std::vector<std::size_t> combined;
        for (std::size_t r = 0; r < W; ++r) {
            const auto& b = per_rank[r][step];
            // Rank r's k-th sample of step b sits at permutation position (b*B + k)*world + r.
            for (std::size_t k = 0; k < b.size(); ++k)
                QCOMPARE(b[k], order[(step * B + k) * W + r]);
            combined.insert(combined.end(), b.begin(), b.end());
        }
        std::vector<std::size_t> expected(
            order.begin() + std::ptrdiff_t(step * B * W),
            order.begin() + std::ptrdiff_t(std::min(order.size(), (step + 1) * B * W)));
        std::vector<std::size_t> one = single[step];
        std::sort(combined.begin(), combined.end());
        std::sort(expected.begin(), expected.end());
        std::sort(one.begin(), one.end());
        QCOMPARE(combined, expected);
        QCOMPARE(combined, one);
    }
}

void TestBatchIterator::deterministicFromSeedAndEpoch() {
    const Dataset ds = indexed_dataset(200);
    const auto a = all_batches(ds, plan(16, 2, 1, 3, 7));
    const auto b = all_batches(ds, plan(16, 2, 1, 3, 7));
    QCOMPARE(a, b);                                       // a resumed run sees the same order
    QVERIFY(all_batches(ds, plan(16, 2, 1, 4, 7)) != a);  // another epoch, another order
    QVERIFY(all_batches(ds, plan(16, 2, 1, 3, 8)) != a);  // another seed, another order
    QCOMPARE(epoch_order(200, 7, 3, true), epoch_order(200, 7, 3, true));
    QVERIFY(epoch_order(200, 7, 0, true) != epoch_order(200, 7, 1, true));
}

void TestBatchIterator::noShuffleAndLimit() {
    const Dataset ds = indexed_dataset(100);
    BatchPlan p = plan(8);
    p.shuffle = false;
    p.limit = 20;
    QCOMPARE(epoch_sample_count(ds, p), std::size_t{20});
    std::vector<std::size_t> all;
    for (const auto& b : all_batches(ds, p)) all.insert(all.end(), b.begin(), b.end());
    std::vector<std::size_t> expected(20);
    std::iota(expected.begin(), expected.end(), std::size_t{0});
    QCOMPARE(all, expected);

    p.shuffle = true;
    p.limit = 1000;  // above count: all samples
    QCOMPARE(epoch_sample_count(ds, p), std::size_t{100});
    p.limit = 30;
    all.clear();
    for (const auto& b : all_batches(ds, p)) all.insert(all.end(), b.begin(), b.end());
    QCOMPARE(all.size(), std::size_t{30});
    QVERIFY(std::all_of(all.begin(), all.end(), [](std::size_t i) { return i < 30; }));
}

void TestBatchIterator::reusesBuffers() {
    const Dataset ds = indexed_dataset(64);
    BatchIterator it(ds, plan(16));
    Batch b;
    QVERIFY(it.next(b));
    const float* features = b.features.data();
    const float* targets = b.targets.data();
    while (it.next(b)) {
        QCOMPARE(b.features.data(), features);
        QCOMPARE(b.targets.data(), targets);
    }
}

void TestBatchIterator::rejectsBadPlans_data() {
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("rank");
    QTest::addColumn<QString>("detail");
    QTest::newRow("batch 0") << 0 << 1 << 0 << "batch_size";
    QTest::newRow("world 0") << 4 << 0 << 0 << "world";
    QTest::newRow("rank = world") << 4 << 2 << 2 << "rank: 2 is outside [0, 2)";
    QTest::newRow("negative rank") << 4 << 2 << -1 << "rank: -1";
}

void TestBatchIterator::rejectsBadPlans() {
    QFETCH(int, batch);
    QFETCH(int, world);
    QFETCH(int, rank);
    QFETCH(QString, detail);
    const Dataset ds = indexed_dataset(10);
    try {
        BatchIterator it(ds, plan(std::size_t(batch), world, rank));
        QFAIL("no exception");
    } catch (const thresher::ConfigError& e) {
        QVERIFY2(QString(e.what()).contains(detail), e.what());
    }
}

void TestBatchIterator::prefetchMatchesBatchIterator_data() {
    QTest::addColumn<int>("depth");
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("rank");
    QTest::newRow("depth 1") << 1 << 1 << 0;
    QTest::newRow("depth 2, rank 1 of 2") << 2 << 2 << 1;
    QTest::newRow("depth 4, rank 2 of 3") << 4 << 3 << 2;
    QTest::newRow("depth 0 acts as 1") << 0 << 1 << 0;
}

void TestBatchIterator::prefetchMatchesBatchIterator() {
    QFETCH(int, depth);
    QFETCH(int, world);
    QFETCH(int, rank);
    const Dataset ds = indexed_dataset(1000);
    const BatchPlan p = plan(7, world, rank, 2);
    BatchIterator direct(ds, p);
    PrefetchIterator pre(ds, p, std::size_t(depth));
    QCOMPARE(pre.batches(), direct.batches());
    Batch a, b;
    std::size_t n = 0;
    while (direct.next(a)) {
        QVERIFY(pre.next(b));
        QCOMPARE(b.count, a.count);
        QCOMPARE(b.indices, a.indices);
        QCOMPARE(b.features, a.features);
        QCOMPARE(b.targets, a.targets);
        QCOMPARE(b.labels, a.labels);
        QVERIFY(pre.last_wait_ms() >= 0.0);
        ++n;
    }
    QVERIFY(!pre.next(b));
    QVERIFY(!pre.next(b));  // stays finished
    QCOMPARE(n, direct.batches());
}

void TestBatchIterator::prefetchDestroyedMidEpoch() {
    const Dataset ds = indexed_dataset(5000);
    for (int round = 0; round < 50; ++round) {
        PrefetchIterator pre(ds, plan(3, 1, 0, round), 2);
        Batch b;
        for (int k = 0; k < round % 5; ++k) QVERIFY(pre.next(b));
        // Destroyed here with the producer blocked on a full queue or mid-fill.
    }
    { PrefetchIterator never_read(ds, plan(3), 4); }
}

void TestBatchIterator::prefetchRejectsBadPlan() {
    const Dataset ds = indexed_dataset(10);
    bool thrown = false;
    try {
        PrefetchIterator pre(ds, plan(0));
    } catch (const thresher::ConfigError&) {
        thrown = true;
    }
    QVERIFY(thrown);
}

QTEST_APPLESS_MAIN(TestBatchIterator)
#include "test_batch_iterator.moc"
