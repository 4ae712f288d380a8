// `thresher-launch check SPEC`: the pre-flight. Validates the spec, then for a local cluster
// checks that the engine runs (`thresher-engine devices`), that the data is there, and that each
// node's port is free for UDP and TCP, printing one verdict per node. For an SSH cluster every
// host is checked in parallel (launcher/ssh/preflight.h): one verdict line per node, then its
// checks indented. Exit 0: ready; 1: a check failed; 2: bad spec.
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "commands.h"
#include "batch_script.h"
#include "local_launcher.h"
#include "preflight.h"
#include "slurm_preflight.h"

#include "terminal_prompt.h"
#include "run_spec.h"

namespace thresher::launcher::cli {

namespace {

void say(const QString& line) { std::fprintf(stdout, "%s\n", qPrintable(line)); }

// Empty when 127.0.0.1:port can be bound with `type` (SOCK_DGRAM / SOCK_STREAM), else why not.
QString bind_problem(int port, int type) {
    const int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
    if (fd < 0) return QString("socket: ") + std::strerror(errno);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    QString problem;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        problem = errno == EADDRINUSE ? QString("in use") : QString(std::strerror(errno));
    ::close(fd);
    return problem;
}

// Runs `engine devices`; sets `detail` to the devices it lists or to what went wrong.
bool engine_runs(const QString& engine, QString& detail) {
    QProcess p;
    p.start(engine, {"devices"});
    if (!p.waitForStarted(10000)) {
        detail = "cannot start " + engine + ": " + p.errorString();
        return false;
    }
    if (!p.waitForFinished(30000)) {
        p.kill();
        p.waitForFinished();
        detail = engine + " devices: no answer within 30 s";
        return false;
    }
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        detail = QString("%1 devices: exit %2: %3").arg(engine).arg(p.exitCode())
                     .arg(QString::fromUtf8(p.readAllStandardError()).trimmed());
        return false;
    }
    QStringList devices;
    for (const QByteArray& line : p.readAllStandardOutput().split('\n')) {
        const QJsonObject o = QJsonDocument::fromJson(line).object();
        if (o.contains("device")) devices << o.value("device").toString() + ": " + o.value("description").toString();
    }
    detail = devices.isEmpty() ? QString("no devices listed") : devices.join("; ");
    return !devices.isEmpty();
}

int check_ssh_hosts(const RunSpec& spec, const CheckOptions& o) {
    const auto hosts = spec.cluster.all_hosts();
    std::vector<ssh::SshTarget> targets;
    for (const SshHost& host : hosts) targets.push_back(ssh::target_for(host, o.accept_new_host_keys));
    const auto verdicts = ssh::check_hosts(targets, spec.udp_port, ask_on_terminal, o.host_timeout_s);
    bool ok = true;
    for (size_t rank = 0; rank < verdicts.size(); ++rank) {
        const ssh::HostVerdict& v = verdicts[rank];
        say(QString("node %1  %2  %3").arg(rank).arg(QString::fromStdString(v.where), v.failed() ? "FAILED" : "ok"));
        for (const ssh::Check& c : v.checks)
            say(QString("  %1 %2 %3").arg(QString::fromStdString(c.name), -14).arg(ssh::to_string(c.status), -5)
                    .arg(QString::fromStdString(c.detail)));
        ok = ok && !v.failed();
    }
    say(ok ? "verdict: ready" : "verdict: NOT ready");
    return ok ? kExitOk : kExitFailed;
}

int check_slurm_cluster(const RunSpec& spec, const CheckOptions& o) {
    QString engine = LocalLauncher::find_engine(o.engine);
    if (!engine.isEmpty()) engine = QFileInfo(engine).absoluteFilePath();
    bool ok = !engine.isEmpty();
    if (engine.isEmpty()) say("engine: thresher-engine not found next to thresher-launch or on $PATH (use --engine)");
    for (const slurm::SlurmCheck& c : slurm::check_slurm(spec, engine.isEmpty() ? QString("thresher-engine") : engine,
                                                         o.host_timeout_s)) {
        say(QString("  %1 %2 %3").arg(c.name, -10).arg(slurm::to_string(c.status), -6).arg(c.detail));
        ok = ok && c.status != slurm::SlurmCheck::Status::Failed;
    }
    say(ok ? "verdict: ready" : "verdict: NOT ready");
    return ok ? kExitOk : kExitFailed;
}

}  // namespace

