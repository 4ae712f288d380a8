// RunHistory: every run the app launched, in one SQLite file (Qt SQL): its RunSpec, every event
// it produced, and its result, so runs can be reopened, overlaid on the charts and exported
// after the app restarts. Schema (version 1, PRAGMA user_version):
//   runs(id, name, started_at, finished_at, spec JSON, status, exit_code, summary,
//        wall_s, accuracy, samples_per_s)
//   events(run_id, seq, json)      one row per event, in arrival order
// Events are written in batches inside a transaction (flush()) because one transaction per event
// would make SQLite fsync hundreds of times a second; a timer flushes every second, so a crash
// loses at most a second of events. The file is in WAL mode with a short busy timeout, so a second
// app instance (or a reader) on the same file waits briefly instead of failing at once.
//
// Failures never leave a timer or a Qt slot: add_event() and the timer report them through
// error(); buffered events stay buffered (up to kMaxPending, then the oldest are dropped and
// counted) and the next flush retries. The calls that return something still throw HistoryError.
//
// A run the app was still recording when it died stays "running" in the file. The instance that
// holds the history's lock file (<file>.lock: no other live instance has it open) marks such runs
// "interrupted" when it opens the file.
#pragma once

#include <QDateTime>
#include <QJsonObject>
#include <QList>
#include <QLockFile>
#include <QObject>
#include <QString>
#include <QTimer>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

namespace thresher::ui {

class HistoryError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct RunRecord {
    qint64 id = 0;
    QString name;
    QDateTime started_at, finished_at;  // finished_at invalid while running (or after a crash)
    QString status;                     // running | ok | stopped | failed | interrupted
    int exit_code = 0;
    QString summary;
    std::optional<double> wall_s, accuracy, samples_per_s;
};

struct RunResult {
    QString status;  // ok | stopped | failed
    int exit_code = 0;
    QString summary;
    std::optional<double> wall_s, accuracy, samples_per_s;
};

class RunHistory : public QObject {
    Q_OBJECT
public:
    static constexpr int kMaxPending = 100000;  // events buffered while the file refuses writes
    static constexpr int kFlushIntervalMs = 1000;

    // Opens (creating when needed) the database file; throws HistoryError naming the file.
    explicit RunHistory(const QString& path, QObject* parent = nullptr);
    ~RunHistory() override;
    RunHistory(const RunHistory&) = delete;
    RunHistory& operator=(const RunHistory&) = delete;

    // The default file: <AppDataLocation>/history.sqlite.
    static QString default_path();

    qint64 begin_run(const QString& name, const QJsonObject& spec);
    void add_event(qint64 run, const QJsonObject& event);  // buffered; never throws (see error())
    void flush();                                          // throws HistoryError; keeps the buffer
    void set_flush_interval(int ms) { flush_timer_.setInterval(ms); }
    int pending_events() const { return static_cast<int>(pending_.size()); }
    qint64 dropped_events() const { return dropped_; }
    // Runs marked "interrupted" when this instance opened the file.
    int interrupted_at_open() const { return interrupted_at_open_; }
    void finish_run(qint64 run, const RunResult& result);  // flushes first
    void remove_run(qint64 run);

    QList<RunRecord> runs() const;  // newest first
    std::optional<RunRecord> run(qint64 id) const;
    QJsonObject spec(qint64 run) const;
    QList<QJsonObject> events(qint64 run) const;

    const QString& path() const { return path_; }

Q_SIGNALS:
    // A flush the app did not ask for (the timer, a full buffer) failed; once per failure streak.
    void error(const QString& message);

private:
    void flush_quietly();
    void mark_interrupted_runs();
    void exec(const QString& sql) const;
    [[noreturn]] void fail(const QString& what, const QString& detail) const;

    QString path_;
    QString connection_;
    struct Pending {
        qint64 run;
        qint64 seq;
        QByteArray json;
    };
    QList<Pending> pending_;
    std::map<qint64, qint64> next_seq_;
    qint64 dropped_ = 0;
    int added_since_flush_ = 0;  // events since the last flush attempt
    bool failing_ = false;  // the last flush failed: error() was emitted for this streak
    int interrupted_at_open_ = 0;
    std::unique_ptr<QLockFile> lock_;
    QTimer flush_timer_;
};

}  // namespace thresher::ui
