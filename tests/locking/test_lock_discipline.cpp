// Which lock guards which member is declared in the code (core/guarded.h: THRESHER_GUARDED_BY) and
// checked by clang's thread-safety analysis: every source of engine/dist/masters -- NodeLink and its
// parts (membership, update ledger, join desk, evaluation gather, round book) -- must compile with
// -Werror=thread-safety, so no member of those classes is read or written without the one lock that
// guards it (DESIGN.md: each component owns its state and its lock). The project builds with GCC,
// which ignores the annotations; this suite runs clang on the sources (syntax only, nothing linked).
// A file that touches a guarded member without its lock, or under another, must fail first
// (misuse.cpp), or a pass would prove nothing.
#include <QtTest>

#include <QDir>
#include <QProcess>
#include <QStandardPaths>

#include "source_dir.h"

namespace {

struct Compiled {
    int exit_code = -1;
    QString output;
};

Compiled check(const QString& file) {
    const QString clang = QStandardPaths::findExecutable("clang++");
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(clang, {"-fsyntax-only", "-std=c++20", "-I", test_support::source_dir() + "/engine", "-Wthread-safety",
                    "-Werror=thread-safety", file});
    if (!p.waitForFinished(120000)) {
        p.kill();
        p.waitForFinished();
        return {-1, "clang++ took over 120 s on " + file};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromLocal8Bit(p.readAll())};
}

}  // namespace

class TestLockDiscipline : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        QVERIFY2(!QStandardPaths::findExecutable("clang++").isEmpty(),
                 "clang++ not found: the lock check needs Debian's clang (scripts/install-deps.sh installs it)");
    }
    void a_member_touched_without_its_lock_fails() {
        const auto r = check(test_support::source_dir() + "/tests/locking/misuse.cpp");
        QVERIFY2(r.exit_code != 0, qPrintable("misuse.cpp compiled clean:\n" + r.output));
        QVERIFY2(r.output.contains("reading variable 'count_' requires holding mutex 'mutex_'"), qPrintable(r.output));
        QVERIFY2(r.output.contains("writing variable 'count_' requires holding mutex 'mutex_' exclusively"),
                 qPrintable(r.output));
    }
    void the_distributed_core_holds_its_locks() {
        const QDir dir(test_support::source_dir() + "/engine/dist/masters");
        const auto files = dir.entryList({"*.cpp"}, QDir::Files, QDir::Name);
        QVERIFY(files.size() >= 20);
        QStringList failed;
        for (const auto& name : files) {
            const auto r = check(dir.filePath(name));
            if (r.exit_code != 0) failed << name + ":\n" + r.output;
        }
        QVERIFY2(failed.isEmpty(), qPrintable(failed.join("\n")));
    }
};

QTEST_GUILESS_MAIN(TestLockDiscipline)
#include "test_lock_discipline.moc"
