// The datagram format: round trips, a table of hostile datagrams each dropped for the right
// reason, thousands of random, truncated, bit-flipped, wrong-key and wrong-run datagrams (never a
// crash, always a reason), and the id window that turns replays into drops.
#include <QtTest>

#include <map>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <random>

#include "core/error.h"
#include "dist/net/datagram.h"

using namespace thresher;
using namespace thresher::dist;

Q_DECLARE_METATYPE(DropReason)

namespace {

constexpr std::uint64_t kRun = 0x0123456789ABCDEFull;

Secret test_key(std::uint8_t fill) { return Secret(std::vector<std::uint8_t>(32, fill)); }

std::vector<std::uint8_t> sample_payload(std::size_t n) {
    std::vector<std::uint8_t> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(i * 31 + 7);
    return p;
}

DatagramHeader sample_header() {
    DatagramHeader h;
    h.type = 1;
    h.run_id = kRun;
    h.sender = 2;
    h.message_id = 77;
    h.chunk_index = 3;
    h.chunk_count = 9;
    h.sender_incarnation = 0x1122334455667788ull;
    h.dest_incarnation = 0x99AABBCCDDEEFF01ull;
    return h;
}

QByteArray bytes_of(const std::vector<std::uint8_t>& v) {
    return QByteArray(reinterpret_cast<const char*>(v.data()), static_cast<qsizetype>(v.size()));
}

QString name(DropReason why) {
    const std::string_view s = to_string(why);
    return QString::fromLatin1(s.data(), static_cast<qsizetype>(s.size()));
}

std::span<const std::uint8_t> span_of(const QByteArray& a) {
    return {reinterpret_cast<const std::uint8_t*>(a.constData()), static_cast<std::size_t>(a.size())};
}

}  // namespace

class TestDatagram : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void round_trip_data();
    void round_trip();
    void mac_is_hmac_sha256();
    void seal_rejects_caller_bugs();
    void hostile_data();
    void hostile();
    void random_garbage_is_always_dropped();
    void id_window_data();
    void id_window();
};

void TestDatagram::round_trip_data() {
    QTest::addColumn<int>("payload_size");
    QTest::addColumn<int>("chunk_index");
    QTest::addColumn<int>("chunk_count");
    QTest::addColumn<quint64>("message_id");
    QTest::newRow("empty") << 0 << 0 << 1 << quint64(1);
    QTest::newRow("one byte") << 1 << 0 << 1 << quint64(2);
    QTest::newRow("full chunk") << int(kMaxPayloadBytes) << 4 << 5 << quint64(3);
    QTest::newRow("last of 65535") << 100 << 65534 << 65535 << ~quint64(0);
}

void TestDatagram::round_trip() {
    QFETCH(int, payload_size);
    QFETCH(int, chunk_index);
    QFETCH(int, chunk_count);
    QFETCH(quint64, message_id);
    DatagramHeader h = sample_header();
    h.chunk_index = static_cast<std::uint16_t>(chunk_index);
    h.chunk_count = static_cast<std::uint16_t>(chunk_count);
    h.message_id = message_id;
    const auto payload = sample_payload(static_cast<std::size_t>(payload_size));
    const Secret key = test_key(0x5A);
    const auto wire = seal(h, payload, key);
    QCOMPARE(wire.size(), kHeaderBytes + payload.size() + kMacBytes);
    QVERIFY(wire.size() <= kMaxDatagramBytes);
    DropReason why = DropReason::Oversize;
    const auto d = open(wire, key, kRun, why);
    QVERIFY(d.has_value());
    QCOMPARE(d->header.type, h.type);
    QCOMPARE(d->header.run_id, kRun);
    QCOMPARE(d->header.sender, h.sender);
    QCOMPARE(d->header.message_id, h.message_id);
    QCOMPARE(d->header.chunk_index, h.chunk_index);
    QCOMPARE(d->header.chunk_count, h.chunk_count);
    QCOMPARE(d->header.sender_incarnation, h.sender_incarnation);
    QCOMPARE(d->header.dest_incarnation, h.dest_incarnation);
    QVERIFY(d->payload == payload);
    // Magic, version and the incarnations sit where the format says, in network byte order.
    QCOMPARE(int(wire[0]), int('T'));
    QCOMPARE(int(wire[3]), int('S'));
    QCOMPARE(int(wire[4]), 2);
    QCOMPARE(int(wire[34]), 0x11);
    QCOMPARE(int(wire[41]), 0x88);
    QCOMPARE(int(wire[42]), 0x99);
    QCOMPARE(int(wire[49]), 0x01);
}

