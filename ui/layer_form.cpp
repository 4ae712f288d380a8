#include "layer_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QRegularExpression>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "layer_schema.h"
#include "model_document.h"

namespace thresher::ui {

namespace {

int first_of(const QJsonValue& v, int fallback) {
    if (v.isArray()) return v.toArray().at(0).toInt(fallback);
    return v.isDouble() ? v.toInt() : fallback;
}

int second_of(const QJsonValue& v, int fallback) {
    if (v.isArray()) return v.toArray().at(1).toInt(fallback);
    return v.isDouble() ? v.toInt() : fallback;
}

QString fallback_text(const QJsonValue& v) {
    if (v.isDouble()) return QString::number(v.toDouble());
    if (v.isString()) return v.toString();
    return {};
}

}  // namespace

LayerForm::LayerForm(ModelDocument* document, QWidget* parent) : QWidget(parent), document_(document) {
    auto* outer = new QVBoxLayout(this);
    title_ = new QLabel;
    title_->setStyleSheet("font-weight: bold");
    outer->addWidget(title_);
    form_ = new QFormLayout;
    outer->addLayout(form_);
    outer->addStretch(1);
    // An edit elsewhere (the table's Inputs cell, a rename that rewrote this layer's inputs) shows
    // here; text that already says what the document holds is left as typed ("a, " while typing).
    connect(document_, &ModelDocument::changed, this, [this] {
        if (row_ < 0 || row_ >= document_->layer_count()) return;
        const QString name = document_->layer(row_).value("name").toString();
        if (name_ && name_->text() != name) name_->setText(name);
        const QStringList inputs = document_->inputs(row_);
        if (inputs_ && parse_inputs(inputs_->text()) != inputs) inputs_->setText(inputs.join(", "));
    });
    show_layer(-1);
}

QStringList LayerForm::parse_inputs(const QString& text) {
    QStringList names;
    for (const QString& part : text.split(',', Qt::SkipEmptyParts))
        if (const QString name = part.trimmed(); !name.isEmpty()) names << name;
    return names;
}

QWidget* LayerForm::make_inputs_row() {
    auto* box = new QWidget;
    auto* row = new QHBoxLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    inputs_ = new QLineEdit(document_->inputs(row_).join(", "));
    inputs_->setObjectName("field_inputs");
    inputs_->setPlaceholderText(row_ == 0 ? "blank: the model's input" : "blank: the layer before");
    inputs_->setToolTip(QString("the layers this one reads, by name, comma-separated (\"%1\" is the model's input); "
                                "add, subtract, multiply, average, maximum and concatenate read several")
                            .arg(document_->input_name()));
    connect(inputs_, &QLineEdit::textEdited, this, [this](const QString& t) {
        document_->set_inputs(row_, parse_inputs(t));
        mark_error();
    });
    // "+": pick an earlier layer (or the input) from a list instead of typing its name; an
    // unnamed layer is given a name so it can be referred to.
    auto* add = new QToolButton;
    add->setObjectName("add_input");
    add->setText("+");
    add->setToolTip("Read another layer: pick one that comes before this one");
    add->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(add);
    connect(menu, &QMenu::aboutToShow, this, [this, menu] {
        menu->clear();
        const int inputs = document_->input_count();
        for (int k = 0; k < inputs; ++k) {
            const QString name = document_->model_input_name(k);
            menu->addAction(inputs == 1 ? name + "  (the model's input)" : QString("%1  (model input %2)").arg(name).arg(k + 1),
                            this, [this, k] { add_input(-1 - k); });
        }
        for (int i = 0; i < row_; ++i) {
            const QJsonObject l = document_->layer(i);
            const QString name = l.value("name").toString();
            const QString text = name.isEmpty() ? QString("#%1 %2  (will be named)").arg(i).arg(l.value("type").toString())
                                                : QString("%1  (#%2 %3)").arg(name).arg(i).arg(l.value("type").toString());
            menu->addAction(text, this, [this, i] { add_input(i); });
        }
    });
    add->setMenu(menu);
    row->addWidget(inputs_, 1);
    row->addWidget(add);
    return box;
}

void LayerForm::add_input(int source_row) {
    document_->add_input(row_, source_row);
    if (inputs_) inputs_->setText(document_->inputs(row_).join(", "));
    mark_error();
}

void LayerForm::show_layer(int row) {
    row_ = row;
    rebuild();
}

void LayerForm::write(const QString& key, const QJsonValue& value) {
    if (row_ < 0 || row_ >= document_->layer_count()) return;
    QJsonObject layer = document_->layer(row_);
    if (value.isNull() || value.isUndefined() || (value.isString() && value.toString().isEmpty()))
        layer.remove(key);
    else
        layer[key] = value;
    document_->set_layer(row_, layer);
    mark_error();
}

void LayerForm::rebuild() {
    while (form_->rowCount() > 0) form_->removeRow(0);
    editors_.clear();
    name_ = nullptr;
    inputs_ = nullptr;
    if (row_ < 0 || row_ >= document_->layer_count()) {
        title_->setText("Select a layer to edit it");
        return;
    }
    const QJsonObject layer = document_->layer(row_);
    const QString type = layer.value("type").toString();
    title_->setText(QString("Layer %1: %2").arg(row_).arg(type));

    name_ = new QLineEdit(layer.value("name").toString());
    name_->setObjectName("field_name");
    name_->setPlaceholderText("optional; needed for other layers to read this one");
    // A rename carries the layers that read this one along (ModelDocument::rename_layer).
    connect(name_, &QLineEdit::textEdited, this, [this](const QString& t) {
        document_->rename_layer(row_, t);
        mark_error();
    });
    form_->addRow("Name", name_);
    form_->addRow("Inputs", make_inputs_row());
    editors_["inputs"] = inputs_;

    for (const FieldSpec& f : layer_fields(type)) {
        const QJsonValue v = layer.value(f.key);
        QWidget* editor = nullptr;
        switch (f.kind) {
            case FieldSpec::Kind::Int: {
                auto* spin = new QSpinBox;
                spin->setRange(1, 1 << 20);
                spin->setValue(v.toInt(1));
                connect(spin, &QSpinBox::valueChanged, this, [this, key = f.key](int x) { write(key, x); });
                editor = spin;
                break;
            }
            case FieldSpec::Kind::Float: {
                auto* line = new QLineEdit(v.isDouble() ? QString::number(v.toDouble()) : QString());
                line->setPlaceholderText(fallback_text(f.fallback));
                auto* validator = new QDoubleValidator(line);
                validator->setLocale(QLocale::c());
                line->setValidator(validator);
                connect(line, &QLineEdit::textEdited, this, [this, key = f.key](const QString& t) {
                    bool ok = false;
                    const double x = t.toDouble(&ok);
                    write(key, ok ? QJsonValue(x) : QJsonValue());
                });
                editor = line;
                break;
            }
            case FieldSpec::Kind::Pair: {
                auto* box = new QWidget;
                auto* row = new QHBoxLayout(box);
                row->setContentsMargins(0, 0, 0, 0);
                const int fb = f.fallback.isDouble() ? f.fallback.toInt() : 1;
                auto* a = new QSpinBox;
                auto* b = new QSpinBox;
                for (auto* s : {a, b}) s->setRange(f.key == "padding" || f.key == "channels" ? 0 : 1, 4096);
                a->setValue(first_of(v, fb));
                b->setValue(second_of(v, fb));
                row->addWidget(a);
                row->addWidget(new QLabel("×"));
                row->addWidget(b);
                auto update = [this, key = f.key, a, b] { write(key, QJsonArray{a->value(), b->value()}); };
                connect(a, &QSpinBox::valueChanged, this, update);
                connect(b, &QSpinBox::valueChanged, this, update);
                editor = box;
                break;
            }
            case FieldSpec::Kind::Bool: {
                auto* check = new QCheckBox;
                check->setChecked(v.isBool() ? v.toBool() : f.fallback.toBool());
                connect(check, &QCheckBox::toggled, this, [this, key = f.key](bool on) { write(key, on); });
                editor = check;
                break;
            }
            case FieldSpec::Kind::Choice: {
                auto* combo = new QComboBox;
                combo->addItems(f.choices);
                combo->setCurrentText(v.isString() ? v.toString() : f.fallback.toString());
                connect(combo, &QComboBox::currentTextChanged, this,
                        [this, key = f.key](const QString& t) { write(key, t); });
                editor = combo;
                break;
            }
        }
        editor->setToolTip(f.tip);
        editor->setObjectName("field_" + f.key);
        editors_[f.key] = editor;
        form_->addRow(f.label, editor);
    }
    mark_error();
}

void LayerForm::mark_error() {
    for (auto* e : editors_) e->setStyleSheet({});
    if (document_->valid() || document_->error_row() != row_) return;
    static const QRegularExpression field(R"re(layers\[\d+\][^:]*: "(\w+)")re");
    // The graph's errors about what a layer reads (engine/config/graph.cpp) mark the Inputs editor.
    static const QRegularExpression input(R"re(layers\[\d+\][^:]*: (input "|reads \d+ inputs|subtract takes|.*list them in "inputs"))re");
    QString key;
    if (auto m = field.match(document_->error()); m.hasMatch()) key = m.captured(1);
    else if (input.match(document_->error()).hasMatch()) key = "inputs";
    if (auto* e = editors_.value(key)) e->setStyleSheet("background: #ffd6d6");
}

}  // namespace thresher::ui
