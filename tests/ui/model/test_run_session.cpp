// RunSession without a window: real thresher-engine processes started by the real local launcher,
// recorded into a real SQLite file. A run that finishes is "ok" with every event it produced
// stored (seen again through a second connection); Stop ends one "stopped" and leaves no engine;
// a session that ends mid-run kills its engines and records the run "interrupted"; an engine that
// fails is "failed"; a history file locked by another writer is reported through error() (not an
// exception) while the run goes on, and nothing is lost once the lock goes; a sweep records one
// row per run, named by its point.
#include <QtTest>

#include <QDir>
#include <QSignalSpy>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>

#include "launch_fixture.h"
#include "run_history.h"
#include "run_session.h"
#include "run_summary.h"
#include "sweep_runner.h"

using namespace launch_fixture;
using thresher::launcher::RunSpec;
using thresher::ui::RunHistory;
using thresher::ui::RunSession;

namespace {

// Generous for a loaded 2-core machine; a run that needs longer is a failure, not a wait.
constexpr int kRunMs = 120000;

thresher::launcher::LaunchOptions options() {
    thresher::launcher::LaunchOptions o;
    o.engine = bin("thresher-engine");
    o.grace_ms = 3000;
    return o;
}

// A local run of `model` on a synthetic 3-class CSV in `dir`, `nodes` nodes on fresh ports.
RunSpec spec(const QTemporaryDir& dir, const QString& name, const char* model, int nodes, const QString& training,
             int* port = nullptr) {
    const QString csv = dir.filePath(name + ".csv");
    write_file(csv, three_class_csv(256));
    const int p = free_ports(nodes);
    if (port) *port = p;
    const QString path = dir.filePath(name + ".json");
    write_file(path, local_spec(model, csv, nodes, p, training, QString("\"name\":\"%1\"").arg(name)));
    RunSpec s = RunSpec::load(path);
    s.validate();
    return s;
}

int count_of(const QSignalSpy& events, const QString& kind) {
    int n = 0;
    for (const auto& args : events)
        if (args[0].toJsonObject().value("event").toString() == kind) ++n;
    return n;
}

// What another process reading the file sees: the run's status and how many events it holds.
struct OnDisk {
    QString status;
    int events = -1;
};
OnDisk on_disk(const QString& path, qint64 run) {
    OnDisk d;
    {
        auto db = QSqlDatabase::addDatabase("QSQLITE", "reader");
        db.setDatabaseName(path);
        if (db.open()) {
            QSqlQuery q(db);
            if (q.exec(QString("SELECT status FROM runs WHERE id = %1").arg(run)) && q.next()) d.status = q.value(0).toString();
            if (q.exec(QString("SELECT COUNT(*) FROM events WHERE run_id = %1").arg(run)) && q.next()) d.events = q.value(0).toInt();
        }
        db.close();
    }
    QSqlDatabase::removeDatabase("reader");
    return d;
}

}  // namespace

class TestRunSession : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void run_is_recorded_and_finishes_ok();
    void stop_records_stopped();
    void session_ending_mid_run_records_interrupted();
    void failing_engine_records_failed();
    void locked_history_reports_through_error();
    void run_goes_on_when_history_refuses_it();
    void history_that_cannot_open_falls_back_to_memory();
    void cluster_without_launcher_throws_and_records_nothing();
    void sweep_records_each_run();
};

