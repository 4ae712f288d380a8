// Per-node shard placement (launcher/shard_placement.h) over a real sshd (sshd_fixture.h). A shard
// set whose index is written by the engine's own writer (data::shard_index_json) holds 4 train and
// 3 test shards, plus a file the index does not list in each of the set's folders:
//   - the ownership rule: position mod nodes, per part;
//   - two nodes on two "hosts" (two sessions, each with its own remote cache): host 0 holds
//     index.json, train shards 0 and 2 and test shards 0 and 2; host 1 index.json, train 1 and 3
//     and test 1 — byte for byte, and nothing else; the two subsets and the whole folder are
//     three different hashes, and staging again finds each host's folder and sends nothing;
//   - refusals, naming the set: fewer train shards than nodes, a listed name that leaves the
//     folder, a listed file that is missing, a file that is no shard index.
#include <QtTest>

#include <QDirIterator>
#include <QTemporaryDir>

#include "data/shard_format.h"
#include "launch_fixture.h"
#include "launcher.h"
#include "remote_stage.h"
#include "shard_placement.h"
#include "sftp_client.h"
#include "sshd_fixture.h"
#include "staged_tree.h"

using namespace thresher::launcher;
using namespace thresher::launcher::ssh;

namespace {

QString shard(const QString& part, int i) { return QString("%1/shard-%2.thrs").arg(part).arg(i, 5, 10, QChar('0')); }

// The set's folder: index.json as `thresher-engine export` writes it, listing `train` and `test`
// shards; each shard file holds its own name (so a wrong file shows), and a stray file sits in
// every folder of the set.
bool write_shard_set(const QString& folder, int train, int test) {
    thresher::data::ShardIndex index;
    index.source = "test.csv";
    index.batch = 8;
    index.layout.num_classes = 3;
    index.layout.labels = true;
    index.train.name = "train";
    index.test.name = "test";
    index.has_test = test > 0;
    for (auto [part, count, list] : {std::tuple{QString("train"), train, &index.train}, std::tuple{QString("test"), test, &index.test}}) {
        if (!QDir().mkpath(folder + "/" + part)) return false;
        for (int i = 0; i < count; ++i) {
            const QByteArray bytes = shard(part, i).toUtf8().repeated(50 + i);
            if (!launch_fixture::write_file(folder + "/" + shard(part, i), bytes)) return false;
            list->shards.push_back({shard(part, i).toStdString(), 8, std::uint64_t(bytes.size()), 0});
            list->records += 8;
        }
        if (!launch_fixture::write_file(folder + "/" + part + "/shard-09999.thrs", "not listed")) return false;
    }
    return launch_fixture::write_file(folder + "/notes.txt", "not listed") &&
           launch_fixture::write_file(folder + "/" + kShardIndexName, QByteArray::fromStdString(shard_index_json(index)));
}

// Every file below `dir`, relative, sorted.
QStringList files_below(const QString& dir) {
    QStringList out;
    for (QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories); it.hasNext();)
        out << QDir(dir).relativeFilePath(it.next());
    out.sort();
    return out;
}

QString refusal(const std::function<void()>& f) {
    try {
        f();
    } catch (const LaunchError& e) {
        return QString::fromStdString(e.what());
    }
    return "<accepted>";
}

}  // namespace

class TestShardStaging : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void owner_is_position_mod_nodes();
    void each_host_gets_its_nodes_shards();
    void refusals();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    QTemporaryDir dir_;
};

void TestShardStaging::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY(write_shard_set(path("set"), 4, 3));
    QVERIFY(is_shard_folder(path("set")));
    QVERIFY(!is_shard_folder(path("set/train")));
}

void TestShardStaging::owner_is_position_mod_nodes() {
    QList<int> owners;
    for (int f = 0; f < 7; ++f) owners << shard_owner(f, 3);
    QCOMPARE(owners, QList<int>({0, 1, 2, 0, 1, 2, 0}));
    const ShardSetFiles files = read_shard_set_files(path("set"));
    QCOMPARE(files.train, QStringList({shard("train", 0), shard("train", 1), shard("train", 2), shard("train", 3)}));
    QCOMPARE(files.test, QStringList({shard("test", 0), shard("test", 1), shard("test", 2)}));
    // Train and test counted apart: node 1 of 2 owns test shard 1, not test shard 0 (position 4 overall).
    QCOMPARE(shard_files_of_node(files, 1, 2, "set"), QStringList({shard("train", 1), shard("train", 3), shard("test", 1)}));
    QCOMPARE(shard_files_of_node(files, 3, 4, "set"), QStringList({shard("train", 3)}));
}

