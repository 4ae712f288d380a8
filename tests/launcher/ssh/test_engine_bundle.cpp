// The SSH launcher's engine bundle (launcher/ssh/staged_tree.h), on this machine (no sshd):
//   - it holds bin/thresher-engine and bin/thresher-hdf5-reader, both executable, and the
//     libraries of both (libhdf5 from the reader's), each soname once and none of glibc's;
//   - laid out as a host gets it and run with LD_LIBRARY_PATH=<bundle>/lib, the engine reads a
//     Keras .h5 through the reader beside it (no THRESHER_HDF5_READER, no $PATH that holds one);
//   - an engine with no reader beside it is refused, naming where the reader was looked for;
//   - a changed reader is a new bundle (another hash).
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

#include "launcher.h"
#include "staged_tree.h"
#include "weight_files.h"

using thresher::launcher::LaunchError;
using thresher::launcher::ssh::engine_bundle;
using thresher::launcher::ssh::StagedTree;

namespace {

QString bin(const QString& name) { return qEnvironmentVariable("THRESHER_BIN_DIR") + "/" + name; }

QString refusal(const QString& engine) {
    try {
        engine_bundle(engine);
    } catch (const LaunchError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

// Copies `from` to `to`, keeping its permissions (QFile::copy does).
bool copy(const QString& from, const QString& to) { return QFile::copy(from, to); }

}  // namespace

class TestEngineBundle : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void holdsBothProgramsAndTheirLibraries();
    void engineReadsH5FromTheLaidOutBundle();
    void engineWithoutReaderIsRefused();
    void changedReaderIsANewBundle();

private:
    QTemporaryDir dir_;
};

void TestEngineBundle::initTestCase() {
    QVERIFY(dir_.isValid());
    for (const char* p : {"thresher-engine", "thresher-hdf5-reader"}) QVERIFY2(QFileInfo(bin(p)).isExecutable(), qPrintable(bin(p)));
}

void TestEngineBundle::holdsBothProgramsAndTheirLibraries() {
    const StagedTree tree = engine_bundle(bin("thresher-engine"));
    QCOMPARE(tree.kind, QString("bundles"));
    QSet<QString> relative;
    for (const auto& f : tree.files) {
        QVERIFY2(!relative.contains(f.relative), qPrintable(f.relative));
        relative.insert(f.relative);
        QCOMPARE(f.executable, f.relative.startsWith("bin/"));
        QVERIFY2(!thresher::launcher::ssh::is_glibc_library(f.relative.mid(4)), qPrintable(f.relative));
    }
    QVERIFY(relative.contains("bin/thresher-engine"));
    QVERIFY(relative.contains("bin/thresher-hdf5-reader"));
    QCOMPARE(tree.files.size(), relative.size());
    // libhdf5 comes with the bundle: the reader needs it (foreign HDF5 files are only ever read there,
    // out of process), and the engine links it to write Keras exports (export-model), which
    // writes only what the engine built; both find the one copy under lib/.
    bool hdf5 = false;
    for (const auto& r : relative) hdf5 = hdf5 || r.startsWith("lib/libhdf5");
    QVERIFY2(hdf5, qPrintable(QStringList(relative.begin(), relative.end()).join(' ')));
    int copies = 0;
    for (const auto& r : relative) copies += r.startsWith("lib/libhdf5_serial.so") ? 1 : 0;
    QVERIFY2(copies <= 1, "one libhdf5 in the bundle");
}

void TestEngineBundle::engineReadsH5FromTheLaidOutBundle() {
    const StagedTree tree = engine_bundle(bin("thresher-engine"));
    const QString root = dir_.filePath("host/" + tree.hash);
    for (const auto& f : tree.files) {
        QVERIFY(QDir().mkpath(QFileInfo(root + "/" + f.relative).absolutePath()));
        QVERIFY2(copy(f.local, root + "/" + f.relative), qPrintable(f.relative));
    }
    const QString h5 = dir_.filePath("tiny.h5");
    {
        test_support::H5Writer w(h5.toStdString());
        w.strings("/", "model_config",
                  {R"({"class_name": "Sequential", "config": {"name": "tiny", "layers": [{"class_name": "Dense", "config": )"
                   R"({"name": "out", "units": 2, "activation": "softmax", "use_bias": true, "batch_input_shape": [null, 3]}}]}})"},
                  true);
        w.group("/model_weights");
        w.strings("/model_weights", "layer_names", {"out"}, false);
        w.keras_layer("/model_weights/out", "out", {{"kernel", {{3, 2}, {1, 2, 3, 4, 5, 6}}}, {"bias", {{2}, {0.5f, -0.5f}}}});
    }
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("LD_LIBRARY_PATH", root + "/lib");
    env.insert("PATH", "/usr/bin:/bin");
    env.remove("THRESHER_HDF5_READER");
    p.setProcessEnvironment(env);
    p.start(root + "/bin/thresher-engine", {"inspect", h5});
    QVERIFY(p.waitForFinished(60000));
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, err.constData());
    QVERIFY2(err.contains("weights: 8 parameters"), err.constData());
}

void TestEngineBundle::engineWithoutReaderIsRefused() {
    const QString alone = dir_.filePath("alone");
    QVERIFY(QDir().mkpath(alone));
    QVERIFY(copy(bin("thresher-engine"), alone + "/thresher-engine"));
    const QString msg = refusal(alone + "/thresher-engine");
    QVERIFY2(msg.startsWith("the engine " + alone + "/thresher-engine has no thresher-hdf5-reader beside it (" + alone +
                            "/thresher-hdf5-reader), which the hosts need to read Keras .h5 models"),
             qPrintable(msg));
}

void TestEngineBundle::changedReaderIsANewBundle() {
    const QString both = dir_.filePath("both");
    QVERIFY(QDir().mkpath(both));
    QVERIFY(copy(bin("thresher-engine"), both + "/thresher-engine"));
    QVERIFY(copy(bin("thresher-hdf5-reader"), both + "/thresher-hdf5-reader"));
    const QString before = engine_bundle(both + "/thresher-engine").hash;
    QCOMPARE(before, engine_bundle(bin("thresher-engine")).hash);  // the same files, wherever they are
    QFile reader(both + "/thresher-hdf5-reader");
    QVERIFY(reader.open(QIODevice::Append));
    QVERIFY(reader.write("x") == 1);  // a different build of the reader, the engine unchanged
    reader.close();
    const QString after = engine_bundle(both + "/thresher-engine").hash;
    QVERIFY(after != before);
}

QTEST_GUILESS_MAIN(TestEngineBundle)
#include "test_engine_bundle.moc"
