// RunSpec: everything one training run needs (model, data, training-master settings, cluster, UDP
// port) as one JSON file that `thresher-launch run` starts and the GUI reads and writes. Every
// field is documented in launcher/README.md. Loading validates the whole spec before anything
// runs; an error names the file and the JSON path, e.g.
//   runs/x.json: training.batch: must be a positive integer, got 0
// engine_arguments() turns the spec into one thresher-engine command line per node.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>
#include <chrono>
#include <optional>
#include <stdexcept>

#include "codec/threshold_spec.h"
#include "spec/augmentation.h"
#include "core/device_list.h"
#include "shard_placement.h"

namespace thresher::launcher {

// A spec that cannot be read or fails validation; what() is the complete message.
class SpecError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct TrainingSettings {
    QString strategy = "gradient-sharing";  // gradient-sharing | parameter-averaging | single
    int epochs = 1;
    int batch = 64;
    std::optional<qint64> seed;  // unset: the model file's seed
    // Gradient sharing.
    std::optional<double> threshold;  // initial τ; unset: the algorithm's default
    // fixed[:τ] | adaptive[:…] | target[:…], typed by the engine's codec (threshold_spec.h), which
    // also checks it against `threshold` as thresher-engine does. JSON: that text, or an object.
    dist::ThresholdSpec threshold_algorithm;
    QString residual = "clip";  // clip[:every:multiple] | none (checked by the engine's codec)
    // How many of each other worker's latest updates a gradient may miss (engine/dist/masters/
    // README.md); nullopt: "off", never wait. JSON: a whole number or "off".
    std::optional<int> max_staleness = 0;
    // Communication beside the next gradient (thresher-engine --overlap-comm): "off", "send"
    // (publishing), "encode" (encoding and publishing; needs max_staleness 1 or more, or "off").
    QString overlap_comm = "off";
    // Parameter averaging.
    int averaging_frequency = 5;
    bool save_updater = true;
    std::optional<qint64> limit;  // first N training samples only
    int threads = 0;              // CPU threads per node; 0: automatic (see engine_arguments)
    // The engine's --device: one for every worker of a node ("cpu", "cuda", "cuda:1") or one per
    // worker ("cuda:0,cuda:1"). JSON: that text; absent means "cpu".
    DeviceList device;
    // The data as the engine reads it for this run (issue 24): training-time augmentation of
    // images ("crop:4,flip", typed by the engine's spec library), feature normalisation fitted on
    // the training set, and the k of top-k accuracy (unset: 5 with 20 classes or more).
    spec::Augmentation augment;
    QString normalize = "none";  // none | standardize | minmax
    std::optional<int> top_k;
    // Where a shard set's files are during the run (shard_placement.h; thresher-engine
    // --shard-placement): Shared, every node reads the one folder; PerNode, node r owns its own
    // files and the SSH launcher uploads each host only those. PerNode needs a shard set as data.
    ShardPlacement shard_placement = ShardPlacement::Shared;

    bool operator==(const TrainingSettings&) const = default;
};

// One SSH host = one engine node with `workers` workers.
struct SshHost {
    QString address;
    int port = 22;
    QString user;           // empty: ~/.ssh/config or the local user (SSH session)
    QString identity_file;  // empty: ssh-agent or ~/.ssh/config (SSH session)
    int workers = 1;

    bool operator==(const SshHost&) const = default;
};

// A Slurm cluster (launcher/slurm): what the job asks the scheduler for. Engine nodes are Slurm
// tasks: `nodes` hosts × `tasks_per_node` tasks, each task one engine with the cluster's
// workers_per_node workers (2 nodes × 2 tasks × 1 worker → 4 engine nodes, 4 workers).
struct SlurmSettings {
    QString partition;       // empty: the cluster's default partition
    int tasks_per_node = 1;  // engine nodes per host
    int cpus_per_task = 1;   // also the engine's --threads when training.threads is 0
    int gpus_per_node = 0;   // 0: no GPUs asked for; else --gres=gpu:N
    std::optional<std::chrono::seconds> time;  // the job's time limit; unset: the partition's default
    QString account, qos, constraint;          // empty: not asked for
    QStringList sbatch_args;                   // more sbatch options, as given (one per item)
    // The engines' --network-mask (CIDR): bind, and reach each other, on the address each host
    // has inside it; empty: the addresses Slurm has for the nodes (NodeAddr).
    QString network_mask;
    // Files the engines read (the engine, the model, the data, the run secret) on nodes that
    // do not share the launcher's file system: Auto uses each in place where every node can
    // read it and copies the rest to the nodes with Slurm's `sbcast`; Always copies all of them;
    // Never uses the paths as they are (a shared home or project folder).
    enum class Stage { Auto, Always, Never };
    Stage stage = Stage::Auto;

    bool operator==(const SlurmSettings&) const = default;
};

// Slurm's time syntax: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS"; nullopt when
// `text` is none of these.
std::optional<std::chrono::seconds> parse_slurm_time(const QString& text);
// The same limit written as Slurm reads it back: "D-HH:MM:SS" (90 minutes: "0-01:30:00").
QString format_slurm_time(std::chrono::seconds limit);

struct ClusterSettings {
    enum class Kind { Local, Ssh, Slurm };
    Kind kind = Kind::Local;
    // local: `nodes` engine processes on this machine, each with `workers_per_node` workers.
    // slurm: `nodes` hosts (slurm.tasks_per_node engines each), workers_per_node per engine.
    int nodes = 1;
    int workers_per_node = 1;
    // ssh: hosts as written in the spec, and/or a hostfile (as written: relative to the spec's
    // folder) whose `host slots=N` lines were parsed into hostfile_hosts when the spec loaded.
    QList<SshHost> hosts;
    QString hostfile;
    QList<SshHost> hostfile_hosts;
    SlurmSettings slurm;

