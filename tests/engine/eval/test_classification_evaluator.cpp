// TestClassificationEvaluator: DL4J-style precision/recall/F1 against numbers worked out by hand
// on small confusion matrices, plus merging, undefined classes, bad labels and JSON round trips.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "eval/classification.h"

using thresher::eval::ClassificationEvaluator;

namespace {

using Ints = std::vector<std::int32_t>;

ClassificationEvaluator evaluate(int classes, const Ints& labels, const Ints& predicted) {
    ClassificationEvaluator e(classes);
    e.add_predictions(predicted.data(), labels.data(), labels.size());
    return e;
}

bool close(double a, double b) {
    return std::abs(a - b) < 1e-9;
}

}  // namespace

Q_DECLARE_METATYPE(Ints)
Q_DECLARE_METATYPE(std::vector<double>)

class TestClassificationEvaluator : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void metrics_data();
    void metrics();
    void argmax_ties_data();
    void argmax_ties();
    void merge_equals_union();
    void top_k_counts_classes_scored_higher();
    void merge_rejects_other_class_count();
    void merge_refuses_an_overflowing_count();
    void from_json_checks_rows_before_allocating();
    void out_of_range_label_throws_data();
    void out_of_range_label_throws();
    void json_round_trip();
    void from_json_rejects_bad_matrix_data();
    void from_json_rejects_bad_matrix();
    void empty_evaluator();
    void confusion_table_is_readable();
};

// Each row: labels and predictions, then per-class precision/recall/F1 (NaN = undefined, which
// the per-class getters report as 0), then accuracy and the three macro averages.
void TestClassificationEvaluator::metrics_data() {
    QTest::addColumn<int>("classes");
    QTest::addColumn<Ints>("labels");
    QTest::addColumn<Ints>("predicted");
    QTest::addColumn<std::vector<double>>("precision");
    QTest::addColumn<std::vector<double>>("recall");
    QTest::addColumn<std::vector<double>>("f1");
    QTest::addColumn<double>("accuracy");
    QTest::addColumn<double>("macro_precision");
    QTest::addColumn<double>("macro_recall");
    QTest::addColumn<double>("macro_f1");
    const double nan = std::nan("");

    // actual \ predicted   0  1  2     row sums 4 3 4, column sums 4 2 5, N = 11
    //              0       3  1  0     P = 3/4, 1/2, 3/5     R = 3/4, 1/3, 3/4
    //              1       0  1  2     F1_0 = 0.75; F1_1 = 2(1/2)(1/3)/(5/6) = 0.4;
    //              2       1  0  3     F1_2 = 2(0.6)(0.75)/1.35 = 2/3
    // accuracy = 7/11; macro P = 1.85/3; macro R = (0.75+1/3+0.75)/3 = 11/18;
    // macro F1 = (0.75+0.4+2/3)/3 = 109/180.
    QTest::newRow("three classes")
        << 3 << Ints{0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2} << Ints{0, 0, 0, 1, 1, 2, 2, 0, 2, 2, 2}
        << std::vector<double>{0.75, 0.5, 0.6} << std::vector<double>{0.75, 1.0 / 3, 0.75}
        << std::vector<double>{0.75, 0.4, 2.0 / 3} << 7.0 / 11 << 1.85 / 3 << 11.0 / 18 << 109.0 / 180;

    // Class 2 never occurs nor is predicted: matrix [[1,1,0],[0,2,0],[0,0,0]].
    // P = 1, 2/3, undefined; R = 1/2, 1, undefined; F1_0 = 2(1)(1/2)/1.5 = 2/3;
    // F1_1 = 2(2/3)(1)/(5/3) = 0.8. Macros skip class 2: P = 5/6, R = 3/4, F1 = 22/30.
    QTest::newRow("absent class excluded")
        << 3 << Ints{0, 0, 1, 1} << Ints{0, 1, 1, 1} << std::vector<double>{1.0, 2.0 / 3, nan}
        << std::vector<double>{0.5, 1.0, nan} << std::vector<double>{2.0 / 3, 0.8, nan} << 0.75 << 5.0 / 6
        << 0.75 << 22.0 / 30;

    // Class 2 occurs but is never predicted: matrix [[1,0,0],[0,1,0],[0,1,0]].
    // P_2 undefined, R_2 = 0, so F1_2 is undefined too (DL4J needs both).
    // P = 1, 1/2; R = 1, 1, 0; F1 = 1, 2/3. Macro P = 3/4, R = 2/3, F1 = 5/6.
    QTest::newRow("never predicted class")
        << 3 << Ints{0, 1, 2} << Ints{0, 1, 1} << std::vector<double>{1.0, 0.5, nan}
        << std::vector<double>{1.0, 1.0, 0.0} << std::vector<double>{1.0, 2.0 / 3, nan} << 2.0 / 3 << 0.75
        << 2.0 / 3 << 5.0 / 6;

    // Everything wrong: [[0,1],[1,0]]. P = R = 0 is defined, and F1 = 0 rather than 0/0.
    QTest::newRow("all wrong") << 2 << Ints{0, 1} << Ints{1, 0} << std::vector<double>{0.0, 0.0}
                               << std::vector<double>{0.0, 0.0} << std::vector<double>{0.0, 0.0} << 0.0
                               << 0.0 << 0.0 << 0.0;

    // Perfect on two of four classes present: [[2,0],[0,1]] in a 4-class space.
    QTest::newRow("perfect") << 4 << Ints{0, 0, 1} << Ints{0, 0, 1} << std::vector<double>{1.0, 1.0, nan, nan}
                             << std::vector<double>{1.0, 1.0, nan, nan} << std::vector<double>{1.0, 1.0, nan, nan}
                             << 1.0 << 1.0 << 1.0 << 1.0;
}