void TestRunSession::run_is_recorded_and_finishes_ok() {
    QTemporaryDir dir;
    const QString db = dir.filePath("history.sqlite");
    RunSession session(db, options());
    QVERIFY(session.open_error().isEmpty());
    QSignalSpy started(&session, &RunSession::runStarted);
    QSignalSpy events(&session, &RunSession::event);
    QSignalSpy logs(&session, &RunSession::logLine);
    QSignalSpy finished(&session, &RunSession::finished);
    QSignalSpy errors(&session, &RunSession::error);
    QVERIFY(session.start(spec(dir, "tiny-ok", kTinyModel, 2, R"("epochs":2,"batch":16,"threads":1)")));
    QVERIFY(session.running());
    QVERIFY(!session.start(spec(dir, "second", kTinyModel, 1, R"("epochs":1)")));  // one at a time
    QCOMPARE(started.count(), 1);
    QCOMPARE(started[0][0].toString(), QString("tiny-ok"));
    const qint64 run = session.run_id();
    QVERIFY(run > 0);
    QCOMPARE(session.history()->run(run)->status, QString("running"));

    QVERIFY(finished.wait(kRunMs));
    QCOMPARE(finished.count(), 1);
    QVERIFY2(finished[0][0].toInt() == 0, qPrintable(finished[0][1].toString()));
    QVERIFY(!session.running());
    QVERIFY2(errors.isEmpty(), errors.isEmpty() ? "" : qPrintable(errors[0][0].toString()));
    // Both nodes' starts and ends, and their iterations, arrived as signals.
    QVERIFY(count_of(events, "run_started") >= 2);
    QVERIFY(count_of(events, "run_finished") >= 2);
    QVERIFY(count_of(events, "iteration") > 0);
    QVERIFY(!logs.isEmpty());

    const auto record = session.history()->run(run);
    QVERIFY(record);
    QCOMPARE(record->status, QString("ok"));
    QCOMPARE(record->exit_code, 0);
    QVERIFY(record->finished_at.isValid());
    QVERIFY(record->wall_s && *record->wall_s > 0);
    QCOMPARE(record->wall_s, session.summary().wall_s());
    QCOMPARE(record->samples_per_s, session.summary().samples_per_s());
    // Every event, in order, already written to the file (finish flushes): another reader sees them.
    const auto stored = session.history()->events(run);
    QCOMPARE(stored.size(), events.count());
    for (int i = 0; i < stored.size(); ++i) QCOMPARE(stored[i], events[i][0].toJsonObject());
    QCOMPARE(session.history()->pending_events(), 0);
    const OnDisk d = on_disk(db, run);
    QCOMPARE(d.status, QString("ok"));
    QCOMPARE(d.events, events.count());
    // The spec as history keeps it: paths absolute.
    const QJsonObject kept = session.history()->spec(run);
    QVERIFY(QDir::isAbsolutePath(kept.value("data").toString()));
}

void TestRunSession::stop_records_stopped() {
    QTemporaryDir dir;
    RunSession session(dir.filePath("history.sqlite"), options());
    QSignalSpy events(&session, &RunSession::event);
    QSignalSpy finished(&session, &RunSession::finished);
    int port = 0;
    // Many epochs of the slow model: the run lasts until Stop.
    QVERIFY(session.start(spec(dir, "long", kSlowModel, 2, R"("epochs":500,"batch":16,"threads":1)", &port)));
    QTRY_VERIFY_WITH_TIMEOUT(count_of(events, "iteration") >= 10, kRunMs);
    QVERIFY(finished.isEmpty());
    session.stop();
    QVERIFY(finished.wait(30000));
    QCOMPARE(finished[0][0].toInt(), thresher::launcher::kExitStopped);
    QVERIFY(!session.running());
    QVERIFY(pids_with_cmdline(QString::number(port)).isEmpty());
    const auto record = session.history()->run(session.run_id());
    QCOMPARE(record->status, QString("stopped"));
    QCOMPARE(record->exit_code, thresher::launcher::kExitStopped);
    QCOMPARE(session.history()->events(session.run_id()).size(), events.count());
}

void TestRunSession::session_ending_mid_run_records_interrupted() {
    QTemporaryDir dir;
    const QString db = dir.filePath("history.sqlite");
    qint64 run = 0;
    int port = 0;
    int seen = 0;
    {
        RunSession session(db, options());
        QSignalSpy events(&session, &RunSession::event);
        QSignalSpy finished(&session, &RunSession::finished);
        QVERIFY(session.start(spec(dir, "cut", kSlowModel, 2, R"("epochs":500,"batch":16,"threads":1)", &port)));
        run = session.run_id();
        QTRY_VERIFY_WITH_TIMEOUT(count_of(events, "iteration") >= 5, kRunMs);
        QVERIFY(!pids_with_cmdline(QString::number(port)).isEmpty());
        seen = events.count();
        // The app quits: the session goes with the run still going.
    }
    QVERIFY(pids_with_cmdline(QString::number(port)).isEmpty());  // killed, not left training
    const OnDisk d = on_disk(db, run);
    QCOMPARE(d.status, QString("interrupted"));
    QCOMPARE(d.events, seen);
    RunHistory reopened(db);
    QCOMPARE(reopened.interrupted_at_open(), 0);  // already recorded, nothing left "running"
    QVERIFY(reopened.run(run)->summary.contains("interrupted"));
}