    // How nodes exchange messages (thresher-engine --topology/--fanout): auto, mesh, relay, tree.
    QString topology = "auto";
    int fanout = 2;

    // The emulated link on every node's egress, UDP and TCP alike (thresher-engine --link-rate,
    // --link-delay, --link-loss; engine/dist/net/link_emulator.h). JSON: "link": {"rate_mbit":
    // 1000, "delay_ms": 2, "loss": 0.01}; all 0 (the default): the real network as it is.
    struct Link {
        double rate_mbit = 0;  // 0: unlimited; else 0.008 .. 1000000
        double delay_ms = 0;   // one way, 0 .. 10000
        double loss = 0;       // UDP datagrams (retransmitted), [0, 1)
        bool active() const { return rate_mbit > 0 || delay_ms > 0 || loss > 0; }
        bool operator==(const Link&) const = default;
    };
    Link link;

    QList<SshHost> all_hosts() const { return hosts + hostfile_hosts; }
    bool operator==(const ClusterSettings&) const = default;
};

// Where the engine finds the files the launcher prepares for one run (paths as the engine sees
// them: local paths for LocalLauncher, remote ones for the SSH launcher).
struct EngineFiles {
    QString model;   // empty: the spec's model path (an inline model must be written first)
    QString secret;  // the run secret (mode 0600); needed when the run has several nodes
    bool secret_on_stdin = false;  // instead: `--secret-stdin` (the SSH launcher writes it there)
    // Slurm: the --nodes list is only known inside the job (a shell expression such as
    // "$endpoints" the batch script expands), and each task appends its own --node-rank
    // ($SLURM_PROCID); with `nodes` set, engine_arguments() writes this --nodes (for several
    // nodes) and neither --node-rank nor --save (the task of rank 0 appends that).
    // ({} initialisers: `EngineFiles{model, secret}` stays warning-free under -Wextra.)
    QString data{};  // empty: data_argument() (SSH: a staged copy on the host)
    QString save{};  // empty: save_file() (SSH: node 0 saves on its host; the launcher fetches it)
    QString nodes{};
    // This run's nonce (make_run_nonce(), engine --run-nonce): the same for every engine of the run.
    QString run_nonce{};
};

struct RunSpec {
    QString name;
    QString model_path;        // as written in the spec; empty when the model is inline
    QJsonObject model_inline;  // the model config itself, when given inline
    QString data = "fashion-mnist";
    TrainingSettings training;
    ClusterSettings cluster;
    int udp_port = 40123;
    QString save;  // optional model output path, as written

    // Not serialised: the file errors name, and the folder relative paths resolve against.
    QString source;
    QString base_dir;

    // Reads and validates a spec file; throws SpecError.
    static RunSpec load(const QString& path);
    // Checks the typed values (ranges, choices, files that must exist, checks across sections),
    // as from_json() does after reading; throws SpecError "<source>: <JSON path>: <problem>", the
    // same text from_json() gives for the same value. The app validates its form's spec with it.
    void validate() const;
    // Validates JSON text or an object; `source` names it in errors, `base_dir` resolves paths.
    static RunSpec from_json(const QByteArray& text, const QString& source, const QString& base_dir);
    static RunSpec from_json(const QJsonObject& object, const QString& source, const QString& base_dir);
    QJsonObject to_json() const;
    // Writes to_json() to `path` (indented); throws SpecError when it cannot.
    void save_to(const QString& path) const;

    bool model_is_inline() const { return model_path.isEmpty(); }
    // `path` against base_dir when relative; absolute paths are returned unchanged.
    QString resolve(const QString& path) const;
    QString model_file() const;     // resolved model path; empty when inline
    QString data_argument() const;  // fashion-mnist as is, else the resolved path
    QString save_file() const;      // resolved save path; empty when not saving

    int node_count() const;
    int workers_per_node() const;
    int total_workers() const { return node_count() * workers_per_node(); }
    // HOST:PORT of every node: 127.0.0.1 and udp_port + rank for local nodes (they share one
    // host, so each needs its own port); each host's address and udp_port for SSH nodes, plus
    // one for every earlier node with the same address (two nodes on 10.0.0.5: 40123, 40124).
    // Empty for Slurm: the scheduler picks the hosts (launcher/slurm builds the list in the job).
    QStringList node_endpoints() const;
    // The full thresher-engine argv (without the program) for node `node_rank`.
    QStringList engine_arguments(int node_rank, const EngineFiles& files = {}) const;

    bool operator==(const RunSpec&) const = default;
};

const char* to_string(ClusterSettings::Kind kind);

// JSON text that must hold one object (a run spec, a sweep); throws SpecError naming the place,
// "runs/x.json:4:12: invalid JSON: unterminated object", or "runs/x.json: WHAT is a JSON object".
QJsonObject parse_json_object(const QByteArray& text, const QString& source, const QString& what);

}  // namespace thresher::launcher
