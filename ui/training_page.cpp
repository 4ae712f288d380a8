#include "training_page.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleValidator>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>

#include "data/image_folder.h"
#include "data/sequence_csv.h"
#include "data/shard_format.h"
#include "data_preview.h"
#include "layer_schema.h"
#include "link_row.h"
#include "model_document.h"

namespace thresher::ui {

namespace {

// The Device row's choice that becomes cuda:0,cuda:1,… for the run's workers per node.
const QString kOnePerWorker = QStringLiteral("one-per-worker");

QLineEdit* number_edit(const QString& placeholder) {
    auto* e = new QLineEdit;
    e->setPlaceholderText(placeholder);
    auto* v = new QDoubleValidator(e);
    v->setLocale(QLocale::c());
    e->setValidator(v);
    return e;
}

int gpu_count() {
    // /dev/nvidia0, /dev/nvidia1, … exist for each GPU the driver sees.
    return static_cast<int>(QDir("/dev").entryList({"nvidia[0-9]*"}, QDir::System).size());
}

}  // namespace

TrainingPage::TrainingPage(ModelDocument* document, QWidget* parent) : QWidget(parent), document_(document) {
    auto* scroll_content = new QWidget;
    auto* columns = new QHBoxLayout(scroll_content);
    auto* left = new QVBoxLayout;
    auto* right = new QVBoxLayout;
    columns->addLayout(left, 1);
    columns->addLayout(right, 1);

    // Strategy.
    auto* strategy_box = new QGroupBox("Training master");
    auto* sform = new QFormLayout(strategy_box);
    strategy_ = new QComboBox;
    strategy_->addItem("Gradient sharing (threshold-encoded updates)", "gradient-sharing");
    strategy_->addItem("Parameter averaging (synchronous)", "parameter-averaging");
    strategy_->addItem("Single worker", "single");
    sform->addRow("Strategy", strategy_);
    left->addWidget(strategy_box);

    sharing_box_ = new QGroupBox("Gradient sharing");
    auto* gform = new QFormLayout(sharing_box_);
    threshold_algorithm_ = new QComboBox;
    threshold_algorithm_->addItem("Adaptive (DL4J default: density 1e-4 … 1e-2)", "adaptive");
    threshold_algorithm_->addItem("Fixed", "fixed");
    threshold_algorithm_->addItem("Target density", "target");
    threshold_algorithm_->setObjectName("threshold_algorithm");
    gform->addRow("Threshold algorithm", threshold_algorithm_);
    threshold_ = number_edit("1e-3");
    threshold_->setObjectName("threshold");
    threshold_->setToolTip("Initial threshold τ: update entries with |r| ≥ τ are sent as ±τ");
    gform->addRow("Threshold τ", threshold_);
    residual_ = new QComboBox;
    residual_->addItem("Clip to ±5τ every 5 iterations", "clip");
    residual_->addItem("None", "none");
    gform->addRow("Residual", residual_);
    max_staleness_ = new QSpinBox;
    max_staleness_->setRange(-1, 1000);
    max_staleness_->setSpecialValueText("off (never wait)");  // shown for -1
    max_staleness_->setSuffix(" iteration(s)");
    max_staleness_->setToolTip("How many of each other worker's latest updates a gradient may miss before the worker "
                               "waits for them (briefly, with a deadline). 0: every gradient sees every update up to "
                               "the previous iteration, as one machine would; off: never wait (DL4J's way)");
    gform->addRow("Staleness bound", max_staleness_);
    left->addWidget(sharing_box_);

    averaging_box_ = new QGroupBox("Parameter averaging");
    auto* aform = new QFormLayout(averaging_box_);
    averaging_frequency_ = new QSpinBox;
    averaging_frequency_->setRange(1, 100000);
    aform->addRow("Average every (iterations)", averaging_frequency_);
    save_updater_ = new QCheckBox("Average updater state too");
    aform->addRow("", save_updater_);
    left->addWidget(averaging_box_);

    auto* train_box = new QGroupBox("Training");
    auto* tform = new QFormLayout(train_box);
    epochs_ = new QSpinBox;
    epochs_->setRange(1, 100000);
    tform->addRow("Epochs", epochs_);
    batch_ = new QSpinBox;
    batch_->setRange(1, 1 << 20);
    tform->addRow("Batch per worker", batch_);
    threads_ = new QSpinBox;
    threads_->setRange(0, 1024);
    threads_->setSpecialValueText("automatic");
    tform->addRow("CPU threads per node", threads_);
    device_ = new QComboBox;
    device_->setObjectName("device");
    device_->addItem("CPU", "cpu");
    device_->addItem("GPU 0 for every worker", "cuda");
    device_->addItem("One GPU per worker (GPU 0, 1, …)", kOnePerWorker);
    device_->setToolTip("Where each node's workers compute. With one GPU per worker, set the workers per node to the "
                        "number of GPUs each machine has.");
    tform->addRow("Device", device_);
    limit_ = new QSpinBox;
    limit_->setRange(0, std::numeric_limits<int>::max());
    limit_->setSpecialValueText("all");
    limit_->setSingleStep(1000);
    tform->addRow("Training samples", limit_);
    updater_ = new QComboBox;
    updater_->addItems(updater_types());
    tform->addRow("Updater", updater_);
    updater_form_ = tform;
    left->addWidget(train_box);
    left->addStretch(1);

    // Data.
    auto* data_box = new QGroupBox("Data");
    auto* dform = new QFormLayout(data_box);
    data_kind_ = new QComboBox;
    data_kind_->setObjectName("data_kind");
    data_kind_->addItem("Fashion-MNIST (/usr/share/datasets/fashion-mnist)", "fashion-mnist");
    data_kind_->addItem("Folder of IDX files", "idx");
    data_kind_->addItem("CSV file (label first)", "csv");
    data_kind_->addItem("Folder of images (a folder per class)", "images");
    data_kind_->addItem("Folder of sequence CSVs (features/ and labels/)", "sequences");
    data_kind_->addItem("Text file (a character corpus)", "text");
    data_kind_->addItem("Shard set (from thresher-engine export)", "shards");
    dform->addRow("Data set", data_kind_);
    auto* path_row = new QHBoxLayout;
    data_path_ = new QLineEdit;
    data_browse_ = new QPushButton("Browse…");
    path_row->addWidget(data_path_);
    path_row->addWidget(data_browse_);
    dform->addRow("Path", path_row);
    // Only a shard set can be split between nodes (launcher/shard_placement.h); the choice is
    // kept while another kind of data is picked, but written only for a shard set.
    shard_placement_ = new QComboBox;
    shard_placement_->setObjectName("shard_placement");
    shard_placement_->addItem("shared folder", "shared");
    shard_placement_->addItem("per node (SSH uploads each node its shards)", "per-node");
    shard_placement_->setToolTip("Per node: node r of W reads only the shard files r, r+W, r+2W, … of the set, and an SSH "
                                 "cluster uploads each host the index and those files alone. Local runs and Slurm read them "
                                 "from the one folder.");
    dform->addRow("Shard placement", shard_placement_);
    // How the engine prepares it (thresher-engine --augment, --normalize, --top-k).
    augment_ = new QLineEdit;
    augment_->setObjectName("augment");
    augment_->setPlaceholderText("none (e.g. crop:4,flip)");
    augment_->setToolTip("Training images only: crop:P takes a random crop after padding P pixels of zeros on every side; "
                         "flip mirrors left-right half the time. Seeded by the run seed, epoch and sample.");
    dform->addRow("Augment", augment_);
    normalize_ = new QComboBox;
    normalize_->setObjectName("normalize");
    normalize_->addItem("none", "none");
    normalize_->addItem("standardize (mean 0, std 1 per feature)", "standardize");
    normalize_->addItem("min-max to [0, 1] per feature", "minmax");
    normalize_->setToolTip("Fitted on the training set and saved with the model");
    dform->addRow("Normalize", normalize_);
    top_k_ = new QSpinBox;
    top_k_->setObjectName("top_k");
    top_k_->setRange(-1, 1000);
    top_k_->setSpecialValueText("automatic (5 with 20 classes or more)");
    top_k_->setToolTip("Top-k accuracy in the evaluation: k, 0 off");
    dform->addRow("Top-k accuracy", top_k_);
    // A look at the samples as the engine will read them, before anything is launched.
    preview_button_ = new QPushButton("Show samples");
    preview_button_->setObjectName("show_samples");
    preview_button_->setToolTip("Decode a few training samples with the model's input shape and show them with their labels");
    dform->addRow("", preview_button_);
    preview_ = new DataPreview;
    preview_->setObjectName("data_preview");
    dform->addRow(preview_);
    right->addWidget(data_box);

    // Cluster.
    auto* cluster_box = new QGroupBox("Cluster");
    auto* cl = new QVBoxLayout(cluster_box);
    auto* ckind_row = new QFormLayout;
    cluster_kind_ = new QComboBox;
    cluster_kind_->addItem("Local (this machine)", "local");
    cluster_kind_->addItem("SSH hosts", "ssh");
    cluster_kind_->addItem("Slurm", "slurm");
    ckind_row->addRow("Where", cluster_kind_);
    udp_port_ = new QSpinBox;
    udp_port_->setRange(1024, 65535);
    ckind_row->addRow("UDP port", udp_port_);
    topology_ = new QComboBox;
    topology_->setObjectName("topology");
    topology_->addItem("Automatic (mesh; averaging in a tree beyond 8 nodes)", "auto");
    topology_->addItem("Mesh: every node to every other", "mesh");
    topology_->addItem("Relay through node 0", "relay");
    topology_->addItem("Tree", "tree");
    topology_->setToolTip("How nodes exchange gradient-sharing messages and averaging rounds. A mesh is one hop but "
                          "each node uploads its own messages to every other; a tree bounds every node to fanout + 1 links and "
                          "spreads averaging rounds over the nodes instead of node 0.");
    fanout_ = new QSpinBox;
    fanout_->setObjectName("fanout");
    fanout_->setRange(1, 1024);
    fanout_->setPrefix("fanout ");
    auto* topology_row = new QHBoxLayout;
    topology_row->addWidget(topology_, 1);
    topology_row->addWidget(fanout_);
    ckind_row->addRow("Topology", topology_row);
    // The emulated link (cluster.link): "these nodes behind 1 Gbit, 2 ms" on one machine.
    link_row_ = new LinkRow;
    link_row_->setObjectName("link_row");
    ckind_row->addRow("Emulated link", link_row_);
    connect(link_row_, &LinkRow::changed, this, [this] {
        if (!syncing_) Q_EMIT changed();
    });
    cl->addLayout(ckind_row);
    cluster_stack_ = new QStackedWidget;
    auto* local = new QWidget;
    auto* lform = new QFormLayout(local);
    nodes_ = new QSpinBox;
    nodes_->setRange(1, 64);
    lform->addRow("Nodes (engine processes)", nodes_);
    workers_ = new QSpinBox;
    workers_->setRange(1, 256);
    lform->addRow("Workers per node", workers_);
    const int gpus = gpu_count();
    detected_ = new QLabel(QString("Detected: %1 CPU cores, %2").arg(QThread::idealThreadCount())
                               .arg(gpus == 0 ? QString("no GPU") : QString("%1 GPU(s)").arg(gpus)));
    detected_->setStyleSheet("color: gray");
    lform->addRow("", detected_);
    cluster_stack_->addWidget(local);
    auto* ssh = new QWidget;
    auto* sl = new QVBoxLayout(ssh);
    sl->setContentsMargins(0, 0, 0, 0);
    hosts_ = new QTableWidget(0, 5);
    hosts_->setHorizontalHeaderLabels({"Address", "Port", "User", "Identity file", "Workers"});
    hosts_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    hosts_->horizontalHeader()->setSectionResizeMode(3, QHeaderView::Stretch);
    hosts_->verticalHeader()->hide();
    sl->addWidget(hosts_);
    auto* host_buttons = new QHBoxLayout;
    auto* add_host = new QPushButton("Add host");
    auto* remove_host = new QPushButton("Remove host");
    check_ = new QPushButton("Check hosts");
    check_->setToolTip("Connect to every host: host key, login, system, GPUs, port, disk");
    host_buttons->addWidget(add_host);
    host_buttons->addWidget(remove_host);
    host_buttons->addStretch(1);
    host_buttons->addWidget(check_);
    sl->addLayout(host_buttons);
    verdicts_ = new QTableWidget(0, 2);
    verdicts_->setHorizontalHeaderLabels({"Host", "Verdict"});
    verdicts_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    verdicts_->verticalHeader()->hide();
    verdicts_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    sl->addWidget(verdicts_);
    cluster_stack_->addWidget(ssh);
    // Slurm: what the job asks the scheduler for (launcher/README.md, "Running engines on Slurm").
    auto* slurm = new QWidget;
    auto* slform = new QFormLayout(slurm);
    const auto line = [](const QString& name, const QString& placeholder, const QString& tip) {
        auto* e = new QLineEdit;
        e->setObjectName(name);
        e->setPlaceholderText(placeholder);
        e->setToolTip(tip);
        return e;
    };
    const auto spin = [](const QString& name, int lo, int hi) {
        auto* b = new QSpinBox;
        b->setObjectName(name);
        b->setRange(lo, hi);
        return b;
    };
    partition_ = line("slurm_partition", "the cluster's default", "sbatch --partition");
    slform->addRow("Partition", partition_);
    slurm_nodes_ = spin("slurm_nodes", 1, 100000);
    slform->addRow("Nodes (hosts)", slurm_nodes_);
    tasks_per_node_ = spin("slurm_tasks_per_node", 1, 1024);
    tasks_per_node_->setToolTip("Engine processes per host (Slurm tasks); each is one engine node");
    slform->addRow("Tasks per node", tasks_per_node_);
    cpus_per_task_ = spin("slurm_cpus_per_task", 1, 4096);
    cpus_per_task_->setToolTip("CPUs each task asks for; also its threads when Threads is 0 (automatic)");
    slform->addRow("CPUs per task", cpus_per_task_);
    gpus_per_node_ = spin("slurm_gpus_per_node", 0, 1024);
    gpus_per_node_->setSpecialValueText("none");
    slform->addRow("GPUs per node", gpus_per_node_);
    slurm_workers_ = spin("slurm_workers_per_node", 1, 256);
    slform->addRow("Workers per task", slurm_workers_);
    time_limit_ = line("slurm_time", "the partition's default", "Slurm time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS");
    slform->addRow("Time limit", time_limit_);
    account_ = line("slurm_account", "none", "sbatch --account");
    slform->addRow("Account", account_);
    qos_ = line("slurm_qos", "none", "sbatch --qos");
    slform->addRow("QOS", qos_);
    constraint_ = line("slurm_constraint", "none", "sbatch --constraint (node features)");
    slform->addRow("Constraint", constraint_);
    sbatch_args_ = line("slurm_sbatch_args", "e.g. --mem=8G --exclusive", "More sbatch options, separated by spaces");
    slform->addRow("More sbatch options", sbatch_args_);
    network_mask_ = line("slurm_network_mask", "Slurm's node addresses", "Engines talk over the address each node has in "
                                                                          "this IPv4 network, e.g. 10.0.0.0/24");
    slform->addRow("Network", network_mask_);
    stage_ = new QComboBox;
    stage_->setObjectName("slurm_stage");
    stage_->addItem("Where nodes cannot read them", "auto");
    stage_->addItem("Always", "always");
    stage_->addItem("Never (shared folders)", "never");
    stage_->setToolTip("Copy the engine, model, data and run secret to the nodes with Slurm's sbcast");
    slform->addRow("Copy files to nodes", stage_);
    auto* slurm_note = new QLabel("Inside an allocation (salloc) the engines start as one srun step; otherwise the job is "
                                  "submitted with sbatch and the Run page shows its queue state and id.");
    slurm_note->setWordWrap(true);
    slurm_note->setStyleSheet("color: gray");
    slform->addRow("", slurm_note);
    cluster_stack_->addWidget(slurm);
    summary_ = new QLabel;
    summary_->setWordWrap(true);
    summary_->setObjectName("cluster_summary");
    summary_->setStyleSheet("color: #0b4f7c");
    cl->addWidget(summary_);
    cl->addWidget(cluster_stack_, 1);
    right->addWidget(cluster_box, 1);

    auto* scroll = new QScrollArea;
    scroll->setWidget(scroll_content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(scroll);

    auto notify = [this] {
        if (syncing_) return;
        update_visibility();
        Q_EMIT changed();
    };
    for (auto* c : {strategy_, threshold_algorithm_, residual_, data_kind_, shard_placement_, cluster_kind_, topology_, stage_, device_,
                    normalize_})
        connect(c, &QComboBox::currentIndexChanged, this, notify);
    for (auto* s : {averaging_frequency_, epochs_, batch_, threads_, limit_, top_k_, nodes_, workers_, udp_port_, fanout_,
                    max_staleness_, slurm_nodes_, tasks_per_node_, cpus_per_task_, gpus_per_node_, slurm_workers_})
        connect(s, &QSpinBox::valueChanged, this, notify);
    for (auto* e : {threshold_, data_path_, augment_, partition_, time_limit_, account_, qos_, constraint_, sbatch_args_, network_mask_})
        connect(e, &QLineEdit::textEdited, this, notify);
    connect(save_updater_, &QCheckBox::toggled, this, notify);
    connect(hosts_, &QTableWidget::itemChanged, this, notify);
    connect(add_host, &QPushButton::clicked, this, [this] {
        add_host_row({});
        Q_EMIT changed();
    });
    connect(remove_host, &QPushButton::clicked, this, [this] {
        if (hosts_->currentRow() >= 0) hosts_->removeRow(hosts_->currentRow());
        Q_EMIT changed();
    });
    connect(check_, &QPushButton::clicked, this, &TrainingPage::checkHostsRequested);
    connect(data_browse_, &QPushButton::clicked, this, [this] {
        const QString kind = data_kind_->currentData().toString();
        const QString path = kind == "csv"    ? QFileDialog::getOpenFileName(this, "CSV data", {}, "CSV files (*.csv);;All files (*)")
                             : kind == "text" ? QFileDialog::getOpenFileName(this, "Text corpus", {}, "Text files (*.txt);;All files (*)")
                                              : QFileDialog::getExistingDirectory(
                                                    this, kind == "images"      ? "Folder of images (train/ and test/, or one folder per class)"
                                                          : kind == "sequences" ? "Folder of sequence CSVs (features/ and labels/, or train/ and test/)"
                                                          : kind == "shards"    ? "Shard set (the folder with index.json that thresher-engine export wrote)"
                                                                                : "Folder of IDX files");
        if (path.isEmpty()) return;
        data_path_->setText(path);
        Q_EMIT changed();
    });
    connect(preview_button_, &QPushButton::clicked, this, [this] { show_samples(); });
    connect(updater_, &QComboBox::currentTextChanged, this, [this] {
        if (syncing_) return;
        write_updater();
        refresh_updater();
    });
    connect(document_, &ModelDocument::changed, this, [this] {
        if (!syncing_) refresh_updater();
    });
    refresh_updater();
    update_visibility();
}

void TrainingPage::update_summary() {
    // Worked out for the user: 2 nodes × 1 worker, batch 64 → 2 workers, 128 samples a step.
    int workers = 0;
    if (cluster_kind_->currentData() == "slurm") {
        workers = slurm_nodes_->value() * tasks_per_node_->value() * slurm_workers_->value();
    } else if (cluster_kind_->currentData() == "ssh") {
        for (int r = 0; r < hosts_->rowCount(); ++r)
            if (hosts_->item(r, 0) && !hosts_->item(r, 0)->text().trimmed().isEmpty())
                workers += std::max(1, hosts_->item(r, 4) ? hosts_->item(r, 4)->text().toInt() : 1);
    } else {
        workers = nodes_->value() * workers_->value();
    }
    const int step = workers * batch_->value();
    QString text = QString("= %1 worker(s) in all; each step trains %2 samples (%1 × batch %3)")
                       .arg(workers)
                       .arg(step)
                       .arg(batch_->value());
    if (data_kind_->currentData() == "fashion-mnist" && step > 0) {
        const int samples = limit_->value() > 0 ? std::min(limit_->value(), 60000) : 60000;
        text += QString(", so an epoch of Fashion-MNIST is %1 steps").arg((samples + step - 1) / step);
    }
    summary_->setText(text);
}

void TrainingPage::update_visibility() {
    const QString s = strategy_->currentData().toString();
    sharing_box_->setVisible(s == "gradient-sharing");
    averaging_box_->setVisible(s == "parameter-averaging");
    threshold_->setEnabled(threshold_algorithm_->currentData() != "target");
    const bool fmnist = data_kind_->currentData() == "fashion-mnist";
    data_path_->setEnabled(!fmnist);
    data_browse_->setEnabled(!fmnist);
    shard_placement_->setEnabled(data_kind_->currentData() == "shards");
    // An augmentation the engine would refuse is marked with its reason.
    QString augment_error;
    if (const QString a = augment_->text().trimmed(); !a.isEmpty()) {
        try {
            (void)spec::Augmentation::parse(a.toStdString());
        } catch (const std::exception& e) {
            augment_error = QString::fromUtf8(e.what());
        }
    }
    augment_->setStyleSheet(augment_error.isEmpty() ? QString() : "color: #b00020");
    augment_->setToolTip(augment_error.isEmpty() ? "Training images only: crop:P takes a random crop after padding P pixels of "
                                                   "zeros on every side; flip mirrors left-right half the time."
                                                 : augment_error);
    cluster_stack_->setCurrentIndex(std::max(0, cluster_kind_->currentIndex()));
    // A time limit Slurm would not read is marked, and not written to the spec.
    const bool time_ok = time_limit_->text().trimmed().isEmpty() || launcher::parse_slurm_time(time_limit_->text()).has_value();
    time_limit_->setStyleSheet(time_ok ? QString() : "color: #b00020");
    fanout_->setVisible(topology_->currentData() == "tree");
    update_summary();
}

// The updater lives in the model JSON: its editors write through the document.
void TrainingPage::refresh_updater() {
    syncing_ = true;
    const QJsonObject u = document_->model().value("updater").toObject();
    const QString type = u.value("type").toString("sgd");
    updater_->setCurrentText(type);
    for (auto* w : updater_editors_) {
        updater_form_->removeRow(w);
    }
    updater_editors_.clear();
    for (const FieldSpec& f : updater_fields(type)) {
        auto* e = number_edit(QString::number(f.fallback.toDouble()));
        e->setObjectName("updater_" + f.key);
        if (u.contains(f.key)) e->setText(QString::number(u.value(f.key).toDouble()));
        connect(e, &QLineEdit::textEdited, this, [this] { write_updater(); });
        updater_form_->addRow(f.label, e);
        updater_editors_.append(e);
    }
    syncing_ = false;
}

void TrainingPage::write_updater() {
    if (syncing_) return;
    const QString type = updater_->currentText();
    QJsonObject u{{"type", type}};
    // A learning-rate schedule (edited on the Model tab) stays, and gives the learning rate.
    const QJsonValue schedule = document_->model().value("updater").toObject().value("schedule");
    const auto fields = updater_fields(type);
    for (int i = 0; i < fields.size() && i < updater_editors_.size(); ++i) {
        bool ok = false;
        const double v = static_cast<QLineEdit*>(updater_editors_[i])->text().toDouble(&ok);
        if (ok && !(schedule.isObject() && fields[i].key == "learning_rate")) u[fields[i].key] = v;
    }
    if (schedule.isObject()) u["schedule"] = schedule;
    syncing_ = true;
    document_->set_field("updater", u);
    syncing_ = false;
    Q_EMIT changed();
}

void TrainingPage::add_host_row(const launcher::SshHost& h) {
    const int row = hosts_->rowCount();
    hosts_->insertRow(row);
    hosts_->setItem(row, 0, new QTableWidgetItem(h.address));
    hosts_->setItem(row, 1, new QTableWidgetItem(QString::number(h.port)));
    hosts_->setItem(row, 2, new QTableWidgetItem(h.user));
    hosts_->setItem(row, 3, new QTableWidgetItem(h.identity_file));
    hosts_->setItem(row, 4, new QTableWidgetItem(QString::number(h.workers)));
}

void TrainingPage::show_samples() {
    const QString kind = data_kind_->currentData().toString();
    QString data = kind == "fashion-mnist" ? QString("fashion-mnist") : data_path_->text().trimmed();
    if (data.isEmpty()) {
        preview_->clear();
        return;
    }
    if (kind != "fashion-mnist" && QDir::isRelativePath(data) && !base_dir_.isEmpty()) data = QDir(base_dir_).filePath(data);
    QApplication::setOverrideCursor(Qt::WaitCursor);
    preview_->show_samples(data, document_->model());
    QApplication::restoreOverrideCursor();
}

void TrainingPage::set_spec(const launcher::RunSpec& spec) {
    syncing_ = true;
    base_dir_ = spec.base_dir;
    preview_->clear();
    const auto& t = spec.training;
    strategy_->setCurrentIndex(strategy_->findData(t.strategy));
    const QString algo = dist::to_string(t.threshold_algorithm.kind);
    threshold_algorithm_->setCurrentIndex(std::max(0, threshold_algorithm_->findData(algo)));
    threshold_->setText(t.threshold ? QString::number(*t.threshold) : QString());
    residual_->setCurrentIndex(std::max(0, residual_->findData(t.residual.section(':', 0, 0))));
    max_staleness_->setValue(t.max_staleness.value_or(-1));
    averaging_frequency_->setValue(t.averaging_frequency);
    save_updater_->setChecked(t.save_updater);
    epochs_->setValue(t.epochs);
    batch_->setValue(t.batch);
    threads_->setValue(t.threads);
    set_device(t.device, spec.workers_per_node());
    limit_->setValue(t.limit ? static_cast<int>(*t.limit) : 0);
    if (spec.data == "fashion-mnist") {
        data_kind_->setCurrentIndex(0);
        data_path_->clear();
    } else {
        // A folder is told apart as the engine's data library tells it (data_source.cpp).
        const std::string path = spec.resolve(spec.data).toStdString();
        const QString kind = spec.data.endsWith(".csv", Qt::CaseInsensitive)   ? "csv"
                             : spec.data.endsWith(".txt", Qt::CaseInsensitive) ? "text"
                             : data::is_shard_folder(path)                     ? "shards"
                             : data::is_sequence_folder(path)                  ? "sequences"
                             : data::is_image_folder(path)                     ? "images"
                                                                               : "idx";
        data_kind_->setCurrentIndex(data_kind_->findData(kind));
        data_path_->setText(spec.data);
    }
    augment_->setText(t.augment.active() ? QString::fromStdString(t.augment.text()) : QString());
    normalize_->setCurrentIndex(std::max(0, normalize_->findData(t.normalize)));
    top_k_->setValue(t.top_k.value_or(-1));
    shard_placement_->setCurrentIndex(std::max(0, shard_placement_->findData(launcher::placement_text(t.shard_placement))));
    cluster_kind_->setCurrentIndex(std::max(0, cluster_kind_->findData(launcher::to_string(spec.cluster.kind))));
    const auto& sl = spec.cluster.slurm;
    partition_->setText(sl.partition);
    slurm_nodes_->setValue(spec.cluster.nodes);
    tasks_per_node_->setValue(sl.tasks_per_node);
    cpus_per_task_->setValue(sl.cpus_per_task);
    gpus_per_node_->setValue(sl.gpus_per_node);
    slurm_workers_->setValue(spec.cluster.workers_per_node);
    time_limit_->setText(sl.time ? launcher::format_slurm_time(*sl.time) : QString());
    account_->setText(sl.account);
    qos_->setText(sl.qos);
    constraint_->setText(sl.constraint);
    sbatch_args_->setText(sl.sbatch_args.join(' '));
    network_mask_->setText(sl.network_mask);
    stage_->setCurrentIndex(sl.stage == launcher::SlurmSettings::Stage::Always  ? 1
                            : sl.stage == launcher::SlurmSettings::Stage::Never ? 2 : 0);
    nodes_->setValue(spec.cluster.nodes);
    workers_->setValue(spec.cluster.workers_per_node);
    hosts_->setRowCount(0);
    for (const auto& h : spec.cluster.hosts) add_host_row(h);
    hostfile_ = spec.cluster.hostfile;
    udp_port_->setValue(spec.udp_port);
    topology_->setCurrentIndex(std::max(0, topology_->findData(spec.cluster.topology)));
    fanout_->setValue(spec.cluster.fanout);
    link_row_->set_link(spec.cluster.link);
    syncing_ = false;
    update_visibility();
    refresh_updater();
}

void TrainingPage::apply_to(launcher::RunSpec& spec) const {
    auto& t = spec.training;
    t.strategy = strategy_->currentData().toString();
    const QString algo = threshold_algorithm_->currentData().toString();
    // Keep parameters a hand-written spec gave the algorithm ("adaptive:…") when it stays the same.
    if (dist::to_string(t.threshold_algorithm.kind) != algo) t.threshold_algorithm = dist::parse_threshold_spec(algo.toStdString());
    bool ok = false;
    const double tau = threshold_->text().toDouble(&ok);
    t.threshold = ok && tau > 0 ? std::optional<double>(tau) : std::nullopt;
    const QString residual = residual_->currentData().toString();
    if (t.residual.section(':', 0, 0) != residual) t.residual = residual;
    t.max_staleness = max_staleness_->value() >= 0 ? std::optional<int>(max_staleness_->value()) : std::nullopt;
    t.averaging_frequency = averaging_frequency_->value();
    t.save_updater = save_updater_->isChecked();
    t.epochs = epochs_->value();
    t.batch = batch_->value();
    t.threads = threads_->value();
    t.limit = limit_->value() > 0 ? std::optional<qint64>(limit_->value()) : std::nullopt;
    const QString kind = data_kind_->currentData().toString();
    spec.data = kind == "fashion-mnist" ? QString("fashion-mnist") : data_path_->text().trimmed();
    // The augmentation as the engine types it; text it refuses stops the run with its reason
    // (marked in the form already), never a run without the augmentation asked for.
    const QString augment = augment_->text().trimmed();
    try {
        t.augment = augment.isEmpty() ? spec::Augmentation{} : spec::Augmentation::parse(augment.toStdString());
    } catch (const std::exception& e) {
        throw launcher::SpecError(("training.augment: " + QString::fromUtf8(e.what())).toStdString());
    }
    t.normalize = normalize_->currentData().toString();
    t.top_k = top_k_->value() >= 0 ? std::optional<int>(top_k_->value()) : std::nullopt;
    t.shard_placement = kind == "shards" ? *launcher::parse_shard_placement(shard_placement_->currentData().toString())
                                         : launcher::ShardPlacement::Shared;
    const QString where = cluster_kind_->currentData().toString();
    spec.cluster.kind = where == "ssh"     ? launcher::ClusterSettings::Kind::Ssh
                        : where == "slurm" ? launcher::ClusterSettings::Kind::Slurm
                                           : launcher::ClusterSettings::Kind::Local;
    spec.cluster.nodes = where == "slurm" ? slurm_nodes_->value() : nodes_->value();
    spec.cluster.workers_per_node = where == "slurm" ? slurm_workers_->value() : workers_->value();
    auto& sl = spec.cluster.slurm;
    sl.partition = partition_->text().trimmed();
    sl.tasks_per_node = tasks_per_node_->value();
    sl.cpus_per_task = cpus_per_task_->value();
    sl.gpus_per_node = gpus_per_node_->value();
    sl.time = launcher::parse_slurm_time(time_limit_->text());
    if (sl.time && sl.time->count() <= 0) sl.time.reset();
    sl.account = account_->text().trimmed();
    sl.qos = qos_->text().trimmed();
    sl.constraint = constraint_->text().trimmed();
    sl.sbatch_args = sbatch_args_->text().split(' ', Qt::SkipEmptyParts);
    sl.network_mask = network_mask_->text().trimmed();
    sl.stage = stage_->currentData() == "always" ? launcher::SlurmSettings::Stage::Always
               : stage_->currentData() == "never" ? launcher::SlurmSettings::Stage::Never
                                                  : launcher::SlurmSettings::Stage::Auto;
    spec.cluster.hosts.clear();
    for (int r = 0; r < hosts_->rowCount(); ++r) {
        auto text = [&](int c) { return hosts_->item(r, c) ? hosts_->item(r, c)->text().trimmed() : QString(); };
        if (text(0).isEmpty()) continue;
        launcher::SshHost h;
        h.address = text(0);
        h.port = text(1).toInt() > 0 ? text(1).toInt() : 22;
        h.user = text(2);
        h.identity_file = text(3);
        h.workers = std::max(1, text(4).toInt());
        spec.cluster.hosts.append(h);
    }
    spec.cluster.hostfile = hostfile_;
    spec.udp_port = udp_port_->value();
    spec.cluster.topology = topology_->currentData().toString();
    spec.cluster.fanout = fanout_->value();
    spec.cluster.link = link_row_->link();
    // Last: one GPU per worker depends on the workers per node set above.
    const QString device = device_->currentData().toString();
    t.device = device == kOnePerWorker ? one_gpu_per_worker(spec.workers_per_node())
                                       : DeviceList::parse(device.toStdString(), "training.device");
}

DeviceList TrainingPage::one_gpu_per_worker(int workers) {
    std::string list;
    for (int w = 0; w < std::max(1, workers); ++w) list += (w ? ",cuda:" : "cuda:") + std::to_string(w);
    return DeviceList::parse(list);
}

void TrainingPage::set_device(const DeviceList& device, int workers) {
    const QString text = QString::fromStdString(device.text());
    // A spec's own list ("cuda:1", "cuda:2,cuda:3") stays as it is, shown as itself.
    const int own = device_->findData(kOnePerWorker) + 1;
    while (device_->count() > own) device_->removeItem(own);
    int index = device_->findData(text == "cuda:0" ? QString("cuda") : text);
    if (index < 0 && workers > 1 && device == one_gpu_per_worker(workers)) index = device_->findData(kOnePerWorker);
    if (index < 0) {
        device_->addItem("As in the spec: " + text, text);
        index = own;
    }
    device_->setCurrentIndex(index);
}

void TrainingPage::show_verdicts(const QStringList& hosts, const QList<QStringList>& lines, const QList<bool>& failed) {
    verdicts_->setRowCount(0);
    for (int i = 0; i < hosts.size(); ++i) {
        verdicts_->insertRow(i);
        auto* host = new QTableWidgetItem((failed.value(i) ? "✖ " : "✔ ") + hosts[i]);
        host->setForeground(failed.value(i) ? QColor(176, 0, 32) : QColor(27, 94, 32));
        verdicts_->setItem(i, 0, host);
        verdicts_->setItem(i, 1, new QTableWidgetItem(lines.value(i).join("\n")));
    }
    verdicts_->resizeRowsToContents();
}

}  // namespace thresher::ui