void TestShardStaging::each_host_gets_its_nodes_shards() {
    if (const QString why = SshdFixture::unavailable(); !why.isEmpty()) QSKIP(qPrintable("no real sshd here: " + why));
    SshdFixture sshd;
    QString error;
    QVERIFY2(sshd.start(error), qPrintable(error));
    const QList<QStringList> expected{
        {".complete", "index.json", shard("test", 0), shard("test", 2), shard("train", 0), shard("train", 2)},
        {".complete", "index.json", shard("test", 1), shard("train", 1), shard("train", 3)}};
    QStringList hashes;
    for (int rank = 0; rank < 2; ++rank) {
        // One session per "host", each with its own cache, as two machines would have.
        SshSession session(sshd.target(rank == 0));
        SftpClient sftp(session);
        const QString cache = path(QString("host%1").arg(rank));
        const StagedTree tree = shard_subset_tree(path("set"), rank, 2);
        const StageResult first = stage_tree(sftp, cache.toStdString(), tree);
        QVERIFY(first.uploaded);
        const QString staged = QString::fromStdString(first.dir);
        QCOMPARE(staged, cache + "/data/" + tree.hash);
        QCOMPARE(files_below(cache + "/data"), QStringList(expected[rank]).replaceInStrings(QRegularExpression("^"), tree.hash + "/"));
        for (const QString& f : expected[rank].mid(1)) {
            QFile a(path("set/" + f)), b(staged + "/" + f);
            QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
            QVERIFY2(a.readAll() == b.readAll(), qPrintable(f));
        }
        // A run again: the folder is found, nothing is sent.
        const StageResult again = stage_tree(sftp, cache.toStdString(), shard_subset_tree(path("set"), rank, 2));
        QVERIFY(!again.uploaded);
        QCOMPARE(again.dir, first.dir);
        hashes << tree.hash;
    }
    hashes << data_tree(path("set")).hash;  // what the shared placement stages
    hashes.removeDuplicates();
    QCOMPARE(hashes.size(), 3);
}

void TestShardStaging::refusals() {
    const QString five = refusal([&] { shard_subset_tree(path("set"), 0, 5); });
    QVERIFY2(five.startsWith("the shard set " + path("set") + " has 4 training shard file(s) for 5 nodes: with the shard "
                             "placement \"per node\" node 4 would get none"),
             qPrintable(five));

    QVERIFY(write_shard_set(path("escape"), 2, 0));
    QFile index(path("escape/index.json"));
    QVERIFY(index.open(QIODevice::ReadOnly));
    const QByteArray text = index.readAll();
    index.close();
    QVERIFY(launch_fixture::write_file(index.fileName(), QByteArray(text).replace("train/shard-00001.thrs", "train/../../x")));
    const QString escape = refusal([&] { shard_subset_tree(path("escape"), 0, 2); });
    QVERIFY2(escape == path("escape/index.json") + ": $.train.shards[1].file: \"train/../../x\" is not a plain file name inside train/",
             qPrintable(escape));

    QVERIFY(launch_fixture::write_file(index.fileName(), text));
    QVERIFY(QFile::remove(path("escape/train/shard-00001.thrs")));
    const QString missing = refusal([&] { shard_subset_tree(path("escape"), 1, 2); });
    QCOMPARE(missing, "the shard set " + path("escape") + " lists train/shard-00001.thrs, which is not there");

    QVERIFY(launch_fixture::write_file(index.fileName(), R"({"format":"thresher-run","version":1})"));
    const QString other = refusal([&] { shard_subset_tree(path("escape"), 0, 2); });
    QVERIFY2(other.startsWith(path("escape/index.json") + ": $.format: expected \"thresher-shards\""), qPrintable(other));
}

QTEST_GUILESS_MAIN(TestShardStaging)
#include "test_shard_staging.moc"
