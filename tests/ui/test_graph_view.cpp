// The Model tab's graph view beside the layer table (offscreen): one box per layer and one for the
// input, one arrow per edge; a click on a box selects its row (and the form shows that layer), a
// row selected in the table marks its box; the Inputs editor of the form writes the layer's
// inputs, an unknown name is the engine's error with the editor marked; the ResNet template is in
// the Templates menu. Screenshots of the tab with ResNet and with the imported residual_concat
// graphs go to $THRESHER_SCREENSHOT_DIR (default /tmp) as graph_ui_*.png, to be looked at.
#include <QtTest>

#include <QJsonDocument>
#include <QJsonObject>

#include <QGraphicsItem>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QTableView>
#include <QToolButton>

#include "graph_view.h"
#include "model_document.h"
#include "model_page.h"

using thresher::ui::GraphView;
using thresher::ui::ModelDocument;
using thresher::ui::ModelPage;

namespace {

QString source(const QString& rel) {
    return qEnvironmentVariable("THRESHER_SOURCE_DIR", QStringLiteral(THRESHER_SOURCE_DIR_DEFAULT)) + "/" + rel;
}

QString screenshot_path(const QString& name) {
    return qEnvironmentVariable("THRESHER_SCREENSHOT_DIR", "/tmp") + "/graph_ui_" + name + ".png";
}

int row_named(const ModelDocument& doc, const QString& name) {
    for (int i = 0; i < doc.layer_count(); ++i)
        if (doc.layer(i).value("name").toString() == name) return i;
    return -1;
}

// Clicks the middle of a box as a user would: scrolled into view, then a press on the viewport.
void click_box(GraphView* view, QGraphicsItem* box) {
    view->ensureVisible(box);
    const QPoint at = view->mapFromScene(box->sceneBoundingRect().center());
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, at);
}

}  // namespace

class TestGraphView : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void draws_one_box_per_node_and_one_arrow_per_edge();
    void selection_follows_both_ways();
    void inputs_editor_shows_the_engines_error();
    void resnet_template_in_the_menu();
    void added_vertex_reads_the_layer_before();
    void screenshots_data();
    void screenshots();
};

void TestGraphView::draws_one_box_per_node_and_one_arrow_per_edge() {
    ModelDocument doc;
    ModelPage page(&doc);
    doc.load(source("resources/models/resnet.json"));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    GraphView* view = page.graph();
    QVERIFY(view);
    QCOMPARE(view->box_count(), doc.layer_count() + 1);
    QCOMPARE(view->arrow_count(), 28 + 3);  // one per layer's input, and the adds' second ones
    // A stack: a vertical chain, every box in one column.
    doc.load(source("resources/models/lenet.json"));
    QCOMPARE(view->box_count(), 7);
    QCOMPARE(view->arrow_count(), 6);
    for (int r = 0; r < doc.layer_count(); ++r) {
        QCOMPARE(view->box(r)->sceneBoundingRect().left(), view->box(-1)->sceneBoundingRect().left());
        QVERIFY(view->box(r)->sceneBoundingRect().top() > view->box(r - 1)->sceneBoundingRect().bottom());
    }
}

void TestGraphView::selection_follows_both_ways() {
    ModelDocument doc;
    ModelPage page(&doc);
    page.resize(1280, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    doc.load(source("resources/models/resnet.json"));
    GraphView* view = page.graph();
    QSignalSpy picked(view, &GraphView::layerSelected);

    // A box clicked: its row is the table's, and the form shows that layer.
    const int shortcut = row_named(doc, "b2_shortcut");
    click_box(view, view->box(shortcut));
    QCOMPARE(picked.count(), 1);
    QCOMPARE(picked.first().first().toInt(), shortcut);
    QCOMPARE(page.selected_row(), shortcut);
    QVERIFY(view->box(shortcut)->isSelected());
    auto* inputs = page.findChild<QLineEdit*>("field_inputs");
    QVERIFY(inputs);
    QCOMPARE(inputs->text(), QString("b1_out"));

    // A row selected in the table: its box, alone, without a signal back.
    const int add = row_named(doc, "b1_add");
    page.table()->selectRow(add);
    QCOMPARE(view->selected_row(), add);
    QVERIFY(view->box(add)->isSelected());
    QVERIFY(!view->box(shortcut)->isSelected());
    QCOMPARE(picked.count(), 1);

    // The input's box: no row, no layer form; a click beside the boxes changes nothing.
    click_box(view, view->box(-1));
    QCOMPARE(page.selected_row(), -1);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, QPoint(2, 2));
    QVERIFY(view->box(-1)->isSelected());

    // The selection survives a redraw (an edit elsewhere in the model).
    page.select_row(3);
    doc.set_field("seed", 7);
    QVERIFY(view->box(3)->isSelected());
}

