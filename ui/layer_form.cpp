#include "layer_form.h"

#include <QComboBox>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSpinBox>
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
    show_layer(-1);
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
    if (row_ < 0 || row_ >= document_->layer_count()) {
        title_->setText("Select a layer to edit it");
        return;
    }
    const QJsonObject layer = document_->layer(row_);
    const QString type = layer.value("type").toString();
    title_->setText(QString("Layer %1: %2").arg(row_).arg(type));

    auto* name = new QLineEdit(layer.value("name").toString());
    name->setPlaceholderText("optional");
    connect(name, &QLineEdit::textEdited, this, [this](const QString& t) { write("name", t); });
    form_->addRow("Name", name);

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
                for (auto* s : {a, b}) s->setRange(f.key == "padding" ? 0 : 1, 4096);
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
    if (auto m = field.match(document_->error()); m.hasMatch())
        if (auto* e = editors_.value(m.captured(1))) e->setStyleSheet("background: #ffd6d6");
}

}  // namespace thresher::ui
