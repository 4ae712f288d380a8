// Files, ports and /proc for the launcher suites; see launch_fixture.h.
#include "launch_fixture.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <unistd.h>

#include "free_ports.h"

namespace launch_fixture {

const char* const kTinyModel = R"({"name":"tiny","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.1},
  "layers":[{"type":"dense","units":12,"activation":"tanh"},{"type":"output","units":3}]})";

const char* const kSlowModel = R"({"name":"slow","input":{"size":16},"updater":{"type":"sgd","learning_rate":0.01},
  "layers":[{"type":"dense","units":512,"activation":"tanh"},{"type":"dense","units":512,"activation":"tanh"},
            {"type":"output","units":3}]})";

QString bin(const QString& name) { return qEnvironmentVariable("THRESHER_BIN_DIR") + "/" + name; }

QByteArray local_spec(const QString& model, const QString& data, int nodes, int port, const QString& training,
                      const QString& extra) {
    const QString m = model.trimmed().startsWith('{') ? model : "\"" + model + "\"";
    return QString(R"({"format":"thresher-run","version":1,"model":%1,"data":"%2","training":{%3},
                      "cluster":{"kind":"local","nodes":%4,"workers_per_node":1},"udp_port":%5%6})")
        .arg(m, data, training).arg(nodes).arg(port).arg(extra.isEmpty() ? QString() : "," + extra).toUtf8();
}

int free_ports(int count) { return test_support::free_port_block(count); }

CliRun run_cli(const QStringList& args, int timeout_ms) {
    const Finished f = run_to_end(bin("thresher-launch"), args, timeout_ms);
    return {f.code, QString::fromUtf8(f.out), QString::fromUtf8(f.err)};
}

bool write_file(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

QString Finished::text() const {
    return QString("exit %1\n--- stdout:\n%2\n--- stderr:\n%3").arg(code).arg(QString::fromUtf8(out), QString::fromUtf8(err));
}

Finished run_to_end(const QString& program, const QStringList& args, int timeout_ms) {
    QProcess p;
    p.start(program, args);
    Finished r;
    if (!p.waitForStarted(10000)) {
        r.err = (program + " could not start: " + p.errorString()).toUtf8();
        return r;
    }
    if (!p.waitForFinished(timeout_ms)) {
        p.kill();
        p.waitForFinished(5000);
        r.err = QString("%1 did not finish in %2 ms; killed\n").arg(program).arg(timeout_ms).toUtf8();
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err += p.readAllStandardError();
    return r;
}

int event_count(const QByteArray& jsonl, const QString& event, int node) {
    int n = 0;
    for (const QByteArray& line : jsonl.split('\n')) {
        const QJsonObject e = QJsonDocument::fromJson(line).object();
        n += e.value("event").toString() == event && e.value("node").toInt() == node;
    }
    return n;
}

QList<Proc> processes() {
    QList<Proc> out;
    for (const QString& entry : QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        bool numeric = false;
        const qint64 pid = entry.toLongLong(&numeric);
        if (!numeric) continue;
        QFile f("/proc/" + entry + "/stat");
        if (!f.open(QIODevice::ReadOnly)) continue;  // gone meanwhile
        // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses: split at the last ')'.
        const QByteArray stat = f.readAll();
        const qsizetype open = stat.indexOf('('), close = stat.lastIndexOf(')');
        if (open < 0 || close < 0) continue;
        const QList<QByteArray> rest = stat.mid(close + 2).split(' ');
        if (rest.size() < 3) continue;
        Proc p;
        p.pid = pid;
        p.comm = QString::fromUtf8(stat.mid(open + 1, close - open - 1));
        p.state = rest[0].isEmpty() ? '?' : rest[0][0];
        p.ppid = rest[1].toLongLong();
        p.pgid = rest[2].toLongLong();
        out << p;
    }
    return out;
}

bool alive(qint64 pid) {
    QFile f(QString("/proc/%1/stat").arg(pid));
    if (!f.open(QIODevice::ReadOnly)) return false;
    const QByteArray stat = f.readAll();
    const qsizetype close = stat.lastIndexOf(')');
    return close >= 0 && stat.size() > close + 2 && stat[close + 2] != 'Z';
}

QList<qint64> pids_with_cmdline(const QString& marker) {
    QList<qint64> out;
    const QByteArray needle = marker.toUtf8();
    for (const Proc& p : processes()) {
        if (p.pid == ::getpid() || p.state == 'Z') continue;
        QFile f(QString("/proc/%1/cmdline").arg(p.pid));
        if (!f.open(QIODevice::ReadOnly)) continue;  // gone meanwhile
        if (f.readAll().contains(needle)) out << p.pid;
    }
    return out;
}

}  // namespace launch_fixture
