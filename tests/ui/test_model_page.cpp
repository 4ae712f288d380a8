// ModelPage's model-wide settings: an imported schedule shows in the schedule form with the
// engine's reading of it, editing the form changes the model JSON (and the engine re-validates
// it), L1 is written, and the import notes appear in their panel. Runs under offscreen.
#include <QtTest>

#include <QCheckBox>
#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QToolButton>

#include <QJsonArray>
#include "model_document.h"
#include "model_page.h"

using thresher::ui::ModelDocument;
using thresher::ui::ModelPage;

namespace {
QString fixture(const QString& name) {
    return qEnvironmentVariable("THRESHER_SOURCE_DIR", QStringLiteral(THRESHER_SOURCE_DIR_DEFAULT)) + "/tests/engine/config/data/" + name;
}
}  // namespace

class TestModelPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void schedule_form_reads_and_writes();
    void l1_and_import_notes();
    void inputs_edited_in_the_table();
    void several_model_inputs();
    void sequence_input_and_layers();
};

void TestModelPage::schedule_form_reads_and_writes() {
    ModelDocument doc;
    ModelPage page(&doc);
    QStringList notes;
    doc.load(fixture("keras3_mlp_exponential_decay.json"), &notes);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    auto* type = page.findChild<QComboBox*>("schedule_type");
    auto* fields = page.findChild<QLineEdit*>("schedule_fields");
    auto* info = page.findChild<QLabel*>("schedule_info");
    QVERIFY(type && fields && info);
    QCOMPARE(type->currentText(), QString("exponential"));
    QVERIFY2(fields->text().contains("rate=0.5"), qPrintable(fields->text()));
    QCOMPARE(info->text(), QString("exponential by iteration: 0.1·0.5^floor(i/2)"));

    // The user changes the rate: the model's schedule follows and stays valid.
    fields->setFocus();
    fields->selectAll();
    QTest::keyClicks(fields, "initial=0.2, rate=0.25, decay_steps=10");
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    const auto s = doc.model()["updater"].toObject()["schedule"].toObject();
    QCOMPARE(s["rate"].toDouble(), 0.25);
    QCOMPARE(s["decay_steps"].toDouble(), 10.0);
    QVERIFY(!doc.model()["updater"].toObject().contains("learning_rate"));
    QCOMPARE(doc.schedule_text(), QString("exponential by iteration: 0.2·0.25^i/10"));

    // A map, by epoch.
    type->setCurrentText("map");
    page.findChild<QComboBox*>("schedule_by")->setCurrentText("epoch");
    fields->selectAll();
    QTest::keyClicks(fields, "0=0.1, 3=0.01");
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.schedule_text(), QString("map by epoch: 0→0.1, 3→0.01"));

    // A typo is the engine's error, naming the field.
    fields->selectAll();
    QTest::keyClicks(fields, "0=0.1, x=2");
    QVERIFY(!doc.valid());
    QVERIFY2(doc.error().contains("schedule") && doc.error().contains("\"x\""), qPrintable(doc.error()));

    // None: a constant rate again, the schedule's start.
    type->setCurrentText("none");
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QVERIFY(!doc.model()["updater"].toObject().contains("schedule"));
    QCOMPARE(doc.model()["updater"].toObject()["learning_rate"].toDouble(), 0.1);
}

void TestModelPage::l1_and_import_notes() {
    ModelDocument doc;
    ModelPage page(&doc);
    QStringList notes;
    doc.load(fixture("keras3_mlp.json"), &notes);
    QVERIFY(!notes.isEmpty());
    auto* box = page.findChild<QGroupBox*>("import_notes");
    QVERIFY(box);
    page.set_import_notes("keras3_mlp.json", notes);
    QVERIFY(!box->isHidden());
    const QString text = box->findChild<QPlainTextEdit*>()->toPlainText();
    QVERIFY2(text.contains("kernel_regularizer"), qPrintable(text));
    QVERIFY2(box->title().contains("keras3_mlp.json"), qPrintable(box->title()));
    page.set_import_notes("x.json", {});
    QVERIFY(box->isHidden());

    // L1: the first line edit after the L2 one in the form is found by its placeholder order.
    QLineEdit* l1 = nullptr;
    for (auto* e : page.findChildren<QLineEdit*>())
        if (e->placeholderText() == "0" && !l1) l1 = e;
    QVERIFY(l1);
    l1->setFocus();
    QTest::keyClicks(l1, "0.001");
    QCOMPARE(doc.model()["l1"].toDouble(), 0.001);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
}

