// Packaging: `cmake --install` lays out the programs, the example runs, the .desktop file and the
// icon; the installed app finds its example run under share/thresher (not the source tree) and
// renders; the installed engine reads .h5 files through the installed thresher-hdf5-reader; the
// Debian package CPack builds holds the same files and declares the Qt plugins it needs. Runs on a copy of this build's install, so nothing outside a temporary folder changes.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

class TestPackage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void install_layout_and_app_finds_its_run();
    void debian_package();
};

namespace {

int run(const QString& program, const QStringList& args, QByteArray* out = nullptr, QByteArray* err = nullptr,
        const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (!p.waitForFinished(180000)) return -1;
    if (out) *out = p.readAllStandardOutput();
    if (err) *err = p.readAllStandardError();
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

}  // namespace

void TestPackage::install_layout_and_app_finds_its_run() {
    QTemporaryDir dir;
    const QString prefix = dir.filePath("usr");
    QByteArray err;
    QCOMPARE(run("cmake", {"--install", THRESHER_BUILD_DIR, "--prefix", prefix}, nullptr, &err), 0);
    for (const char* f : {"bin/thresher", "bin/thresher-launch", "bin/thresher-engine", "bin/thresher-hdf5-reader",
                             "share/thresher/models/lenet.json", "share/thresher/runs/lenet-local.json",
                             "share/thresher/sweeps/strategy-by-nodes.json",
                             "share/applications/thresher.desktop", "share/icons/hicolor/scalable/apps/thresher.svg"})
        QVERIFY2(QFileInfo::exists(prefix + "/" + f), qPrintable(f));

    // The example sweep finds its model from the installed layout (a dry run: points, no runs).
    QByteArray out;
    QCOMPARE(run(prefix + "/bin/thresher-launch", {"sweep", prefix + "/share/thresher/sweeps/strategy-by-nodes.json", "--dry-run",
                                                 "--out", dir.filePath("sweep-out")}, &out, &err), 0);
    QVERIFY2(out.contains("point 4: strategy = parameter-averaging, nodes = 2: 2 node(s) x 1 worker(s); 0/1 run(s) done"),
             out.constData());

    // The installed engine reads .h5 files through the installed thresher-hdf5-reader beside it (the
    // build's is neither beside it nor on this $PATH): a damaged file is refused in the file's terms.
    QProcessEnvironment bare = QProcessEnvironment::systemEnvironment();
    bare.insert("PATH", "/usr/bin:/bin");
    bare.remove("THRESHER_HDF5_READER");
    const QString h5 = QString(THRESHER_SOURCE_DIR) + "/tests/engine/config/data/fuzz_libhdf5_attribute_overflow.h5";
    QCOMPARE(run(prefix + "/bin/thresher-engine", {"inspect", h5}, nullptr, &err, bare), 1);
    QVERIFY2(err.contains((h5 + ": ").toUtf8()) && !err.contains("thresher-hdf5-reader"), err.constData());

    const QString png = dir.filePath("installed.png");
    QVERIFY(run(prefix + "/bin/thresher", {"--history", dir.filePath("h.sqlite"), "--screenshot", png}, nullptr, &err) == 0);
    QVERIFY2(err.contains(("opened " + prefix + "/share/thresher/runs/lenet-local.json").toUtf8()), err.constData());
    QVERIFY(!QImage(png).isNull());
}

void TestPackage::debian_package() {
    if (QStandardPaths::findExecutable("cpack").isEmpty() || QStandardPaths::findExecutable("dpkg-deb").isEmpty())
        QSKIP("cpack or dpkg-deb not installed");
    QTemporaryDir dir;
    QByteArray out, err;
    QCOMPARE(run("cpack", {"-G", "DEB", "--config", QString(THRESHER_BUILD_DIR) + "/CPackConfig.cmake", "-B", dir.path()},
                 &out, &err), 0);
    const auto debs = QDir(dir.path()).entryList({"thresher_*.deb"});
    QCOMPARE(debs.size(), 1);
    const QString deb = dir.filePath(debs[0]);
    QCOMPARE(run("dpkg-deb", {"-c", deb}, &out), 0);
    for (const char* f : {"./usr/bin/thresher", "./usr/bin/thresher-launch", "./usr/bin/thresher-engine",
                          "./usr/bin/thresher-hdf5-reader", "./usr/share/applications/thresher.desktop", "./usr/share/thresher/runs/lenet-local.json"})
        QVERIFY2(out.contains(f), f);
    QCOMPARE(run("dpkg-deb", {"-f", deb, "Depends"}, &out), 0);
    for (const char* d : {"libqt6sql6-sqlite", "libqt6svg6", "qt6-qpa-plugins", "libdnnl2", "libssh-4", "libqcustomplot2.1-qt6", "libhdf5"})
        QVERIFY2(out.contains(d), out.constData());
}

QTEST_GUILESS_MAIN(TestPackage)
#include "test_package.moc"
