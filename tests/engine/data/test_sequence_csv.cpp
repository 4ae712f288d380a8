// Sequence CSVs (DL4J's CSVSequenceRecordReader layout): padding and length floats per
// seq_spec.md, per-sequence and per-step labels, alignment, truncation, train/test folders, and
// one row per malformed-input case with the file and line in the message.
#include "data_error.h"
#include "core/error.h"
#include "data/data_source.h"
#include "data/sequence_csv.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace thresher::data;
using test_support::data_error;

namespace {

SequenceText seq(const char* fname, std::string_view f, const char* lname = "", std::string_view l = {}) {
    return SequenceText{fname, f, lname, l};
}

void write(const std::filesystem::path& p, const std::string& text) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

std::vector<float> row(const Dataset& ds, std::size_t i) {
    return {ds.sample(i), ds.sample(i) + ds.shape.size()};
}

}  // namespace

class TestSequenceCsv : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void paddedPerSequence();
    void perStepLabels();
    void alignment_data();
    void alignment();
    void labelColumn();
    void maxStepsAndTruncation();
    void regressionTargets();
    void folderOrderAndTrainTest();
    void dataSourceRecognisesFolder();
    void badInput_data();
    void badInput();
    void folderErrors();
    void memoryBudget();
};

void TestSequenceCsv::paddedPerSequence() {
    // Two features per step; lengths 3 and 2; a header row in the first file.
    const Dataset ds = parse_sequences({seq("f/0.csv", "a,b\n1,2\n3,4\n5,6\n", "l/0.csv", "1\n"),
                                        seq("f/1.csv", "7,8\r\n9,10\r\n", "l/1.csv", "0\n")},
                                       {});
    QCOMPARE(ds.count, std::size_t{2});
    QCOMPARE(ds.steps, 3);
    QCOMPARE(ds.step_features, 2);
    QCOMPARE(ds.shape.size(), std::size_t{7});  // length + 3 x 2
    QCOMPARE(row(ds, 0), (std::vector<float>{3, 1, 2, 3, 4, 5, 6}));
    QCOMPARE(row(ds, 1), (std::vector<float>{2, 7, 8, 9, 10, 0, 0}));  // padding at the end
    QCOMPARE(ds.target_steps, 0);
    QCOMPARE(ds.num_classes, 2);
    QCOMPARE(ds.targets, (std::vector<float>{0, 1, 1, 0}));
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{1, 0}));
}

void TestSequenceCsv::perStepLabels() {
    const Dataset ds = parse_sequences({seq("f/0.csv", "1\n2\n3\n", "l/0.csv", "0\n2\n1\n"),
                                        seq("f/1.csv", "4\n", "l/1.csv", "2\n")},
                                       {});
    QCOMPARE(ds.steps, 3);
    QCOMPARE(ds.target_steps, 3);
    QCOMPARE(ds.num_classes, 3);
    QCOMPARE(ds.target_size, std::size_t{9});
    QCOMPARE(ds.targets, (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 1, 0,    //
                                             0, 0, 1, 0, 0, 0, 0, 0, 0}));  // padded steps: zeros
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{0, 2, 1, 2, -1, -1}));
}

void TestSequenceCsv::alignment_data() {
    QTest::addColumn<int>("align");
    QTest::addColumn<QList<int>>("labels");
    // Two labels for four steps: at the start, or ending with the features (DL4J ALIGN_END).
    QTest::newRow("start") << int(SequenceAlign::start) << QList<int>{1, 0, -1, -1};
    QTest::newRow("end") << int(SequenceAlign::end) << QList<int>{-1, -1, 1, 0};
}

void TestSequenceCsv::alignment() {
    QFETCH(int, align);
    QFETCH(QList<int>, labels);
    SequenceCsvOptions o;
    o.align = static_cast<SequenceAlign>(align);
    const Dataset ds = parse_sequences({seq("f/0.csv", "1\n2\n3\n4\n", "l/0.csv", "1\n0\n")}, o);
    QCOMPARE(QList<int>(ds.labels.begin(), ds.labels.end()), labels);
    QCOMPARE(row(ds, 0), (std::vector<float>{4, 1, 2, 3, 4}));  // features start at step 0 either way
}

void TestSequenceCsv::labelColumn() {
    // No labels file: the last column, per step by default.
    Dataset ds = parse_sequences({seq("s/0.csv", "0.5,1\n0.25,0\n0.125,1\n")}, {});
    QCOMPARE(ds.step_features, 1);
    QCOMPARE(row(ds, 0), (std::vector<float>{3, 0.5f, 0.25f, 0.125f}));
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{1, 0, 1}));
    // Per sequence: the first step's label (start) or the last's (end).
    SequenceCsvOptions o;
    o.labels = SequenceLabels::per_sequence;
    o.label_column = 0;
    ds = parse_sequences({seq("s/0.csv", "2,7\n0,8\n1,9\n")}, o);
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{2}));
    QCOMPARE(row(ds, 0), (std::vector<float>{3, 7, 8, 9}));
    o.align = SequenceAlign::end;
    ds = parse_sequences({seq("s/0.csv", "2,7\n0,8\n1,9\n")}, o);
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{1}));
}

