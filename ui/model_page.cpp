#include "model_page.h"

#include <algorithm>

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
#include <QJsonArray>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "graph_view.h"
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
            // A vertex that joins branches starts reading the layer before it (an add of one is
            // valid); "+" in the form adds the other branches.
            if (joins_branches(type)) document_->add_input(at, at - 1);
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
    // Menu text and the template's file in resources/models.
    const std::pair<QString, QString> kTemplates[] = {
        {"LeNet", "lenet"}, {"MLP", "mlp"}, {"ResNet", "resnet"}, {"Two inputs, two outputs", "two_input"},
        {"Siamese (shared layers)", "siamese"}, {"Segmentation (an image output)", "segmentation"},
        {"Tiny-ImageNet CNN (64×64 RGB, 200 classes)", "tiny_imagenet_cnn"},
        {"Character LSTM (a .txt corpus)", "char_lstm"}, {"Embedding + LSTM text classifier (token CSV)", "text_classifier"}};
    for (const auto& [text, file] : kTemplates)
        tmenu->addAction(text, this, [this, file] { Q_EMIT templateRequested(file); });
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
    // Shapes and counts are short: as wide as they are, leaving Settings the room the graph allows.
    table_->horizontalHeader()->setSectionResizeMode(ModelDocument::ColOutput, QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(ModelDocument::ColParams, QHeaderView::ResizeToContents);
    table_->setColumnWidth(ModelDocument::ColType, 120);
    table_->setColumnWidth(ModelDocument::ColInputs, 110);
    table_->setAlternatingRowColors(true);
    table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
    left_layout->addWidget(table_, 1);

    // Model-wide settings.
    auto* model_box = new QGroupBox("Model");
    auto* mform = new QFormLayout(model_box);
    name_ = new QLineEdit;
    mform->addRow("Name", name_);
    auto* input_row = new QHBoxLayout;
    // Several inputs: pick the one the row edits; its name is what layers' "inputs" call it.
    input_pick_ = new QComboBox;
    input_pick_->setObjectName("input_pick");
    input_pick_->setToolTip("The model input this row edits");
    input_name_ = new QLineEdit;
    input_name_->setObjectName("input_name");
    input_name_->setPlaceholderText("input");
    input_name_->setToolTip("What layers' Inputs call this input");
    add_input_ = new QToolButton;
    add_input_->setObjectName("add_model_input");
    add_input_->setText("+");
    add_input_->setToolTip("Add another model input (a model with several inputs reads them side by side in each data row)");
    remove_input_ = new QToolButton;
    remove_input_->setObjectName("remove_model_input");
    remove_input_->setText("−");
    remove_input_->setToolTip("Remove this model input (the layers reading it stop reading it)");
    // Two rows: which input and its name, then its shape.
    auto* which_row = new QHBoxLayout;
    which_row->addWidget(input_pick_, 1);
    which_row->addWidget(input_name_, 1);
    input_kind_ = new QComboBox;
    input_kind_->addItems({"image", "features", "sequence"});
    input_kind_->setToolTip("image: channels × height × width; features: a flat vector; sequence: steps × features "
                            "(each sample also carries its length)");
    input_kind_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    input_kind_->setSizePolicy(QSizePolicy::Minimum, QSizePolicy::Fixed);  // the spin boxes give way, not the words
    channels_ = new QSpinBox;
    height_ = new QSpinBox;
    width_ = new QSpinBox;
    size_ = new QSpinBox;
    steps_ = new QSpinBox;
    steps_->setObjectName("input_steps");
    steps_->setToolTip("steps of the sequence");
    size_->setObjectName("input_size");
    for (auto* s : {channels_, height_, width_, size_, steps_}) s->setRange(1, 1 << 24);
    for (auto* s : {channels_, height_, width_}) s->setMaximumWidth(50);  // room for the kind's words
    input_row->addWidget(input_kind_);
    input_row->addWidget(channels_);
    input_row->addWidget(height_);
    input_row->addWidget(width_);
    input_row->addWidget(steps_);
    input_row->addWidget(size_);
    which_row->addWidget(add_input_);
    which_row->addWidget(remove_input_);
    mform->addRow("Input", which_row);
    mform->addRow("Input shape", input_row);
    init_ = new QComboBox;
    init_->addItems({"xavier", "xavier_uniform", "relu", "normal", "uniform", "zero"});
    mform->addRow("Weight init", init_);
    l1_ = new QLineEdit;
    l2_ = new QLineEdit;
    for (auto* e : {l1_, l2_}) {
        e->setPlaceholderText("0");
        auto* v = new QDoubleValidator(0, 1000, 10, e);
        v->setLocale(QLocale::c());
        e->setValidator(v);
    }
    mform->addRow("L1 regularisation", l1_);
    mform->addRow("L2 regularisation", l2_);
    // The learning-rate schedule: its type and unit, its fields as "key=value, ...".
    auto* sched_row = new QHBoxLayout;
    schedule_type_ = new QComboBox;
    schedule_type_->setObjectName("schedule_type");
    schedule_type_->addItems({"none", "map", "exponential", "inverse", "poly", "polynomial", "sigmoid", "cycle", "cosine"});
    schedule_by_ = new QComboBox;
    schedule_by_->setObjectName("schedule_by");
    schedule_by_->addItems({"iteration", "epoch"});
    sched_row->addWidget(schedule_type_);
    sched_row->addWidget(schedule_by_);
    mform->addRow("LR schedule", sched_row);
    schedule_fields_ = new QLineEdit;
    schedule_fields_->setObjectName("schedule_fields");
    mform->addRow("Schedule fields", schedule_fields_);
    schedule_info_ = new QLabel;
    schedule_info_->setObjectName("schedule_info");
    schedule_info_->setWordWrap(true);
    mform->addRow("", schedule_info_);
    seed_ = new QSpinBox;
    seed_->setRange(0, std::numeric_limits<int>::max());
    mform->addRow("Seed", seed_);
    split->addWidget(left);

    // Middle: the model drawn as a graph, selecting with the table.
    graph_ = new GraphView(document_);
    graph_->setMinimumWidth(220);
    split->addWidget(graph_);

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
    split->setStretchFactor(1, 2);
    split->setStretchFactor(2, 1);
    // At the window's 1280 pixels: the table's six columns, a graph with one branch beside its
    // main chain, and the forms.
    split->setSizes({540, 360, 380});
    outer->addWidget(split, 1);

    notes_box_ = new QGroupBox("Import notes");
    notes_box_->setObjectName("import_notes");
    auto* notes_layout = new QVBoxLayout(notes_box_);
    notes_ = new QPlainTextEdit;
    notes_->setReadOnly(true);
    notes_->setMaximumHeight(110);
    notes_layout->addWidget(notes_);
    notes_box_->hide();
    outer->addWidget(notes_box_);

    status_ = new QLabel;
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(status_);

    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                form_->show_layer(current.isValid() ? current.row() : -1);
                graph_->select_row(current.isValid() ? current.row() : -2);
            });
    // A box clicked: its row in the table and the form; the input's box has no row.
    connect(graph_, &GraphView::layerSelected, this, [this](int row) {
        if (row >= 0) {
            select_row(row);
            return;
        }
        table_->selectionModel()->clear();
        form_->show_layer(-1);
    });
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
        const int kind = input_kind_->currentIndex();
        QJsonObject in = kind == 0   ? QJsonObject{{"channels", channels_->value()}, {"height", height_->value()}, {"width", width_->value()}}
                         : kind == 1 ? QJsonObject{{"size", size_->value()}}
                                     : QJsonObject{{"steps", steps_->value()}, {"features", size_->value()}};
        // The name stays as the file has it unless the user edits it (a one-input model need not
        // name its input: layers call it "input").
        const QString name = input_name_->text().trimmed();
        if (!name.isEmpty() && (input_at_ > 0 || name != "input" || document_->model_input(0).contains("name")))
            in["name"] = name;
        document_->set_model_input(input_at_, in);
    };
    connect(input_name_, &QLineEdit::editingFinished, this, write_input);
    connect(input_pick_, &QComboBox::activated, this, [this](int k) {
        input_at_ = k;
        refresh_model_fields();
    });
    connect(add_input_, &QToolButton::clicked, this, [this] {
        input_at_ = document_->add_model_input();
        refresh_model_fields();
    });
    connect(remove_input_, &QToolButton::clicked, this, [this] {
        document_->remove_model_input(input_at_);
        input_at_ = std::max(0, std::min(input_at_, document_->input_count() - 1));
        refresh_model_fields();
    });
    connect(input_kind_, &QComboBox::currentIndexChanged, this, write_input);
    for (auto* s : {channels_, height_, width_, size_, steps_}) connect(s, &QSpinBox::valueChanged, this, write_input);
    connect(init_, &QComboBox::currentTextChanged, this, [this](const QString& t) {
        if (!syncing_) document_->set_field("weight_init", t);
    });
    for (auto [edit, key] : {std::pair{l1_, "l1"}, std::pair{l2_, "l2"}})
        connect(edit, &QLineEdit::textEdited, this, [this, key, edit](const QString& t) {
            bool ok = false;
            const double v = t.toDouble(&ok);
            writing_from_ = edit;
            document_->set_field(key, ok && v != 0 ? QJsonValue(v) : QJsonValue());
            writing_from_ = nullptr;
        });
    connect(schedule_type_, &QComboBox::currentTextChanged, this, [this] { write_schedule(); });
    connect(schedule_by_, &QComboBox::currentTextChanged, this, [this] { write_schedule(); });
    connect(schedule_fields_, &QLineEdit::textEdited, this, [this] {
        writing_from_ = schedule_fields_;
        write_schedule();
        writing_from_ = nullptr;
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
    graph_->select_row(row);
}

void ModelPage::refresh_model_fields() {
    syncing_ = true;
    const QJsonObject m = document_->model();
    if (!name_->hasFocus()) name_->setText(m.value("name").toString());
    const int inputs = document_->input_count();
    input_at_ = std::clamp(input_at_, 0, inputs - 1);
    input_pick_->clear();
    for (int k = 0; k < inputs; ++k)
        input_pick_->addItem(document_->model_input_name(k));
    input_pick_->setCurrentIndex(input_at_);
    input_pick_->setVisible(inputs > 1);
    remove_input_->setEnabled(inputs > 1);
    const QJsonObject in = document_->model_input(input_at_);
    if (!input_name_->hasFocus()) input_name_->setText(in.value("name").toString(input_at_ == 0 ? "input" : ""));
    const bool flat = in.contains("size"), sequence = in.contains("steps");
    input_kind_->setCurrentIndex(sequence ? 2 : flat ? 1 : 0);
    channels_->setValue(in.value("channels").toInt(1));
    height_->setValue(in.value("height").toInt(28));
    width_->setValue(in.value("width").toInt(28));
    size_->setValue(sequence ? in.value("features").toInt(1) : in.value("size").toInt(784));
    size_->setToolTip(sequence ? "features of each step" : "features");
    steps_->setValue(in.value("steps").toInt(50));
    for (auto* s : {channels_, height_, width_}) s->setVisible(!flat && !sequence);
    size_->setVisible(flat || sequence);
    steps_->setVisible(sequence);
    init_->setCurrentText(m.value("weight_init").toString("xavier"));
    if (!l1_->hasFocus() && writing_from_ != l1_) l1_->setText(m.contains("l1") ? QString::number(m.value("l1").toDouble()) : QString());
    if (!l2_->hasFocus() && writing_from_ != l2_) l2_->setText(m.contains("l2") ? QString::number(m.value("l2").toDouble()) : QString());
    refresh_schedule();
    seed_->setValue(m.value("seed").toInt(12345));
    syncing_ = false;
}

namespace {

// The fields each schedule type takes, as the placeholder shows them (engine/config/README.md).
QString schedule_hint(const QString& type) {
    if (type == "map") return "0=0.1, 200=0.05, 600=0.01";
    if (type == "exponential") return "initial=0.1, rate=0.96, decay_steps=100, staircase=false";
    if (type == "inverse") return "initial=0.1, rate=0.5, power=1, decay_steps=1";
    if (type == "poly") return "initial=0.1, power=1, decay_steps=1000";
    if (type == "polynomial") return "initial=0.1, end=0.0001, decay_steps=1000, power=1";
    if (type == "sigmoid") return "initial=0.1, rate=0.1, step=500";
    if (type == "cycle") return "initial=0.01, max=0.1, cycle_length=1000, annealing_length=100";
    if (type == "cosine") return "initial=0.1, decay_steps=1000, alpha=0";
    return QString();
}

QString value_text(const QJsonValue& v) {
    if (v.isBool()) return v.toBool() ? "true" : "false";
    return QString::number(v.toDouble(), 'g', 10);
}

}  // namespace

void ModelPage::refresh_schedule() {
    const QJsonObject s = document_->model().value("updater").toObject().value("schedule").toObject();
    const QString type = s.isEmpty() ? QString("none") : s.value("type").toString();
    schedule_type_->setCurrentText(type);
    schedule_by_->setCurrentText(s.value("by").toString("iteration"));
    schedule_by_->setEnabled(!s.isEmpty());
    schedule_fields_->setEnabled(!s.isEmpty());
    schedule_fields_->setPlaceholderText(schedule_hint(type));
    if (!schedule_fields_->hasFocus() && writing_from_ != schedule_fields_) {
        QStringList parts;
        const QJsonObject fields = type == "map" ? s.value("values").toObject() : s;
        for (auto it = fields.begin(); it != fields.end(); ++it)
            if (it.key() != "type" && it.key() != "by") parts << it.key() + "=" + value_text(it.value());
        schedule_fields_->setText(parts.join(", "));
    }
    schedule_info_->setText(document_->schedule_text().isEmpty() ? (s.isEmpty() ? "constant learning rate" : "")
                                                                  : document_->schedule_text());
}

// "key=value, ..." into the updater's "schedule" (a map's positions into "values"); the engine's
// validation then names whatever is wrong in the status line.
void ModelPage::write_schedule() {
    if (syncing_) return;
    QJsonObject u = document_->model().value("updater").toObject();
    if (u.isEmpty()) u["type"] = "sgd";
    const QString type = schedule_type_->currentText();
    if (type == "none") {
        if (u.contains("schedule")) {
            // Back to a constant rate: the schedule's start.
            const QJsonObject old = u.value("schedule").toObject();
            const QJsonValue start = old.value("type") == "map" ? old.value("values").toObject().value("0") : old.value("initial");
            u.remove("schedule");
            if (start.isDouble()) u["learning_rate"] = start;
        }
    } else {
        QJsonObject s{{"type", type}, {"by", schedule_by_->currentText()}};
        QJsonObject values;
        for (const QString& part : schedule_fields_->text().split(',', Qt::SkipEmptyParts)) {
            const QString key = part.section('=', 0, 0).trimmed();
            const QString text = part.section('=', 1).trimmed();
            if (key.isEmpty()) continue;
            bool ok = false;
            const double v = text.toDouble(&ok);
            const QJsonValue value = text == "true" ? QJsonValue(true) : text == "false" ? QJsonValue(false) : ok ? QJsonValue(v) : QJsonValue(text);
            if (type == "map") values[key] = value;
            else s[key] = value;
        }
        if (type == "map") s["values"] = values;
        u["schedule"] = s;
        u.remove("learning_rate");  // the schedule gives it
    }
    syncing_ = true;
    document_->set_field("updater", u);
    syncing_ = false;
}

void ModelPage::set_import_notes(const QString& file, const QStringList& notes) {
    notes_box_->setTitle(QString("Import notes: %1 (%2)").arg(file).arg(notes.size()));
    notes_->setPlainText(notes.join('\n'));
    notes_box_->setVisible(!notes.isEmpty());
}

void ModelPage::refresh_status() {
    if (document_->valid()) {
        status_->setStyleSheet("color: #1b5e20");
        const qsizetype more = document_->extra_input_names().size();
        status_->setText(QString("✔ Valid: input %1 → %2 layers, %3 parameters")
                             .arg(document_->input_shape() +
                                  (more ? QString(" and %1 more input%2").arg(more).arg(more > 1 ? "s" : "") : QString()))
                             .arg(document_->layer_count())
                             .arg(QLocale().toString(document_->param_count())));
    } else {
        status_->setStyleSheet("color: #b00020; font-weight: bold");
        status_->setText("✖ " + document_->error());
    }
}

}  // namespace thresher::ui
