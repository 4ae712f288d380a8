// The SSH pre-flight against a real sshd on loopback (sshd_fixture.h): check_host's verdict on a
// live host (system, GPUs, port, disk), a busy port failing, hosts checked in parallel, and
// `thresher-launch check` on a two-host spec (one live, one unreachable): one verdict per host,
// exit 1.
#include <QtTest>

#include <QElapsedTimer>
#include <QProcess>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launch_fixture.h"
#include "preflight.h"
#include "sshd_fixture.h"

using namespace thresher::launcher::ssh;

namespace {

const Check* find(const HostVerdict& v, const std::string& name) {
    for (const Check& c : v.checks)
        if (c.name == name) return &c;
    return nullptr;
}


}  // namespace

class TestSshPreflight : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void live_host_passes();
    void busy_port_fails();
    void hosts_are_checked_in_parallel();
    void cli_check_gives_one_verdict_per_host();

private:
    SshdFixture sshd_;
};

void TestSshPreflight::initTestCase() {
    if (const QString why = SshdFixture::unavailable(); !why.isEmpty()) QSKIP(qPrintable("no real sshd here: " + why));
    QString error;
    QVERIFY2(sshd_.start(error), qPrintable(error));
}

void TestSshPreflight::live_host_passes() {
    const int port = launch_fixture::free_ports(1);
    const HostVerdict v = check_host(sshd_.target(true), port);
    QVERIFY2(!v.failed(), qPrintable(verdict_text(v)));
    QCOMPARE(QString::fromStdString(v.where), QString("root@127.0.0.1:%1").arg(sshd_.port()));
    for (const char* name : {"reachable", "authenticated", "system", "gpus", "disk"})
        QVERIFY2(find(v, name) != nullptr && find(v, name)->status == CheckStatus::Ok, qPrintable(name + verdict_text(v)));
    QVERIFY2(find(v, "system")->detail.starts_with("Linux "), qPrintable(verdict_text(v)));
#if defined(__x86_64__)
    QCOMPARE(find(v, "system")->detail, std::string("Linux x86_64"));
#endif
    const Check* p = find(v, "port " + std::to_string(port));
    QVERIFY2(p && p->status == CheckStatus::Ok && p->detail.starts_with("UDP and TCP free"), qPrintable(verdict_text(v)));
    QVERIFY2(find(v, "disk")->detail.find(" free in /") != std::string::npos, qPrintable(verdict_text(v)));
}

void TestSshPreflight::busy_port_fails() {
    // The "remote" host is this machine: a UDP socket bound here makes the port busy there.
    const int port = launch_fixture::free_ports(1);
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    QVERIFY(fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    const HostVerdict v = check_host(sshd_.target(true), port);
    ::close(fd);
    QVERIFY(v.failed());
    const Check* p = find(v, "port " + std::to_string(port));
    QVERIFY2(p && p->status == CheckStatus::Fail && p->detail.starts_with("UDP in use"), qPrintable(verdict_text(v)));
}

void TestSshPreflight::hosts_are_checked_in_parallel() {
    // Three silent listeners each hold their check for the whole connect timeout (3 s): one
    // after another that is 9 s, in parallel about 3 s. Verdicts come back in the targets' order.
    constexpr int kSilent = 3, kTimeout = 3;
    int fds[kSilent];
    std::vector<SshTarget> targets;
    for (int& fd : fds) {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        QVERIFY(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 4) == 0);
        QVERIFY(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        SshTarget t = sshd_.target(true);
        t.port = ntohs(a.sin_port);
        t.connect_timeout_s = kTimeout;
        targets.push_back(t);
    }
    QElapsedTimer timer;
    timer.start();
    const auto verdicts = check_hosts(targets, launch_fixture::free_ports(1), {}, 20);
    const qint64 took = timer.elapsed();
    for (int fd : fds) ::close(fd);
    QCOMPARE(verdicts.size(), size_t{kSilent});
    for (int i = 0; i < kSilent; ++i) {
        QVERIFY2(verdicts[i].failed(), qPrintable(verdict_text(verdicts[i])));
        QCOMPARE(verdicts[i].where, "root@127.0.0.1:" + std::to_string(targets[i].port));
        QCOMPARE(verdicts[i].checks.at(0).name, std::string("reachable"));
    }
    QVERIFY2(took < (kSilent - 1) * kTimeout * 1000, qPrintable(QString("%1 ms").arg(took)));
}

void TestSshPreflight::cli_check_gives_one_verdict_per_host() {
    const int dead_port = launch_fixture::free_ports(2), udp_port = dead_port + 1;
    const QString spec = QString(R"({"format": "thresher-run", "version": 1, "name": "ssh-check",
  "model": "model.json",
  "cluster": {"kind": "ssh", "hosts": [
    {"address": "127.0.0.1", "port": %1, "user": "root", "identity_file": "%2"},
    {"address": "127.0.0.1", "port": %3, "user": "root", "identity_file": "%2"}]},
  "udp_port": %4})")
                             .arg(sshd_.port()).arg(sshd_.client_key()).arg(dead_port).arg(udp_port);
    QVERIFY(launch_fixture::write_file(sshd_.path("spec.json"), spec.toUtf8()));
    QVERIFY(launch_fixture::write_file(sshd_.path("model.json"), launch_fixture::kTinyModel));

    QProcess p;  // HOME is the fixture's: its known_hosts, no ~/.ssh/config, no agent
    p.start(launch_fixture::bin("thresher-launch"), {"check", sshd_.path("spec.json"), "--accept-new-host-keys"});
    QVERIFY(p.waitForStarted(10000));
    QVERIFY(p.waitForFinished(60000));
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    const QString err = QString::fromUtf8(p.readAllStandardError());
    qInfo().noquote() << "thresher-launch check printed:\n" + out + err;
    QCOMPARE(p.exitCode(), 1);
    const QStringList verdicts = out.split('\n').filter(QRegularExpression("^node \\d  "));
    QCOMPARE(verdicts.size(), 2);
    QVERIFY2(verdicts[0] == QString("node 0  root@127.0.0.1:%1  ok").arg(sshd_.port()), qPrintable(out + err));
    QVERIFY2(verdicts[1] == QString("node 1  root@127.0.0.1:%1  FAILED").arg(dead_port), qPrintable(out + err));
    QVERIFY2(out.contains(QRegularExpression("\\n  reachable +FAIL +ssh root@127\\.0\\.0\\.1:\\d+: connect: ")), qPrintable(out));
    QVERIFY2(out.contains(QRegularExpression("\\n  system +ok +Linux ")), qPrintable(out));
    QVERIFY2(out.endsWith("verdict: NOT ready\n"), qPrintable(out));
}

QTEST_GUILESS_MAIN(TestSshPreflight)
#include "test_ssh_preflight.moc"
