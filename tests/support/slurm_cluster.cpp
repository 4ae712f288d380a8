// A private one-node Slurm cluster; see slurm_cluster.h.
#include "slurm_cluster.h"

#include <QDeadlineTimer>
#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>
#include <QThread>
#include <thread>
#include <csignal>
#include <unistd.h>

#include "free_ports.h"
#include "netns_pair.h"

namespace test_support {

namespace {

const QStringList kDaemons{"munged", "slurmctld", "slurmd"};
const QStringList kCommands{"munge", "srun", "sbatch", "salloc", "squeue", "scontrol", "scancel", "sinfo"};

QString tail_of(const QString& file, int lines) {
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QStringList all = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    return all.mid(std::max<qsizetype>(0, all.size() - lines)).join('\n');
}

}  // namespace

QString SlurmCluster::unavailable() {
    if (::geteuid() != 0) return "needs root: munged, slurmctld and slurmd run as root";
    for (const QString& tool : kDaemons + kCommands)
        if (find_tool(tool).isEmpty()) return tool + " not installed (Debian packages slurm-wlm and munge)";
    return {};
}

QString SlurmCluster::accounting_unavailable() {
    if (const QString why = unavailable(); !why.isEmpty()) return why;
    for (const QString& tool : {"mariadb-install-db", "mariadbd", "mariadb", "slurmdbd", "sacctmgr"})
        if (find_tool(tool).isEmpty()) return tool + " not installed (Debian packages mariadb-server and slurmdbd)";
    return {};
}

bool SlurmCluster::wait_for(const std::function<bool()>& ready, int timeout_ms) const {
    const QDeadlineTimer deadline(timeout_ms);
    while (!deadline.hasExpired()) {
        if (ready()) return true;
        QThread::msleep(100);
    }
    return ready();
}

bool SlurmCluster::start_daemon(std::unique_ptr<QProcess>& p, const QString& program, const QStringList& args,
                                QString& error, const QString& netns, const QString& log_name) {
    p = std::make_unique<QProcess>();
    p->setProcessChannelMode(QProcess::MergedChannels);
    p->setStandardOutputFile(dir_.filePath((log_name.isEmpty() ? QFileInfo(program).fileName() : log_name) + ".out"));
    if (netns.isEmpty())
        p->start(find_tool(program), args);
    else  // nsenter execs the daemon: the QProcess is the daemon itself
        p->start(find_tool("nsenter"), QStringList{"--net=/run/netns/" + netns, find_tool(program)} + args);
    if (!p->waitForStarted(10000)) {
        error = "cannot start " + program + ": " + p->errorString();
        return false;
    }
    return true;
}

namespace {
QString host_address(int h) { return QString("10.201.0.%1").arg(h + 1); }  // h = 0: the login node
}  // namespace

bool SlurmCluster::make_network(QString& error) {
    const QString ip = find_tool("ip");
    if (ip.isEmpty() || find_tool("nsenter").isEmpty()) {
        error = "several hosts need the ip tool (iproute2) and nsenter (util-linux)";
        return false;
    }
    const QString prefix = QString("thr-sl%1-").arg(::getpid());
    const auto run = [&](const QStringList& args) {
        QString why;
        if (run_tool(ip, args, &why)) return true;
        error = "ip " + args.join(' ') + ": " + why;
        return false;
    };
    QStringList names{prefix + "sw", prefix + "login"};
    for (int h = 1; h <= hosts_; ++h) names << prefix + QString("h%1").arg(h);
    for (const QString& n : names) {
        if (!run({"netns", "add", n})) return false;
        netns_ << n;
        if (!run({"-n", n, "link", "set", "lo", "up"})) return false;
    }
    const QString sw = names[0];
    if (!run({"-n", sw, "link", "add", "br0", "type", "bridge"}) || !run({"-n", sw, "link", "set", "br0", "up"})) return false;
    for (int h = 0; h <= hosts_; ++h) {
        const QString ns = names[h + 1], port = QString("p%1").arg(h);
        if (!run({"link", "add", port, "netns", sw, "type", "veth", "peer", "name", "eth0", "netns", ns}) ||
            !run({"-n", sw, "link", "set", port, "master", "br0", "up"}) ||
            !run({"-n", ns, "addr", "add", host_address(h) + "/24", "dev", "eth0"}) || !run({"-n", ns, "link", "set", "eth0", "up"}))
            return false;
    }
    return true;
}

void SlurmCluster::remove_network() {
    const QString ip = find_tool("ip");
    for (const QString& n : netns_) run_tool(ip, {"netns", "delete", n});
    netns_.clear();
}

bool SlurmCluster::start_accounting(QString& error, const QString& socket) {
    QString why;
    if (!run_tool(find_tool("mariadb-install-db"), {"--no-defaults", "--datadir=" + path("db"), "--user=root",
                                                     "--auth-root-authentication-method=normal", "--skip-test-db"},
                  &why, 120000)) {
        error = "mariadb-install-db: " + why;
        return false;
    }
    if (!start_daemon(mariadbd_, "mariadbd",
                      {"--no-defaults", "--datadir=" + path("db"), "--socket=" + path("mysql.sock"),
                       "--port=" + QString::number(db_port_), "--bind-address=127.0.0.1", "--user=root",
                       "--pid-file=" + path("mariadbd.pid"), "--log-error=" + path("mariadbd.log"), "--skip-log-bin"},
                      error))
        return false;
    const QStringList ping{"--no-defaults", "-h127.0.0.1", "-P" + QString::number(db_port_), "-uroot", "-e", "select 1"};
    if (!wait_for([&] { return run_tool(find_tool("mariadb"), ping, nullptr, 5000); }, 30000)) {
        error = "MariaDB did not answer on 127.0.0.1:" + QString::number(db_port_) + " within 30 s: " + tail_of(path("mariadbd.log"), 5);
        return false;
    }
    // slurmdbd reads slurmdbd.conf beside SLURM_CONF; it must be 0600 and hold the database's login.
    QFile conf(path("slurmdbd.conf"));
    const QByteArray text = QString("AuthType=auth/munge\nAuthInfo=socket=%1\nDbdHost=localhost\nDbdAddr=127.0.0.1\n"
                                    "DbdPort=%2\nSlurmUser=root\nStorageType=accounting_storage/mysql\n"
                                    "StorageHost=127.0.0.1\nStoragePort=%3\nStorageUser=root\nStorageLoc=thresher_acct\n"
                                    "PidFile=%4\nLogFile=%5\n")
                                .arg(socket).arg(dbd_port_).arg(db_port_).arg(path("slurmdbd.pid"), path("slurmdbd.log"))
                                .toUtf8();
    if (!conf.open(QIODevice::WriteOnly) || !conf.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner) ||
        conf.write(text) != text.size()) {
        error = "cannot write " + conf.fileName() + ": " + conf.errorString();
        return false;
    }
    conf.close();
    if (!start_daemon(slurmdbd_, "slurmdbd", {"-D"}, error)) return false;
    QString out, err;
    if (!wait_for([&] { return command("sacctmgr", {"-n", "-P", "show", "cluster"}, &out, &err, 5000); }, 30000)) {
        error = "slurmdbd did not answer within 30 s (sacctmgr: " + err + "): " + tail_of(path("slurmdbd.log"), 5);
        return false;
    }
    QStringList steps{"add cluster thresher-test"};
    for (const QString& a : accounts_) steps << "add account " + a << "add user root account=" + a;
    for (const QString& step : steps)
        if (!command("sacctmgr", QStringList{"-i"} + step.split(' '), &out, &err, 30000)) {
            error = "sacctmgr -i " + step + ": " + err;
            return false;
        }
    return true;
}

