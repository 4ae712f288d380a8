#include "model_page.h"

#include <QComboBox>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "layer_form.h"
#include "layer_schema.h"
#include "model_document.h"

namespace thresher::ui {

ModelPage::ModelPage(ModelDocument* document, QWidget* parent) : QWidget(parent), document_(document) {
    auto* outer = new QVBoxLayout(this);

    // Buttons above the table.
    auto* buttons = new QHBoxLayout;
    auto* add = new QToolButton;
    add->setText("Add layer");
    add->setPopupMode(QToolButton::InstantPopup);
    auto* add_menu = new QMenu(add);
    for (const QString& type : layer_types())
        add_menu->addAction(type, this, [this, type] {
            // New layers go above the output layer (or after the selection), where they make sense.
            int at = selected_row() >= 0 ? selected_row() + 1 : std::max(0, document_->layer_count() - 1);
            if (type == "output") at = document_->layer_count();
            document_->insert_layer(at, default_layer(type));
            select_row(at);
        });
    add->setMenu(add_menu);
    auto* remove = new QPushButton("Remove");
    auto* up = new QPushButton("Move up");
    auto* down = new QPushButton("Move down");
    auto* templates = new QToolButton;
    templates->setText("Templates");
    templates->setPopupMode(QToolButton::InstantPopup);
    auto* tmenu = new QMenu(templates);
    for (const QString& t : {QString("LeNet"), QString("MLP")})
        tmenu->addAction(t, this, [this, t] { Q_EMIT templateRequested(t.toLower()); });
    templates->setMenu(tmenu);
    auto* import = new QPushButton("Import DL4J / Keras…");
    for (QWidget* w : {static_cast<QWidget*>(add), static_cast<QWidget*>(remove), static_cast<QWidget*>(up),
                       static_cast<QWidget*>(down)})
        buttons->addWidget(w);
    buttons->addStretch(1);
    buttons->addWidget(templates);
    buttons->addWidget(import);
    outer->addLayout(buttons);

    auto* split = new QSplitter(Qt::Horizontal);
    auto* left = new QWidget;
    auto* left_layout = new QVBoxLayout(left);
    left_layout->setContentsMargins(0, 0, 0, 0);
    table_ = new QTableView;
    table_->setModel(document_);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(ModelDocument::ColSettings, QHeaderView::Stretch);
    table_->horizontalHeader()->setSectionResizeMode(ModelDocument::ColIndex, QHeaderView::ResizeToContents);
    table_->setAlternatingRowColors(true);
    left_layout->addWidget(table_, 1);

    // Model-wide settings.
    auto* model_box = new QGroupBox("Model");
    auto* mform = new QFormLayout(model_box);
    name_ = new QLineEdit;
    mform->addRow("Name", name_);
    auto* input_row = new QHBoxLayout;
    input_kind_ = new QComboBox;
    input_kind_->addItems({"image (C×H×W)", "flat features"});
    channels_ = new QSpinBox;
    height_ = new QSpinBox;
    width_ = new QSpinBox;
    size_ = new QSpinBox;
    for (auto* s : {channels_, height_, width_, size_}) s->setRange(1, 1 << 24);
    input_row->addWidget(input_kind_);
    input_row->addWidget(channels_);
    input_row->addWidget(height_);
    input_row->addWidget(width_);
    input_row->addWidget(size_);
    mform->addRow("Input", input_row);
    init_ = new QComboBox;
    init_->addItems({"xavier", "xavier_uniform", "relu", "normal", "uniform", "zero"});
    mform->addRow("Weight init", init_);
    l2_ = new QLineEdit;
    l2_->setPlaceholderText("0");
    auto* l2v = new QDoubleValidator(0, 1, 10, l2_);
    l2v->setLocale(QLocale::c());
    l2_->setValidator(l2v);
    mform->addRow("L2 regularisation", l2_);
    seed_ = new QSpinBox;
    seed_->setRange(0, std::numeric_limits<int>::max());
    mform->addRow("Seed", seed_);
    split->addWidget(left);

    // Right: the model-wide settings above the selected layer's form.
    auto* right = new QWidget;
    auto* right_layout = new QVBoxLayout(right);
    right_layout->setContentsMargins(0, 0, 0, 0);
    right_layout->addWidget(model_box);
    auto* layer_box = new QGroupBox("Selected layer");
    auto* layer_layout = new QVBoxLayout(layer_box);
    form_ = new LayerForm(document_);
    layer_layout->addWidget(form_);
    right_layout->addWidget(layer_box, 1);
    right->setMinimumWidth(340);
    split->addWidget(right);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    outer->addWidget(split, 1);

    status_ = new QLabel;
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(status_);

    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { form_->show_layer(current.isValid() ? current.row() : -1); });
    connect(document_, &QAbstractItemModel::modelReset, this, [this] { form_->show_layer(selected_row()); });
    connect(remove, &QPushButton::clicked, this, [this] {
        const int row = selected_row();
        if (row < 0) return;
        document_->remove_layer(row);
        select_row(std::min(row, document_->layer_count() - 1));
    });
    connect(up, &QPushButton::clicked, this, [this] {
        const int row = selected_row();
        if (row <= 0) return;
        document_->move_layer(row, row - 1);
        select_row(row - 1);
    });
    connect(down, &QPushButton::clicked, this, [this] {
        const int row = selected_row();
        if (row < 0 || row + 1 >= document_->layer_count()) return;
        document_->move_layer(row, row + 1);
        select_row(row + 1);
    });
    connect(import, &QPushButton::clicked, this, &ModelPage::importRequested);
    connect(document_, &ModelDocument::changed, this, [this] {
        refresh_model_fields();
        refresh_status();
        form_->mark_error();
    });

