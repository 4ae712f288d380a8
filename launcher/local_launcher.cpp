// LocalLauncher: engine processes on this machine, their events and logs, and a stop that
// leaves nothing behind; see local_launcher.h.
#include "local_launcher.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <sys/prctl.h>
#include <unistd.h>

#include "event_stream.h"
#include "run_secret.h"

namespace thresher::launcher {

namespace {

constexpr int kTailLines = 8;  // stderr lines a failure summary quotes

// Signals the process group `pgid` (an engine leads its own); falls back to the process itself
// in the moment before the child's setsid().
void signal_group(qint64 pgid, int sig) {
    if (pgid <= 0) return;
    if (::kill(-static_cast<pid_t>(pgid), sig) != 0 && errno == ESRCH) ::kill(static_cast<pid_t>(pgid), sig);
}

}  // namespace

struct LocalLauncher::Node {
    explicit Node(int r) : rank(r), events(r) {}
    int rank;
    QProcess process;
    EventStream events;
    QByteArray err_pending;
    QStringList err_tail;
    qint64 pid = 0;
    bool exited = false;  // reaped, or never started
    bool announced = false;  // run_started seen
};

LocalLauncher::LocalLauncher(LaunchOptions options, QObject* parent) : Launcher(parent), options_(std::move(options)) {
    grace_.setSingleShot(true);
    connect(&grace_, &QTimer::timeout, this, &LocalLauncher::kill_remaining);
}

LocalLauncher::~LocalLauncher() {
    grace_.stop();
    for (auto& n : nodes_) {
        QObject::disconnect(&n->process, nullptr, this, nullptr);
        if (!n->exited) signal_group(n->pid, SIGKILL);
    }
    for (auto& n : nodes_)
        if (!n->exited) n->process.waitForFinished(5000);
}

QString LocalLauncher::find_engine(const QString& option) {
    if (!option.isEmpty()) return option;  // as given: a wrong path is reported when it fails to start
    if (QCoreApplication::instance()) {
        const QString beside = QCoreApplication::applicationDirPath() + "/thresher-engine";
        if (QFileInfo(beside).isExecutable()) return beside;
    }
    return QStandardPaths::findExecutable("thresher-engine");
}

QList<qint64> LocalLauncher::pids() const {
    QList<qint64> out;
    for (const auto& n : nodes_)
        if (!n->exited && n->pid > 0) out << n->pid;
    return out;
}

void LocalLauncher::launch(const RunSpec& spec) {
    nodes_.clear();
    killed_ = 0;

    if (spec.cluster.kind != ClusterSettings::Kind::Local)
        return fail_now(kExitCouldNotStart, spec.source + ": cluster.kind is not \"local\"; LocalLauncher runs local clusters only");
    const QString program = find_engine(options_.engine);
    if (program.isEmpty())
        return fail_now(kExitCouldNotStart, "thresher-engine not found next to this program or on $PATH; name it with --engine");

    // Private folder (mode 0700) for this run's secret and inline model.
    dir_ = std::make_unique<QTemporaryDir>(QDir::tempPath() + "/thresher-run-XXXXXX");
    if (!dir_->isValid()) return fail_now(kExitCouldNotStart, "cannot create a temporary folder: " + dir_->errorString());
    EngineFiles files;
    try {
        if (spec.model_is_inline()) {
            files.model = dir_->filePath("model.json");
            QFile f(files.model);
            if (!f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(spec.model_inline).toJson()) < 0 || !f.flush())
                return fail_now(kExitCouldNotStart, "cannot write the inline model to " + files.model + ": " + f.errorString());
        }
        if (spec.node_count() > 1) {
            secret_path_ = dir_->filePath("secret");
            write_secret_file(secret_path_, make_run_secret());
            files.secret = secret_path_;
            files.run_nonce = QString::fromLatin1(make_run_nonce());  // fresh per run, like the secret
        }
    } catch (const std::exception& e) {
        return fail_now(kExitCouldNotStart, QString::fromStdString(e.what()));
    }

    for (int rank = 0; rank < spec.node_count(); ++rank) nodes_.push_back(std::make_unique<Node>(rank));
    for (auto& n : nodes_) {
        if (failure()) {
            n->exited = true;  // an earlier node failed to start: start no more
            continue;
        }
        start_node(*n, program, spec.engine_arguments(n->rank, files));
    }
    finish_if_done();
}

