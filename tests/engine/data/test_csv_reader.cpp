// CSV reader: header detection, label column choice, regression, CRLF and blank lines, and one
// row per malformed-input case with the file, line, column and offending cell in the message.
#include "data_error.h"
#include "core/error.h"
#include "data/csv_reader.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <string>

using namespace thresher::data;

namespace {

using test_support::data_error;

CsvOptions with_header(int header) {
    CsvOptions o;
    o.header = header;
    return o;
}

}  // namespace

class TestCsvReader : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void basicClassification();
    void headerDetection_data();
    void headerDetection();
    void labelColumn_data();
    void labelColumn();
    void regression();
    void imageTargetColumns();
    void crlfAndBlankLines();
    void spacesQuotesAndDelimiter();
    void givenClassCount();
    void strayLargeLabelInALongTable();
    void badInput_data();
    void badInput();
    void fileMatchesText();
    void missingFile();

private:
    QTemporaryDir dir_;
    std::string write(const char* name, const std::string& text) {
        const std::string p = dir_.filePath(name).toStdString();
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }
};

void TestCsvReader::basicClassification() {
    const Dataset ds = parse_csv("1,2,0\n3.5,-4e2,2\n", "t.csv");
    QCOMPARE(ds.name, std::string("t.csv"));
    QCOMPARE(ds.count, std::size_t{2});
    QCOMPARE(ds.shape.size(), std::size_t{2});
    QCOMPARE(ds.shape.width, 2);
    QCOMPARE(ds.num_classes, 3);
    QCOMPARE(ds.target_size, std::size_t{3});
    QCOMPARE(ds.features, (std::vector<float>{1, 2, 3.5f, -400}));
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{0, 2}));
    QCOMPARE(ds.targets, (std::vector<float>{1, 0, 0, 0, 0, 1}));

    // A single class still gets two outputs.
    QCOMPARE(parse_csv("1,0\n2,0\n", "t").num_classes, 2);
}

void TestCsvReader::headerDetection_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("header");
    QTest::addColumn<int>("rows");

    QTest::newRow("auto: names") << "x,y,label\n1,2,0\n3,4,1\n" << -1 << 2;
    QTest::newRow("auto: one name") << "1,y,0\n1,2,0\n3,4,1\n" << -1 << 2;
    QTest::newRow("auto: numeric first row") << "5,6,1\n1,2,0\n3,4,1\n" << -1 << 3;
    QTest::newRow("auto: after blank lines") << "\n\nx,y,label\n1,2,0\n" << -1 << 1;
    QTest::newRow("forced: numeric header") << "5,6,1\n1,2,0\n3,4,1\n" << 1 << 2;
    QTest::newRow("none: numeric") << "5,6,1\n1,2,0\n" << 0 << 2;
}

void TestCsvReader::headerDetection() {
    QFETCH(QString, text);
    QFETCH(int, header);
    QFETCH(int, rows);
    const Dataset ds = parse_csv(text.toStdString(), "h.csv", with_header(header));
    QCOMPARE(ds.count, std::size_t(rows));
}

void TestCsvReader::labelColumn_data() {
    QTest::addColumn<int>("column");
    QTest::addColumn<QList<float>>("features");
    QTest::addColumn<QList<int>>("labels");

    // Table: a,b,c = (0,1,2) and (2,0,1).
    QTest::newRow("first") << 0 << QList<float>{1, 2, 0, 1} << QList<int>{0, 2};
    QTest::newRow("middle") << 1 << QList<float>{0, 2, 2, 1} << QList<int>{1, 0};
    QTest::newRow("last (-1)") << -1 << QList<float>{0, 1, 2, 0} << QList<int>{2, 1};
    QTest::newRow("first (-3)") << -3 << QList<float>{1, 2, 0, 1} << QList<int>{0, 2};
}

void TestCsvReader::labelColumn() {
    QFETCH(int, column);
    QFETCH(QList<float>, features);
    QFETCH(QList<int>, labels);
    CsvOptions o;
    o.label_column = column;
    const Dataset ds = parse_csv("a,b,c\n0,1,2\n2,0,1\n", "l.csv", o);
    QCOMPARE(ds.features, std::vector<float>(features.begin(), features.end()));
    QCOMPARE(ds.labels, std::vector<std::int32_t>(labels.begin(), labels.end()));
}

void TestCsvReader::regression() {
    CsvOptions o;
    o.classification = false;
    o.label_column = 0;
    o.num_classes = 5;  // ignored for regression
    const Dataset ds = parse_csv("price,area,rooms\n1.5,80,3\n-2.25,120,4\n", "r.csv", o);
    QVERIFY(!ds.is_classification());
    QCOMPARE(ds.num_classes, 0);
    QCOMPARE(ds.target_size, std::size_t{1});
    QVERIFY(ds.labels.empty());
    QCOMPARE(ds.targets, (std::vector<float>{1.5f, -2.25f}));
    QCOMPARE(ds.features, (std::vector<float>{80, 3, 120, 4}));
}

