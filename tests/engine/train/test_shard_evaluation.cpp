// Evaluation streamed from a shard set's test part (train::evaluate_shard_part): one process
// streaming the whole part gets exactly the counts of the in-memory evaluation of the source's test
// set, and 2 or 3 ranks, each streaming its own blocks (block k to rank k mod W), merged as the
// controller merges them, get exactly the counts of the one process: confusion, top-k hits,
// sample count (the loss, a float sum in another order, to 1e-9). The same with per-node placement
// (node n streams only the files it owns), for a classifier and for a regression set's sums.
#include <QTemporaryDir>
#include <QtTest>

#include "backend/registry.h"
#include "config/model_config.h"
#include "data/feature_transform.h"
#include "nn/network.h"
#include "shard_fixture.h"
#include "train/evaluation.h"

using namespace thresher;
using namespace shard_fixture;

namespace {

constexpr const char* kModel = R"({"name":"tiny","seed":4,"input":{"channels":1,"height":3,"width":3},
  "layers":[{"type":"dense","units":8,"activation":"tanh"},{"type":"output","units":10}]})";

constexpr int kTopK = 3;

nlohmann::json part_of(const train::EvaluationResult& r) {
    nlohmann::json j = r.to_json(true);  // as a node sends its part (trainer.cpp)
    j["loss_sum"] = r.loss_sum;
    j["count"] = r.count;
    return j;
}

}  // namespace

class TestShardEvaluation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void wholePartAsInMemory();
    void ranksMergeToOneProcess_data();
    void ranksMergeToOneProcess();
    void testLimitTakesTheFirstRecords();
    void perNodeMergesToOneProcess_data();
    void perNodeMergesToOneProcess();
    void perNodeRegressionSumsMerge();

private:
    QTemporaryDir dir_;
    DataSplit split_;
    ShardIndex index_;
    data::FeatureTransform transform_;
    std::unique_ptr<backend::Backend> backend_;
    std::optional<nn::Network> net_;
};

void TestShardEvaluation::initTestCase() {
    const std::string src = dir_.filePath("src").toStdString();
    write_idx_folder(src);  // 61 train, 13 test images
    split_ = load_data(src, DataOptions{});
    // Blocks of 2 in 3 shards: the test part is 7 blocks (the last of 1), so W = 2 and 3 both split
    // it unevenly and W = 3 ends with ranks that have run out.
    index_ = export_split(split_, dir_.filePath("shards").toStdString(), 2, 3, 42);
    QVERIFY(index_.has_test);
    QCOMPARE(index_.test.records, std::uint64_t{13});
    transform_ = data::fit_transform("standardize", split_.train);
    backend_ = backend::create_backend("cpu");
    net_.emplace(config::ModelConfig::parse(kModel, "tiny"), *backend_);
    net_->init_params(4);
}

void TestShardEvaluation::wholePartAsInMemory() {
    auto test = split_.test;
    transform_.apply(test);
    const auto memory = train::evaluate(*net_, test, 256, 0, 0, 1, kTopK);
    const auto streamed = train::evaluate_shard_part(*net_, index_, index_.test, &transform_, 0, 0, 1, kTopK);
    QCOMPARE(streamed.count, std::size_t{13});
    QCOMPARE(streamed.to_json().at("confusion"), memory.to_json().at("confusion"));
    QCOMPARE(streamed.classification->top_k_accuracy(), memory.classification->top_k_accuracy());
    QVERIFY(std::abs(streamed.loss_sum - memory.loss_sum) <= 1e-5 * std::abs(memory.loss_sum));
    // Without the normalisation the model sees other inputs: the transform is applied per record.
    const auto raw = train::evaluate_shard_part(*net_, index_, index_.test, nullptr, 0, 0, 1, kTopK);
    QVERIFY(std::abs(raw.loss_sum - memory.loss_sum) > 1e-3);
}

void TestShardEvaluation::ranksMergeToOneProcess_data() {
    QTest::addColumn<int>("world");
    QTest::newRow("world 2") << 2;
    QTest::newRow("world 3") << 3;
}

void TestShardEvaluation::ranksMergeToOneProcess() {
    QFETCH(int, world);
    const auto one = train::evaluate_shard_part(*net_, index_, index_.test, &transform_, 0, 0, 1, kTopK);
    std::vector<nlohmann::json> parts;
    std::size_t smallest = one.count;
    for (int rank = 0; rank < world; ++rank) {
        const auto r = train::evaluate_shard_part(*net_, index_, index_.test, &transform_, 0, rank, world, kTopK);
        smallest = std::min(smallest, r.count);
        parts.push_back(part_of(r));
    }
    QVERIFY2(smallest * static_cast<std::size_t>(world) <= one.count, "a rank evaluated more than its share: the part was not split");
    const auto merged = train::merge_classification_parts(parts);
    QVERIFY(merged.has_value());
    QCOMPARE(merged->count, one.count);
    QCOMPARE(merged->to_json().at("confusion"), one.to_json().at("confusion"));
    QCOMPARE(merged->classification->top_k(), kTopK);
    QCOMPARE(merged->classification->top_k_accuracy(), one.classification->top_k_accuracy());
    QCOMPARE(merged->classification->accuracy(), one.classification->accuracy());
    QVERIFY(std::abs(merged->loss_sum - one.loss_sum) <= 1e-9 * std::max(1.0, std::abs(one.loss_sum)));
}

