// batch_script(): the Slurm run script from a spec, without a cluster. Real bash reads it back:
//   - it parses (bash -n), for every option the spec can set;
//   - values a spec carries (name, partition, paths with quotes, $() and backquotes) reach
//     Slurm and the engine exactly as written, never as shell code: the engine array evaluated
//     by bash equals RunSpec::engine_arguments() word for word;
//   - the #SBATCH lines follow the spec; the launcher's variant names its run folder and output
//     files and carries the heartbeat watchdog; a script by hand keeps Slurm's default output.
#include <QtTest>

#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>

#include "batch_script.h"
#include "run_spec.h"

using thresher::launcher::EngineFiles;
using thresher::launcher::RunSpec;
using thresher::launcher::slurm::batch_script;
using thresher::launcher::slurm::ScriptOptions;
using thresher::launcher::slurm::shell_quote;

class TestBatchScript : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void quoting_round_trips_through_bash();
    void sbatch_lines_follow_the_spec();
    void launcher_variant();
    void staged_words_are_the_files();

private:
    RunSpec load(const QByteArray& text) { return RunSpec::from_json(text, dir_.filePath("s.json"), dir_.path()); }
    // Runs `script` up to its engine array with bash and prints each element on its own line.
    QStringList engine_words(const QString& script);
    QTemporaryDir dir_;
};

namespace {

const char* kHostile = R"({"format":"thresher-run","version":1,"name":"it's $(touch PWNED) `id`",
  "model":"m o'd$(x).json","data":"d\"ata; rm -rf x.csv",
  "training":{"epochs":1,"seed":9},
  "cluster":{"kind":"slurm","partition":"p'; touch PWNED #","nodes":2,"tasks_per_node":2,"cpus_per_task":3,
             "gpus_per_node":1,"time":"1-00:00:00","account":"a b","qos":"q","constraint":"x&y",
             "sbatch_args":["--mem=1G"],"network_mask":"10.0.0.0/8"},
  "save":"out'put.thr"})";

}  // namespace

void TestBatchScript::initTestCase() {
    QVERIFY(dir_.isValid());
    QFile m(dir_.filePath("m o'd$(x).json"));
    QVERIFY(m.open(QIODevice::WriteOnly));
    m.write(R"({"name":"m","input":{"size":4},"layers":[{"type":"output","units":2}]})");
}

QStringList TestBatchScript::engine_words(const QString& script) {
    const qsizetype from = script.indexOf("\nengine=(");
    const qsizetype to = script.indexOf("\n)\n", from);
    if (from < 0 || to < 0) return {"<no engine array>"};
    QString array = script.mid(from + 1, to + 2 - from);
    QProcess bash;
    bash.setWorkingDirectory(dir_.path());
    bash.start("bash", {"-c", "endpoints='E'; run_dir='R'; run_nonce='N'\n" + array + "\nprintf '%s\\n' \"${engine[@]}\""});
    if (!bash.waitForFinished(10000)) return {"<bash did not finish>"};
    if (bash.exitCode() != 0) return {"<bash: " + QString::fromUtf8(bash.readAllStandardError()) + ">"};
    QString out = QString::fromUtf8(bash.readAllStandardOutput());
    out.chop(1);
    return out.split('\n');
}

void TestBatchScript::quoting_round_trips_through_bash() {
    const RunSpec spec = load(kHostile);
    ScriptOptions o;
    o.engine = "/opt/thr esher/bin/thresher-engine";
    const QString script = batch_script(spec, o);
    QVERIFY(QFile(dir_.filePath("s.sh")).open(QIODevice::WriteOnly));
    {
        QFile f(dir_.filePath("s.sh"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(script.toUtf8());
    }
    QProcess check;
    check.start("bash", {"-n", dir_.filePath("s.sh")});
    QVERIFY(check.waitForFinished(10000));
    QVERIFY2(check.exitCode() == 0, check.readAllStandardError().constData());

    EngineFiles files{spec.model_file(), "R/secret"};
    files.nodes = "E";
    files.run_nonce = "N";  // the script's $run_nonce, made inside the job
    const QStringList expected = QStringList{o.engine} + spec.engine_arguments(0, files);
    QCOMPARE(engine_words(script), expected);
    QVERIFY(!QFile::exists(dir_.filePath("PWNED")));
    QCOMPARE(shell_quote("a'b"), QString("'a'\\''b'"));
}

void TestBatchScript::sbatch_lines_follow_the_spec() {
    const QString script = batch_script(load(kHostile), {"/e", {}, {}, 0, false, false});
    for (const QString& line : {QString("#SBATCH --job-name=") + shell_quote("thresher-it's $(touch PWNED) `id`"),
                                QString("#SBATCH --partition=") + shell_quote("p'; touch PWNED #"),
                                QString("#SBATCH --nodes=2"), QString("#SBATCH --ntasks-per-node=2"),
                                QString("#SBATCH --cpus-per-task=3"), QString("#SBATCH --gres=gpu:1"),
                                QString("#SBATCH --time=1-00:00:00"), QString("#SBATCH --account='a b'"),
                                QString("#SBATCH --constraint='x&y'"), QString("#SBATCH --mem=1G"),
                                QString("--ntasks=4"), QString("--kill-on-bad-exit=1"), QString("ip -o -4 addr show")})
        QVERIFY2(script.contains(line), qPrintable(line + " not in\n" + script));
    QVERIFY(!script.contains("--output="));
    QVERIFY(script.contains("run_dir=\"${THRESHER_RUN_DIR:-$HOME/.cache/thresher/slurm}/job-$SLURM_JOB_ID\""));
    QVERIFY(!script.contains("heartbeat"));
    // Every #SBATCH line comes before the first command (sbatch stops reading them there).
    const qsizetype last_sbatch = script.lastIndexOf("#SBATCH"), first_command = script.indexOf("set -euo");
    QVERIFY(last_sbatch < first_command);
}

void TestBatchScript::launcher_variant() {
    const RunSpec spec = load(R"({"format":"thresher-run","version":1,"name":"n","model":{"name":"m","input":{"size":4},
        "layers":[{"type":"output","units":2}]},"cluster":{"kind":"slurm"},"save":"a/b.thr"})");
    ScriptOptions o{"/e", "/shared/runs/run-1", {}, 30, true, false};
    const QString script = batch_script(spec, o);
    QVERIFY(script.contains("#SBATCH --output=/shared/runs/run-1/job-%j.out\n"));
    QVERIFY(script.contains("#SBATCH --error=/shared/runs/run-1/job-%j.err\n"));
    QVERIFY(script.contains("run_dir='/shared/runs/run-1'\n"));
    QVERIFY(script.contains("-gt 30 ]"));  // the heartbeat watchdog
    // The inline model is written by the script, byte for byte.
    const QByteArray model = QJsonDocument(spec.model_inline).toJson(QJsonDocument::Compact);
    QVERIFY(script.contains("<<'THRESHER_MODEL_END'\n" + QString::fromUtf8(model) + "\nTHRESHER_MODEL_END\n"));
    QVERIFY(engine_words(script).contains("R/model.json"));
    // One node: no --nodes and no rank; rank 0 saves SAVE, the others (save_every_node)
    // SAVE's name with .node-r (quoted once more inside the task's bash -c).
    QVERIFY(!engine_words(script).contains("--nodes"));
    QVERIFY(!script.contains("--node-rank"));
    QVERIFY(script.contains("--save '\\''" + spec.save_file() + "'\\''"));
    QVERIFY(script.contains("--save '\\''" + dir_.filePath("a/b.node-") + "'\\''\"$SLURM_PROCID\"'\\''.thr'\\''"));
}

