// SshSession against a real sshd on loopback (sshd_fixture.h): host keys are learnt only when
// asked, then trusted; a changed key and an unknown one are refused, naming host, port and file;
// a key the server does not know is refused at auth; an encrypted key needs its passphrase from
// the callback; ~/.ssh/config aliases resolve; nobody listening, or a silent listener, fails
// within the connect timeout; exec returns status, stdout and stderr and honours its deadline;
// every session's socket has TCP keepalive; a pinned fingerprint admits only the approved key.
#include <QtTest>

#include <QElapsedTimer>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launch_fixture.h"
#include "sshd_fixture.h"

using namespace thresher::launcher::ssh;

namespace {

// Runs `connect`; returns the SshError it threw (or fails the test when it threw none).
template <typename F>
std::optional<SshError> error_of(F&& connect) {
    try {
        connect();
    } catch (const SshError& e) {
        return e;
    }
    return std::nullopt;
}

}  // namespace

class TestSshSession : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void unknown_host_key_is_refused();
    void accepted_host_key_is_recorded_and_exec_works();
    void known_host_key_connects_without_accepting();
    void exec_reports_status_stderr_and_deadline();
    void wrong_identity_is_refused_at_auth();
    void encrypted_identity_needs_its_passphrase();
    void ssh_config_alias_resolves();
    void nobody_listening_fails_fast();
    void silent_listener_fails_within_the_timeout();
    void keepalive_on_every_session();
    void changed_host_key_is_refused();
    void approved_fingerprint_is_pinned();

private:
    SshdFixture sshd_;
};

void TestSshSession::initTestCase() {
    if (const QString why = SshdFixture::unavailable(); !why.isEmpty()) QSKIP(qPrintable("no real sshd here: " + why));
    QString error;
    QVERIFY2(sshd_.start(error), qPrintable(error));
}

void TestSshSession::unknown_host_key_is_refused() {
    const auto e = error_of([&] { SshSession s(sshd_.target(false)); });
    QVERIFY(e);
    QCOMPARE(e->step(), SshStep::HostKey);
    const QString message = e->what();
    QVERIFY2(message.contains(QString("root@127.0.0.1:%1: host key: unknown host key").arg(sshd_.port())), e->what());
    QVERIFY2(message.contains("SHA256:") && message.contains(sshd_.known_hosts()), e->what());
    QVERIFY(!QFile::exists(sshd_.known_hosts()));
}

void TestSshSession::accepted_host_key_is_recorded_and_exec_works() {
    SshSession s(sshd_.target(true));
    QVERIFY(s.host_key_added());
    QCOMPARE(QString::fromStdString(s.where()), QString("root@127.0.0.1:%1").arg(sshd_.port()));
    const ExecResult r = s.exec("echo hello", 10);
    QCOMPARE(r.exit_status, 0);
    QCOMPARE(r.out, std::string("hello\n"));
    QCOMPARE(r.err, std::string());
    QFile known(sshd_.known_hosts());
    QVERIFY(known.open(QIODevice::ReadOnly));
    QVERIFY(known.readAll().contains(QString("[127.0.0.1]:%1 ssh-ed25519 ").arg(sshd_.port()).toUtf8()));
}

void TestSshSession::known_host_key_connects_without_accepting() {
    SshSession s(sshd_.target(false));
    QVERIFY(!s.host_key_added());
    QCOMPARE(s.exec("echo again", 10).out, std::string("again\n"));
}

void TestSshSession::exec_reports_status_stderr_and_deadline() {
    SshSession s(sshd_.target(false));
    const ExecResult r = s.exec("echo out; echo err >&2; exit 3", 10);
    QCOMPARE(r.exit_status, 3);
    QCOMPARE(r.out, std::string("out\n"));
    QCOMPARE(r.err, std::string("err\n"));
    // A big output is read to the end, not cut at a buffer.
    QCOMPARE(s.exec("head -c 300000 /dev/zero | tr '\\0' x", 10).out.size(), size_t{300000});
    QElapsedTimer t;
    t.start();
    const auto e = error_of([&] { s.exec("sleep 20", 1); });
    QVERIFY(e);
    QCOMPARE(e->step(), SshStep::Exec);
    QVERIFY2(QString(e->what()).contains("did not finish within 1 s"), e->what());
    QVERIFY2(t.elapsed() < 4000, qPrintable(QString::number(t.elapsed())));
}

