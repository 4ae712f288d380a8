// thresher-hdf5-reader (engine/hdf5_reader/) and how engine/config starts it:
//   - the snapshot's records (hdf5_reader/snapshot.h) written and read back; the reader refuses
//     another format, every truncation, a shape its values do not fill, and a count the bytes
//     cannot hold;
//   - the program itself: the snapshot of a file libhdf5 wrote, read back through the one
//     definition of its records; more stdin than --max-bytes, and a bad command line, refused;
//   - Hdf5File through it: groups, attributes and floats; damaged files (the fuzz finding, cuts,
//     flipped bytes) are ConfigErrors naming the file, and this process never crashes;
//   - run_hdf5_reader against stand-in helpers (shell scripts): a crash, an exit status, a hang
//     past the deadline, a flood, output before the input is read (no deadlock on full buffers),
//     a helper that never reads, an exit while another process holds its stdout, and none of
//     this process's descriptors in the child;
//   - the search (beside the program, THRESHER_HDF5_READER, $PATH) and its message when the
//     helper is nowhere.
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <unistd.h>

#include <variant>

#include "config/hdf5_file.h"
#include "config/hdf5_reader_location.h"
#include "config/hdf5_reader_process.h"
#include "core/error.h"
#include "hdf5_reader/snapshot.h"
#include "source_dir.h"
#include "weight_files.h"

using thresher::ConfigError;
using thresher::config::Hdf5File;
using thresher::config::Hdf5ReaderLimits;
using thresher::config::Hdf5ReaderPlaces;
namespace snap = thresher::hdf5_snapshot;
using test_support::Bytes;

namespace {

template <class F_>
QString refusal(F_&& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QString bin_dir() {
    const QByteArray d = qgetenv("THRESHER_BIN_DIR");
    return d.isEmpty() ? QCoreApplication::applicationDirPath() : QString::fromLocal8Bit(d);
}

QString reader_program() { return bin_dir() + "/thresher-hdf5-reader"; }

struct Finished {
    int code = -1;  // -1: crashed or did not finish
    QByteArray out, err;
};

Finished run_reader(const QStringList& args, const QByteArray& in) {
    QProcess p;
    p.start(reader_program(), args);
    Finished f;
    if (!p.waitForStarted(10000)) return f;
    p.write(in);
    p.closeWriteChannel();
    if (!p.waitForFinished(60000)) {
        p.kill();
        p.waitForFinished(10000);
        return f;
    }
    f.out = p.readAllStandardOutput();
    f.err = p.readAllStandardError();
    if (p.exitStatus() == QProcess::NormalExit) f.code = p.exitCode();
    return f;
}

const std::vector<float> kKernel = {0.5f, -1.25f, 2.0f, 3.5f, -0.125f, 7.0f};

// A Keras-like file: a model_config attribute, model_weights/dense/kernel:0 [2, 3], a layer_names list.
void write_small_h5(const std::string& path) {
    test_support::H5Writer w(path);
    w.strings("/", "model_config", {R"({"class_name": "Sequential"})"}, true);
    w.group("/model_weights/dense");
    w.strings("/model_weights", "layer_names", {"dense"}, false);
    w.dataset("/model_weights/dense/kernel:0", {2, 3}, kKernel);
}

Bytes to_bytes(const QByteArray& b) { return Bytes(b.begin(), b.end()); }

}  // namespace

class TestHdf5Reader : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void snapshotRecordsRoundTrip();
    void snapshotReaderTrustsNothing();
    void helperWritesTheSnapshot();
    void helperRefusesMoreThanItWasTold();
    void hdf5FileReadsThroughTheHelper();
    void damagedFilesAreConfigErrors();
    void crashIsNamedWithItsSignal();
    void exitStatusIsNamed();
    void hangEndsAtTheDeadline();
    void floodIsCut();
    void outputBeforeInputDoesNotDeadlock();
    void helperThatNeverReads();
    void exitIsSeenWithoutEndOfFile();
    void noDescriptorOfOursIsInherited();
    void helperThatCannotStart();
    void searchOrder();
    void missingHelperIsAClearError();

private:
    QTemporaryDir dir_;
    Bytes small_;
    std::string path(const QString& name) const { return (dir_.path() + "/" + name).toStdString(); }
    // A stand-in helper: a shell script (it gets --max-bytes and --seconds, and ignores them).
    std::string script(const QString& name, const QByteArray& body) const {
        const QString p = dir_.path() + "/" + name;
        QFile f(p);
        if (!f.open(QIODevice::WriteOnly)) return {};
        f.write("#!/bin/sh\nulimit -c 0\n" + body + "\n");
        f.close();
        f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        return p.toStdString();
    }
    QString run_script(const std::string& program, const Bytes& image, Hdf5ReaderLimits limits = {1 << 20, 30},
                       std::vector<std::uint8_t>* out = nullptr) {
        return refusal([&] {
            auto got = thresher::config::run_hdf5_reader(program, image, limits, "fake.h5");
            if (out) *out = std::move(got);
        });
    }
};

