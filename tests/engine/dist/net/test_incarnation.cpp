// Incarnations from the host's state file: a new process outranks the last one even when the
// clock has stepped back; engines starting together never share a number; without a usable file
// the clock is used; a symlink in place of the file is not followed.
#include <QtTest>

#include <QTemporaryDir>
#include <set>
#include <thread>
#include <unistd.h>

#include "dist/net/incarnation.h"

using namespace thresher::dist;

class TestIncarnation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void outranks_the_last_one_after_the_clock_stepped_back();
    void concurrent_starts_get_distinct_numbers();
    void unusable_file_falls_back_to_the_clock();
    void default_file_follows_the_environment();
};

void TestIncarnation::outranks_the_last_one_after_the_clock_stepped_back() {
    QTemporaryDir dir;
    const std::string file = dir.filePath("state/incarnation").toStdString();
    QCOMPARE(next_incarnation(file, 5000), std::uint64_t(5000));
    QCOMPARE(next_incarnation(file, 9000), std::uint64_t(9000));
    QCOMPARE(next_incarnation(file, 1000), std::uint64_t(9001));  // the clock went back by 8 us
    QCOMPARE(next_incarnation(file, 20000), std::uint64_t(20000));
    QFile f(QString::fromStdString(file));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll().trimmed(), QByteArray("20000"));
    QCOMPARE(int(f.permissions() & (QFile::ReadGroup | QFile::ReadOther)), 0);
}

void TestIncarnation::concurrent_starts_get_distinct_numbers() {
    QTemporaryDir dir;
    const std::string file = dir.filePath("incarnation").toStdString();
    std::vector<std::uint64_t> got(64);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = next_incarnation(file, 777); });
    for (auto& t : threads) t.join();
    const std::set<std::uint64_t> distinct(got.begin(), got.end());
    QCOMPARE(distinct.size(), got.size());
    QCOMPARE(*distinct.begin(), std::uint64_t(777));
    QCOMPARE(*distinct.rbegin(), std::uint64_t(777 + 63));
}

void TestIncarnation::unusable_file_falls_back_to_the_clock() {
    QTemporaryDir dir;
    QCOMPARE(next_incarnation("", 42), std::uint64_t(42));
    // A symlink where the file should be (someone pointing it at another file) is not followed.
    const QString target = dir.filePath("target"), link = dir.filePath("incarnation");
    QFile t(target);
    QVERIFY(t.open(QIODevice::WriteOnly));
    t.write("keep\n");
    t.close();
    QVERIFY(QFile::link(target, link));
    QCOMPARE(next_incarnation(link.toStdString(), 43), std::uint64_t(43));
    QVERIFY(t.open(QIODevice::ReadOnly));
    QCOMPARE(t.readAll(), QByteArray("keep\n"));
}

void TestIncarnation::default_file_follows_the_environment() {
    QTemporaryDir dir;
    qputenv("THRESHER_STATE_DIR", dir.path().toUtf8());
    QCOMPARE(QString::fromStdString(incarnation_file()), dir.filePath("incarnation"));
    const auto a = new_incarnation(), b = new_incarnation();
    QVERIFY(b > a);
    qunsetenv("THRESHER_STATE_DIR");
}

QTEST_GUILESS_MAIN(TestIncarnation)
#include "test_incarnation.moc"
