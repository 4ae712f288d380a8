// A real OpenSSH sshd for the SSH suites, on 127.0.0.1 and a free port, with everything
// throw-away in a QTemporaryDir: host keys, a client key (authorized), an encrypted client key
// (authorized, passphrase kPassphrase), a key nobody authorized, and the client's known_hosts.
// The client logs in as root: sshd must run as root to switch users at all, and root is the one
// account every test machine has (PermitRootLogin prohibit-password: keys only; no PAM, no
// passwords; StrictModes off because the temp dir's modes are not sshd's business here).
// HOME is pointed at the temp dir so neither ~/.ssh of the machine nor an ssh-agent takes part.
// SFTP is served by sshd itself (internal-sftp), as the SSH launcher's uploads need. For the
// network-namespace suites, sshd can listen on another address inside a namespace (`ip netns
// exec NS sshd …`).
#pragma once

#include <QProcess>
#include <QString>
#include <QTemporaryDir>
#include <memory>

#include "preflight.h"
#include "ssh_session.h"

// A verdict as lines for test failure messages: where, then one line per check.
QString verdict_text(const thresher::launcher::ssh::HostVerdict& v);

class SshdFixture {
public:
    static constexpr const char* kPassphrase = "correct horse";

    // Empty when a real sshd can run here, else why not (for QSKIP).
    static QString unavailable();

    // Makes the keys and starts sshd with host key "host_a" on `address` (inside network
    // namespace `netns` when given); false with `error` set.
    bool start(QString& error, const QString& address = "127.0.0.1", const QString& netns = {});
    // Stops sshd and starts it again on the same port with a freshly generated host key.
    bool restart_with_new_host_key(QString& error);
    void stop();
    ~SshdFixture() { stop(); }

    int port() const { return port_; }
    const QString& address() const { return address_; }
    QString path(const QString& name) const { return dir_.filePath(name); }
    QString client_key() const { return path("client_key"); }
    QString encrypted_key() const { return path("encrypted_key"); }
    QString stranger_key() const { return path("stranger_key"); }
    QString known_hosts() const { return path("home/.ssh/known_hosts"); }

    // root@127.0.0.1:port with the client key, the fixture's known_hosts, no ssh config.
    thresher::launcher::ssh::SshTarget target(bool accept_new_host_key = false) const;
    // One entry of a run spec's cluster.hosts for this sshd: root, its port, `identity` (the
    // client key when empty).
    QString host_json(const QString& identity = {}) const;

private:
    bool keygen(const QString& name, const QString& passphrase, QString& error) const;
    bool launch(const QString& host_key, QString& error);

    QTemporaryDir dir_;
    std::unique_ptr<QProcess> sshd_;
    int port_ = 0;
    int host_keys_ = 0;
    QString address_ = "127.0.0.1";
    QString netns_;
};
