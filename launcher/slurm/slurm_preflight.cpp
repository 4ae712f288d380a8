// The Slurm pre-flight; see preflight.h.
#include "slurm_preflight.h"

#include <QMap>
#include <algorithm>
#include <QRegularExpression>
#include <pwd.h>
#include <unistd.h>

#include "command.h"

namespace thresher::launcher::slurm {

namespace {

using Status = SlurmCheck::Status;

// `scontrol -o show partition P`: "PartitionName=main … MaxTime=UNLIMITED … State=UP …".
QMap<QString, QString> key_values(const QString& line) {
    QMap<QString, QString> out;
    for (const QString& field : line.split(' ', Qt::SkipEmptyParts)) {
        const qsizetype eq = field.indexOf('=');
        if (eq > 0) out[field.left(eq)] = field.mid(eq + 1);
    }
    return out;
}

// "gpu:2", "gpu:a100:4(S:0-1)", "gpu:1,mps:100" → the number of GPUs; 0 for "(null)".
int gpus_in(const QString& gres) {
    int n = 0;
    for (const QString& item : gres.split(',', Qt::SkipEmptyParts)) {
        if (!item.startsWith("gpu")) continue;
        const QString plain = item.section('(', 0, 0);
        n += plain.section(':', -1).toInt();
    }
    return n;
}

// The spec's account: Slurm refuses a job whose user has no association with it — but only where
// the cluster keeps accounting (slurmdbd); without it any name is accepted, and this says so.
SlurmCheck check_account(const QString& account, int ms) {
    const CommandResult config = run_command("scontrol", {"show", "config"}, ms);
    QString storage;
    for (const QString& line : config.out.split('\n'))
        if (line.startsWith("AccountingStorageType")) storage = line.section('=', 1).trimmed();
    if (!config.ok()) return {"account", Status::Warning, "\"" + account + "\" not checked: " + config.error()};
    if (storage.isEmpty() || storage.endsWith("/none"))
        return {"account", Status::Warning,
                "\"" + account + "\" not checked: this cluster keeps no accounting (AccountingStorageType=" +
                    (storage.isEmpty() ? QString("none") : storage) + "), so Slurm accepts any account name"};
    const passwd* pw = ::getpwuid(::geteuid());  // who sbatch submits as (not $USER, which may be unset)
    const QString user = pw ? QString::fromLocal8Bit(pw->pw_name) : QString::number(::geteuid());
    const CommandResult assoc = run_command(
        "sacctmgr", {"--noheader", "--parsable2", "show", "associations", "where", "users=" + user, "accounts=" + account,
                     "format=Account"}, ms);
    if (!assoc.ok()) return {"account", Status::Warning, "\"" + account + "\" not checked: " + assoc.error()};
    if (assoc.out.trimmed().isEmpty())
        return {"account", Status::Failed,
                "no such account for user " + user + ": \"" + account +
                    "\" (sacctmgr show associations has none); sbatch would refuse the job (Invalid account)"};
    return {"account", Status::Ok, "\"" + account + "\": user " + user + " has an association (sacctmgr)"};
}

}  // namespace

const char* to_string(SlurmCheck::Status status) {
    switch (status) {
    case Status::Ok: return "ok";
    case Status::Warning: return "warn";
    case Status::Failed: return "FAILED";
    }
    return "?";
}

std::optional<SlurmCheck> check_gpus_for_device(const RunSpec& spec) {
    const int gpus = spec.cluster.slurm.gpus_per_node;
    bool cuda = false;
    for (const auto& d : spec.training.device.devices()) cuda = cuda || d.rfind("cuda", 0) == 0;
    const QString device = QString::fromStdString(spec.training.device.text());
    if (gpus > 0 && !cuda)
        return SlurmCheck{"device", Status::Warning,
                          QString("%1 GPU(s) per node asked, but the Training device is %2: the engines will not use "
                                  "them (set the device to cuda, or ask for no GPUs)").arg(gpus).arg(device)};
    if (gpus == 0 && cuda)
        return SlurmCheck{"device", Status::Warning,
                          QString("the Training device is %1, but no GPUs are asked per node: on a cluster that "
                                  "schedules GPUs as gres, the job may see none (set GPUs per node)").arg(device)};
    if (gpus > 0) return SlurmCheck{"device", Status::Ok, QString("%1 on %2 GPU(s) per node").arg(device).arg(gpus)};
    return std::nullopt;
}

QList<SlurmCheck> check_slurm(const RunSpec& spec, const QString& engine, int timeout_s) {
    QList<SlurmCheck> out;
    if (auto d = check_gpus_for_device(spec)) out << *d;
    const int ms = timeout_s * 1000;
    const SlurmSettings& s = spec.cluster.slurm;

    const CommandResult version = run_command("sinfo", {"--version"}, ms);
    if (!version.ok()) {
        out << SlurmCheck{"slurm", Status::Failed, version.error()};
        return out;
    }
    out << SlurmCheck{"slurm", Status::Ok, version.out.trimmed()};

    // The partition: the spec's, else the cluster's default ("main*" in sinfo's list).
    QString partition = s.partition;
    if (partition.isEmpty()) {
        const CommandResult list = run_command("sinfo", {"-h", "-o", "%P"}, ms);
        for (const QString& p : list.out.split('\n', Qt::SkipEmptyParts))
            if (p.endsWith('*')) partition = p.chopped(1);
        if (partition.isEmpty()) {
            out << SlurmCheck{"partition", Status::Failed,
                              list.ok() ? "the spec names no partition and the cluster has no default one" : list.error()};
            return out;
        }
    }
    const CommandResult part = run_command("scontrol", {"-o", "show", "partition", partition}, ms);
    if (!part.ok() || !part.out.contains("PartitionName=")) {
        out << SlurmCheck{"partition", Status::Failed,
                          "partition \"" + partition + "\" does not exist (" +
                              (part.ok() ? part.out.trimmed() : part.error()) + ")"};
        return out;
    }
    const auto p = key_values(part.out.trimmed());
    const bool up = p.value("State") == "UP";
    out << SlurmCheck{"partition", up ? Status::Ok : Status::Failed,
                      QString("%1: State=%2%3").arg(partition, p.value("State"),
                                                    up ? QString() : " (jobs there wait until an administrator sets it UP)")};

    // Nodes: one line per node with its state, CPUs and gres.
    const CommandResult nodes = run_command("sinfo", {"-h", "-N", "-p", partition, "-o", "%N|%t|%c|%G"}, ms);
    if (!nodes.ok()) {
        out << SlurmCheck{"nodes", Status::Failed, nodes.error()};
    } else {
        QMap<QString, int> by_state;
        int usable = 0, big_enough = 0, with_gpus = 0;
        QStringList seen;
        for (const QString& line : nodes.out.split('\n', Qt::SkipEmptyParts)) {
            const QStringList f = line.split('|');
            if (f.size() < 4 || seen.contains(f[0])) continue;
            seen << f[0];
            const QString state = f[1];
            ++by_state[state];
            const bool ok_state = !state.startsWith("down") && !state.startsWith("drain") && !state.startsWith("drng") &&
                                  !state.startsWith("fail") && !state.startsWith("unk") && !state.startsWith("inval");
            if (!ok_state) continue;
            ++usable;
            if (f[2].toInt() >= s.tasks_per_node * s.cpus_per_task) ++big_enough;
            if (gpus_in(f[3]) >= s.gpus_per_node) ++with_gpus;
        }
        QStringList counts;
        for (auto it = by_state.begin(); it != by_state.end(); ++it) counts << QString("%1 %2").arg(it.value()).arg(it.key());
        const QString summary = QString("%1 node(s) (%2); the run needs %3").arg(seen.size()).arg(counts.join(", ")).arg(spec.cluster.nodes);
        if (usable < spec.cluster.nodes)
            out << SlurmCheck{"nodes", Status::Failed, summary + QString(", only %1 up").arg(usable)};
        else if (big_enough < spec.cluster.nodes)
            out << SlurmCheck{"nodes", Status::Failed,
                              summary + QString(", with %1 CPUs each (%2 tasks × %3): only %4 node(s) have that many")
                                            .arg(s.tasks_per_node * s.cpus_per_task).arg(s.tasks_per_node).arg(s.cpus_per_task)
                                            .arg(big_enough)};
        else
            out << SlurmCheck{"nodes", Status::Ok, summary};
        if (s.gpus_per_node > 0)
            out << SlurmCheck{"gpus", with_gpus >= spec.cluster.nodes ? Status::Ok : Status::Failed,
                              QString("%1 GPU(s) per node asked; %2 node(s) have that many (gres)").arg(s.gpus_per_node).arg(with_gpus)};
    }

    const QString max_time = p.value("MaxTime");
    if (s.time) {
        const bool unlimited = max_time == "UNLIMITED" || max_time == "INFINITE";
        const auto limit = unlimited ? std::nullopt : parse_slurm_time(max_time);
        const bool fits = unlimited || (limit && *s.time <= *limit);
        out << SlurmCheck{"time", fits ? Status::Ok : Status::Failed,
                          QString("%1 asked, partition MaxTime %2").arg(format_slurm_time(*s.time), max_time)};
    }

    if (!s.account.isEmpty()) out << check_account(s.account, ms);

    // The engine on the nodes themselves: one task per node runs `ENGINE devices` — only when the
    // partition could run the job at all (else srun would wait out --immediate for nothing).
    if (std::any_of(out.begin(), out.end(), [](const SlurmCheck& c) { return c.status == Status::Failed; })) {
        out << SlurmCheck{"engine", Status::Warning, "not checked on the nodes: the checks above must pass first"};
        return out;
    }
    QStringList args{"--nodes=" + QString::number(spec.cluster.nodes), "--ntasks-per-node=1", "--partition=" + partition};
    if (!qEnvironmentVariableIsSet("SLURM_JOB_ID")) args << "--immediate=" + QString::number(timeout_s) << "--time=1";
    if (!s.account.isEmpty()) args << "--account=" + s.account;
    if (!s.qos.isEmpty()) args << "--qos=" + s.qos;
    args << "--label" << engine << "devices";
    const CommandResult probe = run_command("srun", args, ms + 10000);
    if (probe.ok()) {
        const int lines = int(probe.out.count("\"device\""));
        out << SlurmCheck{"engine", Status::Ok, QString("%1 runs on the nodes (%2 device line(s))").arg(engine).arg(lines)};
    } else if (probe.err.contains("Immediate execution impossible") || probe.err.contains("Unable to allocate resources: Requested node")) {
        out << SlurmCheck{"engine", Status::Warning,
                          "not checked: no nodes free within " + QString::number(timeout_s) + " s to look (" +
                              probe.err.trimmed().section('\n', 0, 0) + ")"};
    } else if (probe.err.contains("No such file or directory") && s.stage != SlurmSettings::Stage::Never) {
        out << SlurmCheck{"engine", Status::Warning,
                          engine + " is not on the nodes at that path; the run copies it there with sbcast (cluster.stage " +
                              (s.stage == SlurmSettings::Stage::Always ? "always" : "auto") +
                              "); its shared libraries must be installed there (" + probe.err.trimmed().section('\n', 0, 0) + ")"};
    } else {
        out << SlurmCheck{"engine", Status::Failed, engine + " devices on the nodes: " + probe.error()};
    }
    return out;
}

}  // namespace thresher::launcher::slurm