// An image output's targets (CsvOptions::target_columns): the last columns of a row. Values as
// they are for regression; for classes, one class index per pixel, one-hot into classes x pixels
// in NCHW order (target[c * pixels + p]).
void TestCsvReader::imageTargetColumns() {
    CsvOptions values;
    values.classification = false;
    values.target_columns = 3;
    const Dataset r = parse_csv("f1,f2,t1,t2,t3\n1,2,0.5,0.25,1\n3,4,0,1,0.75\n", "v.csv", values);
    QCOMPARE(r.shape.size(), std::size_t{2});
    QCOMPARE(r.features, (std::vector<float>{1, 2, 3, 4}));
    QCOMPARE(r.target_size, std::size_t{3});
    QCOMPARE(r.targets, (std::vector<float>{0.5f, 0.25f, 1, 0, 1, 0.75f}));
    QVERIFY(!r.is_classification());

    CsvOptions classes;
    classes.num_classes = 3;
    classes.target_columns = 2;  // two pixels
    const Dataset c = parse_csv("7,2,0\n8,1,1\n", "c.csv", classes);
    QCOMPARE(c.features, (std::vector<float>{7, 8}));
    QCOMPARE(c.target_size, std::size_t{6});
    // Sample 0: pixel 0 is class 2, pixel 1 class 0; sample 1: classes 1 and 1.
    QCOMPARE(c.targets, (std::vector<float>{0, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0}));
    QVERIFY(c.labels.empty());
    QCOMPARE(c.num_classes, 3);
    // A pixel's class beyond the count is refused where it is; so is a class count left out.
    QVERIFY(data_error([&] { parse_csv("7,2,3\n", "big.csv", classes); }).contains("big.csv: line 1, column 3"));
    classes.num_classes = 0;
    QVERIFY(data_error([&] { parse_csv("7,2,0\n", "n.csv", classes); }).contains("the class count"));
    QVERIFY(data_error([&] { parse_csv("1,2\n", "few.csv", values); }).contains("need at least 4 (features and 3 target columns)"));
}

void TestCsvReader::crlfAndBlankLines() {
    const Dataset lf = parse_csv("x,y,c\n1,2,0\n\n3,4,1\n", "a");
    const Dataset crlf = parse_csv("x,y,c\r\n1,2,0\r\n\r\n  \r\n3,4,1\r\n", "b");
    const Dataset no_final_newline = parse_csv("x,y,c\r\n1,2,0\r\n3,4,1", "c");
    QCOMPARE(crlf.count, std::size_t{2});
    QCOMPARE(crlf.features, lf.features);
    QCOMPARE(crlf.labels, lf.labels);
    QCOMPARE(no_final_newline.features, lf.features);

    // Skipped blank lines still count: the error is on line 4 of the file.
    const QString msg = data_error([] { parse_csv("1,2,0\r\n\r\n\r\n1,x,0\r\n", "crlf.csv"); });
    QVERIFY2(msg.startsWith("crlf.csv: line 4, column 2: non-numeric cell \"x\""), qPrintable(msg));
}

void TestCsvReader::spacesQuotesAndDelimiter() {
    const Dataset ds = parse_csv("\xEF\xBB\xBF\"a\", \"b\" ,c\n 1 ,\t+2 , 0 \n\"3\",4,1\n", "s");
    QCOMPARE(ds.count, std::size_t{2});
    QCOMPARE(ds.features, (std::vector<float>{1, 2, 3, 4}));
    CsvOptions o;
    o.delimiter = ';';
    const Dataset semi = parse_csv("1.5;2;0\n3;4;1\n", "semi", o);
    QCOMPARE(semi.features, (std::vector<float>{1.5f, 2, 3, 4}));
    // A decimal comma is not a number: the reader is locale-free on purpose.
    o.header = 0;
    const QString msg = data_error([&] { parse_csv("1,5;2;0\n", "semi.csv", o); });
    QVERIFY2(msg.startsWith("semi.csv: line 1, column 1: non-numeric cell \"1,5\""),
             qPrintable(msg));
}

void TestCsvReader::givenClassCount() {
    CsvOptions o;
    o.num_classes = 4;
    const Dataset ds = parse_csv("1,0\n2,1\n", "g", o);
    QCOMPARE(ds.num_classes, 4);
    QCOMPARE(ds.targets.size(), std::size_t{8});
    const QString msg = data_error([&] { parse_csv("1,0\n2,4\n", "g.csv", o); });
    QVERIFY2(
        msg.startsWith("g.csv: line 2, column 2: class label \"4\" is out of range for 4 classes"),
        qPrintable(msg));
}

