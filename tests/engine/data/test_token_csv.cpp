// Token-id CSVs ("label, id, id, ..."): variable-length rows padded with their lengths first, and
// every refused id, label and row named by file, line and column.
#include "data_error.h"
#include "core/error.h"
#include "data/data_source.h"
#include "data/token_csv.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <string>
#include <vector>

using namespace thresher::data;
using test_support::data_error;

class TestTokenCsv : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void paddedRows();
    void maxStepsAndTruncation();
    void throughDataSource();
    void badInput_data();
    void badInput();
};

void TestTokenCsv::paddedRows() {
    const Dataset ds = parse_token_csv("label,tokens\n1,5,6,7\n0,8\n2, 9 ,10\n", "t.csv", {});
    QCOMPARE(ds.count, std::size_t{3});
    QCOMPARE(ds.steps, 3);
    QCOMPARE(ds.step_features, 1);
    QCOMPARE(ds.features, (std::vector<float>{3, 5, 6, 7, /**/ 1, 8, 0, 0, /**/ 2, 9, 10, 0}));
    QCOMPARE(ds.num_classes, 3);
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{1, 0, 2}));
    QCOMPARE(ds.targets, (std::vector<float>{0, 1, 0, 1, 0, 0, 0, 0, 1}));
}

void TestTokenCsv::maxStepsAndTruncation() {
    TokenCsvOptions o;
    o.max_steps = 2;
    QCOMPARE(data_error([&] { parse_token_csv("0,1\n1,1,2,3\n", "t.csv", o); }),
             QString("t.csv: line 2, column 4: the sequence has 3 ids, more than the 2 steps the model takes (max_steps); "
                     "shorten it, or ask for truncation"));
    o.truncate = true;
    const Dataset ds = parse_token_csv("0,1\n1,1,2,3\n", "t.csv", o);
    QCOMPARE(ds.features, (std::vector<float>{1, 1, 0, /**/ 2, 1, 2}));
}

void TestTokenCsv::throughDataSource() {
    QTemporaryDir dir;
    const std::string p = dir.filePath("reviews.csv").toStdString();
    std::ofstream(p) << "1,4,2\n0,3\n";
    DataOptions o;
    o.csv_as_tokens = true;
    const DataSplit split = load_data(p, o);
    QCOMPARE(split.train.steps, 2);
    QCOMPARE(split.train.features, (std::vector<float>{2, 4, 2, 1, 3, 0}));
    o.csv_as_tokens = false;  // the same file as a table: rows of one length only
    QVERIFY(data_error([&] { load_data(p, o); }).contains("line 2, column 3: missing cell"));
}

void TestTokenCsv::badInput_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("vocabulary");
    QTest::addColumn<QString>("message");
    QTest::newRow("empty file") << "" << 0 << "t.csv: line 1: empty file (no rows)";
    QTest::newRow("header only") << "label,ids\n" << 0 << "t.csv: line 1: no data rows after the header";
    QTest::newRow("empty sequence") << "1,2\n0\n" << 0
                                    << "t.csv: line 2, column 2: an empty sequence: a row is a label and at least one token id";
    QTest::newRow("negative id") << "1,2,-3\n" << 0 << "t.csv: line 1, column 3: negative token id \"-3\"";
    QTest::newRow("fractional id") << "1,2.5\n" << 0 << "t.csv: line 1, column 2: non-integer token id \"2.5\"";
    QTest::newRow("id past vocabulary") << "1,2\n0,9,10\n" << 10
                                        << "t.csv: line 2, column 3: token id \"10\" is out of range for the embedding's vocabulary of 10";
    QTest::newRow("id past 2^24") << "1,16777216\n" << 0
                                  << "t.csv: line 1, column 2: token id \"16777216\" is too large (at most 2^24 - 1)";
    QTest::newRow("non-numeric id") << "1,2\n1,x\n" << 0 << "t.csv: line 2, column 2: non-numeric cell \"x\"";
    QTest::newRow("negative label") << "-1,2\n" << 0 << "t.csv: line 1, column 1: negative class label -1";
    QTest::newRow("empty cell") << "1,2\n1,2,,3\n" << 0 << "t.csv: line 2, column 3: non-numeric cell \"\"";
}

void TestTokenCsv::badInput() {
    QFETCH(QString, text);
    QFETCH(int, vocabulary);
    QFETCH(QString, message);
    TokenCsvOptions o;
    o.vocabulary = vocabulary;
    const std::string t = text.toStdString();
    QCOMPARE(data_error([&] { parse_token_csv(t, "t.csv", o); }), message);
}

QTEST_APPLESS_MAIN(TestTokenCsv)
#include "test_token_csv.moc"