void LocalLauncher::start_node(Node& node, const QString& program, const QStringList& args) {
    QProcess& p = node.process;
    p.setProgram(program);
    p.setArguments(args);
    p.setStandardInputFile(QProcess::nullDevice());
    const pid_t parent = ::getpid();
    // Runs in the child between fork and exec, so only async-signal-safe calls:
    //  - setsid(): the engine leads a new session and process group. stop() signals the whole
    //    group, and the terminal's Ctrl-C (sent to the launcher's foreground group) does not
    //    reach the engines behind the launcher's back.
    //  - PR_SET_PDEATHSIG: nothing in the launcher runs when it is SIGKILLed, so the kernel must
    //    end the engine: it sends SIGKILL when the parent dies. If the parent died before the
    //    prctl, getppid() is no longer it and the child exits on its own.
    p.setChildProcessModifier([parent] {
        ::setsid();
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(kExitCouldNotStart);
    });
    Node* n = &node;
    connect(&p, &QProcess::readyReadStandardOutput, this, [this, n] { read_stdout(*n); });
    connect(&p, &QProcess::readyReadStandardError, this, [this, n] { read_stderr(*n, false); });
    connect(&p, &QProcess::finished, this,
            [this, n](int code, QProcess::ExitStatus status) { node_exited(*n, code, status == QProcess::CrashExit); });
    p.start();
    // Waiting for exec means setsid() has run, so the group exists when stop() signals it.
    if (!p.waitForStarted(30000)) {
        QObject::disconnect(&p, nullptr, this, nullptr);
        node.exited = true;
        record_failure(kExitCouldNotStart, QString("node %1: could not start %2: %3").arg(node.rank).arg(program, p.errorString()));
        halt_after_failure();
        return;
    }
    node.pid = p.processId();
    Q_EMIT logLine(QString("[launcher] node %1: pid %2: %3 %4").arg(node.rank).arg(node.pid).arg(program, args.join(' ')));
}

void LocalLauncher::read_stdout(Node& node) {
    const auto events = node.events.feed(node.process.readAllStandardOutput());
    for (const auto& e : events) {
        if (e.value("event").toString() == "run_started") node.announced = true;
        Q_EMIT event(e);
    }
    // Every engine has read the secret before it announces the run: remove the file, so it
    // does not outlive its use even if the launcher is later killed without cleanup.
    if (!secret_path_.isEmpty() &&
        std::all_of(nodes_.begin(), nodes_.end(), [](const auto& n) { return n->announced; })) {
        QFile::remove(secret_path_);
        secret_path_.clear();
    }
}

void LocalLauncher::read_stderr(Node& node, bool flush) {
    node.err_pending += node.process.readAllStandardError();
    if (flush && !node.err_pending.isEmpty() && !node.err_pending.endsWith('\n')) node.err_pending += '\n';
    qsizetype nl;
    while ((nl = node.err_pending.indexOf('\n')) >= 0) {
        QString line = QString::fromUtf8(node.err_pending.left(nl));
        node.err_pending.remove(0, nl + 1);
        if (line.endsWith('\r')) line.chop(1);
        if (!line.trimmed().isEmpty()) {
            node.err_tail << line;
            if (node.err_tail.size() > kTailLines) node.err_tail.removeFirst();
        }
        Q_EMIT logLine(QString("[node %1] %2").arg(node.rank).arg(line));
    }
}

void LocalLauncher::node_exited(Node& node, int code, bool crashed) {
    read_stdout(node);
    for (const auto& e : node.events.finish()) Q_EMIT event(e);
    read_stderr(node, true);
    node.exited = true;
    // Anything the engine left in its group goes with it (the engine starts no children, so
    // normally there is nothing). The group id stays reserved while any member lives.
    signal_group(node.pid, SIGKILL);
    // With a crash, Qt reports the signal number as the exit code.
    if ((crashed || code != 0) && !stopping() && !failure()) {
        QString summary = QString("node %1 ").arg(node.rank) +
                          (crashed ? QString("was killed by signal %1").arg(code) : QString("exited with code %1").arg(code));
        summary += node.err_tail.isEmpty() ? QString(" (nothing on stderr)")
                                           : "; its last stderr lines:\n  " + node.err_tail.join("\n  ");
        record_failure(crashed ? 128 + code : code, summary);
        if (options_.stop_on_node_failure) halt_after_failure();
    }
    finish_if_done();
}

void LocalLauncher::halt(bool now) {
    if (now) return kill_remaining();
    for (auto& n : nodes_)
        if (!n->exited) signal_group(n->pid, SIGTERM);
    grace_.start(options_.grace_ms);
}

void LocalLauncher::kill_remaining() {
    for (auto& n : nodes_)
        if (!n->exited && n->pid > 0) {
            signal_group(n->pid, SIGKILL);
            ++killed_;
        }
}

void LocalLauncher::finish_if_done() {
    if (!running()) return;
    for (const auto& n : nodes_)
        if (!n->exited) return;
    grace_.stop();
    QString stopped = QString("stopped after %1 s; all %2 engine process(es) ended").arg(elapsed_s()).arg(nodes_.size());
    if (killed_ > 0)
        stopped += QString(" (%1 needed SIGKILL after the %2 s grace period)").arg(killed_).arg(options_.grace_ms / 1000.0);
    // A failure or a plain finish that still needed SIGKILL says so too.
    const QString killed = killed_ > 0 ? QString("\n%1 engine process(es) needed SIGKILL after the grace period").arg(killed_)
                                       : QString();
    dir_.reset();
    secret_path_.clear();
    conclude(QString("%1 node(s) finished in %2 s").arg(nodes_.size()).arg(elapsed_s()) + killed, stopped,
             nodes_.size() > 1 ? "the other nodes were stopped" + killed : QString());
}

}  // namespace thresher::launcher