void TestHdf5Reader::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFileInfo(reader_program()).isExecutable(), qPrintable(reader_program()));
    write_small_h5(path("small.h5"));
    small_ = test_support::read_bytes(path("small.h5"));
    QVERIFY(small_.size() > 100);
}

void TestHdf5Reader::snapshotRecordsRoundTrip() {
    snap::Writer w;
    w.write(snap::Group{"", {"a", "b"}});
    w.write(snap::Attribute{"a", "names", {"x", "", "zz"}});
    w.write(snap::Dataset{"a/d", {2, 3}, kKernel});
    w.write(snap::BadDataset{"b", "is not a floating-point dataset"});
    w.write(snap::BadAttribute{"b", "model_config", "is not a string"});
    w.write(snap::Unreadable{"not a readable HDF5 file"});
    w.write(snap::End{});
    snap::Reader r(w.bytes());
    const auto g = std::get<snap::Group>(r.next());
    QCOMPARE(g.members, (std::vector<std::string>{"a", "b"}));
    const auto a = std::get<snap::Attribute>(r.next());
    QVERIFY(a.path == "a" && a.name == "names" && a.values == (std::vector<std::string>{"x", "", "zz"}));
    const auto d = std::get<snap::Dataset>(r.next());
    QVERIFY(d.path == "a/d" && d.dims == (std::vector<std::uint64_t>{2, 3}) && d.values == kKernel);
    QCOMPARE(std::get<snap::BadDataset>(r.next()).problem, std::string("is not a floating-point dataset"));
    QCOMPARE(std::get<snap::BadAttribute>(r.next()).name, std::string("model_config"));
    QCOMPARE(std::get<snap::Unreadable>(r.next()).problem, std::string("not a readable HDF5 file"));
    QVERIFY(std::holds_alternative<snap::End>(r.next()));
}

void TestHdf5Reader::snapshotReaderTrustsNothing() {
    const auto error = [](const Bytes& b) -> QString {
        try {
            snap::Reader r(b);
            while (!std::holds_alternative<snap::End>(r.next())) {
            }
        } catch (const std::runtime_error& e) {
            return e.what();
        }
        return {};
    };
    snap::Writer w;
    w.write(snap::Group{"", {"model_weights"}});
    w.write(snap::Dataset{"d", {2, 3}, kKernel});
    w.write(snap::End{});
    const Bytes whole = w.bytes();
    QCOMPARE(error(whole), QString());
    for (std::size_t cut = 0; cut < whole.size(); ++cut)
        QVERIFY2(error(Bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut))).startsWith("snapshot: "),
                 qPrintable(QString::number(cut)));
    Bytes other = whole;
    other[8] = 2;  // the version, after the 8-byte magic
    QCOMPARE(error(other), QString("snapshot: format version 2, expected 1"));
    other = whole;
    other[0] = 'X';
    QCOMPARE(error(other), QString("snapshot: no header"));

    snap::Writer liar;
    liar.write(snap::Dataset{"d", {2, 4}, kKernel});  // 6 values for a [2, 4] shape
    QCOMPARE(error(liar.bytes()), QString("snapshot: a dataset's values do not match its shape"));
    // A group that claims 2^32 - 1 members in a few bytes: refused before anything is reserved.
    Bytes huge(snap::kMagic, snap::kMagic + sizeof snap::kMagic);
    for (int b : std::initializer_list<int>{1, 0, 0, 0, 'G', 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}) huge.push_back(static_cast<std::uint8_t>(b));
    QCOMPARE(error(huge), QString("snapshot: truncated"));
    other = whole;
    other[12] = 'Q';  // the first record's kind
    QCOMPARE(error(other), QString("snapshot: unknown record"));
}

