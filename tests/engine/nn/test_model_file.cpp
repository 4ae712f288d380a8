// Model files: save -> load gives the same config, parameters, updater state and position, and a
// network loaded from the file predicts exactly what the saved one did. Damaged files fail with
// ModelFileError naming the file, never a crash or a silently wrong model.
#include <QtTest>

#include <QTemporaryDir>
#include <cstring>
#include <fstream>

#include "backend/registry.h"
#include "core/durable_file.h"
#include "core/error.h"
#include "nn/model_file.h"
#include "nn/network.h"

using namespace thresher;

namespace {
const char* kModel = R"({"name":"mf","input":{"channels":1,"height":6,"width":6},
  "updater":{"type":"adam","learning_rate":0.01},
  "layers":[{"type":"convolution","filters":2,"kernel":3,"activation":"relu"},{"type":"batch_norm"},
            {"type":"dense","units":5,"activation":"tanh"},{"type":"output","units":3}]})";

std::string read_all(const QString& path) {
    std::ifstream f(path.toStdString(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_all(const QString& path, const std::string& bytes) {
    std::ofstream f(path.toStdString(), std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
}  // namespace

class TestModelFile : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void round_trip_predicts_the_same_data();
    void round_trip_predicts_the_same();
    void class_names_round_trip();
    void vocabulary_round_trip();
    void damaged_files_data();
    void damaged_files();
    void every_flipped_byte_is_refused();
    void save_errors_name_the_file();
    void header_sizes_checked_against_the_file_data();
    void header_sizes_checked_against_the_file();

private:
    QTemporaryDir dir_;
    QString saved_;
};

void TestModelFile::initTestCase() {
    QVERIFY(dir_.isValid());
    saved_ = dir_.filePath("model.thr");
}

void TestModelFile::round_trip_predicts_the_same_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::newRow("conv, batch norm, dense") << QByteArray(kModel);
    // Shared layers (issue 22): the file holds each parameter once and "shares" in the config.
    QTest::newRow("shared dense and batch norm") << QByteArray(R"({"name":"mf","input":{"channels":1,"height":6,"width":6},
  "updater":{"type":"adam","learning_rate":0.01},
  "layers":[{"type":"dense","name":"d","units":36,"activation":"tanh"},{"type":"batch_norm","name":"bn"},
            {"type":"dense","name":"d@1","shares":"d","units":36,"activation":"tanh"},{"type":"batch_norm","name":"bn@1","shares":"bn"},
            {"type":"output","units":3}]})");
}

void TestModelFile::round_trip_predicts_the_same() {
    QFETCH(QByteArray, json);
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(config::ModelConfig::parse(json.toStdString(), "mf"), *be);
    std::vector<float> x(4 * 36), t(4 * 3, 0.f);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37 % 11)) / 11.f - 0.5f;
    for (int i = 0; i < 4; ++i) t[i * 3 + i % 3] = 1.f;
    for (int step = 0; step < 3; ++step) {  // non-trivial updater state and running statistics
        net.compute_gradients(x.data(), t.data(), 4, step);
        net.compute_update(step);
        net.apply_update();
    }
    std::vector<float> before(4 * 3);
    net.predict(x.data(), 4, before.data());
    nn::save_model_file(saved_.toStdString(),
                        {net.config(), net.get_params(), net.get_updater_state(), {2, 3, 42}, {}, {}});

    const auto f = nn::load_model_file(saved_.toStdString());
    QCOMPARE(f.config.to_json().dump(), net.config().to_json().dump());
    QCOMPARE(f.params, net.get_params());
    QCOMPARE(f.updater_state, net.get_updater_state());
    QCOMPARE(f.position.epochs_done, 2);
    QCOMPARE(f.position.iterations, 3L);
    QCOMPARE(f.position.seed, std::uint64_t(42));

    nn::Network loaded(f.config, *be);
    loaded.set_params(f.params);
    std::vector<float> after(4 * 3);
    loaded.predict(x.data(), 4, after.data());
    QCOMPARE(after, before);  // bit for bit
}