void SlurmCluster::end_strays() const {
    // A job's orphaned processes (a batch script's background watchdog, say) escape
    // proctrack/linuxproc; on a real cluster they end on their own, but once this cluster's conf
    // is gone a Slurm command among them would wait for it forever. They carry our SLURM_CONF.
    const QByteArray mine = "SLURM_CONF=" + conf().toUtf8();
    for (const QString& entry : QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        bool numeric = false;
        const qint64 pid = entry.toLongLong(&numeric);
        if (!numeric || pid == ::getpid()) continue;
        QFile environ("/proc/" + entry + "/environ");
        if (environ.open(QIODevice::ReadOnly) && environ.readAll().split('\0').contains(mine)) ::kill(pid_t(pid), SIGKILL);
    }
}

std::pair<QString, QStringList> SlurmCluster::on_login_node(const QString& program, const QStringList& args) const {
    if (netns_.size() < 2) return {program, args};
    return {find_tool("nsenter"), QStringList{"--net=/run/netns/" + netns_[1], program} + args};
}

bool SlurmCluster::start(QString& error) { return start(error, Options{}); }

bool SlurmCluster::start(QString& error, const Options& options) {
    hosts_ = std::max(1, options.hosts);
    accounts_ = options.accounts;
    if (hosts_ > 1 && !accounts_.isEmpty()) {
        error = "SlurmCluster: accounting is for one host only";
        return false;
    }
    if (hosts_ > 1 && !make_network(error)) return false;
    if (!dir_.isValid()) {
        error = "cannot make a temporary folder: " + dir_.errorString();
        return false;
    }
    // Slurm's commands and the munge clients need to enter the folder; the key stays 0600.
    QFile::setPermissions(dir_.path(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner |
                                           QFileDevice::ReadGroup | QFileDevice::ExeGroup | QFileDevice::ReadOther |
                                           QFileDevice::ExeOther);
    QDir(dir_.path()).mkdir("state");
    {
        QFile key(path("munge.key"));
        QByteArray bytes(1024, Qt::Uninitialized);
        QRandomGenerator::system()->generate(bytes.begin(), bytes.end());
        if (!key.open(QIODevice::WriteOnly) || !key.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner) ||
            key.write(bytes) != bytes.size()) {
            error = "cannot write the munge key: " + key.errorString();
            return false;
        }
    }
    cpus_ = std::max(1, int(std::thread::hardware_concurrency()));
    const QList<int> ports = free_node_ports(2);
    // Accounting: slurmdbd's port and the database's (loopback only).
    const int dbd_port = accounts_.isEmpty() ? 0 : free_node_ports(1).first();
    const int db_port = accounts_.isEmpty() ? 0 : free_node_ports(1).first();
    const QString socket = path("munge.socket");
    QString conf_text = QString(R"(# Generated by tests/support/slurm_cluster.cpp: a private cluster.
ClusterName=thresher-test
SlurmctldHost=localhost(%10)
SlurmctldPort=%1
SlurmdPort=%2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%3
StateSaveLocation=%4/state
SlurmdSpoolDir=%4/spool-%n
SlurmctldPidFile=%4/slurmctld.pid
SlurmdPidFile=%4/slurmd-%n.pid
SlurmctldLogFile=%4/slurmctld.log
SlurmdLogFile=%4/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
%12SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=2
MinJobAge=300
EnforcePartLimits=ALL
%11PartitionName=%7 Nodes=%5 Default=YES MaxTime=INFINITE State=UP
PartitionName=%8 Nodes=%5 MaxTime=INFINITE State=DOWN
PartitionName=%9 Nodes=%5 MaxTime=1 State=UP
)");
    QString node_lines;
    QStringList node_names;
    if (hosts_ == 1) {
        node_names << kNode;
        node_lines = QString("NodeName=%1 NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=%2 State=UNKNOWN\n").arg(kNode).arg(cpus_);
    } else {
        for (int h = 1; h <= hosts_; ++h) {
            node_names << host_name(h);
            node_lines += QString("NodeName=%1 NodeAddr=%2 NodeHostname=localhost CPUs=%3 State=UNKNOWN\n")
                              .arg(host_name(h), host_address(h)).arg(cpus_);
        }
    }
    conf_text = conf_text.arg(ports[0]).arg(ports[1]).arg(socket, dir_.path(), node_names.join(','))
                    .arg(kPartition, kDownPartition, kShortPartition)
                    .arg(hosts_ == 1 ? QString("127.0.0.1") : host_address(0), node_lines,
                         accounts_.isEmpty() ? QString("AccountingStorageType=accounting_storage/none\n")
                                             : QString("AccountingStorageType=accounting_storage/slurmdbd\n"
                                                       "AccountingStorageHost=127.0.0.1\nAccountingStoragePort=%1\n"
                                                       "AccountingStorageEnforce=associations\n"
                                                       // the munge socket for slurmdbd connections
                                                       "AccountingStoragePass=%2\n").arg(dbd_port).arg(socket));
    db_port_ = db_port;
    dbd_port_ = dbd_port;
    QFile conf_file(conf());
    if (!conf_file.open(QIODevice::WriteOnly) || conf_file.write(conf_text.toUtf8()) != conf_text.toUtf8().size()) {
        error = "cannot write " + conf() + ": " + conf_file.errorString();
        return false;
    }
    conf_file.close();

    // Everything this process starts from now on talks to this cluster only.
    for (const QString& name : QProcessEnvironment::systemEnvironment().keys())
        if (name.startsWith("SLURM_")) qunsetenv(qPrintable(name));
    qputenv("SLURM_CONF", conf().toUtf8());
    started_ = true;

    // -f: munged refuses a key and socket in a folder others may enter unless forced; -F: stay
    // a child of this process, so stop() ends it.
    if (!start_daemon(munged_, "munged",
                      {"-F", "-f", "--socket=" + socket, "--key-file=" + path("munge.key"),
                       "--pid-file=" + path("munged.pid"), "--seed-file=" + path("munged.seed"),
                       "--log-file=" + path("munged.log")},
                      error))
        return false;
    if (!wait_for([&] { return command("munge", {"-S", socket, "-n"}, nullptr, nullptr, 5000); }, 10000)) {
        error = "munged did not answer on " + socket + " within 10 s: " + tail_of(path("munged.out"), 5);
        return false;
    }
    // -i: ignore state a previous cluster of this folder might have left (there is none).
    if (!accounts_.isEmpty() && !start_accounting(error, socket)) return false;
    const QString login = netns_.size() > 1 ? netns_[1] : QString();
    for (const QString& node : node_names) QDir(dir_.path()).mkdir("spool-" + node);
    if (!start_daemon(slurmctld_, "slurmctld", {"-D", "-i", "-f", conf()}, error, login))
        return false;
    if (hosts_ == 1) {
        if (!start_daemon(slurmd_, "slurmd", {"-D", "-N", kNode, "-f", conf()}, error)) return false;
    } else {
        for (int h = 1; h <= hosts_; ++h) {
            host_slurmds_.emplace_back();
            if (!start_daemon(host_slurmds_.back(), "slurmd", {"-D", "-N", host_name(h), "-f", conf()}, error, netns_[h + 1],
                              "slurmd-" + host_name(h)))
                return false;
        }
    }
    QString state;
    if (!wait_for(
            [&] {
                return command("sinfo", {"-h", "-p", kPartition, "-o", "%t"}, &state, nullptr, 5000) &&
                       state.trimmed() == "idle";
            },
            30000)) {
        error = "the nodes did not become idle within 30 s (sinfo: " + state.trimmed() + ")\n" + log_tail();
        return false;
    }
    return true;
}

