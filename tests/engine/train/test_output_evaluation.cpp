// A model with several outputs is evaluated output by output (train::evaluate's "outputs"): a
// softmax head as a classifier (labels: its one-hot target columns), a sigmoid head with binary
// cross-entropy as a binary classifier, a linear head with mse as a regression. Each output's
// figures are recomputed here from the network's own predictions, independently of the
// evaluators; and a sharded evaluation (two shards, merged as the controller merges the nodes'
// parts) gives exactly the single evaluation's counts and sums.
#include <QtTest>

#include <cmath>
#include <random>

#include "backend/registry.h"
#include "core/error.h"
#include "config/model_config.h"
#include "nn/network.h"
#include "train/evaluation.h"

using namespace thresher;

namespace {

constexpr const char* kModel = R"({"input":{"size":4},"seed":5,
  "outputs":["classes","flag","value"],
  "layers":[
    {"type":"dense","name":"trunk","units":6,"activation":"tanh"},
    {"type":"output","name":"classes","inputs":"trunk","units":3,"activation":"softmax","loss":"mcxent"},
    {"type":"output","name":"flag","inputs":"trunk","units":1,"activation":"sigmoid","loss":"xent"},
    {"type":"output","name":"value","inputs":"trunk","units":2,"activation":"identity","loss":"mse"}]})";

constexpr int kOutputs = 3 + 1 + 2;

// 37 samples (not a multiple of the shards or the batch); targets side by side: a one-hot over
// 3 classes, a 0/1 flag, two real values.
data::Dataset make_set() {
    data::Dataset ds;
    ds.name = "generated";
    ds.shape = {1, 1, 4};
    ds.count = 37;
    ds.num_classes = 3;
    ds.target_size = kOutputs;
    std::mt19937 rng(11);
    std::normal_distribution<float> n(0.f, 1.f);
    for (std::size_t i = 0; i < ds.count; ++i) {
        for (int f = 0; f < 4; ++f) ds.features.push_back(n(rng));
        const int label = static_cast<int>(rng() % 3);
        for (int c = 0; c < 3; ++c) ds.targets.push_back(c == label ? 1.f : 0.f);
        ds.targets.push_back(rng() % 2 ? 1.f : 0.f);
        ds.targets.push_back(n(rng));
        ds.targets.push_back(n(rng));
        ds.labels.push_back(label);
    }
    return ds;
}

}  // namespace

class TestOutputEvaluation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void each_output_scored_by_its_kind() {
        auto be = backend::create_backend("cpu");
        nn::Network net(config::ModelConfig::parse(kModel, "three_heads"), *be);
        net.init_params(5);
        const auto ds = make_set();
        const auto r = train::evaluate(net, ds, 8);
        QCOMPARE(r.outputs.size(), std::size_t{3});
        QCOMPARE(QString::fromStdString(r.outputs[1].name), QString("flag"));
        QVERIFY(r.outputs[0].classification && !r.outputs[0].binary);
        QVERIFY(r.outputs[1].classification && r.outputs[1].binary);
        QVERIFY(r.outputs[2].regression && !r.outputs[2].classification);

        // The figures from the predictions themselves.
        std::vector<float> out(ds.count * kOutputs);
        net.predict(ds.features.data(), static_cast<int>(ds.count), out.data());
        int class_hits = 0, flag_hits = 0;
        double sq[2] = {0, 0};
        for (std::size_t i = 0; i < ds.count; ++i) {
            const float* y = out.data() + i * kOutputs;
            const float* t = ds.targets.data() + i * kOutputs;
            const int predicted = static_cast<int>(std::max_element(y, y + 3) - y);
            class_hits += t[predicted] == 1.f;
            flag_hits += (y[3] >= 0.5f) == (t[3] >= 0.5f);
            for (int c = 0; c < 2; ++c) sq[c] += (double(y[4 + c]) - t[4 + c]) * (double(y[4 + c]) - t[4 + c]);
        }
        QCOMPARE(r.outputs[0].classification->accuracy(), double(class_hits) / ds.count);
        QCOMPARE(r.outputs[1].classification->accuracy(), double(flag_hits) / ds.count);
        for (int c = 0; c < 2; ++c) QVERIFY(std::abs(r.outputs[2].regression->mse(c) - sq[c] / ds.count) < 1e-6);
        // The main output's per-output figures are the top-level ones.
        QCOMPARE(r.outputs[0].classification->accuracy(), r.classification->accuracy());
        QCOMPARE(r.to_json().at("outputs").size(), std::size_t{3});
    }

    void sharded_parts_merge_to_the_single_evaluation() {
        auto be = backend::create_backend("cpu");
        nn::Network net(config::ModelConfig::parse(kModel, "three_heads"), *be);
        net.init_params(5);
        const auto ds = make_set();
        const auto whole = train::evaluate(net, ds, 8);
        std::vector<nlohmann::json> parts;
        for (int shard = 0; shard < 2; ++shard) {
            const auto r = train::evaluate(net, ds, 8, 0, shard, 2);
            nlohmann::json part = r.to_json(true);
            part["loss_sum"] = r.loss_sum;
            part["count"] = r.count;
            parts.push_back(part);
        }
        const auto merged = train::merge_classification_parts(parts);
        QVERIFY(merged);
        QCOMPARE(merged->outputs.size(), std::size_t{3});
        for (std::size_t k = 0; k < 2; ++k)
            QCOMPARE(merged->outputs[k].classification->to_json(), whole.outputs[k].classification->to_json());
        QCOMPARE(merged->outputs[1].binary->to_json(), whole.outputs[1].binary->to_json());
        for (int c = 0; c < 2; ++c)
            QVERIFY(std::abs(merged->outputs[2].regression->mse(c) - whole.outputs[2].regression->mse(c)) < 1e-9);
        QCOMPARE(merged->outputs[2].regression->count(), whole.outputs[2].regression->count());

        // A part that lists another number of outputs is refused, naming the part.
        parts[1]["outputs"].erase(2);
        try {
            train::merge_classification_parts(parts);
            QFAIL("a part with two outputs merged into one with three");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("evaluation part 1 of 2") && QString(e.what()).contains("outputs"), e.what());
        }
    }
};

QTEST_MAIN(TestOutputEvaluation)
#include "test_output_evaluation.moc"
