// EventStream: engine stdout arrives in arbitrary pieces; lines are reassembled whatever the
// split, each event is tagged with its node, and anything that is not a JSON event becomes a
// warning that quotes it.
#include <QtTest>

#include "event_stream.h"

using thresher::launcher::EventStream;

namespace {

const QByteArray kTwoEvents =
    R"({"event":"run_started","t":0.01,"node":0,"run":"mn","nodes":2,"workers":2,"params":243,"strategy":"gradient-sharing","backend":"cpu"})"
    "\n"
    R"({"event":"iteration","t":0.5,"node":0,"worker":0,"epoch":0,"iter":1,"loss":1.25})"
    "\n";

// Feeds `chunks` in order, then finish(); returns every event.
QList<QJsonObject> feed_all(EventStream& s, const QList<QByteArray>& chunks) {
    QList<QJsonObject> out;
    for (const auto& c : chunks) out += s.feed(c);
    out += s.finish();
    return out;
}

QStringList names(const QList<QJsonObject>& events) {
    QStringList out;
    for (const auto& e : events) out << e.value("event").toString();
    return out;
}

}  // namespace

class TestEventStream : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void splits_data();
    void splits();
    void line_completes_only_at_newline();
    void tags_node();
    void garbage_becomes_warning_data();
    void garbage_becomes_warning();
    void overlong_line();
    void recorded_file_keeps_nodes_and_names_lines();
    void junk_flood_is_counted_not_quoted();
};

void TestEventStream::splits_data() {
    QTest::addColumn<QList<QByteArray>>("chunks");
    QTest::addColumn<QStringList>("expected");
    const QStringList both{"run_started", "iteration"};
    QTest::newRow("one read, two lines") << QList<QByteArray>{kTwoEvents} << both;
    QTest::newRow("split inside the first line") << QList<QByteArray>{kTwoEvents.left(40), kTwoEvents.mid(40)} << both;
    QTest::newRow("split right after a newline")
        << QList<QByteArray>{kTwoEvents.left(kTwoEvents.indexOf('\n') + 1), kTwoEvents.mid(kTwoEvents.indexOf('\n') + 1)} << both;
    QTest::newRow("split right before a newline")
        << QList<QByteArray>{kTwoEvents.left(kTwoEvents.indexOf('\n')), kTwoEvents.mid(kTwoEvents.indexOf('\n'))} << both;
    QList<QByteArray> bytes;
    for (char c : kTwoEvents) bytes << QByteArray(1, c);
    QTest::newRow("byte by byte") << bytes << both;
    QTest::newRow("CRLF line ends") << QList<QByteArray>{QByteArray(kTwoEvents).replace("\n", "\r\n")} << both;
    QTest::newRow("blank lines ignored") << QList<QByteArray>{"\n\n" + kTwoEvents + "\n  \n"} << both;
    QTest::newRow("last line without newline") << QList<QByteArray>{kTwoEvents.chopped(1)} << both;
    QTest::newRow("nothing") << QList<QByteArray>{""} << QStringList{};
}

void TestEventStream::splits() {
    QFETCH(QList<QByteArray>, chunks);
    QFETCH(QStringList, expected);
    EventStream s(0);
    const auto events = feed_all(s, chunks);
    QCOMPARE(names(events), expected);
    if (!events.isEmpty()) QCOMPARE(events.last().value("loss").toDouble(), 1.25);
}

void TestEventStream::line_completes_only_at_newline() {
    EventStream s(1);
    QVERIFY(s.feed(kTwoEvents.left(30)).isEmpty());
    QVERIFY(s.feed(kTwoEvents.mid(30, 20)).isEmpty());
    const auto first = s.feed(kTwoEvents.mid(50, kTwoEvents.indexOf('\n') - 50 + 5));  // ends 4 bytes into line 2
    QCOMPARE(names(first), QStringList{"run_started"});
    QCOMPARE(names(s.feed(kTwoEvents.mid(kTwoEvents.indexOf('\n') + 5))), QStringList{"iteration"});
    QVERIFY(s.finish().isEmpty());
}

void TestEventStream::tags_node() {
    EventStream s(3);
    const auto events = s.feed(kTwoEvents + R"({"event":"epoch_end","t":1,"epoch":0,"loss":0.5})" "\n");
    QCOMPARE(events.size(), 3);
    for (const auto& e : events) QCOMPARE(e.value("node").toInt(), 3);  // the pipe it came from decides
    QCOMPARE(events[0].value("run").toString(), QString("mn"));  // other fields kept
}

void TestEventStream::garbage_becomes_warning_data() {
    QTest::addColumn<QByteArray>("line");
    QTest::addColumn<QString>("quoted");
    QTest::newRow("plain text") << QByteArray("Segmentation fault? no, just a printf") << "just a printf";
    QTest::newRow("truncated JSON") << QByteArray(R"({"event":"iteration","t":)") << R"({"event":"iteration","t":)";
    QTest::newRow("JSON array") << QByteArray("[1,2,3]") << "[1,2,3]";
    QTest::newRow("object without event") << QByteArray(R"({"t":1,"loss":2})") << R"({"t":1,"loss":2})";
    QTest::newRow("event not a string") << QByteArray(R"({"event":5})") << R"({"event":5})";
}