void TestDatagram::mac_is_hmac_sha256() {
    // The MAC must be plain HMAC-SHA256 over header + payload, whichever key came before: seal
    // keeps a keyed context per thread, so alternate keys and compare with OpenSSL's one-shot HMAC.
    for (int i = 0; i < 6; ++i) {
        const Secret key = test_key(static_cast<std::uint8_t>(i % 2 == 0 ? 0x11 : 0x22 + i));
        for (std::size_t size : {0, 1, 500, int(kMaxPayloadBytes)}) {
            DatagramHeader h = sample_header();
            h.message_id = static_cast<std::uint64_t>(i * 10) + size;
            const auto wire = seal(h, sample_payload(size), key);
            unsigned char expected[EVP_MAX_MD_SIZE];
            unsigned int length = 0;
            QVERIFY(HMAC(EVP_sha256(), key.bytes().data(), static_cast<int>(key.size()), wire.data(),
                         wire.size() - kMacBytes, expected, &length) != nullptr);
            QCOMPARE(length, unsigned(kMacBytes));
            QVERIFY(std::equal(wire.end() - kMacBytes, wire.end(), expected));
        }
    }
}

void TestDatagram::seal_rejects_caller_bugs() {
    const Secret key = test_key(1);
    DatagramHeader h = sample_header();
    QVERIFY_THROWS_EXCEPTION(Error, seal(h, sample_payload(kMaxPayloadBytes + 1), key));
    h.chunk_count = 0;
    h.chunk_index = 0;
    QVERIFY_THROWS_EXCEPTION(Error, seal(h, sample_payload(1), key));
    h.chunk_count = 2;
    h.chunk_index = 2;
    QVERIFY_THROWS_EXCEPTION(Error, seal(h, sample_payload(1), key));
}

