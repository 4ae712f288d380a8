// ShardStream (data/shard_stream.h): at every step the union of the ranks' batches is what one
// machine with batch world x B takes, for world 1, 2, 3, checked as sets of sample ids against
// the in-memory BatchIterator (epoch 0) and against one rank streaming alone (later epochs).
#include "data_error.h"
#include "shard_fixture.h"
#include "core/error.h"
#include "data/batch_iterator.h"
#include "data/prefetch_iterator.h"
#include "data/shard_stream.h"
#include "data/feature_transform.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <memory>
#include <set>

using namespace thresher::data;
using namespace shard_fixture;

namespace {

using Ids = std::multiset<std::size_t>;

// The union of every rank's batch at each step of one epoch (empty when the ranks disagree on the
// number of steps or a batch is malformed, which the callers' comparisons then fail on).
std::vector<Ids> rank_steps(const ShardIndex& index, int world, std::uint64_t seed, int epoch) {
    std::vector<Ids> steps;
    for (int r = 0; r < world; ++r) {
        BatchPlan plan;
        plan.batch_size = index.batch;
        plan.seed = seed;
        plan.epoch = epoch;
        plan.rank = r;
        plan.world = world;
        PrefetchIterator it(std::make_unique<ShardStream>(index, plan));  // as the trainer reads it
        Batch b;
        std::size_t s = 0;
        while (it.next(b)) {
            if (steps.size() <= s) steps.resize(s + 1);
            steps[s].insert(b.indices.begin(), b.indices.end());
            if (b.features.size() != b.count * index.layout.shape.size()) return {};  // the caller fails
            ++s;
        }
        if (s != steps.size()) return {};
    }
    return steps;
}

Ids ids_of(const Batch& b) { return Ids(b.indices.begin(), b.indices.end()); }

}  // namespace

class TestShardStream : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void unionIsOneMachinesStep_data();
    void unionIsOneMachinesStep();
    void laterEpochsShuffleDeterministically();
    void readsOnlyItsOwnBlocks();
    void plansTheSetCannotServe();
    void normalisedThenAugmentedAsInMemory();

private:
    QTemporaryDir dir_;
    DataSplit split_;
    ShardIndex index_;
};

void TestShardStream::initTestCase() {
    const std::string src = dir_.filePath("src").toStdString();
    write_idx_folder(src);  // 61 samples: 8 blocks of 8, the last of 5
    split_ = load_data(src, DataOptions{});
    index_ = export_split(split_, dir_.filePath("shards").toStdString(), 8, 3, 42);
}

void TestShardStream::unionIsOneMachinesStep_data() {
    QTest::addColumn<int>("world");
    QTest::newRow("world 1") << 1;
    QTest::newRow("world 2") << 2;
    QTest::newRow("world 3") << 3;
}

void TestShardStream::unionIsOneMachinesStep() {
    QFETCH(int, world);
    // Epoch 0 against the in-memory source itself: one machine, batch world x 8, the export's seed.
    {
        const auto steps = rank_steps(index_, world, 42, 0);
        BatchPlan one;
        one.batch_size = 8 * static_cast<std::size_t>(world);
        one.seed = 42;
        BatchIterator reference(split_.train, one);
        QCOMPARE(steps.size(), reference.batches());
        Batch b;
        for (const auto& step : steps) {
            QVERIFY(reference.next(b));
            QCOMPARE(step, ids_of(b));
        }
    }
    // Later epochs (permuted): one machine streaming alone takes at steps sW..sW+W-1 what the W
    // ranks take together at step s, and every sample comes once per epoch.
    for (int epoch = 1; epoch <= 2; ++epoch) {
        const auto steps = rank_steps(index_, world, 7, epoch);
        const auto alone = rank_steps(index_, 1, 7, epoch);
        QCOMPARE(steps.size(), (alone.size() + world - 1) / world);
        Ids all;
        for (std::size_t s = 0; s < steps.size(); ++s) {
            Ids expected;
            for (std::size_t k = s * world; k < std::min(alone.size(), (s + 1) * world); ++k)
                expected.insert(alone[k].begin(), alone[k].end());
            QCOMPARE(steps[s], expected);
            all.insert(steps[s].begin(), steps[s].end());
        }
        QCOMPARE(all.size(), split_.train.count);
        QCOMPARE(std::set<std::size_t>(all.begin(), all.end()).size(), split_.train.count);
    }
}