// --test-limit on a streamed part: its first records in the exported order (whole blocks, the last
// cut), split over ranks like the whole part.
void TestShardEvaluation::testLimitTakesTheFirstRecords() {
    const auto five = train::evaluate_shard_part(*net_, index_, index_.test, &transform_, 5, 0, 1, kTopK);
    QCOMPARE(five.count, std::size_t{5});
    std::vector<nlohmann::json> parts;
    for (int rank = 0; rank < 2; ++rank)
        parts.push_back(part_of(train::evaluate_shard_part(*net_, index_, index_.test, &transform_, 5, rank, 2, kTopK)));
    const auto merged = train::merge_classification_parts(parts);
    QCOMPARE(merged->count, std::size_t{5});
    QCOMPARE(merged->to_json().at("confusion"), five.to_json().at("confusion"));
}

void TestShardEvaluation::perNodeMergesToOneProcess_data() { ranksMergeToOneProcess_data(); }

void TestShardEvaluation::perNodeMergesToOneProcess() {
    QFETCH(int, world);
    const auto one = train::evaluate_shard_part(*net_, index_, index_.test, &transform_, 0, 0, 1, kTopK);
    std::vector<nlohmann::json> parts;
    for (int node = 0; node < world; ++node)
        parts.push_back(part_of(train::evaluate_shard_part(*net_, index_, index_.test, &transform_, 0, node, world, kTopK,
                                                           {thresher::spec::ShardPlacement::PerNode, world})));
    const auto merged = train::merge_classification_parts(parts);
    QCOMPARE(merged->count, one.count);
    QCOMPARE(merged->to_json().at("confusion"), one.to_json().at("confusion"));
    QCOMPARE(merged->classification->top_k_accuracy(), one.classification->top_k_accuracy());
}

// A regression set per node: each node's sums (EvaluationResult::to_json(true)'s "state") add up to
// one process's mse, mae and r2 (the trainer merges them only per node: shared, each has the whole).
void TestShardEvaluation::perNodeRegressionSumsMerge() {
    DataSplit split;
    for (Dataset* ds : {&split.train, &split.test}) {
        ds->name = "table";
        ds->shape = {1, 1, 4};
        ds->count = ds == &split.train ? 30 : 11;
        ds->target_size = 2;
        for (std::size_t i = 0; i < ds->count * 4; ++i) ds->features.push_back(float((i * 13) % 7) / 7.f);
        for (std::size_t i = 0; i < ds->count * 2; ++i) ds->targets.push_back(float((i * 5) % 3) - 1.f);
    }
    split.has_test = true;
    const ShardIndex index = export_split(split, dir_.filePath("regression").toStdString(), 2, 3, 9);
    net_.reset();
    nn::Network net(config::ModelConfig::parse(R"({"name":"reg","input":{"size":4},"layers":[{"type":"dense","units":5,
        "activation":"tanh"},{"type":"output","units":2,"activation":"identity","loss":"mse"}]})", "reg"), *backend_);
    net.init_params(2);
    const auto one = train::evaluate_shard_part(net, index, index.test, nullptr);
    QVERIFY(one.regression.has_value());
    std::vector<nlohmann::json> parts;
    for (int node = 0; node < 2; ++node)
        parts.push_back(part_of(train::evaluate_shard_part(net, index, index.test, nullptr, 0, node, 2, 0,
                                                           {thresher::spec::ShardPlacement::PerNode, 2})));
    QVERIFY(!train::merge_classification_parts(parts));
    const auto merged = train::merge_regression_parts(parts);
    QVERIFY(merged && merged->regression);
    QCOMPARE(merged->count, std::size_t{11});
    QVERIFY(parts[0].at("count").get<std::size_t>() < 11);
    for (std::size_t c = 0; c < 2; ++c) {
        QVERIFY(std::abs(merged->regression->mse(c) - one.regression->mse(c)) <= 1e-9);
        QVERIFY(std::abs(merged->regression->mae(c) - one.regression->mae(c)) <= 1e-9);
        QVERIFY(std::abs(merged->regression->r2(c) - one.regression->r2(c)) <= 1e-9);
    }
    net_.emplace(config::ModelConfig::parse(kModel, "tiny"), *backend_);
    net_->init_params(4);
}

QTEST_APPLESS_MAIN(TestShardEvaluation)
#include "test_shard_evaluation.moc"