void TestClassificationEvaluator::metrics() {
    QFETCH(int, classes);
    QFETCH(Ints, labels);
    QFETCH(Ints, predicted);
    QFETCH(std::vector<double>, precision);
    QFETCH(std::vector<double>, recall);
    QFETCH(std::vector<double>, f1);
    QFETCH(double, accuracy);
    QFETCH(double, macro_precision);
    QFETCH(double, macro_recall);
    QFETCH(double, macro_f1);

    const auto e = evaluate(classes, labels, predicted);
    QCOMPARE(e.count(), static_cast<std::int64_t>(labels.size()));
    QCOMPARE(e.num_classes(), classes);
    auto expected = [](double v) { return std::isnan(v) ? 0.0 : v; };
    for (int c = 0; c < classes; ++c) {
        QVERIFY2(close(e.precision(c), expected(precision[c])), qPrintable(QString("precision(%1)").arg(c)));
        QVERIFY2(close(e.recall(c), expected(recall[c])), qPrintable(QString("recall(%1)").arg(c)));
        QVERIFY2(close(e.f1(c), expected(f1[c])), qPrintable(QString("f1(%1) = %2").arg(c).arg(e.f1(c))));
    }
    QVERIFY2(close(e.accuracy(), accuracy), qPrintable(QString::number(e.accuracy())));
    QVERIFY2(close(e.macro_precision(), macro_precision), qPrintable(QString::number(e.macro_precision())));
    QVERIFY2(close(e.macro_recall(), macro_recall), qPrintable(QString::number(e.macro_recall())));
    QVERIFY2(close(e.macro_f1(), macro_f1), qPrintable(QString::number(e.macro_f1())));
}

void TestClassificationEvaluator::argmax_ties_data() {
    QTest::addColumn<std::vector<double>>("scores");
    QTest::addColumn<int>("expected");
    QTest::newRow("tie at front") << std::vector<double>{0.5, 0.5, 0.0} << 0;
    QTest::newRow("tie at back") << std::vector<double>{0.1, 0.7, 0.7} << 1;
    QTest::newRow("all equal") << std::vector<double>{-1.0, -1.0, -1.0} << 0;
    QTest::newRow("negative logits") << std::vector<double>{-3.0, -0.5, -2.0} << 1;
    QTest::newRow("NaN does not win") << std::vector<double>{std::nan(""), 0.2, 0.1} << 1;
    QTest::newRow("all NaN") << std::vector<double>{std::nan(""), std::nan(""), std::nan("")} << 0;
}