// Class names (image folders' class folders) are kept; a file without them (every file written
// before they existed, like round_trip's) loads with none; a count other than the model's classes
// is refused.
void TestModelFile::class_names_round_trip() {
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(config::ModelConfig::parse(kModel, "mf"), *be);
    const std::string path = dir_.filePath("named.thr").toStdString();
    nn::save_model_file(path, {net.config(), net.get_params(), {}, {}, {}, {"cat", "dog", "eel"}});
    QCOMPARE(nn::load_model_file(path).class_names, (std::vector<std::string>{"cat", "dog", "eel"}));
    QVERIFY(nn::load_model_file(saved_.toStdString()).class_names.empty());
    nn::save_model_file(path, {net.config(), net.get_params(), {}, {}, {}, {"cat", "dog"}});
    try {
        nn::load_model_file(path);
        QFAIL("two names for three classes loaded");
    } catch (const ModelFileError& e) {
        QVERIFY2(QString(e.what()).contains("class_names has 2 names, the model has 3 classes"), e.what());
    }
}

// A character model's vocabulary (data/text_corpus.h) comes back in its id order, multi-byte
// characters and the newline included; files without one load with none.
void TestModelFile::vocabulary_round_trip() {
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(config::ModelConfig::parse(kModel, "mf"), *be);
    const std::string path = dir_.filePath("chars.thr").toStdString();
    const std::vector<std::string> vocabulary{"\n", " ", "a", "\xC3\xA9", "\xF0\x9D\x84\x9E"};
    nn::save_model_file(path, {net.config(), net.get_params(), {}, {}, {}, {}, vocabulary});
    QCOMPARE(nn::load_model_file(path).vocabulary, vocabulary);
    QVERIFY(nn::load_model_file(saved_.toStdString()).vocabulary.empty());
}

void TestModelFile::damaged_files_data() {
    QTest::addColumn<int>("damage");
    QTest::addColumn<QString>("expected");
    QTest::newRow("flipped byte in the parameters") << 0 << "checksum mismatch";
    QTest::newRow("truncated") << 1 << "truncated";
    QTest::newRow("wrong magic") << 2 << "not a Thresher model file";
    QTest::newRow("empty") << 3 << "truncated";
    QTest::newRow("missing") << 4 << "cannot open";
    QTest::newRow("future version") << 5 << "version 7";
}

void TestModelFile::damaged_files() {
    QFETCH(int, damage);
    QFETCH(QString, expected);
    if (!QFile::exists(saved_)) QSKIP("round trip test did not write the file");
    std::string bytes = read_all(saved_);
    const QString path = dir_.filePath(QString("damaged%1.thr").arg(damage));
    switch (damage) {
        case 0: bytes[bytes.size() - 40] ^= 0x10; break;
        case 1: bytes.resize(bytes.size() / 2); break;
        case 2: bytes[0] = 'X'; break;
        case 3: bytes.clear(); break;
        case 5: bytes[8] = 7; break;
    }
    if (damage != 4) write_all(path, bytes);
    try {
        nn::load_model_file(path.toStdString());
        QFAIL("loaded a damaged file");
    } catch (const ModelFileError& e) {
        const QString msg = e.what();
        QVERIFY2(msg.contains(path) && msg.contains(expected), qPrintable(msg));
    }
}

void TestModelFile::every_flipped_byte_is_refused() {
    // The checksum covers every byte: a bit flipped anywhere (header, parameters, updater state,
    // the checksum itself) is refused, never loaded as a slightly different model.
    if (!QFile::exists(saved_)) QSKIP("round trip test did not write the file");
    const std::string good = read_all(saved_);
    const QString path = dir_.filePath("flipped.thr");
    int loaded = 0;
    for (std::size_t i = 0; i < good.size(); ++i) {
        std::string bytes = good;
        bytes[i] ^= static_cast<char>(1 << (i % 8));
        write_all(path, bytes);
        try {
            nn::load_model_file(path.toStdString());
            ++loaded;
            qWarning("byte %zu flipped and still loaded", i);
        } catch (const ModelFileError& e) {
            if (!QString(e.what()).contains(path)) QFAIL(e.what());
        }
    }
    QCOMPARE(loaded, 0);
}