void TestCsvReader::strayLargeLabelInALongTable() {
    // 2 MB of text: 500,000 rows labelled 0 and one labelled 65535 would need 500,001 x 65,536
    // one-hot floats (122 GiB). Refused, naming the label's place; the same label in a short
    // table is fine (3 x 65,536 floats).
    std::string text;
    for (int i = 0; i < 500000; ++i) text += "1,0\n";
    text += "1,65535\n";
    const std::string file = write("stray.csv", text);
    const QString msg = data_error([&] { read_csv(file); });
    QVERIFY2(msg.startsWith(QString::fromStdString(file) + ": line 500001, column 2: class label 65535 sets 65536 classes"),
             qPrintable(msg));
    QVERIFY2(msg.contains("500001 rows would take 122.1 GiB"), qPrintable(msg));
    const Dataset small = parse_csv("1,0\n2,65535\n3,1\n", "small");
    QCOMPARE(small.num_classes, 65536);
    QCOMPARE(small.targets.size(), std::size_t{3} * 65536);
}

void TestCsvReader::badInput_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("label_column");
    QTest::addColumn<QString>("place");
    QTest::addColumn<QString>("detail");

    QTest::newRow("non-numeric cell") << "1,2,0\n3,abc,1\n"
                                      << -1 << "line 2, column 2"
                                      << "non-numeric cell \"abc\"";
    QTest::newRow("empty cell") << "1,2,0\n3,,1\n"
                                << -1 << "line 2, column 2"
                                << "non-numeric cell \"\"";
    QTest::newRow("number with junk") << "1,2,0\n3,4x,1\n"
                                      << -1 << "line 2, column 2"
                                      << "\"4x\"";
    QTest::newRow("nan") << "1,2,0\n3,nan,1\n"
                         << -1 << "line 2, column 2"
                         << "not a finite float) \"nan\"";
    QTest::newRow("too large for float") << "1,2,0\n3,1e39,1\n"
                                         << -1 << "line 2, column 2"
                                         << "\"1e39\"";
    QTest::newRow("ragged: short row") << "1,2,0\n3,4\n"
                                       << -1 << "line 2, column 3"
                                       << "missing cell: expected 3 columns, found 2";
    QTest::newRow("ragged: long row") << "1,2,0\n3,4,1,9\n"
                                      << -1 << "line 2, column 4"
                                      << "extra cell \"9\"";
    QTest::newRow("ragged: after header") << "a,b,c\n1,2\n"
                                          << -1 << "line 2, column 3"
                                          << "missing cell";
    QTest::newRow("non-integer label") << "1,2,0\n3,4,1.5\n"
                                       << -1 << "line 2, column 3"
                                       << "non-integer class label \"1.5\"";
    QTest::newRow("negative label") << "1,2,-1\n"
                                    << -1 << "line 1, column 3"
                                    << "negative class label \"-1\"";
    QTest::newRow("huge label") << "1,2,1e9\n"
                                << -1 << "line 1, column 3"
                                << "too large";
    QTest::newRow("label in first column") << "0.5,2,1\n"
                                           << 0 << "line 1, column 1"
                                           << "non-integer class label \"0.5\"";
    QTest::newRow("empty file") << "" << -1 << "line 1"
                                << "empty file";
    QTest::newRow("only blank lines") << "\n  \r\n\n"
                                      << -1 << "line 1"
                                      << "empty file";
    QTest::newRow("header only") << "a,b,c\n\n"
                                 << -1 << "line 2"
                                 << "no data rows";
    QTest::newRow("one column") << "1\n2\n"
                                << -1 << "line 1"
                                << "need at least 2";
    QTest::newRow("label column out of range") << "1,2,0\n"
                                               << 3 << "line 1"
                                               << "label column 3 is out of range";
    QTest::newRow("negative label column out of range") << "1,2,0\n"
                                                        << -4 << "line 1"
                                                        << "label column -4";
}

void TestCsvReader::badInput() {
    QFETCH(QString, text);
    QFETCH(int, label_column);
    QFETCH(QString, place);
    QFETCH(QString, detail);
    CsvOptions o;
    o.label_column = label_column;
    const std::string file = write("bad.csv", text.toStdString());
    const QString msg = data_error([&] { read_csv(file, o); });
    QVERIFY2(msg.startsWith(QString::fromStdString(file) + ": " + place + ": "), qPrintable(msg));
    QVERIFY2(msg.contains(detail), qPrintable(msg));
}

void TestCsvReader::fileMatchesText() {
    const std::string text = "a,b,y\n0.25,1,1\n0.5,2,0\n";
    const Dataset from_file = read_csv(write("ok.csv", text));
    const Dataset from_text = parse_csv(text, "x");
    QCOMPARE(from_file.features, from_text.features);
    QCOMPARE(from_file.targets, from_text.targets);
}

void TestCsvReader::missingFile() {
    const std::string file = dir_.filePath("absent.csv").toStdString();
    const QString msg = data_error([&] { read_csv(file); });
    QVERIFY2(msg.startsWith(QString::fromStdString(file) + ": cannot open: "), qPrintable(msg));
}

QTEST_APPLESS_MAIN(TestCsvReader)
#include "test_csv_reader.moc"
