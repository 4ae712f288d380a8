// ModelDocument: the layer table shows what the engine's shape inference says (LeNet: 431,080
// parameters, as the engine prints), edits re-validate at once and put the engine's error on the
// row it names, structural edits keep the table consistent, files round-trip, and DL4J/Keras
// files import through the engine's importers (what cannot be imported is refused by name).
// Graphs: the Inputs column shows and edits what each layer reads, a graph model round-trips to
// the JSON the engine writes, an unknown input is the engine's own error on its row, renaming and
// "+" keep the graph connected, and imported Keras / DL4J graphs arrive with their inputs.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "config/model_config.h"
#include "core/error.h"
#include "layer_schema.h"
#include "model_document.h"

using thresher::ui::ModelDocument;

namespace {

QString source(const QString& rel) { return qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/" + rel; }

QByteArray read(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll();
}

// The JSON the engine writes for a model text (ModelConfig::parse → to_json), as Qt JSON.
QJsonObject engine_json(const QByteArray& text) {
    const auto config = thresher::config::ModelConfig::parse(std::string_view(text.constData(), text.size()), "model");
    return QJsonDocument::fromJson(QByteArray::fromStdString(config.to_json().dump())).object();
}

int row_named(const ModelDocument& doc, const QString& name) {
    for (int i = 0; i < doc.layer_count(); ++i)
        if (doc.layer(i).value("name").toString() == name) return i;
    return -1;
}

QString inputs_cell(const ModelDocument& doc, int row) {
    return doc.data(doc.index(row, ModelDocument::ColInputs), Qt::DisplayRole).toString();
}

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
    void graph_round_trips_through_the_table();
    void unknown_input_is_the_engines_error();
    void rename_carries_the_readers();
    void add_input_names_the_layer_read();
    void vertex_types_in_the_schema();
    void imported_graphs_data();
    void imported_graphs();
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
        {"class_name":"LSTM","config":{"name":"lstm_1","units":16,"stateful":true}},
        {"class_name":"Dense","config":{"name":"out","units":3,"activation":"softmax"}}]}})");
    f.close();
    ModelDocument doc;
    doc.load(source("resources/models/mlp.json"));
    const auto before = doc.model();
    try {
        doc.load(path);
        QFAIL("a stateful LSTM (states carried from batch to batch) was imported");
    } catch (const std::runtime_error& e) {
        const QString msg = QString::fromUtf8(e.what());
        QVERIFY2(msg.contains(path) && msg.contains("LSTM") && msg.contains("stateful"), qPrintable(msg));
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

void TestModelDocument::graph_round_trips_through_the_table() {
    const QString path = source("resources/models/resnet.json");
    ModelDocument doc;
    QCOMPARE(doc.load(path), QString("thresher"));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.rowCount(), 28);
    QCOMPARE(doc.headerData(ModelDocument::ColInputs, Qt::Horizontal, Qt::DisplayRole).toString(), QString("Inputs"));
    // The Inputs column: blank for "the layer before", the names otherwise (a single name too).
    QCOMPARE(inputs_cell(doc, 0), QString());
    QCOMPARE(inputs_cell(doc, row_named(doc, "b1_add")), QString("b1_bn2, stem_relu"));
    QCOMPARE(inputs_cell(doc, row_named(doc, "b2_shortcut")), QString("b1_out"));
    QVERIFY(doc.flags(doc.index(0, ModelDocument::ColInputs)).testFlag(Qt::ItemIsEditable));
    QVERIFY(!doc.flags(doc.index(0, ModelDocument::ColType)).testFlag(Qt::ItemIsEditable));
    // The graph: the input and 28 layers; one edge per layer, and one more per add.
    QCOMPARE(doc.graph().nodes.size(), 29);
    QCOMPARE(doc.graph().edges.size(), 28 + 3);
    QCOMPARE(doc.graph().nodes[0].name, QString("input"));
    QCOMPARE(doc.graph().nodes[0].shape, QString("1×28×28"));

    // Written back through the table (the string "b1_out" becomes a list, as the engine writes
    // it): the saved file is the model the engine reads from the template.
    QVERIFY(doc.setData(doc.index(row_named(doc, "b2_shortcut"), ModelDocument::ColInputs), " b1_out ", Qt::EditRole));
    QVERIFY(doc.setData(doc.index(row_named(doc, "b1_add"), ModelDocument::ColInputs), "b1_bn2,stem_relu", Qt::EditRole));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.layer(row_named(doc, "b2_shortcut")).value("inputs").toArray(), QJsonArray{"b1_out"});
    QTemporaryDir dir;
    doc.save(dir.filePath("resnet.json"));
    QCOMPARE(engine_json(read(dir.filePath("resnet.json"))), engine_json(read(path)));

    // The engine's own JSON of the template, loaded and saved, comes back unchanged.
    const QJsonObject engine = engine_json(read(path));
    doc.set_model(engine);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    doc.save(dir.filePath("engine.json"));
    QCOMPARE(QJsonDocument::fromJson(read(dir.filePath("engine.json"))).object(), engine);
    QCOMPARE(engine_json(read(dir.filePath("engine.json"))), engine);
}