    connect(name_, &QLineEdit::textEdited, this, [this](const QString& t) { document_->set_field("name", t); });
    auto write_input = [this] {
        if (syncing_) return;
        const bool image = input_kind_->currentIndex() == 0;
        document_->set_field("input", image ? QJsonObject{{"channels", channels_->value()},
                                                          {"height", height_->value()},
                                                          {"width", width_->value()}}
                                            : QJsonObject{{"size", size_->value()}});
    };
    connect(input_kind_, &QComboBox::currentIndexChanged, this, write_input);
    for (auto* s : {channels_, height_, width_, size_}) connect(s, &QSpinBox::valueChanged, this, write_input);
    connect(init_, &QComboBox::currentTextChanged, this, [this](const QString& t) {
        if (!syncing_) document_->set_field("weight_init", t);
    });
    connect(l2_, &QLineEdit::textEdited, this, [this](const QString& t) {
        bool ok = false;
        const double v = t.toDouble(&ok);
        document_->set_field("l2", ok && v != 0 ? QJsonValue(v) : QJsonValue());
    });
    connect(seed_, &QSpinBox::valueChanged, this, [this](int v) {
        if (!syncing_) document_->set_field("seed", v);
    });
    refresh_model_fields();
    refresh_status();
}

int ModelPage::selected_row() const {
    const auto current = table_->selectionModel()->currentIndex();
    return current.isValid() ? current.row() : -1;
}

void ModelPage::select_row(int row) {
    if (row < 0 || row >= document_->layer_count()) {
        form_->show_layer(-1);
        return;
    }
    table_->selectionModel()->setCurrentIndex(document_->index(row, 0),
                                              QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    form_->show_layer(row);
}

void ModelPage::refresh_model_fields() {
    syncing_ = true;
    const QJsonObject m = document_->model();
    if (!name_->hasFocus()) name_->setText(m.value("name").toString());
    const QJsonObject in = m.value("input").toObject();
    const bool flat = in.contains("size");
    input_kind_->setCurrentIndex(flat ? 1 : 0);
    channels_->setValue(in.value("channels").toInt(1));
    height_->setValue(in.value("height").toInt(28));
    width_->setValue(in.value("width").toInt(28));
    size_->setValue(in.value("size").toInt(784));
    for (auto* s : {channels_, height_, width_}) s->setVisible(!flat);
    size_->setVisible(flat);
    init_->setCurrentText(m.value("weight_init").toString("xavier"));
    if (!l2_->hasFocus()) l2_->setText(m.contains("l2") ? QString::number(m.value("l2").toDouble()) : QString());
    seed_->setValue(m.value("seed").toInt(12345));
    syncing_ = false;
}

void ModelPage::refresh_status() {
    if (document_->valid()) {
        status_->setStyleSheet("color: #1b5e20");
        status_->setText(QString("✔ Valid: input %1 → %2 layers, %3 parameters")
                             .arg(document_->input_shape())
                             .arg(document_->layer_count())
                             .arg(QLocale().toString(document_->param_count())));
    } else {
        status_->setStyleSheet("color: #b00020; font-weight: bold");
        status_->setText("✖ " + document_->error());
    }
}

}  // namespace thresher::ui
