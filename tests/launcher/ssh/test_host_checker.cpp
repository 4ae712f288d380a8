// The app's host check (host_checker.h) against a real sshd on loopback: an unknown key comes back
// as a structured "awaits approval" with its fingerprint; approving that fingerprint adds it, a
// wrong one is refused and adds nothing, a changed key is never offered for approval; questions
// (a key's passphrase) are put on the checker's own thread; destroying the checker mid-check
// neither hangs on an unanswered question nor delivers anything afterwards.
#include <QtTest>

#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <chrono>
#include <thread>

#include "host_checker.h"
#include "launch_fixture.h"
#include "sshd_fixture.h"

using namespace thresher::launcher::ssh;

Q_DECLARE_METATYPE(std::vector<thresher::launcher::ssh::HostVerdict>)

namespace {


// One check of `target` through `checker`, waited for (the check bounds itself to 30 s).
HostVerdict check_one(HostChecker& checker, const SshTarget& target, int port, std::map<int, std::string> approved = {}) {
    QSignalSpy spy(&checker, &HostChecker::checked);
    if (!checker.check({target}, port, std::move(approved))) {
        QTest::qFail("the checker refused to start", __FILE__, __LINE__);
        return {};
    }
    if (!spy.wait(40000)) {
        QTest::qFail("no verdict within 40 s", __FILE__, __LINE__);
        return {};
    }
    const auto verdicts = spy.takeFirst().at(0).value<std::vector<HostVerdict>>();
    return verdicts.size() == 1 ? verdicts.front() : HostVerdict{};
}

bool known_hosts_lists(const SshdFixture& sshd, const QString& what) {
    QFile f(sshd.known_hosts());
    return f.open(QIODevice::ReadOnly) && f.readAll().contains(what.toUtf8());
}

}  // namespace

class TestHostChecker : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void unknown_key_is_approved_by_fingerprint();
    void passphrase_is_asked_on_the_checker_thread();
    void changed_key_is_never_offered();
    void destroying_mid_check_neither_hangs_nor_delivers();

private:
    SshdFixture sshd_;
    int port_ = 0;
};

void TestHostChecker::initTestCase() {
    if (const QString why = SshdFixture::unavailable(); !why.isEmpty()) QSKIP(qPrintable("no real sshd here: " + why));
    QString error;
    QVERIFY2(sshd_.start(error), qPrintable(error));
    port_ = launch_fixture::free_ports(1);
}

void TestHostChecker::unknown_key_is_approved_by_fingerprint() {
    HostChecker checker({});
    const HostVerdict first = check_one(checker, sshd_.target(false), port_);
    QVERIFY2(first.failed(), qPrintable(verdict_text(first)));
    QCOMPARE(first.host_key, HostKeyState::Unknown);
    QVERIFY2(first.awaits_approval(), qPrintable(verdict_text(first)));
    QVERIFY2(first.host_key_fingerprint.starts_with("SHA256:"), qPrintable(verdict_text(first)));
    const QString port_mark = QString("[127.0.0.1]:%1").arg(sshd_.port());
    QVERIFY(!known_hosts_lists(sshd_, port_mark));

    // Another fingerprint than the host's: refused as not the approved key, nothing added.
    const HostVerdict wrong = check_one(checker, sshd_.target(false), port_, {{0, "SHA256:not-the-key-that-was-shown"}});
    QCOMPARE(wrong.host_key, HostKeyState::NotApproved);
    QVERIFY2(wrong.failed() && !wrong.awaits_approval(), qPrintable(verdict_text(wrong)));
    QVERIFY(!known_hosts_lists(sshd_, port_mark));

    const HostVerdict approved = check_one(checker, sshd_.target(false), port_, {{0, first.host_key_fingerprint}});
    QVERIFY2(!approved.failed(), qPrintable(verdict_text(approved)));
    QCOMPARE(approved.host_key, HostKeyState::Added);
    QVERIFY(known_hosts_lists(sshd_, port_mark));

    const HostVerdict again = check_one(checker, sshd_.target(false), port_);
    QVERIFY2(!again.failed(), qPrintable(verdict_text(again)));
    QCOMPARE(again.host_key, HostKeyState::Known);
    QCOMPARE(again.host_key_fingerprint, first.host_key_fingerprint);
}

void TestHostChecker::passphrase_is_asked_on_the_checker_thread() {
    QThread* const main_thread = QThread::currentThread();
    int asked = 0;
    bool on_main_thread = true;
    HostChecker checker([&](const std::string& prompt) -> std::optional<std::string> {
        ++asked;
        on_main_thread = on_main_thread && QThread::currentThread() == main_thread;
        if (prompt.find("encrypted_key") == std::string::npos) return std::nullopt;
        return std::string(SshdFixture::kPassphrase);
    });
    auto target = sshd_.target(true);
    target.identity_file = sshd_.encrypted_key().toStdString();
    const HostVerdict v = check_one(checker, target, port_);
    QVERIFY2(!v.failed(), qPrintable(verdict_text(v)));
    QVERIFY(asked >= 1);
    QVERIFY2(on_main_thread, "a question reached the user from an SSH thread");
}

void TestHostChecker::changed_key_is_never_offered() {
    QString error;
    HostChecker checker({});
    const HostVerdict known = check_one(checker, sshd_.target(true), port_);  // known (or added now)
    QVERIFY2(!known.failed(), qPrintable(verdict_text(known)));
    QVERIFY2(sshd_.restart_with_new_host_key(error), qPrintable(error));
    const HostVerdict changed = check_one(checker, sshd_.target(true), port_);
    QCOMPARE(changed.host_key, HostKeyState::Changed);
    QVERIFY2(changed.failed() && !changed.awaits_approval(), qPrintable(verdict_text(changed)));
    // Pinning the new key's fingerprint does not get a changed key added either.
    const HostVerdict pinned = check_one(checker, sshd_.target(true), port_, {{0, changed.host_key_fingerprint}});
    QCOMPARE(pinned.host_key, HostKeyState::Changed);
    QVERIFY(pinned.failed());
}

void TestHostChecker::destroying_mid_check_neither_hangs_nor_delivers() {
    QString error;
    // The host key may have changed in the previous case: this one needs a clean known_hosts.
    QFile::remove(sshd_.known_hosts());
    int asked = 0;
    auto checker = std::make_unique<HostChecker>([&](const std::string&) -> std::optional<std::string> {
        ++asked;
        return std::nullopt;
    });
    QSignalSpy spy(checker.get(), &HostChecker::checked);
    auto target = sshd_.target(true);
    target.identity_file = sshd_.encrypted_key().toStdString();  // its check waits on a question
    QVERIFY(checker->check({target}, port_));
    QVERIFY(!checker->check({target}, port_));  // one check at a time
    // Let the SSH thread connect and ask (without running the event loop, so nobody answers).
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    QElapsedTimer timer;
    timer.start();
    checker.reset();
    QVERIFY2(timer.elapsed() < 10000, qPrintable(QString("destruction took %1 ms").arg(timer.elapsed())));
    QTest::qWait(200);  // anything queued would run now
    QCOMPARE(spy.count(), 0);
    QCOMPARE(asked, 0);
}

QTEST_GUILESS_MAIN(TestHostChecker)
#include "test_host_checker.moc"