bool SlurmCluster::command(const QString& program, const QStringList& args, QString* out, QString* err,
                           int timeout_ms) const {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SLURM_CONF", conf());
    p.setProcessEnvironment(env);
    const auto [exe, argv] = on_login_node(find_tool(program), args);
    p.start(exe, argv);
    const bool finished = p.waitForStarted(timeout_ms) && p.waitForFinished(timeout_ms);
    if (!finished) {
        p.kill();
        p.waitForFinished(5000);
    }
    if (out) *out = QString::fromUtf8(p.readAllStandardOutput());
    if (err) *err = finished ? QString::fromUtf8(p.readAllStandardError()).trimmed()
                             : program + ": no answer within " + QString::number(timeout_ms) + " ms";
    return finished && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

QStringList SlurmCluster::jobs() const {
    QString out;
    if (!command("squeue", {"-h", "-t", "all", "-o", "%i"}, &out, nullptr, 10000)) return {};
    return out.split('\n', Qt::SkipEmptyParts);
}

QString SlurmCluster::log_tail() const {
    QStringList parts;
    QStringList logs{"slurmctld.log", "munged.out", "slurmctld.out", "slurmdbd.log", "mariadbd.log"};
    for (const QString& f : QDir(dir_.path()).entryList({"slurmd-*.log", "slurmd*.out"}, QDir::Files)) logs << f;
    for (const QString& log : logs)
        if (const QString t = tail_of(path(log), 6); !t.isEmpty()) parts << "--- " + log + "\n" + t;
    return parts.join('\n');
}

void SlurmCluster::stop() {
    if (started_ && slurmctld_) {
        // Jobs first, so no slurmstepd (they detach from slurmd) outlives the cluster.
        command("scancel", {"--user=root", "--full"}, nullptr, nullptr, 10000);
        wait_for([&] {
            QString out;
            return command("squeue", {"-h", "-o", "%i"}, &out, nullptr, 5000) && out.trimmed().isEmpty();
        }, 10000);
    }
    std::vector<std::unique_ptr<QProcess>*> daemons{&slurmd_};
    for (auto& d : host_slurmds_) daemons.push_back(&d);
    daemons.push_back(&slurmctld_);
    daemons.push_back(&slurmdbd_);
    daemons.push_back(&mariadbd_);
    daemons.push_back(&munged_);
    for (auto* p : daemons) {
        if (!*p) continue;
        (*p)->terminate();
        if (!(*p)->waitForFinished(10000)) {
            (*p)->kill();
            (*p)->waitForFinished(5000);
        }
        p->reset();
    }
    host_slurmds_.clear();
    end_strays();
    remove_network();
    if (started_) qunsetenv("SLURM_CONF");
    started_ = false;
}

}  // namespace test_support