void TestEventStream::garbage_becomes_warning() {
    QFETCH(QByteArray, line);
    QFETCH(QString, quoted);
    EventStream s(1);
    const auto events = feed_all(s, {kTwoEvents, line + "\n", R"({"event":"run_finished","t":2,"status":"ok","iters":1,"wall_s":2})" "\n"});
    QCOMPARE(names(events), (QStringList{"run_started", "iteration", "warning", "run_finished"}));
    const QJsonObject w = events[2];
    QCOMPARE(w.value("node").toInt(), 1);
    QCOMPARE(w.value("t").toDouble(), 0.5);  // the last time the node reported
    QVERIFY2(w.value("message").toString().contains("node 1: stdout line is not a JSON event"), qPrintable(w.value("message").toString()));
    QVERIFY2(w.value("message").toString().contains(quoted), qPrintable(w.value("message").toString()));
}

void TestEventStream::overlong_line() {
    EventStream s(0);
    QList<QJsonObject> events;
    const QByteArray block(1024 * 1024, 'x');
    for (int i = 0; i < 6; ++i) events += s.feed(block);  // 6 MiB without a newline
    events += s.feed("still the same line\n" + kTwoEvents);
    events += s.finish();
    QCOMPARE(names(events), (QStringList{"warning", "run_started", "iteration"}));
    QVERIFY(events[0].value("message").toString().contains("longer than"));
}

// A recording of a whole run (--replay): events keep the node they came from; a bad line is a
// warning naming its line in the file; a last line without '\n' still counts.
void TestEventStream::recorded_file_keeps_nodes_and_names_lines() {
    EventStream s(EventStream::kRecorded);
    const auto events = feed_all(s, {kTwoEvents,
                                     R"({"event":"iteration","t":0.6,"node":1,"worker":1,"epoch":0,"iter":1,"loss":1.5})" "\n",
                                     "not an event\n", R"({"event":"iteration","t":0.7,"worker":0,"iter":2,"loss":1.0})"});
    QCOMPARE(names(events), (QStringList{"run_started", "iteration", "iteration", "warning", "iteration"}));
    QCOMPARE(events[1].value("node").toInt(), 0);
    QCOMPARE(events[2].value("node").toInt(), 1);
    QVERIFY2(events[3].value("message").toString().startsWith("line 4: the line is not a JSON event: not an event"),
             qPrintable(events[3].value("message").toString()));
    QCOMPARE(events[4].value("node").toInt(), 0);  // no node in the line: a one-node recording
}

void TestEventStream::junk_flood_is_counted_not_quoted() {
    // 100,000 short lines of junk in one read (an engine printing to stdout in a loop), with the
    // real events around them: kMaxQuotedLines warnings quote lines, the events all pass, and
    // the end of the stream says how many lines there were in all.
    EventStream s(2);
    QByteArray junk;
    for (int i = 0; i < 100000; ++i) junk += "debug " + QByteArray::number(i) + "\n";
    QList<QJsonObject> events = s.feed(kTwoEvents + junk + kTwoEvents);
    events += s.finish();
    QStringList warnings;
    for (const auto& e : events)
        if (e.value("event").toString() == "warning") warnings << e.value("message").toString();
    QCOMPARE(warnings.size(), EventStream::kMaxQuotedLines + 1);
    QVERIFY2(warnings[0].contains("not a JSON event: debug 0"), qPrintable(warnings[0]));
    QVERIFY2(warnings[EventStream::kMaxQuotedLines - 1].contains("debug 19 (the last line quoted"),
             qPrintable(warnings[EventStream::kMaxQuotedLines - 1]));
    QVERIFY2(warnings.last().contains("node 2: 100000 stdout lines in all were not JSON events; the first 20 were quoted"),
             qPrintable(warnings.last()));
    QCOMPARE(events.size() - warnings.size(), 4);  // both pairs of events
    QCOMPARE(s.warnings_made(), EventStream::kMaxQuotedLines + 1);
    // The engine's own warning events pass, however many, and are not the stream's.
    EventStream real(1);
    QByteArray many;
    for (int i = 0; i < 50; ++i) many += R"({"event":"warning","t":1,"message":"m"})" "\n";
    QCOMPARE(real.feed(many).size(), 50);
    QCOMPARE(real.warnings_made(), 0);
    // A stream with a few bad lines gets no summary.
    EventStream few(0);
    QList<QJsonObject> some = few.feed("a\nb\n" + kTwoEvents);
    some += few.finish();
    QCOMPARE(names(some), (QStringList{"warning", "warning", "run_started", "iteration"}));
}

QTEST_GUILESS_MAIN(TestEventStream)
#include "test_event_stream.moc"
