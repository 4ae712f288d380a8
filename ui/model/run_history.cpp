#include "run_history.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QUuid>
#include <QVariant>

namespace thresher::ui {

namespace {

constexpr int kSchemaVersion = 1;

QVariant opt(const std::optional<double>& v) { return v ? QVariant(*v) : QVariant(); }

std::optional<double> opt_double(const QVariant& v) {
    if (v.isNull()) return std::nullopt;
    return v.toDouble();
}

}  // namespace

RunHistory::RunHistory(const QString& path, QObject* parent)
    : QObject(parent),
      path_(path),
      connection_("thresher-history-" + QUuid::createUuid().toString(QUuid::WithoutBraces)) {
    const QFileInfo info(path);
    if (!QDir().mkpath(info.absolutePath())) fail("cannot create folder", info.absolutePath());
    auto db = QSqlDatabase::addDatabase("QSQLITE", connection_);
    if (!db.isValid()) fail("Qt has no SQLite driver", "install libqt6sql6-sqlite");
    db.setDatabaseName(path);
    if (!db.open()) fail("cannot open", db.lastError().text());
    QSqlQuery q(db);
    if (!q.exec("PRAGMA user_version") || !q.next()) fail("not a readable SQLite file", q.lastError().text());
    const int version = q.value(0).toInt();
    if (version > kSchemaVersion)
        fail("written by a newer Thresher", QString("schema version %1, this app reads %2").arg(version).arg(kSchemaVersion));
    exec("PRAGMA foreign_keys = ON");
    // Wait a little for another connection's write instead of failing at once; short, because
    // the GUI thread is the one waiting.
    exec("PRAGMA busy_timeout = 200");
    // Write-ahead logging: readers never block the writer, and a crash mid-transaction leaves the
    // file consistent. SQLite answers with the mode it took ("memory" for ":memory:").
    if (!q.exec("PRAGMA journal_mode = WAL") || !q.next())
        fail("cannot use write-ahead logging", q.lastError().text());
    const QString mode = q.value(0).toString();
    if (mode != "wal" && mode != "memory") fail("cannot use write-ahead logging", "SQLite kept journal mode " + mode);
    exec("CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, "
         "started_at TEXT NOT NULL, finished_at TEXT, spec TEXT NOT NULL, status TEXT NOT NULL, "
         "exit_code INTEGER NOT NULL DEFAULT 0, summary TEXT NOT NULL DEFAULT '', wall_s REAL, "
         "accuracy REAL, samples_per_s REAL)");
    exec("CREATE TABLE IF NOT EXISTS events (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, "
         "seq INTEGER NOT NULL, json TEXT NOT NULL, PRIMARY KEY (run_id, seq))");
    exec(QString("PRAGMA user_version = %1").arg(kSchemaVersion));
    mark_interrupted_runs();
    flush_timer_.setInterval(kFlushIntervalMs);
    connect(&flush_timer_, &QTimer::timeout, this, &RunHistory::flush_quietly);
    flush_timer_.start();
}

void RunHistory::mark_interrupted_runs() {
    if (path_ == ":memory:") return;
    // Only when no other live instance has the file open: its runs may really be running. A lock
    // left by a crashed instance is stale (its process is gone) and QLockFile takes it over.
    lock_ = std::make_unique<QLockFile>(path_ + ".lock");
    lock_->setStaleLockTime(0);  // an old lock is stale only when its process is gone
    if (!lock_->tryLock(0)) {
        lock_.reset();
        return;
    }
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare("UPDATE runs SET status = 'interrupted', summary = ? WHERE status = 'running'");
    q.addBindValue(QString("interrupted: the app ended while this run was recording"));
    if (!q.exec()) fail("cannot mark interrupted runs", q.lastError().text());
    interrupted_at_open_ = q.numRowsAffected();
}

void RunHistory::flush_quietly() {
    added_since_flush_ = 0;
    try {
        flush();
    } catch (const HistoryError& e) {
        if (failing_) return;
        failing_ = true;
        Q_EMIT error(QString::fromUtf8(e.what()) +
                     QString(" (%1 events kept in memory; retrying every second)").arg(pending_.size()));
    }
}

RunHistory::~RunHistory() {
    try {
        flush();
    } catch (const HistoryError&) {
        // Destructors must not throw; what was not written is lost with the message already logged.
    }
    {
        auto db = QSqlDatabase::database(connection_, false);
        db.close();
    }
    QSqlDatabase::removeDatabase(connection_);
}

QString RunHistory::default_path() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/history.sqlite";
}

void RunHistory::exec(const QString& sql) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    if (!q.exec(sql)) fail("query failed", q.lastError().text() + " in: " + sql);
}

void RunHistory::fail(const QString& what, const QString& detail) const {
    throw HistoryError((path_ + ": " + what + (detail.isEmpty() ? "" : ": " + detail)).toStdString());
}

