// ModelDocument: the layer table shows what the engine's shape inference says (LeNet: 431,080
// parameters, as the engine prints), edits re-validate at once and put the engine's error on the
// row it names, structural edits keep the table consistent, files round-trip, and DL4J/Keras
// files import through the engine's importers (what cannot be imported is refused by name).
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "model_document.h"

using thresher::ui::ModelDocument;

namespace {

QString source(const QString& rel) { return qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/" + rel; }

}  // namespace

class TestModelDocument : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void lenet_rows_show_engine_shapes();
    void bad_field_marks_its_row();
    void error_not_about_a_layer();
    void insert_remove_move();
    void save_and_load_round_trip();
    void imports_data();
    void imports();
    void refuses_what_cannot_be_imported();
    void unreadable_file_names_it();
    void deeply_nested_files_are_refused();
};

void TestModelDocument::lenet_rows_show_engine_shapes() {
    ModelDocument doc;
    QCOMPARE(doc.load(source("resources/models/lenet.json")), QString("thresher"));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.rowCount(), 6);
    QCOMPARE(doc.param_count(), 431080);
    QCOMPARE(doc.output_shape(0), QString("20×24×24"));
    QCOMPARE(doc.output_shape(3), QString("50×4×4"));
    QCOMPARE(doc.layer_params(4), 400500);  // 800 × 500 + 500
    QCOMPARE(doc.data(doc.index(2, ModelDocument::ColOutput), Qt::DisplayRole).toString(), QString("50×8×8"));
    QCOMPARE(doc.data(doc.index(0, ModelDocument::ColSettings), Qt::DisplayRole).toString(),
             QString("20 × 5×5, stride 1, identity"));
}

void TestModelDocument::bad_field_marks_its_row() {
    ModelDocument doc;
    doc.load(source("resources/models/lenet.json"));
    QSignalSpy changed(&doc, &ModelDocument::changed);
    QSignalSpy data_changed(&doc, &QAbstractItemModel::dataChanged);
    auto conv = doc.layer(2);
    conv["kernel"] = QJsonArray{5, 0};
    doc.set_layer(2, conv);
    QCOMPARE(changed.count(), 1);
    QVERIFY(data_changed.count() >= 1);
    QVERIFY(!doc.valid());
    QCOMPARE(doc.error_row(), 2);
    QVERIFY2(doc.error().contains("layers[2]") && doc.error().contains("kernel"), qPrintable(doc.error()));
    QCOMPARE(doc.data(doc.index(2, ModelDocument::ColOutput), Qt::DisplayRole).toString(), QString("error"));
    QCOMPARE(doc.data(doc.index(2, ModelDocument::ColOutput), Qt::ToolTipRole).toString(), doc.error());
    QVERIFY(doc.data(doc.index(1, ModelDocument::ColOutput), Qt::ToolTipRole).isNull());

    conv["kernel"] = QJsonArray{5, 5};
    doc.set_layer(2, conv);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.param_count(), 431080);
}

void TestModelDocument::error_not_about_a_layer() {
    ModelDocument doc;
    doc.load(source("resources/models/lenet.json"));
    doc.set_field("input", QJsonObject{{"channels", 1}, {"height", 4}, {"width", 4}});
    QVERIFY(!doc.valid());  // a 5×5 kernel does not fit a 4×4 image
    doc.set_field("input", QJsonObject{{"channels", 1}, {"height", 28}, {"width", 28}});
    QVERIFY(doc.valid());
    doc.set_field("weight_init", "glorot");
    QVERIFY(!doc.valid());
    QCOMPARE(doc.error_row(), -1);
    QVERIFY2(doc.error().contains("weight_init"), qPrintable(doc.error()));
}

void TestModelDocument::insert_remove_move() {
    ModelDocument doc;
    doc.load(source("resources/models/mlp.json"));
    QCOMPARE(doc.rowCount(), 3);
    const qint64 before = doc.param_count();
    QSignalSpy inserted(&doc, &QAbstractItemModel::rowsInserted);
    doc.insert_layer(1, QJsonObject{{"type", "dropout"}, {"retain", 0.8}});
    QCOMPARE(inserted.count(), 1);
    QCOMPARE(doc.rowCount(), 4);
    QCOMPARE(doc.layer(1).value("type").toString(), QString("dropout"));
    QCOMPARE(doc.param_count(), before);  // dropout has no parameters
    doc.move_layer(1, 2);
    QCOMPARE(doc.layer(2).value("type").toString(), QString("dropout"));
    QVERIFY(doc.valid());
    // The output layer moved away from the end is an error the engine names.
    doc.move_layer(3, 0);
    QVERIFY(!doc.valid());
    doc.move_layer(0, 3);
    QVERIFY(doc.valid());
    doc.remove_layer(2);
    QCOMPARE(doc.rowCount(), 3);
    QCOMPARE(doc.param_count(), before);
    doc.remove_layer(7);  // out of range: nothing happens
    QCOMPARE(doc.rowCount(), 3);
}

