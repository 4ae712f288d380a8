// Per-node shard placement (spec/shard_placement.h, data/shard_stream.h): file f of a part belongs
// to node f mod N. Checked as sets of sample ids: every epoch takes every train record exactly once
// over all ranks; every rank takes the same number of steps (the most any node's blocks need);
// epoch 0 is each node's files as exported; and a node streams from a folder that holds only its
// own files (the others deleted), while deleting one of its own is refused naming the file.
#include "data_error.h"
#include "shard_fixture.h"
#include "core/error.h"
#include "data/prefetch_iterator.h"
#include "data/shard_stream.h"
#include "spec/shard_placement.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <map>
#include <memory>
#include <set>

using namespace thresher::data;
using namespace shard_fixture;
using thresher::spec::ShardPlacement;
using thresher::spec::shard_owner;

namespace {

BatchPlan plan_for(const ShardIndex& index, int rank, int world, int epoch) {
    BatchPlan plan;
    plan.batch_size = index.batch;
    plan.seed = 7;
    plan.epoch = epoch;
    plan.rank = rank;
    plan.world = world;
    return plan;
}

// One rank's epoch as sample ids, batch by batch (as the trainer reads it, through prefetch).
std::vector<std::vector<std::size_t>> rank_epoch(const ShardIndex& index, int rank, int world, int nodes, int epoch) {
    PrefetchIterator it(std::make_unique<ShardStream>(index, index.train, plan_for(index, rank, world, epoch), nullptr,
                                                      ShardShare{ShardPlacement::PerNode, nodes}));
    std::vector<std::vector<std::size_t>> steps;
    Batch b;
    while (it.next(b)) steps.emplace_back(b.indices.begin(), b.indices.end());
    return steps;
}

// A copy of the set holding only node `node`'s files of each part (and the index).
std::string node_folder(const ShardIndex& index, const std::string& to, int node, int nodes) {
    namespace fs = std::filesystem;
    fs::create_directories(to + "/train");
    fs::create_directories(to + "/test");
    fs::copy_file(index.folder + "/index.json", to + "/index.json");
    for (const ShardPart* part : {&index.train, &index.test})
        for (std::size_t f = 0; f < part->shards.size(); ++f)
            if (shard_owner(f, nodes) == node) fs::copy_file(index.path_of(part->shards[f]), to + "/" + part->shards[f].file);
    return to;
}

}  // namespace

class TestShardPlacement : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void everyRecordOncePerEpoch_data();
    void everyRecordOncePerEpoch();
    void epochZeroIsEachNodesFilesAsExported();
    void aNodeNeedsOnlyItsOwnFiles();
    void refusals();

private:
    QTemporaryDir dir_;
    DataSplit split_;
    ShardIndex index_;
    std::map<std::size_t, std::size_t> file_of_;  // train sample id -> the shard file holding it
};

void TestShardPlacement::initTestCase() {
    const std::string src = dir_.filePath("src").toStdString();
    write_idx_folder(src);  // 61 train samples: 8 blocks of 8 (the last of 5) in 3 shards
    split_ = load_data(src, DataOptions{});
    index_ = export_split(split_, dir_.filePath("shards").toStdString(), 8, 3, 42);
    QCOMPARE(index_.train.shards.size(), std::size_t{3});
    Batch b;
    for (std::size_t f = 0; f < index_.train.shards.size(); ++f) {
        ShardFile file(index_.path_of(index_.train.shards[f]), index_.layout, index_.batch);
        for (std::uint32_t k = 0; k < file.header().blocks; ++k) {
            file.read_block(k, b);
            for (auto id : b.indices) file_of_[id] = f;
        }
    }
    QCOMPARE(file_of_.size(), split_.train.count);
}

void TestShardPlacement::everyRecordOncePerEpoch_data() {
    QTest::addColumn<int>("nodes");
    QTest::addColumn<int>("workers_per_node");
    QTest::newRow("2 nodes") << 2 << 1;
    QTest::newRow("3 nodes") << 3 << 1;
    QTest::newRow("2 nodes x 2 workers") << 2 << 2;
}