// cluster.stage: `stage_at` lists exactly the engine's words that are files it reads (the
// engine, --model, --data, --secret-file), so the script can point each one at its staged copy;
// "never" stages nothing; the installed "fashion-mnist" is not a path and is never staged.
void TestBatchScript::staged_words_are_the_files() {
    const QString cluster = R"("cluster":{"kind":"slurm","nodes":1,"tasks_per_node":2,"stage":"%1"})";
    const QString text = R"({"format":"thresher-run","version":1,"name":"n","model":"m o'd$(x).json","data":"%1",%2})";
    // The words at stage_at, as bash sees them.
    const auto staged = [](const QString& script) -> QStringList {
        const qsizetype from = script.indexOf("\nengine=("), to = script.indexOf("\nstage_at=(");
        if (from < 0 || to < from) return {"<no engine or stage_at array>"};
        const QString arrays = script.mid(from + 1, script.indexOf('\n', to + 1) - from);
        QProcess bash;
        bash.start("bash", {"-c", "endpoints='E'; run_dir='R'; run_nonce='N'\n" + arrays +
                                      "\nfor p in \"${stage_at[@]}\"; do printf '%s\\n' \"${engine[$p]}\"; done"});
        if (!bash.waitForFinished(10000) || bash.exitCode() != 0) return {"<bash failed>"};
        return QString::fromUtf8(bash.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    };
    const RunSpec always = load(text.arg("d.csv", cluster.arg("always")).toUtf8());
    QCOMPARE(always.cluster.slurm.stage, thresher::launcher::SlurmSettings::Stage::Always);
    const QString script = batch_script(always, ScriptOptions{"/opt/e ngine", {}, {}, 0, false, false});
    QCOMPARE(staged(script), (QStringList{"/opt/e ngine", always.model_file(), always.data_argument(), "R/secret"}));
    QVERIFY(script.contains("missing=\"${!stage_at[*]}\""));  // always: every one, no probe
    QVERIFY(script.contains("sbcast --force --preserve"));
    // A staged engine takes the thresher-hdf5-reader beside it along, into the folder it looks in first.
    QVERIFY(script.contains("reader=\"$(dirname \"$src\")/thresher-hdf5-reader\""));
    QVERIFY(script.contains("sbcast --force --preserve \"$reader\" \"$stage_dir/thresher-hdf5-reader\""));

    const RunSpec installed = load(text.arg("fashion-mnist", cluster.arg("auto")).toUtf8());
    const QString probing = batch_script(installed, ScriptOptions{"/e", {}, {}, 0, false, false});
    QVERIFY(probing.contains("thresher-probe"));
    QCOMPARE(staged(probing), (QStringList{"/e", installed.model_file(), "R/secret"}));
    const QString never = batch_script(load(text.arg("d.csv", cluster.arg("never")).toUtf8()), ScriptOptions{"/e", {}, {}, 0, false, false});
    QVERIFY(!never.contains("stage_at") && !never.contains("sbcast"));
    for (const QString& s : {script, probing, never}) {
        QFile f(dir_.filePath("staged.sh"));
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(s.toUtf8());
        f.close();
        QProcess check;
        check.start("bash", {"-n", f.fileName()});
        QVERIFY(check.waitForFinished(10000));
        QVERIFY2(check.exitCode() == 0, check.readAllStandardError().constData());
    }
}

QTEST_GUILESS_MAIN(TestBatchScript)
#include "test_batch_script.moc"