void TestClassificationEvaluator::argmax_ties() {
    QFETCH(std::vector<double>, scores);
    QFETCH(int, expected);
    const std::vector<float> row(scores.begin(), scores.end());
    const std::int32_t label = 2;
    ClassificationEvaluator e(3);
    e.add(row.data(), &label, 1);
    QCOMPARE(e.confusion(2, expected), std::int64_t{1});
    QCOMPARE(e.count(), std::int64_t{1});
}

void TestClassificationEvaluator::merge_equals_union() {
    // Scores for 500 samples over 5 classes, split unevenly as two nodes would see them.
    constexpr int classes = 5;
    constexpr std::size_t n = 500;
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> score(0.0f, 1.0f);
    std::uniform_int_distribution<std::int32_t> label(0, classes - 1);
    std::vector<float> scores(n * classes);
    Ints labels(n);
    for (auto& s : scores) {
        s = score(rng);
    }
    for (auto& l : labels) {
        l = label(rng);
    }

    ClassificationEvaluator whole(classes);
    whole.add(scores.data(), labels.data(), n);

    const std::size_t split = 173;
    ClassificationEvaluator a(classes);
    ClassificationEvaluator b(classes);
    a.add(scores.data(), labels.data(), split);
    b.add(scores.data() + split * classes, labels.data() + split, n - split);
    a.merge(b);

    QCOMPARE(a.count(), whole.count());
    for (int r = 0; r < classes; ++r) {
        for (int c = 0; c < classes; ++c) {
            QCOMPARE(a.confusion(r, c), whole.confusion(r, c));
        }
    }
    // Same counts give bit-identical metrics, so compare exactly.
    QCOMPARE(a.accuracy(), whole.accuracy());
    QCOMPARE(a.macro_f1(), whole.macro_f1());
    QCOMPARE(a.to_json(), whole.to_json());

    // Merging an empty evaluator changes nothing.
    a.merge(ClassificationEvaluator(classes));
    QCOMPARE(a.to_json(), whole.to_json());
}

// DL4J's rule: a hit when fewer than k classes score strictly above the true class (ties count
// for the sample); a NaN true score is never a hit; the count survives JSON.
void TestClassificationEvaluator::top_k_counts_classes_scored_higher() {
    ClassificationEvaluator e(4, 2);
    const std::vector<float> scores{
        0.1f, 0.4f, 0.3f, 0.2f,  // label 2: only class 1 above -> hit
        0.1f, 0.4f, 0.3f, 0.2f,  // label 3: classes 1 and 2 above -> miss
        0.5f, 0.5f, 0.5f, 0.0f,  // label 2: tied with 0 and 1, none strictly above -> hit
        0.1f, NAN,  0.2f, 0.3f,  // label 1: NaN -> miss
    };
    const Ints labels{2, 3, 2, 1};
    e.add(scores.data(), labels.data(), labels.size());
    QCOMPARE(e.top_k(), 2);
    QCOMPARE(e.top_k_correct(), std::int64_t{2});
    QCOMPARE(e.top_k_accuracy(), 0.5);
    QCOMPARE(e.accuracy(), 0.0);  // argmax 1, 1, 0 (first maximum), 3: top-1 gets none right
    const auto j = e.to_json();
    QCOMPARE(j.at("top_k").get<int>(), 2);
    QCOMPARE(j.at("top_k_accuracy").get<double>(), 0.5);
    const auto back = ClassificationEvaluator::from_json(j);
    QCOMPARE(back.top_k(), 2);
    QCOMPARE(back.top_k_correct(), std::int64_t{2});
    // Without top-k the JSON has none of its fields (old readers and parts are unchanged).
    QVERIFY(!ClassificationEvaluator(4).to_json().contains("top_k"));
    auto bad = j;
    bad["top_k_correct"] = 5;  // more hits than samples
    QVERIFY_THROWS_EXCEPTION(thresher::Error, ClassificationEvaluator::from_json(bad));
    QVERIFY_THROWS_EXCEPTION(thresher::Error, ClassificationEvaluator(4, -1));
}

