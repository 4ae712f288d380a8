// RunHistory on real SQLite files: a run's spec, events (in order, the buffered ones too) and
// result survive closing and reopening; deleting a run deletes its events; a file that is not a
// database, or one written by a newer schema, is refused with the file's name. The file is in WAL
// mode; a timer writes buffered events within a second; a second connection locking the file makes
// flushes fail without losing events or throwing out of the timer; runs left "running" by an
// instance that is gone are marked "interrupted" by the next one.
#include <QtTest>

#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSysInfo>
#include <QUuid>
#include <unistd.h>
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
    void file_is_in_wal_mode();
    void timer_writes_events_within_a_second();
    void locked_file_keeps_events_and_reports_once();
    void interrupted_runs_marked_at_next_start();
    void stale_lock_of_a_dead_instance();
    void read_only_file_refused();
};

namespace {
// A second, independent connection to the same file, as another app instance would have.
class OtherConnection {
public:
    explicit OtherConnection(const QString& path) : name_(QUuid::createUuid().toString()) {
        auto db = QSqlDatabase::addDatabase("QSQLITE", name_);
        db.setDatabaseName(path);
        db.open();
    }
    ~OtherConnection() {
        QSqlDatabase::database(name_).close();
        QSqlDatabase::removeDatabase(name_);
    }
    QSqlQuery query() const { return QSqlQuery(QSqlDatabase::database(name_)); }
    QVariant value(const QString& sql) const {
        auto q = query();
        if (!q.exec(sql) || !q.next()) return QString("error: " + q.lastError().text());
        return q.value(0);
    }

private:
    QString name_;
};
}  // namespace

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
    QVERIFY(!h.runs()[0].finished_at.isValid());  // never finished
    QCOMPARE(h.runs()[0].status, QString("interrupted"));
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

void TestRunHistory::file_is_in_wal_mode() {
    QTemporaryDir dir;
    const QString path = dir.filePath("h.sqlite");
    RunHistory h(path);
    OtherConnection other(path);
    QCOMPARE(other.value("PRAGMA journal_mode").toString(), QString("wal"));
}

void TestRunHistory::timer_writes_events_within_a_second() {
    QTemporaryDir dir;
    const QString path = dir.filePath("h.sqlite");
    RunHistory h(path);
    const qint64 id = h.begin_run("r", {});
    for (int i = 0; i < 3; ++i) h.add_event(id, QJsonObject{{"event", "iteration"}, {"iter", i}});
    OtherConnection other(path);
    QCOMPARE(other.value("SELECT COUNT(*) FROM events").toInt(), 0);  // buffered
    QTRY_COMPARE_WITH_TIMEOUT(other.value("SELECT COUNT(*) FROM events").toInt(), 3, 3000);
    QCOMPARE(h.pending_events(), 0);
}

void TestRunHistory::locked_file_keeps_events_and_reports_once() {
    QTemporaryDir dir;
    const QString path = dir.filePath("h.sqlite");
    RunHistory h(path);
    h.set_flush_interval(100);
    QSignalSpy errors(&h, &RunHistory::error);
    const qint64 id = h.begin_run("r", {});
    OtherConnection other(path);
    auto lock = other.query();
    QVERIFY2(lock.exec("BEGIN EXCLUSIVE"), qPrintable(lock.lastError().text()));  // a second instance writing

    // At 2000 events add_event flushes: that fails quietly and reports once (error()).
    for (int i = 0; i < 2500; ++i) h.add_event(id, QJsonObject{{"iter", i}});
    try {
        h.flush();
        QFAIL("flushed into a locked file");
    } catch (const HistoryError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(path + ": cannot store events"), e.what());
    }
    QCOMPARE(h.pending_events(), 2500);
    // The timer keeps failing while the lock is held, and says so once.
    QTRY_VERIFY_WITH_TIMEOUT(errors.size() >= 1, 3000);
    QTest::qWait(500);
    QCOMPARE(errors.size(), 1);
    QVERIFY2(errors[0][0].toString().contains("2000 events kept in memory"), qPrintable(errors[0][0].toString()));

    QVERIFY(other.query().exec("COMMIT"));  // the other instance is done: everything arrives
    QTRY_COMPARE_WITH_TIMEOUT(h.pending_events(), 0, 3000);
    QCOMPARE(other.value("SELECT COUNT(*) FROM events").toInt(), 2500);
    const auto events = h.events(id);
    for (int i = 0; i < events.size(); ++i) QCOMPARE(events[i].value("iter").toInt(), i);
}

void TestRunHistory::interrupted_runs_marked_at_next_start() {
    QTemporaryDir dir;
    const QString path = dir.filePath("h.sqlite");
    auto first = std::make_unique<RunHistory>(path);
    const qint64 id = first->begin_run("r", {});
    {
        RunHistory second(path);  // the first instance is alive: its run may really be running
        QCOMPARE(second.interrupted_at_open(), 0);
        QCOMPARE(second.runs()[0].status, QString("running"));
    }
    first.reset();  // ends without finishing the run, as a crash would
    RunHistory next(path);
    QCOMPARE(next.interrupted_at_open(), 1);
    QCOMPARE(next.run(id)->status, QString("interrupted"));
    QVERIFY(next.run(id)->summary.contains("interrupted"));
}

void TestRunHistory::stale_lock_of_a_dead_instance() {
    // A real crash leaves its lock file behind, naming a process that is gone.
    QTemporaryDir dir;
    const QString path = dir.filePath("h.sqlite");
    { RunHistory(path).begin_run("r", {}); }
    QProcess gone;
    gone.start("true", {});
    QVERIFY(gone.waitForStarted(10000));
    const qint64 pid = gone.processId();
    QVERIFY(gone.waitForFinished(10000));
    QFile lock(path + ".lock");
    QVERIFY(lock.open(QIODevice::WriteOnly));
    lock.write(QString("%1\n%2\n%3\n").arg(pid).arg(QCoreApplication::applicationName(), QSysInfo::machineHostName()).toUtf8());
    lock.close();
    RunHistory next(path);
    QCOMPARE(next.interrupted_at_open(), 1);
    QCOMPARE(next.runs()[0].status, QString("interrupted"));
}

void TestRunHistory::read_only_file_refused() {
    QTemporaryDir dir;
    const QString path = dir.filePath("h.sqlite");
    { RunHistory(path).begin_run("r", {}); }
    QFile::remove(path + "-wal");
    QFile::remove(path + "-shm");
    QVERIFY(QFile::setPermissions(path, QFileDevice::ReadOwner | QFileDevice::ReadGroup));
    if (::access(path.toLocal8Bit().constData(), W_OK) == 0) QSKIP("running as root: file modes do not bind");
    try {
        RunHistory h(path);
        QFAIL("opened a read-only history for writing");
    } catch (const HistoryError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(path + ":"), e.what());
    }
}

QTEST_MAIN(TestRunHistory)
#include "test_run_history.moc"
