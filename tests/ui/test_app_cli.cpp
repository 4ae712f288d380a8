// The thresher program with no display at all (no DISPLAY, WAYLAND_DISPLAY or QT_QPA_PLATFORM):
// --help and --version answer and exit 0 (a QApplication would abort), and --screenshot renders
// offscreen.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

namespace {

QString bin(const QString& name) { return qEnvironmentVariable("THRESHER_BIN_DIR") + "/" + name; }

struct Result {
    int exit_code = -1;
    QString out, err;
};

Result run_without_display(const QStringList& args) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(name);
    p.setProcessEnvironment(env);
    p.start(bin("thresher"), args);
    Result r;
    if (!p.waitForStarted(10000) || !p.waitForFinished(60000)) {
        p.kill();
        p.waitForFinished();
        r.err = "thresher did not start or finish in time";
        return r;
    }
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

}  // namespace

class TestAppCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void help_and_version();
    void screenshot_offscreen();
};

void TestAppCli::help_and_version() {
    const auto version = run_without_display({"--version"});
    QVERIFY2(version.exit_code == 0, qPrintable(version.err));
    QVERIFY2(version.out.startsWith("thresher "), qPrintable(version.out));
    const auto help = run_without_display({"--help"});
    QVERIFY2(help.exit_code == 0, qPrintable(help.err));
    QVERIFY2(help.out.contains("--screenshot") && help.out.contains("--open"), qPrintable(help.out));
}

void TestAppCli::screenshot_offscreen() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString png = dir.filePath("window.png");
    const auto r = run_without_display({"--history", dir.filePath("h.sqlite"), "--tab", "scalability", "--screenshot", png});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QImage image(png);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() >= 800 && image.height() >= 500);
}

QTEST_MAIN(TestAppCli)
#include "test_app_cli.moc"