void TestHdf5Reader::helperWritesTheSnapshot() {
    const QByteArray in(reinterpret_cast<const char*>(small_.data()), static_cast<qsizetype>(small_.size()));
    const Finished f = run_reader({"--max-bytes", QString::number(in.size()), "--seconds", "30"}, in);
    QVERIFY2(f.code == 0, f.err.constData());
    const Bytes out = to_bytes(f.out);
    snap::Reader r(out);
    std::vector<snap::Record> records;
    do records.push_back(r.next());
    while (!std::holds_alternative<snap::End>(records.back()));

    bool root = false, config = false, kernel = false;
    for (const auto& rec : records) {
        if (const auto* g = std::get_if<snap::Group>(&rec); g && g->path.empty()) {
            QCOMPARE(g->members, std::vector<std::string>{"model_weights"});
            root = true;
        } else if (const auto* a = std::get_if<snap::Attribute>(&rec); a && a->name == "model_config") {
            QCOMPARE(a->path, std::string());
            QCOMPARE(a->values, std::vector<std::string>{R"({"class_name": "Sequential"})"});
            config = true;
        } else if (const auto* d = std::get_if<snap::Dataset>(&rec)) {
            QCOMPARE(d->path, std::string("model_weights/dense/kernel:0"));
            QCOMPARE(d->dims, (std::vector<std::uint64_t>{2, 3}));
            QCOMPARE(d->values, kKernel);
            kernel = true;
        }
    }
    QVERIFY(root && config && kernel);
}

void TestHdf5Reader::helperRefusesMoreThanItWasTold() {
    const QByteArray in(reinterpret_cast<const char*>(small_.data()), static_cast<qsizetype>(small_.size()));
    Finished f = run_reader({"--max-bytes", QString::number(in.size() - 1), "--seconds", "30"}, in);
    QCOMPARE(f.code, snap::kExitInput);
    QVERIFY(f.out.isEmpty());
    QVERIFY2(f.err.contains("more than"), f.err.constData());
    for (const QStringList& args : {QStringList{}, QStringList{"--max-bytes", "12"}, QStringList{"--max-bytes", "-1", "--seconds", "3"},
                                    QStringList{"--max-bytes", "12", "--seconds", "0"}, QStringList{"--what", "1"}}) {
        f = run_reader(args, in);
        QVERIFY2(f.code == snap::kExitUsage, qPrintable(args.join(' ')));
        QVERIFY2(f.err.contains("usage: thresher-hdf5-reader"), f.err.constData());
    }
}

void TestHdf5Reader::hdf5FileReadsThroughTheHelper() {
    const Hdf5File h5(small_, "small.h5");
    QCOMPARE(h5.members("/"), std::vector<std::string>{"model_weights"});
    QCOMPARE(h5.members("model_weights"), std::vector<std::string>{"dense"});
    QCOMPARE(h5.string("/", "model_config").value(), std::string(R"({"class_name": "Sequential"})"));
    QCOMPARE(h5.strings("/model_weights", "layer_names").value(), std::vector<std::string>{"dense"});
    const auto k = h5.floats("/model_weights/dense/kernel:0");
    QCOMPARE(k.dims_str(), std::string("[2, 3]"));
    QCOMPARE(k.data, kKernel);
    QVERIFY(!h5.exists("model_weights/other"));
    QVERIFY(refusal([&] { h5.floats("model_weights/dense"); }).contains("small.h5: model_weights/dense: is a group, not a dataset"));
}

