// RunHistory: every run the app launched, in one SQLite file (Qt SQL): its RunSpec, every event
// it produced, and its result, so runs can be reopened, overlaid on the charts and exported
// after the app restarts. Schema (version 1, PRAGMA user_version):
//   runs(id, name, started_at, finished_at, spec JSON, status, exit_code, summary,
//        wall_s, accuracy, samples_per_s)
//   events(run_id, seq, json)      one row per event, in arrival order
// Events are written in batches inside a transaction (flush()) because one transaction per event
// would make SQLite fsync hundreds of times a second.
#pragma once

#include <QDateTime>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <map>
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
    QString status;                     // running | ok | stopped | failed
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

class RunHistory {
public:
    // Opens (creating when needed) the database file; throws HistoryError naming the file.
    explicit RunHistory(const QString& path);
    ~RunHistory();
    RunHistory(const RunHistory&) = delete;
    RunHistory& operator=(const RunHistory&) = delete;

    // The default file: <AppDataLocation>/history.sqlite.
    static QString default_path();

    qint64 begin_run(const QString& name, const QJsonObject& spec);
    void add_event(qint64 run, const QJsonObject& event);  // buffered; see flush()
    void flush();
    void finish_run(qint64 run, const RunResult& result);  // flushes first
    void remove_run(qint64 run);

    QList<RunRecord> runs() const;  // newest first
    std::optional<RunRecord> run(qint64 id) const;
    QJsonObject spec(qint64 run) const;
    QList<QJsonObject> events(qint64 run) const;

    const QString& path() const { return path_; }

private:
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
};

}  // namespace thresher::ui