void TestDatagram::hostile_data() {
    QTest::addColumn<QByteArray>("wire");
    QTest::addColumn<DropReason>("reason");
    const Secret key = test_key(0x5A);
    const auto payload = sample_payload(100);
    const QByteArray good = bytes_of(seal(sample_header(), payload, key));
    // Offsets per datagram.h: version 4, type 5, flags 6, reserved 7, run 8, sender 16, id 20,
    // chunk index 28, chunk count 30, payload length 32, sender incarnation 34, destination
    // incarnation 42, payload 50, MAC 150.
    auto with = [&](int offset, std::initializer_list<int> values) {
        QByteArray b = good;
        int i = offset;
        for (int v : values) b[i++] = static_cast<char>(v);
        return b;
    };
    QTest::newRow("empty") << QByteArray() << DropReason::TooShort;
    QTest::newRow("one byte") << QByteArray(1, 'T') << DropReason::TooShort;
    QTest::newRow("header without MAC") << good.left(int(kHeaderBytes)) << DropReason::TooShort;
    QTest::newRow("header + 31 MAC bytes") << good.left(int(kHeaderBytes + kMacBytes - 1)) << DropReason::TooShort;
    QTest::newRow("1201 bytes") << QByteArray(1201, 0) << DropReason::Oversize;
    QTest::newRow("64 KiB") << QByteArray(65507, 'T') << DropReason::Oversize;
    QTest::newRow("zeros") << QByteArray(200, 0) << DropReason::BadMagic;
    QTest::newRow("magic byte flipped") << with(0, {'t'}) << DropReason::BadMagic;
    QTest::newRow("HTTP request") << QByteArray("GET / HTTP/1.1\r\nHost: x\r\n\r\n").leftJustified(120, ' ')
                                  << DropReason::BadMagic;
    QTest::newRow("version 0") << with(4, {0}) << DropReason::BadVersion;
    QTest::newRow("version 1 (before incarnations)") << with(4, {1}) << DropReason::BadVersion;
    QTest::newRow("version 3") << with(4, {3}) << DropReason::BadVersion;
    QTest::newRow("unknown flag") << with(6, {0x01}) << DropReason::BadVersion;
    QTest::newRow("reserved set") << with(7, {0x80}) << DropReason::BadVersion;
    QTest::newRow("run id off by one") << with(15, {0xEE}) << DropReason::WrongRun;
    QTest::newRow("run id zero") << with(8, {0, 0, 0, 0, 0, 0, 0, 0}) << DropReason::WrongRun;
    QTest::newRow("length one more") << with(32, {0, 101}) << DropReason::BadLength;
    QTest::newRow("length one less") << with(32, {0, 99}) << DropReason::BadLength;
    QTest::newRow("length 65535") << with(32, {0xFF, 0xFF}) << DropReason::BadLength;
    QTest::newRow("truncated by one") << good.left(good.size() - 1) << DropReason::BadLength;
    QTest::newRow("one byte appended") << good + QByteArray(1, 0) << DropReason::BadLength;
    QTest::newRow("chunk count 0") << with(28, {0, 0, 0, 0}) << DropReason::BadChunk;
    QTest::newRow("index == count") << with(28, {0, 9, 0, 9}) << DropReason::BadChunk;
    QTest::newRow("index > count") << with(28, {0xFF, 0xFF, 0, 9}) << DropReason::BadChunk;
    QTest::newRow("type changed") << with(5, {2}) << DropReason::BadMac;
    QTest::newRow("sender changed") << with(19, {3}) << DropReason::BadMac;
    QTest::newRow("message id changed") << with(27, {78}) << DropReason::BadMac;
    QTest::newRow("chunk index changed") << with(29, {4}) << DropReason::BadMac;
    QTest::newRow("sender incarnation changed") << with(41, {good[41] ^ 0x01}) << DropReason::BadMac;
    QTest::newRow("destination incarnation changed") << with(42, {0}) << DropReason::BadMac;
    QTest::newRow("payload bit flipped") << with(60, {good[60] ^ 0x10}) << DropReason::BadMac;
    QTest::newRow("MAC bit flipped") << with(160, {good[160] ^ 0x01}) << DropReason::BadMac;
    QTest::newRow("MAC zeroed") << with(150, {0, 0, 0, 0, 0, 0, 0, 0})
                                << DropReason::BadMac;
    QTest::newRow("wrong key") << bytes_of(seal(sample_header(), payload, test_key(0xA5))) << DropReason::BadMac;
    QTest::newRow("key one byte longer") << bytes_of(seal(sample_header(), payload, Secret(std::vector<std::uint8_t>(33, 0x5A))))
                                         << DropReason::BadMac;
}

void TestDatagram::hostile() {
    QFETCH(QByteArray, wire);
    QFETCH(DropReason, reason);
    DropReason why = DropReason::Replay;  // not a reason open() gives: proves it was set
    const auto d = open(span_of(wire), test_key(0x5A), kRun, why);
    QVERIFY(!d.has_value());
    QCOMPARE(name(why), name(reason));
}