void TestClassificationEvaluator::merge_rejects_other_class_count() {
    ClassificationEvaluator a(3);
    QVERIFY_THROWS_EXCEPTION(thresher::Error, a.merge(ClassificationEvaluator(4)));
}

// A node's part (from_json) may hold counts up to 2^63 - 1: two of them overflowed int64 in the
// controller's merge (seen reviewing the merge fuzz_evaluation_payload drives). Refused, with nothing added.
void TestClassificationEvaluator::merge_refuses_an_overflowing_count() {
    const auto big = ClassificationEvaluator::from_json(nlohmann::json::parse(R"({"confusion":[[9223372036854775000,0],[0,7]]})"));
    auto a = ClassificationEvaluator::from_json(nlohmann::json::parse(R"({"confusion":[[800,1],[0,0]]})"));
    QVERIFY_THROWS_EXCEPTION(thresher::Error, a.merge(big));
    QCOMPARE(a.count(), std::int64_t{801});
    QCOMPARE(a.confusion(0, 0), std::int64_t{800});
    auto b = ClassificationEvaluator::from_json(nlohmann::json::parse(R"({"confusion":[[800,0],[0,0]]})"));
    b.merge(big);  // exactly up to the limit is fine
    QCOMPARE(b.count(), std::numeric_limits<std::int64_t>::max());
}

// 100,000 empty rows (300 kB of JSON) asked for a 10^5 x 10^5 matrix, 80 GB, before the first row
// was checked (seen reviewing what fuzz_evaluation_payload reaches): rows are checked first now.
void TestClassificationEvaluator::from_json_checks_rows_before_allocating() {
    nlohmann::json rows = nlohmann::json::array();
    for (int i = 0; i < 100000; ++i) rows.push_back(nlohmann::json::array());
    try {
        ClassificationEvaluator::from_json({{"confusion", rows}});
        QFAIL("expected thresher::Error");
    } catch (const thresher::Error& err) {
        QVERIFY2(QString::fromStdString(err.what()).contains("confusion[0]"), err.what());
    }
}

void TestClassificationEvaluator::out_of_range_label_throws_data() {
    QTest::addColumn<std::int32_t>("bad_label");
    QTest::newRow("negative") << std::int32_t{-1};
    QTest::newRow("equal to class count") << std::int32_t{3};
    QTest::newRow("far out") << std::int32_t{1000};
}

void TestClassificationEvaluator::out_of_range_label_throws() {
    QFETCH(std::int32_t, bad_label);
    ClassificationEvaluator e(3);
    const std::vector<float> scores{0.9f, 0.05f, 0.05f, 0.1f, 0.8f, 0.1f};
    const Ints labels{0, bad_label};
    try {
        e.add(scores.data(), labels.data(), 2);
        QFAIL("expected thresher::Error");
    } catch (const thresher::Error& err) {
        const QString message = QString::fromStdString(err.what());
        QVERIFY2(message.contains(QString::number(bad_label)), qPrintable(message));
        QVERIFY2(message.contains("[0, 3)"), qPrintable(message));
    }
    // The valid first sample must not have been counted either.
    QCOMPARE(e.count(), std::int64_t{0});
    QCOMPARE(e.confusion(0, 0), std::int64_t{0});

    const Ints predicted{0, 1};
    QVERIFY_THROWS_EXCEPTION(thresher::Error, e.add_predictions(predicted.data(), labels.data(), 2));
    const Ints good_labels{0, 1};
    const Ints bad_predicted{0, bad_label};
    QVERIFY_THROWS_EXCEPTION(thresher::Error, e.add_predictions(bad_predicted.data(), good_labels.data(), 2));
    QVERIFY_THROWS_EXCEPTION(thresher::Error, e.precision(bad_label));
}