qint64 RunHistory::begin_run(const QString& name, const QJsonObject& spec) {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare("INSERT INTO runs (name, started_at, spec, status) VALUES (?, ?, ?, 'running')");
    q.addBindValue(name);
    q.addBindValue(QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs));
    q.addBindValue(QString::fromUtf8(QJsonDocument(spec).toJson(QJsonDocument::Compact)));
    if (!q.exec()) fail("cannot record run", q.lastError().text());
    const qint64 id = q.lastInsertId().toLongLong();
    next_seq_[id] = 0;
    return id;
}

void RunHistory::add_event(qint64 run, const QJsonObject& event) {
    if (pending_.size() >= kMaxPending) {  // the file has refused writes for a long time
        pending_.removeFirst();
        ++dropped_;
    }
    pending_.append({run, next_seq_[run]++, QJsonDocument(event).toJson(QJsonDocument::Compact)});
    // A fast run keeps the memory it buffers bounded: one transaction per this many events (the
    // timer writes the rest). While writes fail, retry at this size only, not on every event.
    if (++added_since_flush_ >= 2000) flush_quietly();
}

void RunHistory::flush() {
    if (pending_.isEmpty()) return;
    auto db = QSqlDatabase::database(connection_);
    if (!db.transaction()) fail("cannot begin a transaction", db.lastError().text());
    QSqlQuery q(db);
    q.prepare("INSERT INTO events (run_id, seq, json) VALUES (?, ?, ?)");
    for (const auto& p : pending_) {
        q.bindValue(0, p.run);
        q.bindValue(1, p.seq);
        q.bindValue(2, QString::fromUtf8(p.json));
        if (!q.exec()) {
            const QString err = q.lastError().text();
            db.rollback();
            fail("cannot store events", err);
        }
    }
    if (!db.commit()) {
        const QString err = db.lastError().text();
        db.rollback();
        fail("cannot commit events", err);
    }
    pending_.clear();
    failing_ = false;
    if (dropped_ > 0) {
        const qint64 dropped = dropped_;
        dropped_ = 0;
        Q_EMIT error(path_ + QString(": %1 events were dropped while the file refused writes").arg(dropped));
    }
}

void RunHistory::finish_run(qint64 run, const RunResult& r) {
    flush();
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare("UPDATE runs SET finished_at = ?, status = ?, exit_code = ?, summary = ?, wall_s = ?, "
              "accuracy = ?, samples_per_s = ? WHERE id = ?");
    q.addBindValue(QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs));
    q.addBindValue(r.status);
    q.addBindValue(r.exit_code);
    q.addBindValue(r.summary);
    q.addBindValue(opt(r.wall_s));
    q.addBindValue(opt(r.accuracy));
    q.addBindValue(opt(r.samples_per_s));
    q.addBindValue(run);
    if (!q.exec()) fail("cannot record the result of run " + QString::number(run), q.lastError().text());
}

void RunHistory::remove_run(qint64 run) {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare("DELETE FROM runs WHERE id = ?");
    q.addBindValue(run);
    if (!q.exec()) fail("cannot remove run " + QString::number(run), q.lastError().text());
}

QList<RunRecord> RunHistory::runs() const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    if (!q.exec("SELECT id, name, started_at, finished_at, status, exit_code, summary, wall_s, accuracy, "
                "samples_per_s FROM runs ORDER BY id DESC"))
        fail("cannot list runs", q.lastError().text());
    QList<RunRecord> out;
    while (q.next()) {
        RunRecord r;
        r.id = q.value(0).toLongLong();
        r.name = q.value(1).toString();
        r.started_at = QDateTime::fromString(q.value(2).toString(), Qt::ISODateWithMs);
        if (!q.value(3).isNull()) r.finished_at = QDateTime::fromString(q.value(3).toString(), Qt::ISODateWithMs);
        r.status = q.value(4).toString();
        r.exit_code = q.value(5).toInt();
        r.summary = q.value(6).toString();
        r.wall_s = opt_double(q.value(7));
        r.accuracy = opt_double(q.value(8));
        r.samples_per_s = opt_double(q.value(9));
        out.append(r);
    }
    return out;
}

std::optional<RunRecord> RunHistory::run(qint64 id) const {
    for (const auto& r : runs())
        if (r.id == id) return r;
    return std::nullopt;
}

QJsonObject RunHistory::spec(qint64 run) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare("SELECT spec FROM runs WHERE id = ?");
    q.addBindValue(run);
    if (!q.exec() || !q.next()) fail("no run " + QString::number(run), q.lastError().text());
    return QJsonDocument::fromJson(q.value(0).toString().toUtf8()).object();
}

QList<QJsonObject> RunHistory::events(qint64 run) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.setForwardOnly(true);
    q.prepare("SELECT json FROM events WHERE run_id = ? ORDER BY seq");
    q.addBindValue(run);
    if (!q.exec()) fail("cannot read events of run " + QString::number(run), q.lastError().text());
    QList<QJsonObject> out;
    while (q.next()) out.append(QJsonDocument::fromJson(q.value(0).toString().toUtf8()).object());
    // Events still buffered belong to the history too.
    for (const auto& p : pending_)
        if (p.run == run) out.append(QJsonDocument::fromJson(p.json).object());
    return out;
}

}  // namespace thresher::ui
