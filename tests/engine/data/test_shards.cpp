// Shard sets (data/shard_format.h, shard_writer.h, shard_reader.h): a source exported and read
// back gives its exact rows; blocks hold the first epoch's batches; damaged, truncated or foreign
// files and indexes are refused naming the shard file.
#include "data_error.h"
#include "shard_fixture.h"
#include "synthetic_data.h"
#include "core/error.h"
#include "data/batch_iterator.h"
#include "data/data_source.h"
#include "data/idx_reader.h"
#include "data/shard_reader.h"
#include "data/shard_writer.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

using namespace thresher::data;
using test_support::data_error;
using namespace shard_fixture;

namespace {

bool same_rows(const Dataset& a, const Dataset& b) {
    return a.count == b.count && a.shape.size() == b.shape.size() && a.num_classes == b.num_classes &&
           a.target_size == b.target_size && a.steps == b.steps && a.step_features == b.step_features &&
           a.target_steps == b.target_steps && a.features == b.features && a.targets == b.targets && a.labels == b.labels;
}

}  // namespace

class TestShards : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void roundTrip_data();
    void roundTrip();
    void blocksAreTheFirstEpochsBatches();
    void sampleIsTheFirstRecordsInFileOrder();
    void damagedShardsAreRefused_data();
    void damagedShardsAreRefused();
    void badIndexes_data();
    void badIndexes();
};

void TestShards::roundTrip_data() {
    QTest::addColumn<QString>("kind");
    QTest::newRow("IDX images with a test set") << "idx";
    QTest::newRow("CSV table") << "csv";
    QTest::newRow("text corpus (per-step targets)") << "text";
    QTest::newRow("sequence CSVs") << "sequences";
}

void TestShards::roundTrip() {
    QFETCH(QString, kind);
    QTemporaryDir dir;
    const std::string src = dir.filePath("src").toStdString(), out = dir.filePath("shards").toStdString();
    std::filesystem::create_directories(src);
    DataOptions options;
    std::string spec = src;
    if (kind == "idx") {
        write_idx_folder(src);
    } else if (kind == "csv") {
        spec = src + "/table.csv";
        write_file(spec, test_support::three_class_csv(45).toStdString());
    } else if (kind == "text") {
        spec = src + "/book.txt";
        write_file(spec, "It was the best of times, it was the worst of times; it was the age of wisdom.\n"
                         "Caf\xc3\xa9 na\xc3\xafve \xe2\x80\x94 r\xc3\xa9sum\xc3\xa9.\n");
        options.text.steps = 7;
    } else {
        for (int i = 0; i < 11; ++i) {
            std::string rows;
            for (int s = 0; s <= i % 4; ++s) rows += std::to_string(i + s) + "," + std::to_string(s * 0.5) + "\n";
            write_file(src + "/features/" + std::to_string(i) + ".csv", rows);
            write_file(src + "/labels/" + std::to_string(i) + ".csv", std::to_string(i % 3) + "\n");
        }
    }
    const DataSplit split = load_data(spec, options);
    export_split(split, out);
    QVERIFY(is_shard_folder(out));
    QVERIFY(!is_image_folder(out));  // its train/ and test/ hold shards (the app's Data box asks)
    const DataSplit back = load_data(out, DataOptions{});
    QVERIFY(same_rows(back.train, split.train));
    QCOMPARE(back.has_test, split.has_test);
    if (split.has_test) QVERIFY(same_rows(back.test, split.test));
    QCOMPARE(back.class_names, split.class_names);
    QCOMPARE(back.vocabulary, split.vocabulary);
    QCOMPARE(back.train.name, split.train.name);
    if (kind == "text") QVERIFY(split.train.target_steps > 0 && !split.vocabulary.empty());
    if (kind == "sequences") QVERIFY(split.train.steps == 4);
}

// Block k of the shards (in file order) is the batch an in-memory run with the export's seed takes
// at step k of epoch 0 on one worker: the same samples in the same order.
void TestShards::blocksAreTheFirstEpochsBatches() {
    QTemporaryDir dir;
    const std::string src = dir.filePath("src").toStdString(), out = dir.filePath("shards").toStdString();
    write_idx_folder(src);
    const DataSplit split = load_data(src, DataOptions{});
    const ShardIndex index = export_split(split, out, 8, 3, 42);
    QCOMPARE(index.train.shards.size(), std::size_t{3});
    BatchPlan plan;
    plan.batch_size = 8;
    plan.seed = 42;
    BatchIterator it(split.train, plan);
    Batch want, got;
    for (const auto& e : index.train.shards) {
        ShardFile file(index.path_of(e), index.layout, index.batch, &e);
        for (std::uint32_t k = 0; k < file.header().blocks; ++k) {
            QVERIFY(it.next(want));
            file.read_block(k, got);
            QCOMPARE(got.indices, want.indices);
            QCOMPARE(got.features, want.features);
            QCOMPARE(got.labels, want.labels);
        }
    }
    QVERIFY(!it.next(want));
}