// The Inputs cell is edited as "a, b": an unknown name gets the engine's error on that row; a
// blank cell goes back to "the layer before".
void TestModelPage::inputs_edited_in_the_table() {
    ModelDocument doc;
    ModelPage page(&doc);
    doc.load(qEnvironmentVariable("THRESHER_SOURCE_DIR", QStringLiteral(THRESHER_SOURCE_DIR_DEFAULT)) + "/resources/models/resnet.json");
    int add_row = -1;
    for (int r = 0; r < doc.layer_count(); ++r)
        if (doc.layer(r).value("name") == "b1_add") add_row = r;
    QVERIFY(doc.setData(doc.index(add_row, ModelDocument::ColInputs), QString("b1_bn2, nowhere"), Qt::EditRole));
    QVERIFY(!doc.valid());
    QVERIFY2(doc.error().contains("input \"nowhere\" names no layer"), qPrintable(doc.error()));
    QCOMPARE(doc.error_row(), add_row);
    QVERIFY(doc.setData(doc.index(add_row, ModelDocument::ColInputs), QString("b1_bn2, stem_relu"), Qt::EditRole));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.layer(add_row).value("inputs").toArray().size(), 2);
    // The saved JSON is the engine's: the graph round-trips through its parser.
    QVERIFY(doc.setData(doc.index(1, ModelDocument::ColInputs), QString("stem"), Qt::EditRole));
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QVERIFY(doc.setData(doc.index(1, ModelDocument::ColInputs), QString(""), Qt::EditRole));
    QVERIFY(!doc.layer(1).contains("inputs"));
}

// A model with several inputs: the Input row edits the one picked (not only the first), renaming
// an input renames it in the layers that read it, and inputs are added and removed there. A
// layer's "+" offers every model input.
void TestModelPage::several_model_inputs() {
    ModelDocument doc;
    ModelPage page(&doc);
    doc.load(qEnvironmentVariable("THRESHER_SOURCE_DIR", QStringLiteral(THRESHER_SOURCE_DIR_DEFAULT)) + "/resources/models/two_input.json");
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    auto* pick = page.findChild<QComboBox*>("input_pick");
    auto* name = page.findChild<QLineEdit*>("input_name");
    QVERIFY(pick && name);
    QVERIFY(!pick->isHidden());
    QCOMPARE(pick->count(), 2);
    QCOMPARE(pick->itemText(1), QString("bottom"));

    // The second input, picked, gets a new height: the first keeps its own.
    pick->setCurrentIndex(1);
    Q_EMIT pick->activated(1);
    QCOMPARE(name->text(), QString("bottom"));
    QSpinBox* height = nullptr;
    for (auto* s : page.findChildren<QSpinBox*>())
        if (s->value() == 14 && !height) height = s;
    QVERIFY(height);
    height->setValue(12);
    const auto inputs = doc.model()["input"].toArray();
    QCOMPARE(inputs[1].toObject()["height"].toInt(), 12);
    QCOMPARE(inputs[1].toObject()["name"].toString(), QString("bottom"));
    QCOMPARE(inputs[0].toObject()["height"].toInt(), 14);
    height->setValue(14);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));

    // Renamed: the layer that read "bottom" reads "lower" and the model stays valid.
    name->setText("lower");
    Q_EMIT name->editingFinished();
    QCOMPARE(doc.model()["input"].toArray()[1].toObject()["name"].toString(), QString("lower"));
    int reader = -1;
    for (int r = 0; r < doc.layer_count(); ++r)
        if (doc.inputs(r).contains("lower")) reader = r;
    QVERIFY(reader >= 0);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));

    // "+" on a layer offers input 2 by index; added to a plain layer it replaces what it read.
    doc.add_input(reader, -2);
    QCOMPARE(doc.inputs(reader), QStringList{"lower"});
    doc.add_input(reader, -1);
    QCOMPARE(doc.inputs(reader), QStringList{"top"});
    doc.add_input(reader, -2);

    // A third input, then removed again: the model is what it was.
    const QJsonObject before = doc.model();
    page.findChild<QToolButton*>("add_model_input")->click();
    QCOMPARE(doc.input_count(), 3);
    QCOMPARE(pick->count(), 3);
    QCOMPARE(doc.model_input(2)["name"].toString(), QString("input_3"));
    QCOMPARE(pick->currentIndex(), 2);
    page.findChild<QToolButton*>("remove_model_input")->click();
    QCOMPARE(doc.input_count(), 2);
    QCOMPARE(doc.model(), before);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));

    // Down to one input: "input" is an object again and the picker hides.
    pick->setCurrentIndex(1);
    Q_EMIT pick->activated(1);
    page.findChild<QToolButton*>("remove_model_input")->click();
    QCOMPARE(doc.input_count(), 1);
    QVERIFY(doc.model()["input"].isObject());
    QVERIFY(pick->isHidden());
}

