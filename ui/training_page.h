// TrainingPage: everything of the RunSpec but the model — strategy and its settings, updater and
// learning rate (they live in the model JSON, so they are edited through the ModelDocument),
// epochs and batch, data set, cluster (local nodes and workers, an SSH host table with "Check
// hosts", or a Slurm job: partition, nodes, tasks, CPUs, GPUs, time, account, …), UDP port. set_spec() fills the widgets, apply_to() writes them back; the RunSpec stays
// the one format the GUI and `thresher-launch` share.
#pragma once

#include <QWidget>

#include "core/device_list.h"
#include "run_spec.h"

class QCheckBox;
class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableWidget;
class QFormLayout;

namespace thresher::ui {

class LinkRow;
class ModelDocument;

class TrainingPage : public QWidget {
    Q_OBJECT
public:
    explicit TrainingPage(ModelDocument* document, QWidget* parent = nullptr);

    void set_spec(const launcher::RunSpec& spec);
    void apply_to(launcher::RunSpec& spec) const;
    // Decodes a few training samples of the data set chosen, as the engine will, and shows them.
    void show_samples();

    // Shows pre-flight verdicts: one row per host, one line per check.
    void show_verdicts(const QStringList& hosts, const QList<QStringList>& lines, const QList<bool>& failed);
    QPushButton* check_button() const { return check_; }

Q_SIGNALS:
    void changed();
    void checkHostsRequested();

private:
    void update_visibility();
    // The Device row from a spec's list; a list other than the row's choices is kept as its own item.
    void set_device(const DeviceList& device, int workers);
    static DeviceList one_gpu_per_worker(int workers);  // cuda:0,cuda:1,… for `workers`
    void update_summary();
    void refresh_updater();
    void write_updater();
    void add_host_row(const launcher::SshHost& host);

    ModelDocument* document_;
    bool syncing_ = false;
    // Strategy.
    QComboBox* strategy_ = nullptr;
    QGroupBox* sharing_box_ = nullptr;
    QGroupBox* averaging_box_ = nullptr;
    QComboBox* threshold_algorithm_ = nullptr;
    QLineEdit* threshold_ = nullptr;
    QComboBox* residual_ = nullptr;
    QSpinBox* max_staleness_ = nullptr;  // -1: off
    QSpinBox* averaging_frequency_ = nullptr;
    QCheckBox* save_updater_ = nullptr;
    // Training.
    QSpinBox* epochs_ = nullptr;
    QSpinBox* batch_ = nullptr;
    QSpinBox* threads_ = nullptr;
    QComboBox* device_ = nullptr;  // data: "cpu", "cuda", kOnePerWorker, or a spec's own list
    QSpinBox* limit_ = nullptr;
    QComboBox* updater_ = nullptr;
    QFormLayout* updater_form_ = nullptr;
    QList<QWidget*> updater_editors_;
    // Data.
    QComboBox* data_kind_ = nullptr;
    QLineEdit* data_path_ = nullptr;
    QPushButton* data_browse_ = nullptr;
    QLineEdit* augment_ = nullptr;     // spec::Augmentation text; empty: none
    QComboBox* normalize_ = nullptr;   // none | standardize | minmax
    QComboBox* shard_placement_ = nullptr;  // shared | per-node (a shard set only)
    QSpinBox* top_k_ = nullptr;        // -1: automatic (5 with 20 classes or more), 0: off
    QPushButton* preview_button_ = nullptr;
    class DataPreview* preview_ = nullptr;
    QString base_dir_;  // the spec's folder: a relative data path is read from there
    // Cluster.
    QComboBox* cluster_kind_ = nullptr;
    QStackedWidget* cluster_stack_ = nullptr;
    QSpinBox* nodes_ = nullptr;
    QSpinBox* workers_ = nullptr;
    QLabel* detected_ = nullptr;
    QTableWidget* hosts_ = nullptr;
    QPushButton* check_ = nullptr;
    QTableWidget* verdicts_ = nullptr;
    // Slurm.
    QLineEdit* partition_ = nullptr;
    QSpinBox* slurm_nodes_ = nullptr;
    QSpinBox* tasks_per_node_ = nullptr;
    QSpinBox* cpus_per_task_ = nullptr;
    QSpinBox* gpus_per_node_ = nullptr;
    QSpinBox* slurm_workers_ = nullptr;
    QLineEdit* time_limit_ = nullptr;
    QLineEdit* account_ = nullptr;
    QLineEdit* qos_ = nullptr;
    QLineEdit* constraint_ = nullptr;
    QLineEdit* sbatch_args_ = nullptr;
    QLineEdit* network_mask_ = nullptr;
    QComboBox* stage_ = nullptr;  // Slurm: copy files to nodes (cluster.stage)
    QSpinBox* udp_port_ = nullptr;
    QComboBox* topology_ = nullptr;
    QSpinBox* fanout_ = nullptr;
    LinkRow* link_row_ = nullptr;  // cluster.link
    QLabel* summary_ = nullptr;
    QString hostfile_;  // kept as loaded: the GUI edits hosts, not hostfiles
};

}  // namespace thresher::ui