void TestSequenceCsv::maxStepsAndTruncation() {
    SequenceCsvOptions o;
    o.max_steps = 4;  // longer than every sequence: padded to it
    Dataset ds = parse_sequences({seq("f/0.csv", "1\n2\n", "l/0.csv", "0\n")}, o);
    QCOMPARE(row(ds, 0), (std::vector<float>{2, 1, 2, 0, 0}));
    o.max_steps = 2;
    const auto three = seq("f/0.csv", "1\n2\n3\n", "l/0.csv", "0\n1\n1\n");
    QCOMPARE(data_error([&] { parse_sequences({three}, o); }),
             QString("f/0.csv: line 3, column 1: the sequence has 3 steps, more than the 2 the model takes (max_steps); "
                     "shorten it, or ask for truncation"));
    o.truncate = true;
    ds = parse_sequences({three}, o);
    QCOMPARE(row(ds, 0), (std::vector<float>{2, 1, 2}));
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{0, 1}));
    o.align = SequenceAlign::end;  // keeps the last steps, labels with them
    ds = parse_sequences({three}, o);
    QCOMPARE(row(ds, 0), (std::vector<float>{2, 2, 3}));
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{1, 1}));
}

void TestSequenceCsv::regressionTargets() {
    SequenceCsvOptions o;
    o.classification = false;
    const Dataset ds = parse_sequences({seq("f/0.csv", "1\n2\n", "l/0.csv", "0.5,1.5\n2.5,3.5\n")}, o);
    QCOMPARE(ds.num_classes, 0);
    QVERIFY(ds.labels.empty());
    QCOMPARE(ds.target_size, std::size_t{4});  // 2 steps x 2 values
    QCOMPARE(ds.targets, (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f}));
    // Two target columns from a labels file, one from a label column: refused, not read past a row.
    QCOMPARE(data_error([&] {
                 parse_sequences({seq("f/0.csv", "1\n", "l/0.csv", "0.5,1.5\n"), seq("s/1.csv", "2,0.5\n")}, o);
             }),
             QString("s/1.csv: line 1, column 2: one target column, but the labels files before it have 2"));
}

void TestSequenceCsv::folderOrderAndTrainTest() {
    QTemporaryDir dir;
    const std::filesystem::path root = dir.path().toStdString();
    // 0..10 in numeric order (10 after 9), each sequence's single feature = its number.
    for (int i = 0; i <= 10; ++i) {
        write(root / "train/features" / (std::to_string(i) + ".csv"), std::to_string(i) + "\n" + std::to_string(i) + "\n");
        write(root / "train/labels" / (std::to_string(i) + ".csv"), std::to_string(i % 2) + "\n");
    }
    write(root / "test/features/0.csv", "5\n6\n7\n");  // longer than any train sequence
    write(root / "test/labels/0.csv", "4\n");           // a class train never has
    const DataSplit split = load_sequence_folder(root.string(), {});
    QCOMPARE(split.train.count, std::size_t{11});
    for (std::size_t i = 0; i <= 10; ++i) QCOMPARE(split.train.sample(i)[1], float(i));
    QVERIFY(split.has_test);
    QCOMPARE(split.train.steps, 3);  // one T over train and test
    QCOMPARE(split.test.steps, 3);
    QCOMPARE(split.train.num_classes, 5);
    QCOMPARE(split.test.num_classes, 5);
    QCOMPARE(split.test.labels, (std::vector<std::int32_t>{4}));
}

void TestSequenceCsv::dataSourceRecognisesFolder() {
    QTemporaryDir dir;
    const std::filesystem::path root = dir.path().toStdString();
    write(root / "features/a.csv", "1,2\n3,4\n");
    write(root / "labels/a.csv", "1\n");
    write(root / "features/b.csv", "5,6\n");
    write(root / "labels/b.csv", "0\n");
    QVERIFY(is_sequence_folder(root.string()));
    DataOptions o;
    const DataSplit split = load_data(root.string(), o);
    QCOMPARE(split.train.count, std::size_t{2});
    QCOMPARE(split.train.steps, 2);
    QCOMPARE(split.train.sample(1)[0], 1.0f);  // b.csv: length 1
    QVERIFY(!split.has_test);
}