void TestSshSession::wrong_identity_is_refused_at_auth() {
    SshTarget target = sshd_.target(false);
    target.identity_file = sshd_.stranger_key().toStdString();
    const auto e = error_of([&] { SshSession s(target); });
    QVERIFY(e);
    QCOMPARE(e->step(), SshStep::Auth);
    QVERIFY2(QString(e->what()).contains(QString("ssh root@127.0.0.1:%1: auth: refused").arg(sshd_.port())), e->what());
    QVERIFY2(QString(e->what()).contains(sshd_.stranger_key()), e->what());

    target.identity_file = sshd_.path("no-such-key").toStdString();
    const auto missing = error_of([&] { SshSession s(target); });
    QVERIFY(missing);
    QVERIFY2(QString(missing->what()).contains("does not exist"), missing->what());
}

void TestSshSession::encrypted_identity_needs_its_passphrase() {
    SshTarget target = sshd_.target(false);
    target.identity_file = sshd_.encrypted_key().toStdString();
    const auto none = error_of([&] { SshSession s(target); });
    QVERIFY(none);
    QCOMPARE(none->step(), SshStep::Auth);
    QVERIFY2(QString(none->what()).contains("no passphrase was given"), none->what());

    QStringList prompts;
    const AskSecret wrong = [&](const std::string& prompt) -> std::optional<std::string> {
        prompts << QString::fromStdString(prompt);
        return std::string("wrong");
    };
    const auto refused = error_of([&] { SshSession s(target, wrong); });
    QVERIFY(refused);
    QVERIFY2(QString(refused->what()).contains("wrong passphrase"), refused->what());
    QCOMPARE(prompts.size(), 1);
    QVERIFY2(prompts[0].contains(sshd_.encrypted_key()), qPrintable(prompts[0]));

    const AskSecret right = [](const std::string&) -> std::optional<std::string> { return SshdFixture::kPassphrase; };
    SshSession s(target, right);
    QCOMPARE(s.exec("echo unlocked", 10).out, std::string("unlocked\n"));
}

void TestSshSession::ssh_config_alias_resolves() {
    const QString config = QString("Host thresher-alias\n  HostName 127.0.0.1\n  Port %1\n  User root\n  IdentityFile %2\n")
                               .arg(sshd_.port()).arg(sshd_.client_key());
    QVERIFY(launch_fixture::write_file(sshd_.path("ssh_config"), config.toUtf8()));
    SshTarget target;
    target.host = "thresher-alias";
    target.known_hosts_file = sshd_.known_hosts().toStdString();
    target.ssh_config_file = sshd_.path("ssh_config").toStdString();
    SshSession s(target);  // the key came from the config's IdentityFile, through publickey auto
    QCOMPARE(QString::fromStdString(s.where()), QString("root@127.0.0.1:%1").arg(sshd_.port()));
    QCOMPARE(s.exec("echo aliased", 10).out, std::string("aliased\n"));
}

void TestSshSession::nobody_listening_fails_fast() {
    SshTarget target = sshd_.target(true);
    target.port = launch_fixture::free_ports(1);
    target.connect_timeout_s = 3;
    QElapsedTimer t;
    t.start();
    const auto e = error_of([&] { SshSession s(target); });
    QVERIFY(e);
    QCOMPARE(e->step(), SshStep::Connect);
    QVERIFY2(QString(e->what()).contains(QString("ssh root@127.0.0.1:%1: connect: ").arg(target.port)), e->what());
    QVERIFY2(t.elapsed() < (3 + 3) * 1000, qPrintable(QString::number(t.elapsed())));
}