int script_command(const ScriptOptions& o) {
    const auto loaded = load_spec(o.spec);
    if (!loaded) return kExitUsage;
    if (loaded->cluster.kind != ClusterSettings::Kind::Slurm) {
        std::fprintf(stderr, "thresher-launch: error: %s: cluster.kind is \"%s\"; a batch script is for \"slurm\" clusters\n",
                     qPrintable(o.spec), to_string(loaded->cluster.kind));
        return kExitUsage;
    }
    QString engine = LocalLauncher::find_engine(o.engine);
    if (engine.isEmpty()) {
        std::fprintf(stderr, "thresher-launch: error: thresher-engine not found next to thresher-launch or on $PATH (use --engine)\n");
        return kExitFailed;
    }
    slurm::ScriptOptions so;
    so.engine = QFileInfo(engine).absoluteFilePath();
    std::fputs(qPrintable(slurm::batch_script(*loaded, so)), stdout);
    return kExitOk;
}

int check_command(const CheckOptions& o) {
    const auto loaded = load_spec(o.spec);
    if (!loaded) return kExitUsage;
    const RunSpec& spec = *loaded;
    say(QString("spec %1: valid (%2: %3 %4 node(s) × %5 worker(s), %6, udp_port %7)")
            .arg(o.spec, spec.name).arg(spec.node_count()).arg(to_string(spec.cluster.kind)).arg(spec.workers_per_node())
            .arg(spec.training.strategy).arg(spec.udp_port));
    say("model: " + (spec.model_is_inline() ? QString("inline") : spec.model_file()));

    if (spec.cluster.kind == ClusterSettings::Kind::Ssh) return check_ssh_hosts(spec, o);
    if (spec.cluster.kind == ClusterSettings::Kind::Slurm) return check_slurm_cluster(spec, o);

    bool ok = true;
    QString data = spec.data_argument();
    if (spec.data == "fashion-mnist") data = "/usr/share/datasets/fashion-mnist";
    const bool data_ok = QFileInfo::exists(data);
    say(QString("data: %1: %2").arg(data, data_ok ? "found" : "NOT FOUND"));
    ok = ok && data_ok;

    const QString engine = LocalLauncher::find_engine(o.engine);
    QString engine_detail;
    const bool engine_ok = !engine.isEmpty() && engine_runs(engine, engine_detail);
    if (engine.isEmpty()) engine_detail = "thresher-engine not found next to thresher-launch or on $PATH (use --engine)";
    say(QString("engine: %1: %2").arg(engine.isEmpty() ? QString("?") : engine, engine_detail));

    const QStringList endpoints = spec.node_endpoints();
    for (int rank = 0; rank < spec.node_count(); ++rank) {
        QStringList problems;
        if (!engine_ok) problems << "the engine does not run";
        QString ports = "no network (single node)";
        if (spec.node_count() > 1) {
            const int port = spec.udp_port + rank;
            for (const auto& [type, name] : {std::pair{SOCK_DGRAM, "UDP"}, std::pair{SOCK_STREAM, "TCP"}})
                if (const QString p = bind_problem(port, type); !p.isEmpty())
                    problems << QString("%1 port %2: %3").arg(name).arg(port).arg(p);
            ports = QString("UDP+TCP port %1 free").arg(port);
        }
        const QString where = spec.node_count() > 1 ? endpoints[rank] : QString("this machine");
        if (problems.isEmpty())
            say(QString("node %1  %2  ok: engine runs, %3").arg(rank).arg(where, ports));
        else
            say(QString("node %1  %2  FAILED: %3").arg(rank).arg(where, problems.join("; ")));
        ok = ok && problems.isEmpty();
    }
    say(ok ? "verdict: ready" : "verdict: NOT ready");
    return ok ? kExitOk : kExitFailed;
}

}  // namespace thresher::launcher::cli
