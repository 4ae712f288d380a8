// SshdFixture: ssh-keygen for the keys, then `/usr/sbin/sshd -D -e -f CONFIG`, ready once it logs
// "Server listening on 127.0.0.1 port N".
#include "sshd_fixture.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <unistd.h>

#include "launch_fixture.h"

namespace {
const char* const kSshd = "/usr/sbin/sshd";
const char* const kKeygen = "/usr/bin/ssh-keygen";
}  // namespace

QString SshdFixture::unavailable() {
    if (!QFileInfo(kSshd).isExecutable()) return QString("%1 not found (apt-get install openssh-server)").arg(kSshd);
    if (!QFileInfo(kKeygen).isExecutable()) return QString("%1 not found (apt-get install openssh-client)").arg(kKeygen);
    if (::geteuid() != 0) return "not root: the test sshd must run as root (it logs the client in as root)";
    return {};
}

bool SshdFixture::keygen(const QString& name, const QString& passphrase, QString& error) const {
    QProcess p;
    p.start(kKeygen, {"-q", "-t", "ed25519", "-N", passphrase, "-C", "thresher-test", "-f", path(name)});
    if (!p.waitForFinished(30000) || p.exitCode() != 0) {
        error = "ssh-keygen " + name + ": " + QString::fromUtf8(p.readAllStandardError());
        return false;
    }
    return true;
}

bool SshdFixture::start(QString& error, const QString& address, const QString& netns) {
    address_ = address;
    netns_ = netns;
    if (!dir_.isValid()) {
        error = "no temporary directory";
        return false;
    }
    QDir().mkpath(path("home/.ssh"));
    qputenv("HOME", path("home").toUtf8());
    qunsetenv("SSH_AUTH_SOCK");
    for (const auto& [name, passphrase] : {std::pair{"client_key", ""}, std::pair{"encrypted_key", kPassphrase},
                                           std::pair{"stranger_key", ""}, std::pair{"host_a", ""}})
        if (!keygen(name, passphrase, error)) return false;
    QByteArray authorized;
    for (const char* name : {"client_key.pub", "encrypted_key.pub"}) {
        QFile f(path(name));
        if (!f.open(QIODevice::ReadOnly)) {
            error = "cannot read " + f.fileName();
            return false;
        }
        authorized += f.readAll();
    }
    if (!launch_fixture::write_file(path("authorized_keys"), authorized)) {
        error = "cannot write authorized_keys";
        return false;
    }
    port_ = launch_fixture::free_ports(1);
    return launch("host_a", error);
}

bool SshdFixture::restart_with_new_host_key(QString& error) {
    stop();
    const QString name = QString("host_%1").arg(++host_keys_);
    return keygen(name, "", error) && launch(name, error);
}

bool SshdFixture::launch(const QString& host_key, QString& error) {
    const QString config = QString("Port %1\n"
                                   "ListenAddress %5\n"
                                   "HostKey %2\n"
                                   "AuthorizedKeysFile %3\n"
                                   "PidFile %4\n"
                                   "Subsystem sftp internal-sftp\n"
                                   "PermitRootLogin prohibit-password\n"
                                   "PubkeyAuthentication yes\n"
                                   "PasswordAuthentication no\n"
                                   "KbdInteractiveAuthentication no\n"
                                   "UsePAM no\n"
                                   "StrictModes no\n"
                                   "LogLevel VERBOSE\n")
                               .arg(port_).arg(path(host_key), path("authorized_keys"), path("sshd.pid"), address_);
    if (!launch_fixture::write_file(path("sshd_config"), config.toUtf8())) {
        error = "cannot write sshd_config";
        return false;
    }
    QDir().mkpath("/run/sshd");  // sshd's privilege-separation directory
    // The log goes to a file: a pipe nobody reads while a test runs could fill and stall sshd.
    const QString log_file = path(QString("sshd-%1.log").arg(host_key));
    sshd_ = std::make_unique<QProcess>();
    sshd_->setStandardOutputFile(log_file);
    sshd_->setStandardErrorFile(log_file);
    const QStringList sshd_args{"-D", "-e", "-f", path("sshd_config")};
    if (netns_.isEmpty()) sshd_->start(kSshd, sshd_args);
    else sshd_->start("ip", QStringList{"netns", "exec", netns_, kSshd} + sshd_args);
    if (!sshd_->waitForStarted(10000)) {
        error = "cannot start sshd: " + sshd_->errorString();
        return false;
    }
    QElapsedTimer waited;
    waited.start();
    const QByteArray ready = QString("Server listening on %1 port %2").arg(address_).arg(port_).toUtf8();
    while (true) {
        QFile f(log_file);
        const QByteArray log = f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        if (log.contains(ready)) break;
        if (sshd_->state() != QProcess::Running || waited.elapsed() > 15000) {
            error = "sshd did not start listening: " + QString::fromUtf8(log);
            return false;
        }
        sshd_->waitForFinished(100);
    }
    return true;
}

void SshdFixture::stop() {
    if (!sshd_) return;
    sshd_->terminate();
    if (!sshd_->waitForFinished(5000)) {
        sshd_->kill();
        sshd_->waitForFinished(5000);
    }
    sshd_.reset();
}

thresher::launcher::ssh::SshTarget SshdFixture::target(bool accept_new_host_key) const {
    thresher::launcher::ssh::SshTarget t;
    t.host = address_.toStdString();
    t.port = port_;
    t.user = "root";
    t.identity_file = client_key().toStdString();
    t.known_hosts_file = known_hosts().toStdString();
    t.ssh_config_file = path("no-ssh-config").toStdString();
    t.connect_timeout_s = 5;
    t.accept_new_host_key = accept_new_host_key;
    return t;
}

QString SshdFixture::host_json(const QString& identity) const {
    return QString(R"({"address":"%1","port":%2,"user":"root","identity_file":"%3"})")
        .arg(address_).arg(port_).arg(identity.isEmpty() ? client_key() : identity);
}

QString verdict_text(const thresher::launcher::ssh::HostVerdict& v) {
    QString t = QString::fromStdString(v.where);
    for (const auto& c : v.checks)
        t += QString("\n  %1 %2 %3").arg(QString::fromStdString(c.name), thresher::launcher::ssh::to_string(c.status),
                                         QString::fromStdString(c.detail));
    return t;
}
