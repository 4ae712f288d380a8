// EventFile: a recorded two-node run through the launcher's parser, on real files: every event
// in order with its own node, a broken line as a warning naming its line, an over-long line
// bounded and reported, and files that cannot be replayed (missing, a folder, nothing but
// noise) refused with the file named.
#include <QtTest>

#include <QJsonObject>
#include <QTemporaryDir>

#include "event_file.h"
#include "event_stream.h"
#include "file_test_support.h"

using thresher::ui::EventFile;

using file_test_support::error_of;
using file_test_support::write;

class TestEventFile : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void recorded_run_in_order_with_its_nodes();
    void over_long_line_is_bounded();
    void unreadable_files_are_refused();
};

void TestEventFile::recorded_run_in_order_with_its_nodes() {
    QTemporaryDir dir;
    QByteArray recording = R"({"event":"run_started","t":0.01,"node":0,"run":"mlp","nodes":2,"workers":2})" "\n";
    recording += "garbage in the middle\n";
    for (int i = 1; i <= 20; ++i)
        for (int node = 0; node < 2; ++node)
            recording += QString(R"({"event":"iteration","t":%1,"node":%2,"worker":%2,"iter":%3,"loss":%4})" "\n")
                             .arg(0.1 * i).arg(node).arg(i).arg(2.0 / i).toUtf8();
    recording += R"({"event":"run_finished","t":3.0,"node":1,"status":"ok"})";  // no final newline
    const QString path = dir.filePath("run.jsonl");
    QVERIFY(write(path, recording));
    QList<QJsonObject> seen;
    const long events = EventFile(path).read([&](const QJsonObject& e) { seen.append(e); });
    QCOMPARE(events, 42L);
    QCOMPARE(seen.size(), 43);  // and the warning
    QCOMPARE(seen[0].value("event").toString(), QString("run_started"));
    QCOMPARE(seen[1].value("event").toString(), QString("warning"));
    QCOMPARE(seen[1].value("source").toString(), QString("launcher"));
    QVERIFY2(seen[1].value("message").toString().contains("line 2: the line is not a JSON event: garbage in the middle"),
             qPrintable(seen[1].value("message").toString()));
    QCOMPARE(seen[2].value("node").toInt(), 0);
    QCOMPARE(seen[3].value("node").toInt(), 1);
    QCOMPARE(seen[41].value("iter").toInt(), 20);
    QCOMPARE(seen.last().value("event").toString(), QString("run_finished"));
    QCOMPARE(seen.last().value("node").toInt(), 1);
}

void TestEventFile::over_long_line_is_bounded() {
    QTemporaryDir dir;
    const QString path = dir.filePath("long.jsonl");
    QByteArray bytes(thresher::launcher::EventStream::kMaxLineBytes + 1000, 'x');
    bytes += "\n";
    bytes += R"({"event":"iteration","t":0.5,"node":0,"worker":0,"iter":1,"loss":1.0})" "\n";
    QVERIFY(write(path, bytes));
    QList<QJsonObject> seen;
    QCOMPARE(EventFile(path).read([&](const QJsonObject& e) { seen.append(e); }), 1L);
    QCOMPARE(seen.size(), 2);
    QCOMPARE(seen[0].value("event").toString(), QString("warning"));
    QCOMPARE(seen[1].value("iter").toInt(), 1);
}

void TestEventFile::unreadable_files_are_refused() {
    QTemporaryDir dir;
    const QString missing = dir.filePath("missing.jsonl");
    QString error = error_of([&] { EventFile f(missing); });
    QVERIFY2(error.startsWith(missing + ": cannot open"), qPrintable(error));

    error = error_of([&] { EventFile f(dir.path()); });
    QVERIFY2(error.startsWith(dir.path() + ": cannot open"), qPrintable(error));

    const QString noise = dir.filePath("noise.jsonl");
    QVERIFY(write(noise, "hello\nworld\n"));
    int warnings = 0;
    error = error_of([&] { EventFile(noise).read([&](const QJsonObject& e) { warnings += e.value("event") == "warning"; }); });
    QVERIFY2(error.startsWith(noise + ": no events"), qPrintable(error));
    QCOMPARE(warnings, 2);  // what was wrong, line by line, went out first
}

QTEST_GUILESS_MAIN(TestEventFile)
#include "test_event_file.moc"