void TestSequenceCsv::badInput_data() {
    QTest::addColumn<QString>("features");
    QTest::addColumn<QString>("labels");
    QTest::addColumn<int>("numClasses");
    QTest::addColumn<QString>("message");
    QTest::newRow("ragged short") << "1,2\n3\n" << "0\n" << 0
                                  << "f.csv: line 2, column 2: missing cell: expected 2 columns (as the first row), found 1";
    QTest::newRow("ragged long") << "1,2\n3,4,5\n" << "0\n" << 0
                                 << "f.csv: line 2, column 3: extra cell \"5\": expected 2 columns (as the first row), found 3";
    QTest::newRow("non-numeric") << "1\nx\n" << "0\n" << 0 << "f.csv: line 2, column 1: non-numeric cell \"x\"";
    QTest::newRow("empty features") << "" << "0\n" << 0 << "f.csv: line 1: empty file (no rows)";
    QTest::newRow("blank features") << "\n \n" << "0\n" << 0 << "f.csv: line 1: empty file (no rows)";
    QTest::newRow("header only") << "a,b\n" << "0\n" << 0 << "f.csv: line 1: no data rows after the header";
    QTest::newRow("empty labels") << "1\n" << "" << 0 << "l.csv: line 1: empty file (no rows)";
    QTest::newRow("negative label") << "1\n" << "-1\n" << 0 << "l.csv: line 1, column 1: negative class label -1";
    QTest::newRow("fractional label") << "1\n" << "0.5\n" << 0 << "l.csv: line 1, column 1: non-integer class label 0.5";
    QTest::newRow("label out of range") << "1\n2\n" << "0\n3\n" << 3
                                        << "l.csv: line 2, column 1: class label 3 is out of range for 3 classes";
    QTest::newRow("huge label") << "1\n" << "70000\n" << 0
                                << "l.csv: line 1, column 1: class label 70000 is too large (at most 65535)";
    QTest::newRow("two label columns") << "1\n" << "0,1\n" << 0
                                       << "l.csv: line 1, column 2: a class label file has one column; found 2";
    QTest::newRow("more labels than steps") << "1\n2\n" << "0\n1\n0\n" << 0
                                            << "l.csv: line 3, column 1: 3 label rows for a sequence of 2 steps (f.csv)";
}

void TestSequenceCsv::badInput() {
    QFETCH(QString, features);
    QFETCH(QString, labels);
    QFETCH(int, numClasses);
    QFETCH(QString, message);
    const std::string f = features.toStdString(), l = labels.toStdString();
    SequenceCsvOptions o;
    o.num_classes = numClasses;
    QCOMPARE(data_error([&] { parse_sequences({seq("f.csv", f, "l.csv", l)}, o); }), message);
}

void TestSequenceCsv::folderErrors() {
    // Feature counts that differ between files.
    QCOMPARE(data_error([] { parse_sequences({seq("a.csv", "1,2\n", "la.csv", "0\n"), seq("b.csv", "1\n", "lb.csv", "1\n")}, {}); }),
             QString("b.csv: line 1, column 1: 1 features per step, but the sequences before it have 2"));
    // A per-sequence model with a labels file of several rows.
    SequenceCsvOptions o;
    o.labels = SequenceLabels::per_sequence;
    QCOMPARE(data_error([&] { parse_sequences({seq("a.csv", "1\n2\n", "la.csv", "0\n1\n")}, o); }),
             QString("la.csv: line 2, column 1: a per-sequence label is one row; found 2 (per-step labels need a model "
                     "with a per-step output)"));
    QTemporaryDir dir;
    const std::filesystem::path root = dir.path().toStdString();
    write(root / "features/0.csv", "1\n");
    write(root / "labels/1.csv", "0\n");
    QCOMPARE(data_error([&] { load_sequence_folder(root.string(), {}); }),
             QString::fromStdString((root / "labels/1.csv").string() + ": a labels file without a features file " +
                                    (root / "features/1.csv").string()));
    write(root / "labels/0.csv", "0\n");
    write(root / "features/1.csv", "1\n");
    write(root / "features/2.csv", "1\n");
    QCOMPARE(data_error([&] { load_sequence_folder(root.string(), {}); }),
             QString::fromStdString((root / "features/2.csv").string() + ": no labels file " + (root / "labels/2.csv").string()));
    QTemporaryDir empty;
    std::filesystem::create_directories(std::filesystem::path(empty.path().toStdString()) / "features");
    QVERIFY(data_error([&] { load_sequence_folder(empty.path().toStdString(), {}); }).contains("no sequence files in the folder"));
}

void TestSequenceCsv::memoryBudget() {
    // A model asking for 100 million steps of a 3-byte file: refused before anything is allocated.
    SequenceCsvOptions o;
    o.max_steps = 100'000'000;
    const QString e = data_error([&] { parse_sequences({seq("f.csv", "1,2,3,4,5,6,7,8\n", "l.csv", "0\n")}, o); });
    QVERIFY2(e.startsWith("f.csv: 1 sequences padded to 100000000 steps x 8 features") && e.contains("would take"), qPrintable(e));
}

QTEST_APPLESS_MAIN(TestSequenceCsv)
#include "test_sequence_csv.moc"