// What training evaluates on without a test part: the first records as exported (the first epoch's
// order), across shard boundaries, never more than there are.
void TestShards::sampleIsTheFirstRecordsInFileOrder() {
    QTemporaryDir dir;
    const std::string src = dir.filePath("src").toStdString(), out = dir.filePath("shards").toStdString();
    write_idx_folder(src);
    const DataSplit split = load_data(src, DataOptions{});
    const ShardIndex index = export_split(split, out, 8, 3, 42);  // shards of 24, 24, 13 records
    const auto order = epoch_order(split.train.count, 42, 0, true);
    for (std::uint64_t n : {5u, 24u, 30u, 61u, 1000u}) {
        const Dataset sample = read_shard_sample(index, index.train, n);
        const std::size_t want = std::min<std::size_t>(n, 61);
        QCOMPARE(sample.count, want);
        QCOMPARE(sample.features.size(), want * 9);
        QCOMPARE(sample.labels.size(), want);
        for (std::size_t i = 0; i < want; ++i) {
            QVERIFY(std::equal(sample.sample(i), sample.sample(i) + 9, split.train.sample(order[i])));
            QCOMPARE(sample.labels[i], split.train.labels[order[i]]);
        }
    }
}

void TestShards::damagedShardsAreRefused_data() {
    QTest::addColumn<QString>("damage");
    QTest::addColumn<QString>("expected");
    QTest::newRow("a flipped bit in a block") << "flip-block" << "shard-00001.thrs: block 1: checksum mismatch";
    QTest::newRow("a flipped bit in the table") << "flip-table" << "shard-00001.thrs: header checksum mismatch";
    QTest::newRow("truncated") << "truncate" << "shard-00001.thrs: 2169 bytes, the index says 2172 (truncated?)";
    QTest::newRow("garbage header") << "garbage" << "shard-00001.thrs: not a usable shard: bad magic";
    QTest::newRow("trailing bytes") << "append" << "shard-00001.thrs: 2173 bytes, the index says 2172";
    QTest::newRow("header only") << "header-only" << "shard-00001.thrs: 60 bytes, the index says 2172 (truncated?)";
    QTest::newRow("header says fewer records") << "fewer-records" << "shard-00001.thrs: not a usable shard: trailing bytes: 2172 bytes, the header says 2084";
    QTest::newRow("missing") << "remove" << "shard-00001.thrs: cannot be opened";
}

void TestShards::damagedShardsAreRefused() {
    QFETCH(QString, damage);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const std::string src = dir.filePath("src").toStdString(), out = dir.filePath("shards").toStdString();
    write_idx_folder(src);
    const ShardIndex index = export_split(load_data(src, DataOptions{}), out);
    const std::string victim = out + "/train/shard-00001.thrs";
    std::string bytes = read_file(victim);
    const ShardHeader h = parse_shard_header(victim, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), bytes.size());
    if (damage == "flip-block") bytes[h.block_offset(1) + 5] ^= 0x10;
    if (damage == "flip-table") bytes[kShardHeaderBytes + 2] ^= 0x01;
    if (damage == "truncate") bytes.resize(bytes.size() - 3);
    if (damage == "garbage") std::memcpy(bytes.data(), "GARBAGE!", 8);
    if (damage == "append") bytes += "x";
    if (damage == "header-only") bytes.resize(kShardHeaderBytes + 4 * h.blocks);
    if (damage == "fewer-records") {
        const std::uint64_t records = h.records - 1;  // the header's field at byte 16
        std::memcpy(bytes.data() + 16, &records, 8);
    }
    if (damage == "remove")
        std::filesystem::remove(victim);
    else
        write_file(victim, bytes);
    const QString message = data_error([&] { load_data(out, DataOptions{}); });
    QVERIFY2(message.contains(QString::fromStdString(out + "/train/")) && message.contains(expected), qPrintable(message));
}

void TestShards::badIndexes_data() {
    QTest::addColumn<QString>("from");
    QTest::addColumn<QString>("to");
    QTest::addColumn<QString>("expected");
    QTest::newRow("not JSON") << "{" << "[" << "index.json: $: not JSON";
    QTest::newRow("escaping file") << "\"train/shard-00000.thrs\"" << "\"train/../../etc/passwd\""
                                   << "$.train.shards[0].file: \"train/../../etc/passwd\" is not a plain file name inside train/";
    QTest::newRow("records not adding up") << "\"records\": 61" << "\"records\": 62" << "$.train.records: 62, but its shards hold 61";
    QTest::newRow("negative batch") << "\"batch\": 8" << "\"batch\": -8" << "$.batch: expected a whole number >= 0, got -8";
    QTest::newRow("other format") << "thresher-shards" << "dl4j" << "$.format: expected \"thresher-shards\"";
    QTest::newRow("more records than bytes") << "\"records\": 24" << "\"records\": 2400"
                                             << "$.train.shards[0].bytes: 2172 bytes cannot hold 2400 records of 88 bytes";
    QTest::newRow("crc disagrees") << "\"crc32\": " << "\"crc32\": 7, \"was\": " << "shard-00000.thrs: checksum mismatch with the index";
}

void TestShards::badIndexes() {
    QFETCH(QString, from);
    QFETCH(QString, to);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const std::string src = dir.filePath("src").toStdString(), out = dir.filePath("shards").toStdString();
    write_idx_folder(src);
    export_split(load_data(src, DataOptions{}), out);
    std::string json = read_file(out + "/index.json");
    const auto at = json.find(from.toStdString());
    QVERIFY(at != std::string::npos);
    json.replace(at, std::size_t(from.size()), to.toStdString());
    write_file(out + "/index.json", json);
    const QString message = data_error([&] { load_data(out, DataOptions{}); });
    QVERIFY2(message.contains(expected), qPrintable(message));
}

QTEST_APPLESS_MAIN(TestShards)
#include "test_shards.moc"