void TestShardPlacement::everyRecordOncePerEpoch() {
    QFETCH(int, nodes);
    QFETCH(int, workers_per_node);
    const int world = nodes * workers_per_node;
    // Steps per epoch: the most any node's blocks need over its workers.
    std::vector<std::size_t> node_blocks(static_cast<std::size_t>(nodes), 0);
    for (std::size_t f = 0; f < index_.train.shards.size(); ++f)
        node_blocks[static_cast<std::size_t>(shard_owner(f, nodes))] += (index_.train.shards[f].records + 7) / 8;
    std::size_t steps = 0;
    for (auto n : node_blocks) steps = std::max(steps, (n + workers_per_node - 1) / workers_per_node);
    for (int epoch = 0; epoch <= 2; ++epoch) {
        std::multiset<std::size_t> all;
        for (int rank = 0; rank < world; ++rank) {
            const auto epoch_ids = rank_epoch(index_, rank, world, nodes, epoch);
            QCOMPARE(epoch_ids.size(), steps);
            const int node = rank / workers_per_node;
            for (const auto& batch : epoch_ids)
                for (auto id : batch) {
                    all.insert(id);
                    // The record came from one of this node's files.
                    QCOMPARE(shard_owner(file_of_.at(id), nodes), node);
                }
        }
        QCOMPARE(all.size(), split_.train.count);
        QCOMPARE(std::set<std::size_t>(all.begin(), all.end()).size(), split_.train.count);
    }
    // Later epochs differ from epoch 0 and from each other, the same on every call (seeded).
    QCOMPARE(rank_epoch(index_, 0, world, nodes, 1), rank_epoch(index_, 0, world, nodes, 1));
    QVERIFY(rank_epoch(index_, 0, world, nodes, 1) != rank_epoch(index_, 0, world, nodes, 2));
}

void TestShardPlacement::epochZeroIsEachNodesFilesAsExported() {
    const int nodes = 2;
    for (int node = 0; node < nodes; ++node) {
        std::vector<std::size_t> exported, streamed;
        Batch b;
        for (std::size_t f = 0; f < index_.train.shards.size(); ++f) {
            if (shard_owner(f, nodes) != node) continue;
            ShardFile file(index_.path_of(index_.train.shards[f]), index_.layout, index_.batch);
            for (std::uint32_t k = 0; k < file.header().blocks; ++k) {
                file.read_block(k, b);
                exported.insert(exported.end(), b.indices.begin(), b.indices.end());
            }
        }
        for (const auto& batch : rank_epoch(index_, node, nodes, nodes, 0)) streamed.insert(streamed.end(), batch.begin(), batch.end());
        QCOMPARE(streamed, exported);
    }
}

void TestShardPlacement::aNodeNeedsOnlyItsOwnFiles() {
    const int nodes = 2;
    QTemporaryDir dir;
    for (int node = 0; node < nodes; ++node) {
        const auto folder = node_folder(index_, dir.filePath(QString("node%1").arg(node)).toStdString(), node, nodes);
        const ShardIndex own = read_shard_index(folder);
        std::size_t records = 0;
        for (int epoch = 0; epoch <= 1; ++epoch) {
            BatchPlan plan = plan_for(own, node, nodes, epoch);
            ShardStream s(own, own.train, plan, nullptr, ShardShare{ShardPlacement::PerNode, nodes});
            Batch b;
            while (s.next(b)) records += b.count;
        }
        std::size_t expected = 0;
        for (std::size_t f = 0; f < own.train.shards.size(); ++f)
            if (shard_owner(f, nodes) == node) expected += own.train.shards[f].records;
        QCOMPARE(records, 2 * expected);
        // Shared placement reads every file: refused here, naming one the node does not hold.
        const QString shared = test_support::data_error([&] { ShardStream(own, own.train, plan_for(own, node, nodes, 0)); });
        QVERIFY2(shared.contains("cannot be opened"), qPrintable(shared));
    }
    // A node's own file missing is refused, naming it.
    const auto folder = dir.filePath("node0").toStdString();
    const ShardIndex own = read_shard_index(folder);
    std::filesystem::remove(own.path_of(own.train.shards[0]));
    const QString missing = test_support::data_error(
            [&] { ShardStream(own, own.train, plan_for(own, 0, nodes, 0), nullptr, ShardShare{ShardPlacement::PerNode, nodes}); });
    QVERIFY2(missing.contains(QString::fromStdString(own.path_of(own.train.shards[0]) + ": cannot be opened")), qPrintable(missing));
}

void TestShardPlacement::refusals() {
    // 3 workers cannot be spread evenly over 2 nodes.
    QVERIFY_THROWS_EXCEPTION(thresher::ConfigError,
                             ShardStream(index_, index_.train, plan_for(index_, 0, 3, 0), nullptr, ShardShare{ShardPlacement::PerNode, 2}));
}

QTEST_APPLESS_MAIN(TestShardPlacement)
#include "test_shard_placement.moc"