// A sequence input (issue 23) shows as steps × features and is edited as such; the recurrent
// layers' settings are described in the table and have form fields (a checkbox for booleans).
void TestModelPage::sequence_input_and_layers() {
    ModelDocument doc;
    ModelPage page(&doc);
    doc.load(qEnvironmentVariable("THRESHER_SOURCE_DIR", QStringLiteral(THRESHER_SOURCE_DIR_DEFAULT)) + "/resources/models/text_classifier.json");
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    auto* steps = page.findChild<QSpinBox*>("input_steps");
    auto* features = page.findChild<QSpinBox*>("input_size");
    QVERIFY(steps && features && !steps->isHidden() && !features->isHidden());
    QCOMPARE(steps->value(), 100);
    QCOMPARE(features->value(), 1);
    steps->setValue(40);
    QCOMPARE(doc.model()["input"].toObject()["steps"].toInt(), 40);
    QCOMPARE(doc.model()["input"].toObject()["features"].toInt(), 1);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QCOMPARE(doc.output_shape(0), QString("40 steps × 64"));
    QVERIFY2(ModelDocument::describe(doc.layer(1)).contains("64 units") &&
                 ModelDocument::describe(doc.layer(1)).contains("bidirectional concat"),
             qPrintable(ModelDocument::describe(doc.layer(1))));
    page.select_row(1);
    auto* every_step = page.findChild<QCheckBox*>("field_return_sequences");
    QVERIFY(every_step && !every_step->isChecked());
    every_step->setChecked(true);
    QVERIFY(doc.layer(1)["return_sequences"].toBool());
    QVERIFY(doc.output_shape(1).startsWith("40 steps"));
    // go_backwards: the form's box; with bidirectional the model is refused naming the field.
    auto* backwards = page.findChild<QCheckBox*>("field_go_backwards");
    QVERIFY(backwards && !backwards->isChecked());
    backwards->setChecked(true);
    QVERIFY(doc.layer(1)["go_backwards"].toBool());
    QVERIFY(!doc.valid());
    QVERIFY2(doc.error().contains("go_backwards"), qPrintable(doc.error()));
    backwards->setChecked(false);
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    const QString pooled = ModelDocument::describe(QJsonObject{{"type", "subsampling"}, {"pooling", "avg"}, {"global", true}});
    QVERIFY2(pooled.contains("global avg") && !pooled.contains("2×2"), qPrintable(pooled));
    QVERIFY(ModelDocument::describe(QJsonObject{{"type", "gru"}, {"units", 3}, {"go_backwards", true}}).contains("backwards"));
}

QTEST_MAIN(TestModelPage)
#include "test_model_page.moc"
