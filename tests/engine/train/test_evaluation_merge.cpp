// The controller's merge of a sharded evaluation (train::merge_evaluation_parts): the nodes'
// confusion matrices, losses, counts and (binary) score histograms add up to the single-node
// result; a regression set's own result stands; and a node's part that does not merge -- another
// class count, a "count" or "loss_sum" of the wrong type, a binary part without its histogram,
// counts that overflow -- is a thresher::Error naming the part, never an exception of the JSON
// library's (tests/fuzz, fuzz_evaluation_payload, found the missing histogram: a
// nlohmann::out_of_range escaped).
#include <QtTest>

#include "core/error.h"
#include "train/evaluation.h"

using thresher::train::merge_evaluation_parts;

namespace {

nlohmann::json classification(const std::vector<std::int32_t>& labels, const std::vector<std::int32_t>& predicted,
                              int classes, double loss_sum) {
    thresher::eval::ClassificationEvaluator c(classes);
    c.add_predictions(predicted.data(), labels.data(), labels.size());
    nlohmann::json j = c.to_json();
    j["loss_sum"] = loss_sum;
    j["count"] = labels.size();
    return j;
}

nlohmann::json binary(const std::vector<std::int32_t>& labels, const std::vector<float>& scores) {
    std::vector<std::int32_t> predicted;
    for (float s : scores) predicted.push_back(s >= 0.5f ? 1 : 0);
    nlohmann::json j = classification(labels, predicted, 2, 1.0);
    thresher::eval::BinaryScores s;
    s.add(scores.data(), labels.data(), labels.size());
    j["auc_hist"] = s.to_json();
    return j;
}

QString refusal(const std::vector<nlohmann::json>& parts) {
    try {
        merge_evaluation_parts(parts);
    } catch (const thresher::Error& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

}  // namespace

class TestEvaluationMerge : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void classification_parts_add_up() {
        const auto merged = merge_evaluation_parts({classification({0, 1, 2}, {0, 1, 1}, 3, 1.5),
                                                    classification({2, 2}, {2, 0}, 3, 0.5)});
        QCOMPARE(merged.at("confusion"), nlohmann::json::parse("[[1,0,0],[0,1,0],[1,1,1]]"));
        QCOMPARE(merged.at("count").get<std::size_t>(), std::size_t{5});
        QCOMPARE(merged.at("loss").get<double>(), 2.0 / 5);
    }
    // Top-k hits add up like the matrix: node 0 has 2 of 3 in its top 2, node 1 1 of 2.
    void top_k_parts_add_up() {
        auto part = [](const std::vector<float>& scores, const std::vector<std::int32_t>& labels) {
            thresher::eval::ClassificationEvaluator c(3, 2);
            c.add(scores.data(), labels.data(), labels.size());
            nlohmann::json j = c.to_json();
            j["loss_sum"] = 0.0;
            j["count"] = labels.size();
            return j;
        };
        //              scores of classes 0, 1, 2 per sample
        const auto a = part({0.7f, 0.2f, 0.1f, 0.1f, 0.6f, 0.3f, 0.5f, 0.3f, 0.2f}, {1, 2, 2});  // hit, hit, miss
        const auto b = part({0.2f, 0.3f, 0.5f, 0.6f, 0.3f, 0.1f}, {0, 2});                     // miss, miss
        QCOMPARE(a.at("top_k_correct").get<int>(), 2);
        QCOMPARE(b.at("top_k_correct").get<int>(), 0);
        const auto merged = merge_evaluation_parts({a, b});
        QCOMPARE(merged.at("top_k").get<int>(), 2);
        QCOMPARE(merged.at("top_k_correct").get<int>(), 2);
        QCOMPARE(merged.at("top_k_accuracy").get<double>(), 2.0 / 5);
        // A part counted with another k (or none) does not merge.
        auto other = b;
        other["top_k"] = 3;
        QVERIFY(refusal({a, other}).contains("top-3"));
        auto none = b;
        none.erase("top_k");
        none.erase("top_k_correct");
        none.erase("top_k_accuracy");
        QVERIFY(refusal({a, none}).contains("part 1 of 2"));
    }
    void binary_parts_merge_their_histograms() {
        const auto merged = merge_evaluation_parts({binary({1, 0}, {0.9f, 0.2f}), binary({1, 0}, {0.3f, 0.6f})});
        // Positives 0.9, 0.3 against negatives 0.2, 0.6: 3 of 4 pairs ordered.
        QCOMPARE(merged.at("auc").get<double>(), 0.75);
        QVERIFY(merged.at("task") == "binary");
    }
    void regression_keeps_the_controllers_own() {
        const nlohmann::json own{{"mse", 0.5}, {"count", 4}};
        QCOMPARE(merge_evaluation_parts({own, nlohmann::json{{"mse", "junk"}}}), own);
    }
    void refused_parts_data() {
        QTest::addColumn<std::vector<nlohmann::json>>("parts");
        QTest::addColumn<QString>("mentions");
        const auto own = classification({0, 1}, {0, 1}, 2, 1.0);
        auto count_text = own;
        count_text["count"] = "2";
        auto count_negative = own;
        count_negative["count"] = -2;
        auto loss_text = own;
        loss_text["loss_sum"] = "1.0";
        auto huge = own;
        huge["confusion"] = nlohmann::json::parse("[[9223372036854775807,0],[0,0]]");
        const auto bin = binary({1, 0}, {0.9f, 0.2f});
        auto no_hist = bin;
        no_hist.erase("auc_hist");
        QTest::newRow("another class count") << std::vector{own, classification({0}, {0}, 3, 0.0)} << "part 1 of 2";
        QTest::newRow("count as text") << std::vector{own, count_text} << "\"count\"";
        QTest::newRow("negative count") << std::vector{own, count_negative} << "\"count\"";
        QTest::newRow("loss_sum as text") << std::vector{own, own, loss_text} << "part 2 of 3";
        QTest::newRow("not an object") << std::vector{own, nlohmann::json::array()} << "part 1 of 2";
        QTest::newRow("overflowing counts") << std::vector{own, huge} << "overflows";
        QTest::newRow("binary without histogram") << std::vector{bin, no_hist} << "auc_hist";
    }
    void refused_parts() {
        QFETCH(std::vector<nlohmann::json>, parts);
        QFETCH(QString, mentions);
        const QString why = refusal(parts);
        QVERIFY2(why.contains(mentions), qPrintable(why));
    }
};

QTEST_GUILESS_MAIN(TestEvaluationMerge)
#include "test_evaluation_merge.moc"
