// Every run the launcher starts gets its own --run-nonce (engine/dist/net/run_key.h), the same
// for all its engines: two `thresher-launch run --verbose` of one spec (2 local nodes) are read
// for the engines' command lines ("[launcher] node N: pid P: ENGINE ARGS") and for what each
// engine says its run id is ("[node N] thresher-engine: node N: run id X (secret and --run-nonce)").
// Within a run the nonce and run id agree on both nodes; across the two runs both differ.
#include <QtTest>

#include <QRegularExpression>
#include <QTemporaryDir>

#include "launch_fixture.h"

using namespace launch_fixture;

class TestLaunchNonce : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void two_runs_of_one_spec_get_different_nonces();
};

void TestLaunchNonce::two_runs_of_one_spec_get_different_nonces() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(write_file(dir.filePath("tiny.json"), kTinyModel));
    QVERIFY(write_file(dir.filePath("data.csv"), three_class_csv(96)));
    const QString spec = dir.filePath("two.json");
    QVERIFY(write_file(spec, local_spec(dir.filePath("tiny.json"), dir.filePath("data.csv"), 2, free_ports(2),
                                        R"("epochs":1,"batch":8,"threads":1)")));
    const QRegularExpression command(R"(^\[launcher\] node (\d): pid \d+: .* --run-nonce ([0-9a-f]+)( |$))",
                                     QRegularExpression::MultilineOption);
    const QRegularExpression run_id(R"(^\[node (\d)\] thresher-engine: node \d: run id ([0-9a-f]{16}) \(secret and --run-nonce\))",
                                    QRegularExpression::MultilineOption);
    QStringList nonces, ids;  // one per run
    for (int run = 0; run < 2; ++run) {
        const auto r = run_cli({"run", spec, "--verbose", "--engine", bin("thresher-engine")});
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
        QMap<int, QString> nonce_of, id_of;
        for (auto m = command.globalMatch(r.err); m.hasNext();) {
            const auto match = m.next();
            nonce_of[match.captured(1).toInt()] = match.captured(2);
        }
        for (auto m = run_id.globalMatch(r.err); m.hasNext();) {
            const auto match = m.next();
            id_of[match.captured(1).toInt()] = match.captured(2);
        }
        QVERIFY2(nonce_of.size() == 2 && id_of.size() == 2, qPrintable(r.err));
        QCOMPARE(nonce_of[0].size(), 32);  // 16 random bytes
        QCOMPARE(nonce_of[1], nonce_of[0]);
        QCOMPARE(id_of[1], id_of[0]);
        qInfo("run %d: nonce %s, run id %s", run, qPrintable(nonce_of[0]), qPrintable(id_of[0]));
        nonces << nonce_of[0];
        ids << id_of[0];
    }
    QVERIFY(nonces[0] != nonces[1]);
    QVERIFY(ids[0] != ids[1]);
}

QTEST_GUILESS_MAIN(TestLaunchNonce)
#include "test_launch_nonce.moc"
