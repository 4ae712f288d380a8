// HostNode: one host's setup, engine and stop, on its own thread; see host_node.h.
#include "host_node.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <sys/utsname.h>

#include "event_stream.h"
#include "remote_process.h"
#include "remote_stage.h"
#include "sftp_client.h"

namespace thresher::launcher::ssh {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kPidTag = "thresher-pid ";
constexpr const char* kSystemFashionMnist = "/usr/share/datasets/fashion-mnist";

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

QString mib(qint64 bytes) { return QString::number(static_cast<double>(bytes) / (1 << 20), 'f', 1) + " MiB"; }

// The remote cache folder as a shell word: "~/x" becomes "$HOME"/'x' (the remote home).
std::string cache_word(const QString& cache) {
    if (cache == "~") return "\"$HOME\"";
    if (cache.startsWith("~/")) return "\"$HOME\"/" + shell_quote(cache.mid(2).toStdString());
    return shell_quote(cache.toStdString());
}

QStringList split_lines(std::string& pending, bool flush) {
    QStringList lines;
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
        QString line = QString::fromUtf8(pending.data(), static_cast<qsizetype>(nl));
        pending.erase(0, nl + 1);
        if (line.endsWith('\r')) line.chop(1);
        lines << line;
    }
    if (flush && !pending.empty()) {
        lines << QString::fromUtf8(pending);
        pending.clear();
    }
    return lines;
}

}  // namespace