void TestClassificationEvaluator::json_round_trip() {
    // The "three classes" matrix from metrics_data().
    const auto e = evaluate(3, {0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2}, {0, 0, 0, 1, 1, 2, 2, 0, 2, 2, 2});
    const nlohmann::json j = e.to_json();
    QCOMPARE(j.at("count").get<std::int64_t>(), std::int64_t{11});
    QVERIFY(close(j.at("accuracy").get<double>(), 7.0 / 11));
    QVERIFY(close(j.at("precision").get<double>(), 1.85 / 3));
    QVERIFY(close(j.at("recall").get<double>(), 11.0 / 18));
    QVERIFY(close(j.at("f1").get<double>(), 109.0 / 180));
    QCOMPARE(j.at("confusion"), nlohmann::json::parse("[[3,1,0],[0,1,2],[1,0,3]]"));

    // Through text, as it travels between nodes.
    const auto back = ClassificationEvaluator::from_json(nlohmann::json::parse(j.dump()));
    QCOMPARE(back.num_classes(), 3);
    QCOMPARE(back.count(), e.count());
    QCOMPARE(back.to_json(), j);
}

void TestClassificationEvaluator::from_json_rejects_bad_matrix_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("not an object") << "[1,2]" << "confusion";
    QTest::newRow("no matrix") << R"({"accuracy":1})" << "confusion";
    QTest::newRow("empty") << R"({"confusion":[]})" << "confusion";
    QTest::newRow("not square") << R"({"confusion":[[1,2],[3]]})" << "confusion[1]";
    QTest::newRow("negative") << R"({"confusion":[[1,2],[3,-4]]})" << "confusion[1][1]";
    QTest::newRow("fraction") << R"({"confusion":[[1,2.5],[3,4]]})" << "confusion[0][1]";
    QTest::newRow("string") << R"({"confusion":[["1"]]})" << "confusion[0][0]";
}

void TestClassificationEvaluator::from_json_rejects_bad_matrix() {
    QFETCH(QString, text);
    QFETCH(QString, mentions);
    try {
        ClassificationEvaluator::from_json(nlohmann::json::parse(text.toStdString()));
        QFAIL("expected thresher::Error");
    } catch (const thresher::Error& err) {
        QVERIFY2(QString::fromStdString(err.what()).contains(mentions), err.what());
    }
}

void TestClassificationEvaluator::empty_evaluator() {
    const ClassificationEvaluator e(4);
    QCOMPARE(e.count(), std::int64_t{0});
    QCOMPARE(e.accuracy(), 0.0);
    QCOMPARE(e.macro_precision(), 0.0);
    QCOMPARE(e.macro_recall(), 0.0);
    QCOMPARE(e.macro_f1(), 0.0);
    QCOMPARE(e.precision(3), 0.0);
    QVERIFY_THROWS_EXCEPTION(thresher::Error, ClassificationEvaluator(0));
}

void TestClassificationEvaluator::confusion_table_is_readable() {
    const auto e = evaluate(3, {0, 0, 1, 1}, {0, 1, 1, 1});
    const QString table = QString::fromStdString(e.confusion_table({"cat", "dog", "bird"}));
    QVERIFY2(table.contains("actual \\ predicted"), qPrintable(table));
    QVERIFY2(table.contains("bird"), qPrintable(table));
    QVERIFY2(table.contains("0.6667"), qPrintable(table));  // precision of dog, 2/3
    QVERIFY2(table.contains("0.8000"), qPrintable(table));  // F1 of dog
    // Undefined metrics of the absent class show as "-", not as a misleading 0.
    const QString bird_line = table.split('\n').filter(QRegularExpression("^bird +-")).value(0);
    QVERIFY2(!bird_line.isEmpty(), qPrintable(table));
    QVERIFY_THROWS_EXCEPTION(thresher::Error, e.confusion_table({"only", "two"}));
    // Without names the indices head the rows and columns.
    QVERIFY(QString::fromStdString(e.confusion_table()).contains("actual \\ predicted"));
}

QTEST_APPLESS_MAIN(TestClassificationEvaluator)
#include "test_classification_evaluator.moc"
