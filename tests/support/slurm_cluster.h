// A real one-node Slurm cluster for the Slurm suites, private to one test process: Debian's
// munged, slurmctld and slurmd (slurm-wlm 22.05) started from a generated slurm.conf in a
// QTemporaryDir, with their own ports (free ones), munge socket and key, state and spool folders,
// logs and pid files. Nothing is shared with a Slurm the machine may already run: every Slurm
// command the suite runs finds this cluster through SLURM_CONF (set in the test's environment by
// start(), so launchers and CLIs the test starts inherit it), and the munge socket is named in
// the conf (AuthInfo=socket=…).
//
// The cluster (a worked example on a 2-core machine):
//   NodeName=thr-node0 NodeAddr=127.0.0.1 CPUs=2      (the machine's CPUs)
//   PartitionName=main Nodes=thr-node0 Default=YES State=UP
//   PartitionName=down Nodes=thr-node0 State=DOWN     (jobs there stay PENDING: PartitionDown)
//   PartitionName=short Nodes=thr-node0 MaxTime=1     (EnforcePartLimits=ALL: sbatch refuses more)
// ProctrackType=proctrack/linuxproc and TaskPlugin=task/none (no cgroups needed); no accounting
// database (sacct is unavailable; finished jobs stay visible to squeue/scontrol for MinJobAge).
// Daemons must run as root: start() reports why not (for QSKIP) through unavailable().
//
// Several hosts (Options::hosts >= 2): each host's slurmd runs in a network
// namespace of its own, slurmctld and the "login node" in another, all joined by a bridge in a
// fourth (namespaces named thr-sl<pid>-…, made and deleted here):
//   login node + slurmctld 10.201.0.1;  NodeName=thr-host<h> NodeAddr=10.201.0.<h+1>, h = 1..hosts
// The daemons enter their namespace with nsenter (only the network one: `ip netns exec` would
// remount /sys, and slurmd needs the real cgroup folder). Slurm commands, and the launchers a
// test starts, must run on the login node: on_login_node(). All hosts share this machine's
// files (one munge socket, per-host spool folders %n).
//
// Accounting (Options::accounts, one host): a private MariaDB (mariadb-install-db, mariadbd on a
// free loopback port, its data in the folder) and slurmdbd, AccountingStorageEnforce=associations,
// and each named account added with sacctmgr and associated with root — so sbatch refuses any
// other account name, as a site that keeps accounting does.
#pragma once

#include <QDir>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace test_support {

class SlurmCluster {
public:
    static constexpr const char* kNode = "thr-node0";
    static constexpr const char* kPartition = "main";
    static constexpr const char* kDownPartition = "down";
    static constexpr const char* kShortPartition = "short";  // MaxTime 1 minute

    // Host h (1-based) of a cluster of several hosts.
    static QString host_name(int h) { return QString("thr-host%1").arg(h); }

    struct Options {
        int hosts = 1;          // several: each slurmd in a network namespace of its own
        QStringList accounts;   // non-empty: accounting (MariaDB + slurmdbd) with these accounts
    };

    // Empty when a private Slurm can run here, else why not (not root, a binary missing).
    static QString unavailable();
    // unavailable(), or why accounting cannot (MariaDB or slurmdbd missing).
    static QString accounting_unavailable();

    SlurmCluster() = default;
    SlurmCluster(const SlurmCluster&) = delete;
    SlurmCluster& operator=(const SlurmCluster&) = delete;
    ~SlurmCluster() { stop(); }

    // Writes the key and conf, starts munged, slurmctld, slurmd, and waits (30 s at most) until
    // partition main reports its node idle. Sets SLURM_CONF in this process's environment and
    // removes the other SLURM_* variables (a suite run inside a Slurm job must not think it is in
    // an allocation of that other cluster). False with `error` naming the step and its log.
    bool start(QString& error, const Options& options);
    bool start(QString& error);  // one host, no accounting
    // Cancels every job, waits (10 s at most) for the queue to drain, then ends the daemons.
    void stop();

    QString conf() const { return dir_.filePath("slurm.conf"); }
    QString path(const QString& name) const { return dir_.filePath(name); }
    int cpus() const { return cpus_; }
    int hosts() const { return hosts_; }
    // The program and arguments that run `program args` on the login node: as they are for one
    // host; through nsenter into the login node's network namespace for several.
    std::pair<QString, QStringList> on_login_node(const QString& program, const QStringList& args) const;

    // Runs a Slurm command (`squeue`, `scontrol`, …) against this cluster; true on exit 0 within
    // `timeout_ms`; stdout in `out`, stderr (or what went wrong) in `err`.
    bool command(const QString& program, const QStringList& args, QString* out = nullptr, QString* err = nullptr,
                 int timeout_ms = 30000) const;
    // squeue's jobs of this cluster (ids), every state it still shows.
    QStringList jobs() const;
    // The last lines of the daemons' logs, for failure messages.
    QString log_tail() const;

private:
    bool start_daemon(std::unique_ptr<QProcess>& p, const QString& program, const QStringList& args, QString& error,
                      const QString& netns = {}, const QString& log_name = {});
    bool make_network(QString& error);
    bool start_accounting(QString& error, const QString& socket);
    void remove_network();
    void end_strays() const;  // SIGKILL to processes left with this cluster's SLURM_CONF
    bool wait_for(const std::function<bool()>& ready, int timeout_ms) const;

    QTemporaryDir dir_{QDir::tempPath() + "/thresher-slurm-XXXXXX"};
    std::unique_ptr<QProcess> munged_, slurmctld_, slurmd_, mariadbd_, slurmdbd_;
    std::vector<std::unique_ptr<QProcess>> host_slurmds_;  // several hosts: one per namespace
    QStringList netns_;                                     // namespaces made (several hosts)
    int cpus_ = 1;
    int hosts_ = 1;
    QStringList accounts_;
    int db_port_ = 0, dbd_port_ = 0;  // accounting: MariaDB's and slurmdbd's loopback ports
    bool started_ = false;
};

}  // namespace test_support