void TestModelDocument::unknown_input_is_the_engines_error() {
    ModelDocument doc;
    doc.load(source("resources/models/resnet.json"));
    const int add = row_named(doc, "b1_add");
    QVERIFY(doc.setData(doc.index(add, ModelDocument::ColInputs), "b1_bn2, stem_rleu", Qt::EditRole));
    QVERIFY(!doc.valid());
    QCOMPARE(doc.error_row(), add);
    // Word for word what the engine says about the same JSON.
    QString engine;
    try {
        engine_json(QJsonDocument(doc.model()).toJson());
    } catch (const thresher::Error& e) {
        engine = QString::fromUtf8(e.what());
    }
    QCOMPARE(doc.error(), engine);
    QCOMPARE(doc.error(), QString("model: layers[8] (add \"b1_add\"): input \"stem_rleu\" names no layer (and the model's "
                                  "input is \"input\")"));
    QCOMPARE(doc.data(doc.index(add, ModelDocument::ColOutput), Qt::DisplayRole).toString(), QString("error"));
    // The view still gets the graph, by names: the unknown input has no edge, the rest stay.
    QCOMPARE(doc.graph().edges.size(), 28 + 2);
    QVERIFY(doc.graph().nodes[1].shape.isEmpty());

    // A later layer named as an input, and a plain layer reading two: the engine's words again.
    QVERIFY(doc.setData(doc.index(add, ModelDocument::ColInputs), "b1_bn2, b1_out", Qt::EditRole));
    QVERIFY2(doc.error().contains("input \"b1_out\" comes after it"), qPrintable(doc.error()));
    QVERIFY(doc.setData(doc.index(2, ModelDocument::ColInputs), "stem, stem_bn", Qt::EditRole));
    QVERIFY(doc.setData(doc.index(add, ModelDocument::ColInputs), "b1_bn2, stem_relu", Qt::EditRole));
    QCOMPARE(doc.error_row(), 2);
    QVERIFY2(doc.error().contains("reads 2 inputs"), qPrintable(doc.error()));
    // Blank again: the layer before, and the model is whole.
    QVERIFY(doc.setData(doc.index(2, ModelDocument::ColInputs), "", Qt::EditRole));
    QVERIFY(!doc.layer(2).contains("inputs"));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
}

void TestModelDocument::rename_carries_the_readers() {
    ModelDocument doc;
    doc.load(source("resources/models/resnet.json"));
    const int add = row_named(doc, "b1_add");
    doc.rename_layer(row_named(doc, "stem_relu"), "stem_out");
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.inputs(add), QStringList({"b1_bn2", "stem_out"}));
    // Renamed onto another layer's name: the readers are left alone (they would change meaning),
    // and the engine says what is wrong.
    doc.rename_layer(row_named(doc, "stem_out"), "stem_bn");
    QCOMPARE(doc.inputs(add), QStringList({"b1_bn2", "stem_out"}));
    QVERIFY(!doc.valid());
    doc.rename_layer(2, "stem_relu");  // row 2 was stem_out
    QCOMPARE(doc.inputs(add), QStringList({"b1_bn2", "stem_out"}));
    doc.set_inputs(add, {"b1_bn2", "stem_relu"});
    QVERIFY2(doc.valid(), qPrintable(doc.error()));

    // A shared layer's "shares" follows its owner's new name (siamese.json: conv@1 shares conv).
    ModelDocument siamese;
    siamese.load(source("resources/models/siamese.json"));
    QVERIFY2(siamese.valid(), qPrintable(siamese.error()));
    siamese.rename_layer(row_named(siamese, "conv"), "encoder");
    QVERIFY2(siamese.valid(), qPrintable(siamese.error()));
    QCOMPARE(siamese.layer(row_named(siamese, "conv@1")).value("shares").toString(), QString("encoder"));
}