void TestSshSession::silent_listener_fails_within_the_timeout() {
    // Accepts TCP (the kernel's backlog) but never says a word: only the timeout ends the wait.
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    QVERIFY(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    QVERIFY(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 4) == 0);
    QVERIFY(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    SshTarget target = sshd_.target(true);
    target.port = ntohs(a.sin_port);
    target.connect_timeout_s = 2;
    QElapsedTimer t;
    t.start();
    const auto e = error_of([&] { SshSession s(target); });
    const qint64 took = t.elapsed();
    ::close(fd);
    QVERIFY(e);
    QCOMPARE(e->step(), SshStep::Connect);
    QVERIFY2(took < (2 + 3) * 1000, qPrintable(QString("%1 ms: %2").arg(took).arg(e->what())));
}

void TestSshSession::changed_host_key_is_refused() {
    QString error;
    QVERIFY2(sshd_.restart_with_new_host_key(error), qPrintable(error));
    for (const bool accept : {false, true}) {  // accepting new keys never accepts a changed one
        const auto e = error_of([&] { SshSession s(sshd_.target(accept)); });
        QVERIFY(e);
        QCOMPARE(e->step(), SshStep::HostKey);
        const QString message = e->what();
        QVERIFY2(message.contains(QString("127.0.0.1:%1").arg(sshd_.port())), e->what());
        QVERIFY2(message.contains("host key changed"), e->what());
        QVERIFY2(message.contains("SHA256:") && message.contains(sshd_.known_hosts()), e->what());
    }
}

void TestSshSession::keepalive_on_every_session() {
    SshSession s(sshd_.target(false));
    const int fd = ssh_get_fd(s.handle());
    QVERIFY(fd >= 0);
    auto get = [fd](int level, int name) {
        int v = -1;
        socklen_t len = sizeof v;
        return ::getsockopt(fd, level, name, &v, &len) == 0 ? v : -2;
    };
    QCOMPARE(get(SOL_SOCKET, SO_KEEPALIVE), 1);
    QCOMPARE(get(IPPROTO_TCP, TCP_KEEPIDLE), SshSession::kKeepaliveIdleS);
    QCOMPARE(get(IPPROTO_TCP, TCP_KEEPINTVL), SshSession::kKeepaliveIntervalS);
    QCOMPARE(get(IPPROTO_TCP, TCP_KEEPCNT), SshSession::kKeepaliveProbes);
    QCOMPARE(get(IPPROTO_TCP, TCP_USER_TIMEOUT), int(SshSession::kUserTimeoutMs));
}

void TestSshSession::approved_fingerprint_is_pinned() {
    // The user is shown key A (first connection, refused as unknown) and approves it; the second
    // connection, which adds the key, meets key B (the server restarted with a new key, as a
    // man in the middle would present): refused, nothing added. Approving B then adds B.
    SshTarget t = sshd_.target(false);
    t.known_hosts_file = (QFileInfo(sshd_.known_hosts()).absolutePath() + "/pinned_known_hosts").toStdString();
    const auto first = error_of([&] { SshSession s(t); });
    QVERIFY(first);
    const std::string approved = first->host_key_fingerprint();
    QVERIFY2(approved.rfind("SHA256:", 0) == 0, first->what());
    QString error;
    QVERIFY2(sshd_.restart_with_new_host_key(error), qPrintable(error));
    t.accept_new_host_key = true;
    t.expected_host_key_fingerprint = approved;
    const auto second = error_of([&] { SshSession s(t); });
    QVERIFY(second);
    QCOMPARE(second->step(), SshStep::HostKey);
    QVERIFY2(QString(second->what()).contains(QString::fromStdString("not the key " + approved + " that was approved")),
             second->what());
    QVERIFY(second->host_key_fingerprint() != approved);
    QVERIFY(!QFile::exists(QString::fromStdString(t.known_hosts_file)));
    t.expected_host_key_fingerprint = second->host_key_fingerprint();
    SshSession ok(t);
    QVERIFY(ok.host_key_added());
    QCOMPARE(ok.host_key_fingerprint(), second->host_key_fingerprint());
}

QTEST_GUILESS_MAIN(TestSshSession)
#include "test_ssh_session.moc"
