// The run key and run id (engine/dist/net/run_key.h): without a nonce they are what they were
// before nonces (the secret, SHA-256(secret)[0..8)), computed here independently with Qt's
// SHA-256 and HMAC; with one, HMAC-SHA256(secret, label || nonce) and its id, equal for equal
// inputs and different for another nonce or secret; --run-nonce values are checked and refused
// with messages that say what is wrong; generated nonces are 32 hex digits and differ.
#include <QtTest>

#include <QCryptographicHash>
#include <QMessageAuthenticationCode>
#include <set>

#include "core/error.h"
#include "dist/net/run_key.h"

using namespace thresher;
using namespace thresher::dist;

namespace {

QByteArray bytes_of(const Secret& s) {
    return QByteArray(reinterpret_cast<const char*>(s.bytes().data()), static_cast<qsizetype>(s.size()));
}

Secret secret_of(const QByteArray& hex) {
    const QByteArray b = QByteArray::fromHex(hex);
    return Secret(std::vector<std::uint8_t>(b.begin(), b.end()));
}

std::uint64_t first_8_big_endian(const QByteArray& digest) {
    std::uint64_t id = 0;
    for (int i = 0; i < 8; ++i) id = id << 8 | static_cast<quint8>(digest[i]);
    return id;
}

}  // namespace

class TestRunKey : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void without_a_nonce_as_before();
    void with_a_nonce();
    void bad_nonces_data();
    void bad_nonces();
    void generated_nonces();
};

void TestRunKey::without_a_nonce_as_before() {
    const Secret s = secret_of("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
    const Secret key = run_key(s, {});
    QCOMPARE(bytes_of(key), bytes_of(s));
    QCOMPARE(run_id_of(key), first_8_big_endian(QCryptographicHash::hash(bytes_of(s), QCryptographicHash::Sha256)));
}

void TestRunKey::with_a_nonce() {
    const Secret s = secret_of("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
    const auto a = parse_run_nonce("a1a2a3a4a5a6a7a8a9aaabacadaeafa0", "n");
    const auto b = parse_run_nonce("B1B2B3B4B5B6B7B8", "n");  // upper case, the shortest
    QCOMPARE(a.size(), std::size_t{16});
    QCOMPARE(b.size(), std::size_t{8});
    const QByteArray expected = QMessageAuthenticationCode::hash(
        QByteArray("thresher run key v1") + QByteArray::fromHex("a1a2a3a4a5a6a7a8a9aaabacadaeafa0"), bytes_of(s),
        QCryptographicHash::Sha256);
    QCOMPARE(bytes_of(run_key(s, a)), expected);
    QCOMPARE(run_id_of(run_key(s, a)), first_8_big_endian(QCryptographicHash::hash(expected, QCryptographicHash::Sha256)));
    // Equal inputs, equal keys (every node of a run agrees); another nonce or secret, another key and id.
    QCOMPARE(bytes_of(run_key(s, a)), bytes_of(run_key(s, parse_run_nonce("a1a2a3a4a5a6a7a8a9aaabacadaeafa0", "n"))));
    QVERIFY(bytes_of(run_key(s, a)) != bytes_of(run_key(s, b)));
    QVERIFY(run_id_of(run_key(s, a)) != run_id_of(run_key(s, b)));
    QVERIFY(run_id_of(run_key(s, a)) != run_id_of(s));
    const Secret other = secret_of("ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
    QVERIFY(bytes_of(run_key(other, a)) != bytes_of(run_key(s, a)));
}

void TestRunKey::bad_nonces_data() {
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("message");
    QTest::newRow("empty") << "" << "expected 8 to 64 bytes (16 to 128 hex digits), got 0";
    QTest::newRow("odd") << "abc" << "expected hex digits in pairs (an odd count was given)";
    QTest::newRow("short") << "00112233445566" << "expected 8 to 64 bytes (16 to 128 hex digits), got 7";
    QTest::newRow("long") << QString(130, 'a') << "got 65";
    QTest::newRow("not hex") << "0011223344556677g8" << "character 17 is not a hex digit";
    QTest::newRow("space") << "00112233 4455667788" << "expected hex digits in pairs";
}

void TestRunKey::bad_nonces() {
    QFETCH(QString, value);
    QFETCH(QString, message);
    try {
        parse_run_nonce(value.toStdString(), "--run-nonce");
        QFAIL("accepted");
    } catch (const ConfigError& e) {
        const QString what = e.what();
        QVERIFY2(what.startsWith("--run-nonce \"") && what.contains(message), qPrintable(what));
        QVERIFY2(what.size() < 200, "the message quotes a bounded part of the value");
    }
}

void TestRunKey::generated_nonces() {
    std::set<std::string> seen;
    for (int i = 0; i < 100; ++i) {
        const std::string n = generate_run_nonce();
        QCOMPARE(n.size(), std::size_t{32});
        QCOMPARE(parse_run_nonce(n, "n").size(), std::size_t{16});
        seen.insert(n);
    }
    QCOMPARE(seen.size(), std::size_t{100});
}

QTEST_GUILESS_MAIN(TestRunKey)
#include "test_run_key.moc"