void TestHdf5Reader::damagedFilesAreConfigErrors() {
    // Cut short: the signature alone is no HDF5 file libhdf5 can open.
    const QString msg = refusal([&] { Hdf5File(Bytes(small_.begin(), small_.begin() + 8), "cut.h5"); });
    QCOMPARE(msg, QString("cut.h5: not a readable HDF5 file (truncated or corrupt)"));
    // Whatever libhdf5 makes of a damaged file, what comes back is a file whose accessors
    // answer, or a ConfigError naming it. Never a crash here.
    int refused = 0, tried = 0;
    const auto check = [&](const Bytes& damaged, const QString& what) {
        ++tried;
        const QString m = refusal([&] {
            const Hdf5File h5(damaged, "damaged.h5");
            for (const auto& name : h5.members("/")) (void)h5.exists(name);
            (void)h5.floats("model_weights/dense/kernel:0");
        });
        if (m.isEmpty()) return;
        ++refused;
        QVERIFY2(m.startsWith("damaged.h5: "), qPrintable(what + ": " + m));
    };
    // libhdf5 1.10.8 overflows a heap buffer of its own on this one (cmake/asan.supp); the
    // release build reads it.
    const Bytes found =
        test_support::read_bytes((test_support::source_dir() + "/tests/engine/config/data/fuzz_libhdf5_attribute_overflow.h5").toStdString());
    QVERIFY(!found.empty());
    check(found, "the fuzz finding");
    // Cut anywhere: libhdf5 sees the end of the file before the end its superblock declares, so
    // every one is refused.
    for (std::size_t cut = 16; cut < small_.size(); cut += small_.size() / 16) {
        const int before = refused;
        check(Bytes(small_.begin(), small_.begin() + static_cast<std::ptrdiff_t>(cut)), QString("cut at %1").arg(cut));
        if (QTest::currentTestFailed()) return;
        QVERIFY2(refused == before + 1, qPrintable(QString("cut at %1 was read").arg(cut)));
    }
    // A byte flipped anywhere: refused, or (padding, a value) read.
    for (std::size_t at = 8; at < small_.size(); at += 97) {
        Bytes flipped = small_;
        flipped[at] ^= 0xff;
        check(flipped, QString("byte %1 flipped").arg(at));
        if (QTest::currentTestFailed()) return;
    }
    qInfo("%d of %d damaged files refused", refused, tried);
}

void TestHdf5Reader::crashIsNamedWithItsSignal() {
    const QString msg = run_script(script("segv", "kill -SEGV $$"), small_);
    QVERIFY2(msg.startsWith("fake.h5: libhdf5 crashed reading the file (signal 11): it is damaged"), qPrintable(msg));
}

void TestHdf5Reader::exitStatusIsNamed() {
    const QString msg = run_script(script("exit3", "cat >/dev/null\nexit 3"), small_);
    QCOMPARE(msg, QString("fake.h5: libhdf5 could not read the file (exit 3)"));
}

void TestHdf5Reader::hangEndsAtTheDeadline() {
    QElapsedTimer t;
    t.start();
    const QString msg = run_script(script("hang", "exec sleep 60"), small_, {1 << 20, 1});
    QCOMPARE(msg, QString("fake.h5: libhdf5 took longer than 1 s reading it: the file is damaged or not one Thresher can read"));
    QVERIFY2(t.elapsed() < 5000, qPrintable(QString::number(t.elapsed())));
}

void TestHdf5Reader::floodIsCut() {
    QElapsedTimer t;
    t.start();
    const QString msg = run_script(script("flood", "exec cat /dev/zero"), small_, {100000, 30});
    QCOMPARE(msg, QString("fake.h5: libhdf5 returned more than the file can hold: the file is damaged or not one Thresher can read"));
    QVERIFY2(t.elapsed() < 5000, qPrintable(QString::number(t.elapsed())));
}

void TestHdf5Reader::outputBeforeInputDoesNotDeadlock() {
    // 4 MB out before a byte of 8 MiB is read, then all of it read, then 4 MB more: far beyond
    // any socket buffer either way, so sending the image without reading would block for ever.
    const Bytes image(8u << 20, 0x5a);
    std::vector<std::uint8_t> out;
    const QString msg = run_script(script("chatty", "head -c 4000000 /dev/zero\ncat >/dev/null\nhead -c 4000000 /dev/zero"), image,
                                   {16u << 20, 60}, &out);
    QVERIFY2(msg.isEmpty(), qPrintable(msg));
    QCOMPARE(out.size(), std::size_t{8000000});
}

void TestHdf5Reader::helperThatNeverReads() {
    // It exits with its input unread: sending fails (EPIPE), which must be no SIGPIPE here.
    const Bytes image(8u << 20, 0x5a);
    std::vector<std::uint8_t> out;
    const QString msg = run_script(script("deaf", "echo done"), image, {1 << 20, 30}, &out);
    QVERIFY2(msg.isEmpty(), qPrintable(msg));
    QCOMPARE(QByteArray(reinterpret_cast<const char*>(out.data()), static_cast<qsizetype>(out.size())), QByteArray("done\n"));
}

void TestHdf5Reader::exitIsSeenWithoutEndOfFile() {
    // A process it left behind holds its stdout: no end of file for 3 s, but the helper's exit
    // ends the wait.
    QElapsedTimer t;
    t.start();
    std::vector<std::uint8_t> out;
    const QString msg = run_script(script("leaves_child", "cat >/dev/null\n(sleep 3 2>/dev/null &)\necho done"), small_, {1 << 20, 30}, &out);
    QVERIFY2(msg.isEmpty(), qPrintable(msg));
    QCOMPARE(out.size(), std::size_t{5});
    QVERIFY2(t.elapsed() < 2500, qPrintable(QString::number(t.elapsed())));
}

