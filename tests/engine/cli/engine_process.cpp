#include "engine_process.h"

#include <QEventLoop>
#include <QJsonDocument>
#include <QProcess>
#include <QTimer>
#include <QtTest>
#include <chrono>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

QString engine_binary() { return qEnvironmentVariable("THRESHER_BIN_DIR") + "/thresher-engine"; }
QString source_dir() { return qEnvironmentVariable("THRESHER_SOURCE_DIR"); }

QList<QJsonObject> EngineRun::of(const QString& event) const {
    QList<QJsonObject> out;
    for (const auto& e : events)
        if (e.value("event").toString() == event) out.append(e);
    return out;
}

QString EngineRun::summary() const {
    // The warnings whole: a test that fails on an unexpected warning must say which one, and the
    // stdout tail seldom reaches back to it.
    QStringList warnings;
    for (const auto& w : of("warning")) warnings << w.value("message").toString().left(300);
    return QString("exit %1; warnings: [%2]; stderr: %3; stdout tail: %4")
        .arg(exit_code)
        .arg(warnings.mid(0, 10).join(" | "))
        .arg(stderr_text.right(1500))
        .arg(stdout_text.right(600));
}

EngineRun run_engine(const QStringList& args, int timeout_ms) {
    EngineRun r;
    QProcess p;
    p.start(engine_binary(), args);
    if (!p.waitForStarted(10000)) {
        r.stderr_text = "could not start " + engine_binary();
        return r;
    }
    r.finished = p.waitForFinished(timeout_ms);
    if (!r.finished) {
        p.kill();
        p.waitForFinished();
    }
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.stdout_text = QString::fromUtf8(p.readAllStandardOutput());
    r.stderr_text = QString::fromUtf8(p.readAllStandardError());
    parse_events(r);
    return r;
}

void parse_events(EngineRun& r) {
    for (const auto& line : r.stdout_text.split('\n', Qt::SkipEmptyParts)) {
        QJsonParseError err;
        const auto doc = QJsonDocument::fromJson(line.toUtf8(), &err);
        if (err.error != QJsonParseError::NoError || !doc.isObject()) {
            r.contract_errors << "not a JSON object: " + line.left(200);
            continue;
        }
        const auto o = doc.object();
        r.events.append(o);
        // Training events carry event/t/node (DESIGN.md); other subcommands print plain records.
        if (o.contains("event") && o.value("event").toString() != "evaluation" &&
            (!o.value("t").isDouble() || !o.value("node").isDouble()))
            r.contract_errors << "event without t/node: " + line.left(200);
    }
}

void check_finished_ok(const EngineRun& r, int node) {
    QVERIFY2(r.finished && r.exit_code == 0, qPrintable(QString("node %1: %2").arg(node).arg(r.summary())));
    QVERIFY2(r.contract_errors.isEmpty(), qPrintable(r.contract_errors.join('\n')));
    const auto finished = r.of("run_finished");
    QVERIFY2(finished.size() == 1, qPrintable(r.summary()));
    QCOMPARE(finished.last().value("status").toString(), QString("ok"));
    QCOMPARE(finished.last().value("node").toInt(), node);
}

bool write_file(const QString& path, const QByteArray& bytes, QFile::Permissions perms) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return false;
    const bool written = f.write(bytes) == bytes.size();
    f.close();
    return written && f.setPermissions(perms);
}

struct NodeGroup::Node {
    QProcess process;
    QByteArray out, err;
};

NodeGroup::NodeGroup() = default;

NodeGroup::~NodeGroup() {
    for (auto& n : nodes_)
        if (n->process.state() != QProcess::NotRunning) {
            n->process.kill();
            n->process.waitForFinished(10000);
        }
}

int NodeGroup::start(const QStringList& args, const QString& program) {
    auto node = std::make_shared<Node>();
    Node* raw = node.get();
    QObject::connect(&raw->process, &QProcess::readyReadStandardOutput, [raw] { raw->out += raw->process.readAllStandardOutput(); });
    QObject::connect(&raw->process, &QProcess::readyReadStandardError, [raw] { raw->err += raw->process.readAllStandardError(); });
    raw->process.start(program.isEmpty() ? engine_binary() : program, args);
    nodes_ << node;
    return static_cast<int>(nodes_.size()) - 1;
}

int NodeGroup::size() const { return static_cast<int>(nodes_.size()); }
QProcess& NodeGroup::process(int i) { return nodes_.at(i)->process; }
QString NodeGroup::stdout_so_far(int i) const { return QString::fromUtf8(nodes_.at(i)->out); }

int NodeGroup::count_events(int i, const QString& event) const {
    return static_cast<int>(nodes_.at(i)->out.count(QString("\"event\":\"%1\"").arg(event).toUtf8()));
}

bool NodeGroup::spin(int ms) {
    bool running = false;
    for (auto& n : nodes_) running = running || n->process.state() != QProcess::NotRunning;
    if (!running) return false;
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
    return true;
}

QList<EngineRun> NodeGroup::wait_all(int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline && spin(50)) {
    }
    QList<EngineRun> runs;
    for (auto& n : nodes_) {
        EngineRun r;
        r.finished = n->process.state() == QProcess::NotRunning;
        if (!r.finished) {
            n->process.kill();
            n->process.waitForFinished(10000);
        }
        n->out += n->process.readAllStandardOutput();
        n->err += n->process.readAllStandardError();
        r.exit_code = n->process.exitStatus() == QProcess::NormalExit ? n->process.exitCode() : -1;
        if (n->process.error() == QProcess::FailedToStart) {
            r.exit_code = -1;
            n->err += "could not start " + n->process.program().toUtf8() + ": " + n->process.errorString().toUtf8();
        }
        r.stdout_text = QString::fromUtf8(n->out);
        r.stderr_text = QString::fromUtf8(n->err);
        parse_events(r);
        runs << r;
    }
    return runs;
}

QList<EngineRun> run_nodes(const QList<QStringList>& args, int timeout_ms, const QString& program) {
    NodeGroup group;
    for (const auto& a : args) group.start(a, program);
    return group.wait_all(timeout_ms);
}
