// Durable writes (core/durable_file.h): a second writer, a planted symlink or a buffer past 4 GiB
// must not corrupt, redirect or half-check a saved file.
#include <QtTest>

#include <QDir>
#include <QTemporaryDir>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "core/durable_file.h"
#include "core/error.h"

using namespace thresher;

namespace {
std::string read_all(const QString& path) {
    std::ifstream f(path.toStdString(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}
}  // namespace

class TestDurableFile : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void writes_and_replaces();
    void concurrent_writers_do_not_collide();
    void symlinks_are_not_followed();
    void errors_name_the_file();
    void crc_covers_bytes_past_4_gib();
};

void TestDurableFile::writes_and_replaces() {
    QTemporaryDir dir;
    const QString path = dir.filePath("a.bin");
    write_file_durably(path.toStdString(), "first");
    QCOMPARE(read_all(path), std::string("first"));
    write_file_durably(path.toStdString(), std::string(100000, 'x'));
    QCOMPARE(read_all(path), std::string(100000, 'x'));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);  // no temporaries left
    // An ordinary create's permissions, not mkstemp's 0600.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    struct stat st {};
    QCOMPARE(::stat(path.toLocal8Bit().constData(), &st), 0);
    QCOMPARE(st.st_mode & 0777, 0666 & ~mask);
}

void TestDurableFile::concurrent_writers_do_not_collide() {
    // Eight writers replace one file 20 times each with their own 256 KiB pattern: every write
    // succeeds, the file always holds one writer's whole content, and no temporary is left over.
    QTemporaryDir dir;
    const std::string path = dir.filePath("shared.bin").toStdString();
    constexpr int kWriters = 8;
    std::atomic<int> failures{0};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w)
        writers.emplace_back([&, w] {
            const std::string content(256 * 1024, static_cast<char>('a' + w));
            for (int i = 0; i < 20; ++i) {
                try {
                    write_file_durably(path, content);
                } catch (const Error&) {
                    ++failures;
                }
            }
        });
    for (auto& t : writers) t.join();
    QCOMPARE(failures.load(), 0);
    const std::string got = read_all(QString::fromStdString(path));
    QCOMPARE(got.size(), std::size_t(256 * 1024));
    QVERIFY(got[0] >= 'a' && got[0] < 'a' + kWriters);
    QCOMPARE(got, std::string(got.size(), got[0]));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden | QDir::System).size(), 1);
}

void TestDurableFile::symlinks_are_not_followed() {
    // Links planted at the old fixed temporary name and at the target itself: the victim they point
    // to keeps its content; the target becomes a regular file.
    QTemporaryDir dir;
    const QString victim = dir.filePath("victim.txt");
    { std::ofstream(victim.toStdString()) << "precious"; }
    const QString path = dir.filePath("model.thr");
    QVERIFY(QFile::link(victim, path + ".tmp"));
    write_file_durably(path.toStdString(), "new model");
    QCOMPARE(read_all(victim), std::string("precious"));
    QCOMPARE(read_all(path), std::string("new model"));

    QFile::remove(path);
    QVERIFY(QFile::link(victim, path));
    write_file_durably(path.toStdString(), "again");
    QCOMPARE(read_all(victim), std::string("precious"));
    QVERIFY(!QFileInfo(path).isSymLink());
    QCOMPARE(read_all(path), std::string("again"));
}

void TestDurableFile::errors_name_the_file() {
    QTemporaryDir dir;
    const std::string missing = dir.filePath("no/such/folder/m.thr").toStdString();
    try {
        write_file_durably(missing, "x");
        QFAIL("wrote into a missing folder");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find(missing) != std::string::npos, e.what());
    }
    // The target is a folder: the rename fails, the temporary is removed.
    QVERIFY(QDir(dir.path()).mkdir("taken"));
    const std::string folder = dir.filePath("taken").toStdString();
    try {
        write_file_durably(folder, "x");
        QFAIL("replaced a folder");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find(folder + ": rename") != std::string::npos, e.what());
    }
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
}

void TestDurableFile::crc_covers_bytes_past_4_gib() {
    // 4 GiB + 1 page of untouched anonymous memory reads as zeros without being allocated; one
    // byte set in the last page must change the checksum (zlib's crc32() with a uInt length
    // would see 4 KiB here and miss it).
    const std::size_t size = (std::size_t(1) << 32) + 4096;
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) QSKIP("cannot reserve 4 GiB of address space");
    auto* bytes = static_cast<unsigned char*>(p);
    const std::uint32_t zeros = crc32_of(bytes, size);
    bytes[size - 1] = 1;
    const std::uint32_t one = crc32_of(bytes, size);
    ::munmap(p, size);
    QVERIFY(zeros != one);
    // A known value keeps the function honest: CRC-32 of "123456789" is 0xCBF43926.
    QCOMPARE(crc32_of("123456789", 9), 0xCBF43926u);
}

QTEST_APPLESS_MAIN(TestDurableFile)
#include "test_durable_file.moc"
