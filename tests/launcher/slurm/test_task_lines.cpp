// TaskLines: srun --label output split into (task, line) however the bytes arrive — whole lines,
// one byte at a time, padded labels (" 3: " among ten or more tasks), lines without a label, a
// last line without '\n', and an over-long line handed on rather than held.
#include <QtTest>

#include "task_lines.h"

using thresher::launcher::slurm::TaskLine;
using thresher::launcher::slurm::TaskLines;

class TestTaskLines : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void labels_data();
    void labels();
    void bytes_one_at_a_time();
    void last_line_without_newline();
    void overlong_line();
};

void TestTaskLines::labels_data() {
    QTest::addColumn<QByteArray>("line");
    QTest::addColumn<int>("task");
    QTest::addColumn<QByteArray>("text");
    QTest::newRow("task 0") << QByteArray("0: {\"event\":\"x\"}") << 0 << QByteArray("{\"event\":\"x\"}");
    QTest::newRow("padded") << QByteArray(" 3: hello") << 3 << QByteArray("hello");
    QTest::newRow("two digits") << QByteArray("12: a: b") << 12 << QByteArray("a: b");
    QTest::newRow("empty text") << QByteArray("1: ") << 1 << QByteArray();
    QTest::newRow("CRLF") << QByteArray("2: x\r") << 2 << QByteArray("x");
    QTest::newRow("no label") << QByteArray("thresher: job 4: hosts n1") << -1 << QByteArray("thresher: job 4: hosts n1");
    QTest::newRow("srun note") << QByteArray("srun: error: n1: task 1: Exited") << -1 << QByteArray("srun: error: n1: task 1: Exited");
    QTest::newRow("digits without colon") << QByteArray("123 abc") << -1 << QByteArray("123 abc");
    QTest::newRow("too many digits") << QByteArray("123456789: x") << -1 << QByteArray("123456789: x");
}

void TestTaskLines::labels() {
    QFETCH(QByteArray, line);
    QFETCH(int, task);
    QFETCH(QByteArray, text);
    TaskLines t;
    const auto out = t.feed(line + '\n');
    QCOMPARE(out.size(), 1);
    QCOMPARE(out[0].task, task);
    QCOMPARE(out[0].text, text);
}

void TestTaskLines::bytes_one_at_a_time() {
    const QByteArray all = "0: a\n1: b\nplain\n 1: c\n";
    TaskLines t;
    QList<TaskLine> out;
    for (char c : all) out += t.feed(QByteArray(1, c));
    out += t.finish();
    QCOMPARE(out.size(), 4);
    QCOMPARE(out[0].task, 0);
    QCOMPARE(out[1].text, QByteArray("b"));
    QCOMPARE(out[2].task, -1);
    QCOMPARE(out[3].task, 1);
    QCOMPARE(out[3].text, QByteArray("c"));
}

void TestTaskLines::last_line_without_newline() {
    TaskLines t;
    QVERIFY(t.feed("1: partial").isEmpty());
    const auto out = t.finish();
    QCOMPARE(out.size(), 1);
    QCOMPARE(out[0].task, 1);
    QCOMPARE(out[0].text, QByteArray("partial"));
    QVERIFY(t.finish().isEmpty());
}

void TestTaskLines::overlong_line() {
    TaskLines t;
    const auto out = t.feed("0: " + QByteArray(TaskLines::kMaxLineBytes + 10, 'x'));
    QCOMPARE(out.size(), 1);  // handed on, not held without bound
    QCOMPARE(out[0].task, 0);
    QVERIFY(t.finish().isEmpty());
}

QTEST_GUILESS_MAIN(TestTaskLines)
#include "test_task_lines.moc"