void TestModelFile::save_errors_name_the_file() {
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(config::ModelConfig::parse(kModel, "mf"), *be);
    const std::string path = dir_.filePath("missing-folder/m.thr").toStdString();
    try {
        nn::save_model_file(path, {net.config(), net.get_params(), {}, {}, {}, {}});
        QFAIL("saved into a missing folder");
    } catch (const ModelFileError& e) {
        QVERIFY2(std::string(e.what()).find(path) != std::string::npos, e.what());
    }
}

void TestModelFile::header_sizes_checked_against_the_file_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("value");  // JSON
    QTest::addColumn<QString>("message");
    // 10^15 updater-state floats: refused from the file's size before anything is allocated.
    QTest::newRow("10^15 floats") << "updater_state" << "1000000000000000"
                                  << "updater state needs 1000000000000000 floats (4 bytes each)";
    // 2^62 and 2^62 + 1 floats are 2^64 and 2^64 + 4 bytes: counted in bytes they wrapped to 0 and
    // 4, passed the size check, and the vector's resize threw std::length_error (no file named).
    QTest::newRow("2^62 floats") << "updater_state" << "4611686018427387904"
                                 << "updater state needs 4611686018427387904 floats";
    QTest::newRow("2^62+1 floats") << "updater_state" << "4611686018427387905"
                                   << "updater state needs 4611686018427387905 floats";
    // Counts and the position are whole numbers in range: get<int>() cast 1e30 (undefined) and -1
    // became 2^64 - 1 parameters.
    QTest::newRow("negative count") << "updater_state" << "-1" << "\"updater_state\" must be a whole number";
    QTest::newRow("fractional count") << "params" << "2.5" << "\"params\" must be a whole number";
    QTest::newRow("epoch 1e30") << "training.epoch" << "1e30" << "training.\"epoch\" must be a whole number in [0, 2147483647], got 1e+30";
    QTest::newRow("epoch 2^31") << "training.epoch" << "2147483648" << "training.\"epoch\" must be a whole number";
    QTest::newRow("iteration -5") << "training.iteration" << "-5" << "training.\"iteration\" must be a whole number";
    QTest::newRow("seed string") << "training.seed" << "\"7\"" << "training.\"seed\" must be a whole number";
}

void TestModelFile::header_sizes_checked_against_the_file() {
    // A well-formed file (valid checksum) whose header says something the file cannot hold or
    // the engine cannot represent: refused naming the file and the field.
    QFETCH(QString, field);
    QFETCH(QString, value);
    QFETCH(QString, message);
    if (!QFile::exists(saved_)) QSKIP("round trip test did not write the file");
    const std::string good = read_all(saved_);
    std::uint64_t header_len = 0;
    std::memcpy(&header_len, good.data() + 12, sizeof header_len);
    auto header = nlohmann::json::parse(good.substr(20, header_len));
    const auto v = nlohmann::json::parse(value.toStdString());
    if (field.startsWith("training.")) header["training"][field.mid(9).toStdString()] = v;
    else header[field.toStdString()] = v;
    const std::string h = header.dump();
    std::string bytes = good.substr(0, 12);
    const std::uint64_t len = h.size();
    bytes.append(reinterpret_cast<const char*>(&len), sizeof len);
    bytes += h;
    bytes += good.substr(20 + header_len, good.size() - 4 - 20 - header_len);
    const std::uint32_t crc = crc32_of(bytes.data(), bytes.size());
    bytes.append(reinterpret_cast<const char*>(&crc), sizeof crc);
    const QString path = dir_.filePath("bad-header.thr");
    write_all(path, bytes);
    try {
        nn::load_model_file(path.toStdString());
        QFAIL("loaded a file whose header is impossible");
    } catch (const ModelFileError& e) {
        const QString msg = e.what();
        QVERIFY2(msg.startsWith(path + ": ") && msg.contains(message), qPrintable(msg));
    }
}

QTEST_APPLESS_MAIN(TestModelFile)
#include "test_model_file.moc"