void TestModelDocument::save_and_load_round_trip() {
    QTemporaryDir dir;
    ModelDocument doc;
    doc.load(source("resources/models/lenet.json"));
    doc.set_field("name", "lenet-edited");
    const QString path = dir.filePath("m.json");
    doc.save(path);
    ModelDocument again;
    QCOMPARE(again.load(path), QString("thresher"));
    QCOMPARE(again.model(), doc.model());
    QCOMPARE(again.param_count(), 431080);
}

void TestModelDocument::imports_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("format");
    QTest::addColumn<int>("layers");
    QTest::newRow("dl4j @class") << "dl4j_lenet.json" << "dl4j" << 6;
    QTest::newRow("dl4j legacy") << "dl4j_mlp_legacy.json" << "dl4j" << -1;
    QTest::newRow("keras 2") << "keras2_lenet.json" << "keras" << -1;
    QTest::newRow("keras 3") << "keras3_mlp.json" << "keras" << -1;
}

void TestModelDocument::imports() {
    QFETCH(QString, file);
    QFETCH(QString, format);
    QFETCH(int, layers);
    ModelDocument doc;
    QStringList notes;
    QCOMPARE(doc.load(source("tests/engine/config/data/" + file), &notes), format);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QVERIFY(doc.rowCount() >= 2);
    if (layers > 0) QCOMPARE(doc.rowCount(), layers);
    // The imported model is Thresher JSON now: its last layer is the output layer.
    QCOMPARE(doc.layer(doc.rowCount() - 1).value("type").toString(), QString("output"));
    QVERIFY(doc.param_count() > 0);
}

void TestModelDocument::refuses_what_cannot_be_imported() {
    QTemporaryDir dir;
    const QString path = dir.filePath("lstm.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"class_name":"Sequential","config":{"name":"s","layers":[
        {"class_name":"InputLayer","config":{"batch_input_shape":[null,10,8]}},
        {"class_name":"LSTM","config":{"name":"lstm_1","units":16}},
        {"class_name":"Dense","config":{"name":"out","units":3,"activation":"softmax"}}]}})");
    f.close();
    ModelDocument doc;
    doc.load(source("resources/models/mlp.json"));
    const auto before = doc.model();
    try {
        doc.load(path);
        QFAIL("an LSTM was imported");
    } catch (const std::runtime_error& e) {
        const QString msg = QString::fromUtf8(e.what());
        QVERIFY2(msg.contains(path) && msg.contains("LSTM"), qPrintable(msg));
    }
    QCOMPARE(doc.model(), before);  // nothing lost
}

void TestModelDocument::unreadable_file_names_it() {
    ModelDocument doc;
    try {
        doc.load("/nonexistent/model.json");
        QFAIL("loaded a missing file");
    } catch (const std::runtime_error& e) {
        QVERIFY(QString::fromUtf8(e.what()).contains("/nonexistent/model.json"));
    }
}

void TestModelDocument::deeply_nested_files_are_refused() {
    // 400 KB of '[' through the import path, and a Thresher model whose layers nest 200 deep:
    // an error naming the file (or "model") and the depth, never a stack overflow.
    QTemporaryDir dir;
    const QString path = dir.filePath("deep.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(400 * 1024, '['));
    f.close();
    ModelDocument doc;
    try {
        doc.load(path);
        QFAIL("imported 400 KB of nested arrays");
    } catch (const std::runtime_error& e) {
        const QString msg = QString::fromUtf8(e.what());
        QVERIFY2(msg.startsWith(path + ":1:65: invalid JSON: nested deeper than 64 levels"), qPrintable(msg));
    }
    const QString own = dir.filePath("own.json");
    QFile g(own);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write(R"({"input":{"size":4},"layers":)" + QByteArray(200, '[') + QByteArray(200, ']') + "}");
    g.close();
    QCOMPARE(doc.load(own), QString("thresher"));
    QVERIFY(!doc.valid());
    QVERIFY2(doc.error().contains("nested deeper than 64 levels"), qPrintable(doc.error()));
}

QTEST_MAIN(TestModelDocument)
#include "test_model_document.moc"