void TestModelDocument::add_input_names_the_layer_read() {
    // A dense layer and its input added together: the add reads two layers that had no names.
    ModelDocument doc;
    doc.set_model(QJsonObject{{"input", QJsonObject{{"size", 4}}},
                              {"layers", QJsonArray{QJsonObject{{"type", "dense"}, {"units", 4}},
                                                    QJsonObject{{"type", "dense"}, {"units", 4}},
                                                    thresher::ui::default_layer("add"),
                                                    QJsonObject{{"type", "output"}, {"units", 2}}}}});
    QVERIFY(!doc.valid());  // an add with no inputs
    QVERIFY2(doc.error().contains("list them in \"inputs\""), qPrintable(doc.error()));
    doc.add_input(2, 0);
    doc.add_input(2, 1);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.inputs(2), QStringList({"dense_0", "dense_1"}));
    QCOMPARE(doc.layer(0).value("name").toString(), QString("dense_0"));
    QCOMPARE(doc.graph().edges.size(), 5);
    // A plain layer takes the one picked instead of its own: the input, by its name.
    doc.add_input(1, -1);
    QCOMPARE(doc.inputs(1), QStringList({"input"}));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.graph().edges[1].from, 0);
    doc.add_input(1, 1);  // itself or later: nothing
    doc.add_input(1, 3);
    QCOMPARE(doc.inputs(1), QStringList({"input"}));
}

void TestModelDocument::vertex_types_in_the_schema() {
    const QStringList types = thresher::ui::layer_types();
    for (const char* t : {"add", "subtract", "multiply", "average", "maximum", "concatenate", "subset"}) {
        QVERIFY2(types.contains(t), qPrintable(t));
        QVERIFY(thresher::ui::is_vertex_type(t));
    }
    QVERIFY(!thresher::ui::is_vertex_type("dense"));
    QCOMPARE(thresher::ui::layer_fields("subset").size(), 1);
    QCOMPARE(thresher::ui::layer_fields("subset").first().key, QString("channels"));
    // A subset of a convolution's channels and a concatenation: valid, with the engine's shapes.
    ModelDocument doc;
    auto subset = thresher::ui::default_layer("subset");
    subset["channels"] = QJsonArray{2, 5};
    subset["name"] = "part";
    doc.set_model(QJsonObject{{"input", QJsonObject{{"channels", 1}, {"height", 8}, {"width", 8}}},
                              {"layers", QJsonArray{QJsonObject{{"type", "convolution"}, {"name", "c"}, {"filters", 8},
                                                                {"kernel", QJsonArray{3, 3}}, {"mode", "same"}},
                                                    subset,
                                                    QJsonObject{{"type", "concatenate"}, {"inputs", QJsonArray{"c", "part"}}},
                                                    QJsonObject{{"type", "output"}, {"units", 2}}}}});
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.output_shape(1), QString("4×8×8"));
    QCOMPARE(doc.output_shape(2), QString("12×8×8"));
    QCOMPARE(doc.data(doc.index(1, ModelDocument::ColSettings), Qt::DisplayRole).toString(), QString("channels 2–5"));
    QCOMPARE(doc.data(doc.index(2, ModelDocument::ColSettings), Qt::DisplayRole).toString(),
             QString("2 inputs along channels"));
}

void TestModelDocument::imported_graphs_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("format");
    QTest::newRow("keras 2 functional .h5") << "keras2_residual_concat.h5" << "keras";
    QTest::newRow("dl4j computation graph") << "dl4j_residual_concat.json" << "dl4j";
}

void TestModelDocument::imported_graphs() {
    QFETCH(QString, file);
    QFETCH(QString, format);
    ModelDocument doc;
    QStringList notes;
    QCOMPARE(doc.load(source("tests/engine/config/data/graphs/" + file), &notes), format);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    // Some layer names its inputs, and some vertex joins two: more edges than layers.
    int named = 0, vertices = 0;
    for (int r = 0; r < doc.rowCount(); ++r) {
        named += !inputs_cell(doc, r).isEmpty();
        vertices += thresher::ui::is_vertex_type(doc.layer(r).value("type").toString());
    }
    QVERIFY(named > 0);
    QVERIFY(vertices > 0);
    QVERIFY(doc.graph().edges.size() > doc.rowCount());
    QCOMPARE(doc.graph().nodes.size(), doc.rowCount() + 1);
    for (const auto& e : doc.graph().edges) QVERIFY(!e.shape.isEmpty());
    // What the document holds is what the engine writes for it.
    QCOMPARE(engine_json(QJsonDocument(doc.model()).toJson()), doc.model());
}

QTEST_MAIN(TestModelDocument)
#include "test_model_document.moc"