std::string shell_quote(const std::string& text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

HostNode::HostNode(HostPlan plan, HostCallbacks callbacks) : plan_(std::move(plan)), callbacks_(std::move(callbacks)) {
    thread_ = std::thread([this] { main(); });
}

HostNode::~HostNode() {
    stop(true);
    if (thread_.joinable()) thread_.join();
}

QString HostNode::label() const { return QString("host %1 %2").arg(plan_.rank).arg(plan_.address); }

void HostNode::go() {
    const std::lock_guard lock(mutex_);
    go_ = true;
    cv_.notify_all();
}

void HostNode::stop(bool now) {
    {
        const std::lock_guard lock(mutex_);
        abort_ = true;
        cv_.notify_all();
    }
    int level = stop_level_.load();
    const int wanted = now ? 2 : 1;
    while (level < wanted && !stop_level_.compare_exchange_weak(level, wanted)) {
    }
}

void HostNode::check_abort() {
    if (abort_) throw Aborted{};
}

void HostNode::log(const QString& line) const {
    if (callbacks_.log) callbacks_.log(plan_.rank, line);
}

void HostNode::main() {
    HostOutcome outcome;
    try {
        run(outcome);
    } catch (const Aborted&) {
        outcome.kind = HostOutcome::Kind::Aborted;
    } catch (const std::exception& e) {
        outcome.kind = HostOutcome::Kind::Failed;
        outcome.message = label() + ": " + QString::fromUtf8(e.what());
    }
    if (callbacks_.done) callbacks_.done(plan_.rank, outcome);
}

void HostNode::run(HostOutcome& outcome) {
    const QString me = "[launcher] " + label();
    // 1. Connect, host key, login. An SshError names user@host:port and the step.
    SshSession session(plan_.target, plan_.ask_secret);
    check_abort();
    log(me + ": connected to " + QString::fromStdString(session.where()) + " (host key " +
        QString::fromStdString(session.host_key_fingerprint()) + (session.host_key_added() ? ", newly added" : "") + ")");

    // 2. Probe, in one round trip: the cache folder (absolute), the architecture, whether the
    //    host has fashion-mnist, and a fresh run folder for this run's files.
    const std::string probe = "set -e; c=" + cache_word(plan_.remote_cache) +
                              "; mkdir -p \"$c/bundles\" \"$c/data\" \"$c/runs\"; cd \"$c\"; pwd -P; uname -m; "
                              "if [ -d " + std::string(kSystemFashionMnist) + " ]; then echo yes; else echo no; fi; "
                              "mktemp -d \"$PWD/runs/run-XXXXXXXX\"";
    const ExecResult probed = session.exec(probe, plan_.target.connect_timeout_s + 20);
    const QStringList answer = QString::fromStdString(probed.out).split('\n', Qt::SkipEmptyParts);
    if (probed.exit_status != 0 || answer.size() != 4)
        throw LaunchError("cannot prepare " + plan_.remote_cache.toStdString() + " on the host: " +
                          (probed.err.empty() ? probed.out : probed.err));
    const std::string cache = answer[0].toStdString();
    const QString arch = answer[1];
    const bool has_fashion_mnist = answer[2] == "yes";
    const std::string run_dir = answer[3].toStdString();
    // From here on the run folder exists: remove it however this ends (best effort).
    struct RunDirCleanup {
        SshSession& s;
        std::string dir;
        ~RunDirCleanup() {
            try {
                s.exec("rm -rf " + shell_quote(dir), 10);
            } catch (...) {  // the connection may be gone; the folder is small
            }
        }
    } cleanup{session, run_dir};
    utsname local{};
    ::uname(&local);
    if (arch != QString::fromLatin1(local.machine))
        throw LaunchError("the host is " + arch.toStdString() + " and this machine " + local.machine +
                          ": the engine built here cannot run there");
    check_abort();

    // 3. The engine bundle, by hash; then ask the host's dynamic loader whether everything the
    //    engine and its HDF5 reader need resolves there (glibc comes from the host: too old a one
    //    shows up here).
    SftpClient sftp(session);
    const StagedTree bundle = plan_.bundle();
    const StageResult staged = stage_tree(sftp, cache, bundle);
    if (staged.uploaded)
        log(me + QString(": engine bundle %1 uploaded: %2 files, %3 in %4 s")
                     .arg(bundle.hash.left(12)).arg(bundle.files.size()).arg(mib(bundle.bytes))
                     .arg(staged.seconds, 0, 'f', 2));
    else
        log(me + ": engine bundle " + bundle.hash.left(12) + " already there");
    check_abort();
    const std::string engine = staged.dir + "/bin/thresher-engine";
    const std::string env = "LD_LIBRARY_PATH=" + shell_quote(staged.dir + "/lib");
    for (const std::string& program : {engine, staged.dir + "/bin/thresher-hdf5-reader"}) {
        const ExecResult deps = session.exec(env + " LD_TRACE_LOADED_OBJECTS=1 " + shell_quote(program) + " 2>&1", 30);
        QStringList missing;
        for (const QString& line : QString::fromStdString(deps.out).split('\n', Qt::SkipEmptyParts))
            if (line.contains("not found")) missing << line.trimmed();
        if (deps.exit_status != 0 || !missing.isEmpty())
            throw LaunchError("missing engine dependencies: the host cannot load " + program + ": " +
                              (missing.isEmpty() ? QString::fromStdString(deps.out).trimmed() : missing.join("; ")).toStdString());
        check_abort();
    }

    // 4. Data: fashion-mnist as the host has it, else this machine's copy; a path, staged.
    EngineFiles files;
    files.secret_on_stdin = true;
    files.run_nonce = QString::fromLatin1(plan_.run_nonce);
    const RunSpec& spec = plan_.spec;
    if (spec.data != "fashion-mnist" || !has_fashion_mnist) {
        const StagedTree data = plan_.data();
        const StageResult d = stage_tree(sftp, cache, data);
        log(me + (d.uploaded ? QString(": data %1 uploaded: %2 files, %3 in %4 s")
                                   .arg(data.hash.left(12)).arg(data.files.size()).arg(mib(data.bytes)).arg(d.seconds, 0, 'f', 2)
                             : QString(": data %1 already there").arg(data.hash.left(12))));
        files.data = QString::fromStdString(d.dir) + (data.entry.isEmpty() ? QString() : "/" + data.entry);
    }
    check_abort();

    // 5. This run's files: the model (and node 0's saved model, fetched at the end).
    files.model = QString::fromStdString(run_dir + "/model.json");
    sftp.write_file(files.model.toStdString(), plan_.model_json, 0644);
    const bool fetch_save = plan_.rank == 0 && !spec.save.isEmpty();
    if (fetch_save) files.save = QString::fromStdString(run_dir + "/model.thr");
    std::string command = "echo " + std::string(kPidTag) + "$$ >&2; exec env " + env;
    command.append(" ").append(shell_quote(engine));
    for (const QString& a : spec.engine_arguments(plan_.rank, files)) command.append(" ").append(shell_quote(a.toStdString()));
    if (plan_.heartbeat_timeout_s > 0) command.append(" --stdin-heartbeat ").append(std::to_string(plan_.heartbeat_timeout_s));

    // 6. Wait until every host is ready (or the run is called off).
    if (callbacks_.ready) callbacks_.ready(plan_.rank);
    {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return go_ || abort_; });
    }
    check_abort();

    // 7. Run the engine.
    log(me + ": " + QString::fromStdString(command));
    RemoteProcess engine_process(session, command);
    outcome.engine_started = true;
    engine_process.write_stdin(plan_.secret.toStdString() + "\n");
    EventStream stream(plan_.rank);
    std::string out, err;
    qint64 pid = 0;
    bool announced = false;
    const auto started = Clock::now();
    std::optional<Clock::time_point> stop_began;
    bool killed = false;
    QString start_timeout_message;
    const QString prefix = QString("[%1] ").arg(label());
    auto kill_group = [&] {
        if (killed) return;
        killed = true;
        if (pid <= 0) {
            // No pid yet (it is the first thing the command prints): closing the channel is all
            // there is; sshd then closes the engine's pipes.
            engine_process.close_stdin();
            return;
        }
        const std::string p = std::to_string(pid);
        log(me + ": killing process group " + QString::fromStdString(p));
        session.exec("kill -KILL -- -" + p + " 2>/dev/null; kill -KILL " + p + " 2>/dev/null; true", 10);
    };
    std::optional<Clock::time_point> killed_at;
    const double heartbeat_every_s = std::max(0.5, plan_.heartbeat_timeout_s / 6.0);
    auto last_heartbeat = Clock::now();
    for (;;) {
        if (plan_.heartbeat_timeout_s > 0 && !engine_process.stdin_closed() && seconds_since(last_heartbeat) >= heartbeat_every_s) {
            last_heartbeat = Clock::now();
            try {
                engine_process.write_stdin("\n");
            } catch (const SshError&) {
                // The engine is ending (its stdin is gone); poll() reports how.
            }
        }
        const bool more = engine_process.poll(50, out, err);
        if (!out.empty()) {
            QList<QJsonObject> events = stream.feed(QByteArray::fromStdString(out));
            out.clear();
            for (const auto& e : events)
                if (e.value("event").toString() == "run_started") announced = true;
            if (!events.isEmpty() && callbacks_.events) callbacks_.events(plan_.rank, events);
        }
        for (const QString& line : split_lines(err, !more)) {
            if (pid == 0 && line.startsWith(kPidTag)) {
                pid = line.mid(static_cast<qsizetype>(std::strlen(kPidTag))).toLongLong();
                log(me + QString(": engine pid %1").arg(pid));
                continue;
            }
            if (!line.trimmed().isEmpty()) {
                outcome.stderr_tail << line;
                if (outcome.stderr_tail.size() > kTailLines) outcome.stderr_tail.removeFirst();
            }
            log(prefix + line);
        }
        if (!more) break;
        // Stop requests: stdin closed first, SIGKILL to the group after the grace period.
        const int level = stop_level_.load();
        if (level >= 1 && !engine_process.stdin_closed()) {
            engine_process.close_stdin();
            stop_began = Clock::now();
        }
        if (!killed && (level >= 2 || (stop_began && seconds_since(*stop_began) * 1000 >= plan_.grace_ms))) {
            kill_group();
            killed_at = Clock::now();
        }
        if (!announced && !stop_began && !killed && seconds_since(started) >= plan_.start_timeout_s) {
            start_timeout_message = QString("the engine did not start within %1 s (no run_started event)").arg(plan_.start_timeout_s);
            kill_group();
            killed_at = Clock::now();
        }
        // A killed engine's channel closes at once; if it does not, stop waiting for it.
        if (killed_at && seconds_since(*killed_at) > 10) break;
    }
    for (const auto& e : stream.finish())
        if (callbacks_.events) callbacks_.events(plan_.rank, {e});
    outcome.exit_code = engine_process.exit_status();
    outcome.kind = HostOutcome::Kind::Ended;
    if (!start_timeout_message.isEmpty()) {
        outcome.kind = HostOutcome::Kind::Failed;
        outcome.message = label() + ": " + start_timeout_message;
    }

    // 8. Node 0's saved model comes home (after every epoch the engine saved it there).
    if (fetch_save) {
        try {
            if (sftp.exists(files.save.toStdString())) {
                sftp.download(files.save.toStdString(), spec.save_file());
                log(me + ": saved model fetched to " + spec.save_file());
            }
        } catch (const std::exception& e) {
            log(me + ": could not fetch the saved model: " + QString::fromUtf8(e.what()));
        }
    }
}

}  // namespace thresher::launcher::ssh