void TestHdf5Reader::noDescriptorOfOursIsInherited() {
    const int fd = ::open("/dev/null", O_RDONLY);  // not close-on-exec
    QVERIFY(fd > 2);
    const QString msg = run_script(script("fds", QByteArray("cat >/dev/null\n[ -e /proc/$$/fd/") + QByteArray::number(fd) + " ] && exit 7\nexit 0"),
                                   small_);
    ::close(fd);
    QVERIFY2(msg.isEmpty(), qPrintable(msg));
}

void TestHdf5Reader::helperThatCannotStart() {
    QString msg = run_script("/nonexistent/thresher-hdf5-reader", small_);
    QCOMPARE(msg, QString("fake.h5: cannot start /nonexistent/thresher-hdf5-reader to read the HDF5 file: No such file or directory"));
    const std::string not_executable = path("plain");
    test_support::write_bytes(not_executable, {'x'});
    msg = run_script(not_executable, small_);
    QVERIFY2(msg.startsWith(QString::fromStdString("fake.h5: cannot start " + not_executable + " to read the HDF5 file: ")), qPrintable(msg));
}

void TestHdf5Reader::searchOrder() {
    const QString a = dir_.path() + "/a", b = dir_.path() + "/b", c = dir_.path() + "/c";
    for (const QString& d : {a, b, c}) QVERIFY(QDir().mkpath(d));
    const auto helper_in = [](const QString& d) {
        const QString p = d + "/thresher-hdf5-reader";
        QFile f(p);
        if (f.open(QIODevice::WriteOnly)) f.write("#!/bin/sh\n");
        f.close();
        f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        return p.toStdString();
    };
    const std::string in_b = helper_in(b), in_c = helper_in(c), in_a = helper_in(a);
    using thresher::config::find_hdf5_reader;
    // Beside the program first, even with the variable set.
    QCOMPARE(find_hdf5_reader({a.toStdString(), in_b, c.toStdString()}), in_a);
    QVERIFY(QFile::remove(QString::fromStdString(in_a)));
    // Then the variable, then $PATH (absolute entries only, in order).
    QCOMPARE(find_hdf5_reader({a.toStdString(), in_b, c.toStdString()}), in_b);
    QCOMPARE(find_hdf5_reader({a.toStdString(), std::nullopt, "relative:" + a.toStdString() + "::" + c.toStdString()}), in_c);
    // A file that is not executable is passed over.
    QVERIFY(QFile(QString::fromStdString(in_c)).setPermissions(QFile::ReadOwner | QFile::WriteOwner));
    QCOMPARE(find_hdf5_reader({a.toStdString(), in_b, c.toStdString()}), in_b);
    // This process finds the one built beside it.
    QCOMPARE(QString::fromStdString(find_hdf5_reader(thresher::config::hdf5_reader_places())), QFileInfo(reader_program()).canonicalFilePath());
}

void TestHdf5Reader::missingHelperIsAClearError() {
    const std::string empty = (dir_.path() + "/empty").toStdString();
    QVERIFY(QDir().mkpath(QString::fromStdString(empty)));
    QString msg = refusal([&] { thresher::config::find_hdf5_reader({empty, empty + "/gone", "/nonexistent:" + empty}); });
    QCOMPARE(msg, QString::fromStdString(
                      "thresher-hdf5-reader, the program that reads HDF5 files for Thresher, was not found: not beside this program (" +
                      empty + "/thresher-hdf5-reader); THRESHER_HDF5_READER=" + empty +
                      "/gone is not an executable file; not in $PATH (/nonexistent:" + empty +
                      "). Install it beside this program (Thresher's package does; in a build folder, build the "
                      "thresher-hdf5-reader target) or set THRESHER_HDF5_READER to its path"));
    msg = refusal([&] { thresher::config::find_hdf5_reader({"", std::nullopt, std::nullopt}); });
    QVERIFY2(msg.contains("its folder is unknown") && msg.contains("THRESHER_HDF5_READER is not set") && msg.contains("$PATH is not set"),
             qPrintable(msg));
}

QTEST_GUILESS_MAIN(TestHdf5Reader)
#include "test_hdf5_reader.moc"