void TestRunSession::failing_engine_records_failed() {
    QTemporaryDir dir;
    RunSession session(dir.filePath("history.sqlite"), options());
    QSignalSpy finished(&session, &RunSession::finished);
    RunSpec s = spec(dir, "broken", kTinyModel, 1, R"("epochs":1,"batch":16)");
    QVERIFY(QFile::remove(dir.filePath("broken.csv")));  // the engine cannot read its data
    QVERIFY(session.start(s));
    QVERIFY(finished.wait(kRunMs));
    const int code = finished[0][0].toInt();
    QVERIFY2(code != 0 && code != thresher::launcher::kExitStopped, qPrintable(finished[0][1].toString()));
    const auto record = session.history()->run(session.run_id());
    QCOMPARE(record->status, QString("failed"));
    QCOMPARE(record->exit_code, code);
    QCOMPARE(record->summary, finished[0][1].toString());
}

// Another writer holds the file (a second app instance mid-transaction): the session's timer
// flushes fail, error() says so once, the run goes on, and once the lock is gone every event is
// stored. Held through the run's end, finishing reports through error() too, and finished()
// still arrives.
void TestRunSession::locked_history_reports_through_error() {
    QTemporaryDir dir;
    const QString db = dir.filePath("history.sqlite");
    RunSession session(db, options());
    session.history()->set_flush_interval(100);
    QSignalSpy events(&session, &RunSession::event);
    QSignalSpy finished(&session, &RunSession::finished);
    QSignalSpy errors(&session, &RunSession::error);
    QVERIFY(session.start(spec(dir, "locked", kSlowModel, 2, R"("epochs":500,"batch":16,"threads":1)")));
    const qint64 run = session.run_id();
    QTRY_VERIFY_WITH_TIMEOUT(count_of(events, "iteration") >= 2, kRunMs);

    int before_release = 0;
    {
        auto other = QSqlDatabase::addDatabase("QSQLITE", "other-writer");
        other.setDatabaseName(db);
        QVERIFY(other.open());
        QSqlQuery lock(other);
        QVERIFY2(lock.exec("BEGIN EXCLUSIVE"), qPrintable(lock.lastError().text()));
        const int at_lock = events.count();
        QVERIFY(errors.wait(20000));
        QVERIFY2(errors[0][0].toString().contains(db), qPrintable(errors[0][0].toString()));
        // The run goes on while the file refuses writes, and the events wait in memory.
        QTRY_VERIFY_WITH_TIMEOUT(events.count() > at_lock + 5, kRunMs);
        QVERIFY(session.running());
        QVERIFY(session.history()->pending_events() > 0);
        QCOMPARE(errors.count(), 1);  // once per failure streak, though the timer failed again since
        before_release = events.count();
        QVERIFY(lock.exec("ROLLBACK"));
        other.close();
    }
    QSqlDatabase::removeDatabase("other-writer");
    QTRY_VERIFY_WITH_TIMEOUT(on_disk(db, run).events >= before_release, 20000);

    // Locked again, and held while the run ends: finishing cannot write, says so, and the run
    // still ends for the caller.
    {
        auto other = QSqlDatabase::addDatabase("QSQLITE", "other-writer");
        other.setDatabaseName(db);
        QVERIFY(other.open());
        QSqlQuery lock(other);
        QVERIFY2(lock.exec("BEGIN EXCLUSIVE"), qPrintable(lock.lastError().text()));
        const int errors_before = errors.count();
        session.stop();
        QVERIFY(finished.wait(30000));
        QCOMPARE(finished[0][0].toInt(), thresher::launcher::kExitStopped);
        QVERIFY(errors.count() > errors_before);
        QVERIFY2(errors.last()[0].toString().contains("locked"), qPrintable(errors.last()[0].toString()));
        QVERIFY(lock.exec("ROLLBACK"));
        other.close();
    }
    QSqlDatabase::removeDatabase("other-writer");
    // The row could not be finished; the events are all kept and reach the file at the next flush.
    QTRY_COMPARE_WITH_TIMEOUT(on_disk(db, run).events, events.count(), 20000);
    QCOMPARE(session.history()->run(run)->status, QString("running"));
}