void TestGraphView::inputs_editor_shows_the_engines_error() {
    ModelDocument doc;
    ModelPage page(&doc);
    doc.load(source("resources/models/resnet.json"));
    const int add = row_named(doc, "b1_add");
    page.select_row(add);
    auto* inputs = page.findChild<QLineEdit*>("field_inputs");
    QVERIFY(inputs);
    QCOMPARE(inputs->text(), QString("b1_bn2, stem_relu"));
    inputs->setFocus();
    inputs->selectAll();
    QTest::keyClicks(inputs, "b1_bn2, nowhere");
    QVERIFY(!doc.valid());
    QCOMPARE(doc.error(), QString("model: layers[8] (add \"b1_add\"): input \"nowhere\" names no layer (and the model's "
                                  "input is \"input\")"));
    QVERIFY2(inputs->styleSheet().contains("#ffd6d6"), qPrintable(inputs->styleSheet()));
    // The view keeps drawing (by names): the unknown input has no arrow; the error box is marked.
    QCOMPARE(page.graph()->arrow_count(), 28 + 2);
    QVERIFY(page.graph()->box(add)->toolTip().contains("nowhere"));
    inputs->selectAll();
    QTest::keyClicks(inputs, "b1_bn2, stem_relu");
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QVERIFY(inputs->styleSheet().isEmpty());

    // "+" picks an earlier layer: a plain layer reads it instead.
    const int out = row_named(doc, "b1_out");
    page.select_row(out);
    auto* plus = page.findChild<QToolButton*>("add_input");
    QVERIFY(plus && plus->menu());
    Q_EMIT plus->menu()->aboutToShow();
    const auto actions = plus->menu()->actions();
    QCOMPARE(actions.size(), out + 1);  // the input and every earlier layer
    actions[out]->trigger();            // the layer just before: b1_add
    QCOMPARE(doc.inputs(out), QStringList({"b1_add"}));
    QCOMPARE(page.findChild<QLineEdit*>("field_inputs")->text(), QString("b1_add"));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));

    // The table's Inputs cell and the form agree.
    QCOMPARE(doc.data(doc.index(out, ModelDocument::ColInputs), Qt::DisplayRole).toString(), QString("b1_add"));
}

void TestGraphView::resnet_template_in_the_menu() {
    ModelDocument doc;
    ModelPage page(&doc);
    QSignalSpy requested(&page, &ModelPage::templateRequested);
    QToolButton* templates = nullptr;
    for (auto* b : page.findChildren<QToolButton*>())
        if (b->text() == "Templates") templates = b;
    QVERIFY(templates && templates->menu());
    QAction* resnet = nullptr;
    for (auto* a : templates->menu()->actions())
        if (a->text() == "ResNet") resnet = a;
    QVERIFY(resnet);
    resnet->trigger();
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.first().first().toString(), QString("resnet"));
    QVERIFY(QFile::exists(":/models/resnet.json"));
    // Every template the menu offers is built in and valid for the engine.
    for (auto* a : templates->menu()->actions()) {
        requested.clear();
        a->trigger();
        QCOMPARE(requested.count(), 1);
        const QString name = requested.first().first().toString();
        QFile f(":/models/" + name + ".json");
        QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(name));
        ModelDocument one;
        one.set_model(QJsonDocument::fromJson(f.readAll()).object());
        QVERIFY2(one.valid(), qPrintable(name + ": " + one.error()));
    }
}

void TestGraphView::added_vertex_reads_the_layer_before() {
    ModelDocument doc;
    ModelPage page(&doc);
    doc.load(source("resources/models/lenet.json"));
    page.select_row(1);
    QToolButton* add = nullptr;
    for (auto* b : page.findChildren<QToolButton*>())
        if (b->text() == "Add layer") add = b;
    QVERIFY(add && add->menu());
    QAction* concatenate = nullptr;
    for (auto* a : add->menu()->actions())
        if (a->text() == "concatenate") concatenate = a;
    QVERIFY(concatenate);
    concatenate->trigger();
    // Inserted after the selection, reading it (named so it can be read), and the model is valid.
    QCOMPARE(page.selected_row(), 2);
    QCOMPARE(doc.layer(2).value("type").toString(), QString("concatenate"));
    QCOMPARE(doc.inputs(2), QStringList({doc.layer(1).value("name").toString()}));
    QVERIFY(!doc.inputs(2).first().isEmpty());
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(page.graph()->box_count(), doc.layer_count() + 1);
    QCOMPARE(page.graph()->arrow_count(), doc.layer_count());
}

void TestGraphView::screenshots_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("row");
    QTest::newRow("resnet") << "resources/models/resnet.json" << "resnet" << "b2_shortcut";
    QTest::newRow("keras") << "tests/engine/config/data/graphs/keras2_residual_concat.h5" << "keras2_residual_concat" << "";
    QTest::newRow("dl4j") << "tests/engine/config/data/graphs/dl4j_residual_concat.json" << "dl4j_residual_concat" << "";
}

void TestGraphView::screenshots() {
    QFETCH(QString, file);
    QFETCH(QString, name);
    QFETCH(QString, row);
    ModelDocument doc;
    ModelPage page(&doc);
    page.resize(1280, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    doc.load(source(file));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    page.select_row(row.isEmpty() ? doc.layer_count() - 1 : row_named(doc, row));
    QApplication::processEvents();
    const QString path = screenshot_path(name);
    QVERIFY2(page.grab().save(path, "PNG"), qPrintable(path));
    qInfo("screenshot: %s", qPrintable(path));
}

QTEST_MAIN(TestGraphView)
#include "test_graph_view.moc"
