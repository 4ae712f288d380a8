// Events as CSV: leading columns event, t, node; the union of every other field sorted; empty
// cells for missing fields; RFC 4180 quoting for commas, quotes and newlines; the confusion
// matrix as JSON in one cell.
#include <QtTest>

#include <QJsonArray>

#include "events_csv.h"

class TestEventsCsv : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void columns_and_quoting();
};

void TestEventsCsv::columns_and_quoting() {
    const QList<QJsonObject> events{
        {{"event", "iteration"}, {"t", 1.5}, {"node", 0}, {"loss", 0.25}, {"worker", 1}},
        {{"event", "warning"}, {"t", 2}, {"node", 1}, {"message", "say \"hi\", twice\nplease"}},
        {{"event", "epoch_end"}, {"t", 3}, {"node", 0}, {"confusion", QJsonArray{QJsonArray{1, 2}, QJsonArray{3, 4}}},
         {"ok", true}},
    };
    const QByteArray csv = thresher::ui::events_to_csv(events);
    const QList<QByteArray> lines = csv.split('\n');
    QCOMPARE(lines[0], QByteArray("event,t,node,confusion,loss,message,ok,worker\r"));
    QCOMPARE(lines[1], QByteArray("iteration,1.5,0,,0.25,,,1\r"));
    QCOMPARE(lines[2], QByteArray("warning,2,1,,,\"say \"\"hi\"\", twice"));
    QCOMPARE(lines[3], QByteArray("please\",,\r"));
    QCOMPARE(lines[4], QByteArray("epoch_end,3,0,\"[[1,2],[3,4]]\",,,true,\r"));
    QVERIFY(csv.endsWith("\r\n"));
}

QTEST_MAIN(TestEventsCsv)
#include "test_events_csv.moc"