// The file is locked when the run begins: the run cannot be recorded, error() says so, and the
// run still goes, to its end, without a record.
void TestRunSession::run_goes_on_when_history_refuses_it() {
    QTemporaryDir dir;
    const QString db = dir.filePath("history.sqlite");
    RunSession session(db, options());
    QSignalSpy events(&session, &RunSession::event);
    QSignalSpy finished(&session, &RunSession::finished);
    QSignalSpy errors(&session, &RunSession::error);
    {
        auto other = QSqlDatabase::addDatabase("QSQLITE", "other-writer");
        other.setDatabaseName(db);
        QVERIFY(other.open());
        QSqlQuery lock(other);
        QVERIFY2(lock.exec("BEGIN EXCLUSIVE"), qPrintable(lock.lastError().text()));
        QVERIFY(session.start(spec(dir, "unrecorded", kTinyModel, 1, R"("epochs":1,"batch":16,"threads":1)")));
        QCOMPARE(errors.count(), 1);
        QVERIFY2(errors[0][0].toString().startsWith(db + ": cannot record run"), qPrintable(errors[0][0].toString()));
        QCOMPARE(session.run_id(), 0);
        QVERIFY(lock.exec("ROLLBACK"));
        other.close();
    }
    QSqlDatabase::removeDatabase("other-writer");
    QVERIFY(finished.wait(kRunMs));
    QVERIFY2(finished[0][0].toInt() == 0, qPrintable(finished[0][1].toString()));
    QVERIFY(count_of(events, "run_finished") >= 1);
    QCOMPARE(errors.count(), 1);
    QCOMPARE(session.history()->runs().size(), 0);
    QCOMPARE(session.history()->pending_events(), 0);
}

void TestRunSession::history_that_cannot_open_falls_back_to_memory() {
    QTemporaryDir dir;
    const QString not_db = dir.filePath("notes.sqlite");
    write_file(not_db, QByteArray("these are not the droids you are looking for\n").repeated(200));
    RunSession session(not_db, options());
    QVERIFY2(session.open_error().startsWith(not_db + ": "), qPrintable(session.open_error()));
    QVERIFY(session.open_error().contains("in memory"));
    QCOMPARE(session.history()->path(), QString(":memory:"));
    QCOMPARE(session.history()->runs().size(), 0);
}

void TestRunSession::cluster_without_launcher_throws_and_records_nothing() {
    QTemporaryDir dir;
    RunSession session(dir.filePath("history.sqlite"), options());
    QSignalSpy started(&session, &RunSession::runStarted);
    RunSpec s = spec(dir, "ssh", kTinyModel, 1, R"("epochs":1)");
    s.cluster.kind = thresher::launcher::ClusterSettings::Kind::Ssh;  // no SSH launcher in this program
    QVERIFY_THROWS_EXCEPTION(thresher::launcher::LaunchError, session.start(s));
    QVERIFY(!session.running());
    QCOMPARE(started.count(), 0);
    QCOMPARE(session.history()->runs().size(), 0);
}

void TestRunSession::sweep_records_each_run() {
    QTemporaryDir dir;
    RunSession session(dir.filePath("history.sqlite"), options());
    QSignalSpy started(&session, &RunSession::runStarted);
    const RunSpec base = spec(dir, "swept", kTinyModel, 2, R"("epochs":1,"batch":16,"threads":1)");
    const QJsonArray axes{QJsonObject{{"field", "nodes"}, {"values", QJsonArray{1, 2}}}};
    const auto sweep = thresher::launcher::sweep::SweepSpec::over(base, "swept-scaling", axes);
    auto* runner = session.start_sweep(sweep, dir.filePath("results"));
    QVERIFY(runner);
    QVERIFY(session.running());
    QSignalSpy done(runner, &thresher::launcher::sweep::SweepRunner::finished);
    QVERIFY(done.wait(2 * kRunMs));
    QVERIFY2(done[0][0].toBool(), qPrintable(done[0][1].toString()));
    QCOMPARE(started.count(), 2);
    const auto runs = session.history()->runs();  // newest first
    QCOMPARE(runs.size(), 2);
    QCOMPARE(runs[1].name, QString("swept-scaling-1: nodes = 1"));
    QCOMPARE(runs[0].name, QString("swept-scaling-2: nodes = 2"));
    for (const auto& r : runs) {
        QCOMPARE(r.status, QString("ok"));
        // The figures recorded are those of the run's own stored events (throughput needs two
        // iteration times, which a run this short may not give: compared, not required).
        const auto stored = session.history()->events(r.id);
        QVERIFY(!stored.isEmpty());
        thresher::launcher::sweep::RunSummary from_events;
        for (const auto& e : stored) from_events.add(e);
        QVERIFY(r.wall_s && *r.wall_s > 0);
        QCOMPARE(r.wall_s, from_events.wall_s());
        QCOMPARE(r.samples_per_s, from_events.samples_per_s());
        QCOMPARE(r.accuracy, from_events.final_accuracy());
    }
}

QTEST_GUILESS_MAIN(TestRunSession)
#include "test_run_session.moc"