void TestShardStream::laterEpochsShuffleDeterministically() {
    auto order = [&](std::uint64_t seed, int epoch) {
        BatchPlan plan;
        plan.batch_size = 8;
        plan.seed = seed;
        plan.epoch = epoch;
        ShardStream s(index_, plan);
        std::vector<std::size_t> ids;
        Batch b;
        while (s.next(b)) ids.insert(ids.end(), b.indices.begin(), b.indices.end());
        return ids;
    };
    QCOMPARE(order(7, 1), order(7, 1));
    QVERIFY(order(7, 1) != order(7, 0));
    QVERIFY(order(7, 1) != order(7, 2));
    QVERIFY(order(7, 1) != order(8, 1));
    // The short block stays last, so only the final step is short.
    const auto blocks = shard_epoch_order(index_, index_.train, 7, 1);
    QCOMPARE(blocks.back().records, std::uint64_t{5});
}

// A rank never touches another rank's blocks: damage a block rank 1 does not read and rank 1 still
// streams its epoch, while rank 0, whose block it is, is refused naming the shard and block.
void TestShardStream::readsOnlyItsOwnBlocks() {
    QTemporaryDir dir;
    const ShardIndex index = export_split(split_, dir.filePath("s").toStdString(), 8, 3, 42);
    const auto order = shard_epoch_order(index, index.train, 42, 0);
    const ShardBlock victim = order[2];  // world 2: rank 0's second block
    const std::string path = index.path_of(index.train.shards[victim.shard]);
    std::string bytes = read_file(path);
    const ShardHeader h = parse_shard_header(path, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), bytes.size());
    bytes[h.block_offset(victim.block) + 3] ^= 0x40;
    write_file(path, bytes);
    auto drain = [&](int rank) {
        BatchPlan plan;
        plan.batch_size = 8;
        plan.seed = 42;
        plan.rank = rank;
        plan.world = 2;
        ShardStream s(index, plan);
        Batch b;
        while (s.next(b)) {
        }
    };
    drain(1);
    const QString message = test_support::data_error([&] { drain(0); });
    QVERIFY2(message.contains(QString::fromStdString(path + ": block " + std::to_string(victim.block) + ": checksum mismatch")),
             qPrintable(message));
}

void TestShardStream::plansTheSetCannotServe() {
    BatchPlan plan;
    plan.batch_size = 16;
    try {
        ShardStream s(index_, plan);
        QFAIL("a batch size other than the export's was accepted");
    } catch (const thresher::ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("--batch 16: the shards in") && QString(e.what()).contains("hold batches of 8"), e.what());
    }
    plan.batch_size = 8;
    plan.limit = 10;  // evaluation's --test-limit (train refuses --limit): the first 10 records of the order
    {
        ShardStream limited(index_, plan);
        BatchPlan whole = plan;
        whole.limit = 0;
        ShardStream all(index_, whole);
        Batch a, b;
        std::vector<std::size_t> taken, first;
        while (limited.next(a)) taken.insert(taken.end(), a.indices.begin(), a.indices.end());
        while (all.next(b) && first.size() < 10) first.insert(first.end(), b.indices.begin(), b.indices.end());
        first.resize(10);
        QCOMPARE(limited.batches(), std::size_t{2});
        QCOMPARE(taken, first);
    }
    plan.limit = 0;
    plan.rank = 2;
    plan.world = 2;
    QVERIFY_THROWS_EXCEPTION(thresher::ConfigError, ShardStream(index_, plan));
}

// A normalisation and an augmentation together: each streamed record is normalised before it is
// augmented, as an in-memory set (normalised when loaded) is, so a crop's padding is a normalised
// zero in both and epoch 0's batches are the same floats.
void TestShardStream::normalisedThenAugmentedAsInMemory() {
    const auto transform = fit_transform("standardize", split_.train);
    auto normalised = split_.train;
    transform.apply(normalised);
    BatchPlan plan;
    plan.batch_size = 8;
    plan.seed = 42;
    plan.augment = thresher::spec::Augmentation::parse("crop:1,flip");
    BatchIterator reference(normalised, plan);
    ShardStream streamed(index_, plan, &transform);
    Batch a, b;
    std::size_t batches = 0;
    while (reference.next(a)) {
        QVERIFY(streamed.next(b));
        QCOMPARE(b.indices, a.indices);
        QCOMPARE(b.features, a.features);
        ++batches;
    }
    QVERIFY(!streamed.next(b));
    QCOMPARE(batches, std::size_t{8});
}

QTEST_APPLESS_MAIN(TestShardStream)
#include "test_shard_stream.moc"
