// The run secret: files must be private to the user (refused otherwise, with the file and mode in
// the message), hex and raw forms, the environment variable, generation and writing.
#include <QtTest>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "dist/net/secret.h"

using namespace thresher;
using namespace thresher::dist;

namespace {

void write_file(const QString& path, const QByteArray& contents, int mode) {
    std::ofstream(path.toStdString(), std::ios::binary).write(contents.constData(), contents.size());
    QVERIFY(::chmod(path.toLocal8Bit().constData(), static_cast<mode_t>(mode)) == 0);
}

QString error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace

class TestSecret : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void file_modes_data();
    void file_modes();
    void contents_data();
    void contents();
    void refuses_other_owner();
    void environment();
    void generate_and_write();

private:
    QTemporaryDir dir_;
};

void TestSecret::file_modes_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<bool>("accepted");
    QTest::newRow("0600") << 0600 << true;
    QTest::newRow("0400") << 0400 << true;
    QTest::newRow("0640 group-readable") << 0640 << false;
    QTest::newRow("0604 world-readable") << 0604 << false;
    QTest::newRow("0644") << 0644 << false;
    QTest::newRow("0620 group-writable") << 0620 << false;
    QTest::newRow("0666") << 0666 << false;
}

void TestSecret::file_modes() {
    QFETCH(int, mode);
    QFETCH(bool, accepted);
    const QString path = dir_.filePath(QString("secret-%1").arg(mode, 4, 8, QChar('0')));
    write_file(path, QByteArray(64, 'a') + "\n", mode);
    const QString error = error_of([&] { (void)load_secret(path.toStdString()); });
    if (accepted) {
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(load_secret(path.toStdString()).size(), std::size_t{32});
    } else {
        QVERIFY2(error.contains(path), qPrintable(error));
        QVERIFY2(error.contains(QString("mode %1").arg(mode, 4, 8, QChar('0'))), qPrintable(error));
        QVERIFY2(error.contains("chmod 600"), qPrintable(error));
    }
}

void TestSecret::contents_data() {
    QTest::addColumn<QByteArray>("contents");
    QTest::addColumn<int>("bytes");  // 0: refused
    QTest::newRow("64 hex digits") << QByteArray("00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF") << 32;
    QTest::newRow("hex with newline and spaces") << QByteArray("  00112233445566778899aabbccddeeff\n") << 16;
    QTest::newRow("raw 21 bytes") << QByteArray("correct horse battery") << 21;
    QTest::newRow("raw binary") << QByteArray("\x01\x02\xff\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0", 17) << 17;
    QTest::newRow("odd hex count is raw") << QByteArray("00112233445566778899aabbccddeef") << 31;
    QTest::newRow("30 hex digits: 15 bytes, too short") << QByteArray("00112233445566778899aabbccddee") << 0;
    QTest::newRow("raw 15 bytes") << QByteArray("fifteen bytes!!") << 0;
    QTest::newRow("empty") << QByteArray() << 0;
    QTest::newRow("whitespace only") << QByteArray(" \n\t\n") << 0;
}

void TestSecret::contents() {
    QFETCH(QByteArray, contents);
    QFETCH(int, bytes);
    const QString path = dir_.filePath(QString("contents-%1").arg(QTest::currentDataTag()).replace(' ', '_').replace(':', '_'));
    write_file(path, contents, 0600);
    const QString error = error_of([&] { QCOMPARE(int(load_secret(path.toStdString()).size()), bytes); });
    if (bytes > 0) QVERIFY2(error.isEmpty(), qPrintable(error));
    else QVERIFY2(error.contains("at least 16"), qPrintable(error));
}

void TestSecret::refuses_other_owner() {
    if (::geteuid() != 0) QSKIP("needs root to give a file to another user");
    const QString path = dir_.filePath("foreign");
    write_file(path, QByteArray(64, 'b'), 0600);
    QVERIFY(::chown(path.toLocal8Bit().constData(), 12345, 12345) == 0);
    const QString error = error_of([&] { (void)load_secret(path.toStdString()); });
    QVERIFY2(error.contains(path) && error.contains("uid 12345"), qPrintable(error));
}

void TestSecret::environment() {
    ::unsetenv("THRESHER_SECRET");
    QVERIFY(error_of([] { (void)secret_from_env(); }).contains("THRESHER_SECRET is not set"));
    const Secret made = generate_secret();
    ::setenv("THRESHER_SECRET", made.to_hex().c_str(), 1);
    const Secret read = secret_from_env();
    QVERIFY(std::equal(read.bytes().begin(), read.bytes().end(), made.bytes().begin(), made.bytes().end()));
    ::setenv("THRESHER_SECRET", "short", 1);
    QVERIFY(error_of([] { (void)secret_from_env(); }).contains("THRESHER_SECRET"));
    ::unsetenv("THRESHER_SECRET");
}

void TestSecret::generate_and_write() {
    const Secret a = generate_secret(), b = generate_secret();
    QCOMPARE(a.size(), Secret::kGeneratedBytes);
    QVERIFY(!std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end()));
    const QString path = dir_.filePath("written");
    write_secret_file(path.toStdString(), a);
    struct stat st {};
    QVERIFY(::stat(path.toLocal8Bit().constData(), &st) == 0);
    QCOMPARE(int(st.st_mode & 0777), 0600);
    const Secret back = load_secret(path.toStdString());
    QVERIFY(std::equal(back.bytes().begin(), back.bytes().end(), a.bytes().begin(), a.bytes().end()));
    // Never overwrites: a file someone else prepared is not trusted with the secret.
    QVERIFY(error_of([&] { write_secret_file(path.toStdString(), b); }).contains("cannot create"));
    // Too-short keys cannot even be made.
    QVERIFY_THROWS_EXCEPTION(Error, Secret(std::vector<std::uint8_t>(15, 1)));
}

QTEST_GUILESS_MAIN(TestSecret)
#include "test_secret.moc"