void TestDatagram::random_garbage_is_always_dropped() {
    // Five kinds of bad input, 2000 of each. Every one must be refused with some reason: the tally
    // of reasons adds up to the number of datagrams, so nothing slips through uncounted.
    const Secret key = test_key(0x5A), wrong = test_key(0x33);
    std::mt19937_64 rng(20240611);
    std::map<DropReason, int> tally;
    int opened = 0, total = 0;
    auto check = [&](std::span<const std::uint8_t> bytes) {
        DropReason why = DropReason::Replay;
        ++total;
        if (open(bytes, key, kRun, why)) ++opened;
        else ++tally[why];
        return why;
    };
    auto valid = [&] {
        DatagramHeader h = sample_header();
        h.chunk_count = static_cast<std::uint16_t>(1 + rng() % 1000);
        h.chunk_index = static_cast<std::uint16_t>(rng() % h.chunk_count);
        h.message_id = rng();
        return seal(h, sample_payload(rng() % (kMaxPayloadBytes + 1)), key);
    };
    for (int i = 0; i < 2000; ++i) {
        // Random bytes; half of them start with the right magic and version to get further in.
        std::vector<std::uint8_t> junk(rng() % 1400);
        for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
        if (i % 2 == 0 && junk.size() >= 16) {
            const auto good = valid();
            std::copy(good.begin(), good.begin() + 16, junk.begin());
        }
        check(junk);
        // Truncated at a random length.
        auto cut = valid();
        cut.resize(rng() % cut.size());
        const DropReason why = check(cut);
        QVERIFY(why == DropReason::TooShort || why == DropReason::BadLength);
        // One random bit flipped.
        auto flipped = valid();
        flipped[rng() % flipped.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
        check(flipped);
        // Right format, wrong key; right key, another run.
        DatagramHeader h = sample_header();
        QCOMPARE(name(check(seal(h, sample_payload(rng() % 500), wrong))), name(DropReason::BadMac));
        h.run_id = kRun + 1 + rng() % 1000;
        QCOMPARE(name(check(seal(h, sample_payload(rng() % 500), key))), name(DropReason::WrongRun));
    }
    QCOMPARE(opened, 0);
    int counted = 0;
    for (const auto& [reason, n] : tally) counted += n;
    QCOMPARE(counted, total);
    QVERIFY(tally[DropReason::BadMac] > 2000);  // wrong keys plus flipped payload/MAC bits
    QVERIFY(tally[DropReason::BadMagic] > 500);
}

void TestDatagram::id_window_data() {
    // "done": ids marked delivered, in that order; then the floor, and the state of probe ids
    // written as "id:state" (N new, D done above the floor, B at or below the floor = replay).
    QTest::addColumn<QList<quint64>>("done");
    QTest::addColumn<quint64>("floor");
    QTest::addColumn<QString>("probes");
    QTest::newRow("nothing yet") << QList<quint64>{} << quint64(0) << "0:B 1:N 2:N";
    QTest::newRow("in order") << QList<quint64>{1, 2, 3} << quint64(3) << "1:B 3:B 4:N";
    QTest::newRow("gap") << QList<quint64>{1, 3, 5} << quint64(1) << "1:B 2:N 3:D 4:N 5:D 6:N";
    QTest::newRow("gap filled") << QList<quint64>{1, 3, 5, 4, 2} << quint64(5) << "2:B 5:B 6:N";
    QTest::newRow("reverse") << QList<quint64>{4, 3, 2, 1} << quint64(4) << "4:B 5:N";
    QTest::newRow("marked twice") << QList<quint64>{2, 2, 1, 1} << quint64(2) << "2:B 3:N";
}

void TestDatagram::id_window() {
    QFETCH(QList<quint64>, done);
    QFETCH(quint64, floor);
    QFETCH(QString, probes);
    IdWindow window;
    for (quint64 id : done) window.mark_done(id);
    QCOMPARE(quint64(window.floor()), floor);
    for (const QString& probe : probes.split(' ')) {
        const quint64 id = probe.section(':', 0, 0).toULongLong();
        const QString expected = probe.section(':', 1, 1);
        const auto state = window.state(id);
        const QString got = state == IdWindow::State::New ? "N" : state == IdWindow::State::Done ? "D" : "B";
        QVERIFY2(got == expected, qPrintable(QString("id %1: %2, expected %3").arg(id).arg(got, expected)));
    }
}

QTEST_GUILESS_MAIN(TestDatagram)
#include "test_datagram.moc"
