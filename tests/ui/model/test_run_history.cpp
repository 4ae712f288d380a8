// RunHistory on real SQLite files: a run's spec, events (in order, the buffered ones too) and
// result survive closing and reopening; deleting a run deletes its events; a file that is not a
// database, or one written by a newer schema, is refused with the file's name.
#include <QtTest>

#include <QFile>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>

#include "run_history.h"

using thresher::ui::HistoryError;
using thresher::ui::RunHistory;
using thresher::ui::RunResult;

class TestRunHistory : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void run_survives_reopen();
    void buffered_events_are_visible_and_flushed();
    void remove_cascades();
    void not_a_database();
    void newer_schema_refused();
};

void TestRunHistory::run_survives_reopen() {
    QTemporaryDir dir;
    const QString path = dir.filePath("sub/history.sqlite");  // the folder is created too
    qint64 id = 0;
    {
        RunHistory h(path);
        id = h.begin_run("lenet-local", QJsonObject{{"name", "lenet-local"}, {"udp_port", 40123}});
        for (int i = 0; i < 2500; ++i) h.add_event(id, QJsonObject{{"event", "iteration"}, {"iter", i}});
        RunResult r;
        r.status = "ok";
        r.summary = "2 nodes finished";
        r.wall_s = 10.5;
        r.accuracy = 0.8536;
        r.samples_per_s = 5500;
        h.finish_run(id, r);
        QCOMPARE(h.runs().size(), 1);
        QCOMPARE(h.runs()[0].status, QString("ok"));
    }
    RunHistory h(path);
    const auto runs = h.runs();
    QCOMPARE(runs.size(), 1);
    QCOMPARE(runs[0].id, id);
    QCOMPARE(runs[0].name, QString("lenet-local"));
    QCOMPARE(runs[0].status, QString("ok"));
    QCOMPARE(*runs[0].accuracy, 0.8536);
    QCOMPARE(*runs[0].wall_s, 10.5);
    QVERIFY(runs[0].finished_at.isValid());
    QCOMPARE(h.spec(id).value("udp_port").toInt(), 40123);
    const auto events = h.events(id);
    QCOMPARE(events.size(), 2500);
    for (int i = 0; i < events.size(); ++i) QCOMPARE(events[i].value("iter").toInt(), i);
}

void TestRunHistory::buffered_events_are_visible_and_flushed() {
    QTemporaryDir dir;
    const QString path = dir.filePath("h.sqlite");
    {
        RunHistory h(path);
        const qint64 id = h.begin_run("r", {});
        h.add_event(id, QJsonObject{{"event", "run_started"}});
        QCOMPARE(h.events(id).size(), 1);  // still buffered, already part of the history
        QCOMPARE(h.runs()[0].status, QString("running"));
    }  // the destructor flushes
    RunHistory h(path);
    QCOMPARE(h.events(h.runs()[0].id).size(), 1);
    QVERIFY(!h.runs()[0].finished_at.isValid());  // never finished: a crash leaves it "running"
}

void TestRunHistory::remove_cascades() {
    QTemporaryDir dir;
    RunHistory h(dir.filePath("h.sqlite"));
    const qint64 a = h.begin_run("a", {});
    const qint64 b = h.begin_run("b", {});
    h.add_event(a, QJsonObject{{"event", "x"}});
    h.add_event(b, QJsonObject{{"event", "y"}});
    h.flush();
    h.remove_run(a);
    QCOMPARE(h.runs().size(), 1);
    QCOMPARE(h.runs()[0].name, QString("b"));  // newest first, and a is gone
    QCOMPARE(h.events(a).size(), 0);
    QCOMPARE(h.events(b).size(), 1);
}

void TestRunHistory::not_a_database() {
    QTemporaryDir dir;
    const QString path = dir.filePath("garbage.sqlite");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'x'));
    f.close();
    try {
        RunHistory h(path);
        QFAIL("opened a file of garbage");
    } catch (const HistoryError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(path + ":"), e.what());
    }
    QFile check(path);
    QVERIFY(check.open(QIODevice::ReadOnly));
    QCOMPARE(check.readAll(), QByteArray(4096, 'x'));  // nothing overwritten
}

void TestRunHistory::newer_schema_refused() {
    QTemporaryDir dir;
    const QString path = dir.filePath("future.sqlite");
    {
        auto db = QSqlDatabase::addDatabase("QSQLITE", "future");
        db.setDatabaseName(path);
        QVERIFY(db.open());
        QSqlQuery(db).exec("PRAGMA user_version = 99");
        db.close();
    }
    QSqlDatabase::removeDatabase("future");
    try {
        RunHistory h(path);
        QFAIL("opened a newer schema");
    } catch (const HistoryError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains("newer"), e.what());
    }
}

QTEST_MAIN(TestRunHistory)
#include "test_run_history.moc"
