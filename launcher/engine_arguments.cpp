// RunSpec -> thresher-engine command lines (DESIGN.md "The command line"). Example: a local
// cluster of 2 nodes × 1 worker, udp_port 40123, gives node 1
//   train --model …/lenet.json --data fashion-mnist --epochs 1 --batch 64 --threads 1
//         --workers-per-node 1 --strategy gradient-sharing --threshold-algorithm adaptive
//         --residual clip --nodes 127.0.0.1:40123,127.0.0.1:40124 --node-rank 1
//         --secret-file /tmp/…/secret --run-nonce 3f…(32 hex digits)
// The secret only ever travels as a file name (or, over SSH, on stdin: --secret-stdin); the model is saved by node 0 alone (the
// controller), so nodes sharing a host never write the same file.
#include <QHash>
#include <QStringList>
#include <algorithm>
#include <stdexcept>
#include <thread>

#include "run_spec.h"

namespace thresher::launcher {

QStringList RunSpec::node_endpoints() const {
    QStringList out;
    if (cluster.kind == ClusterSettings::Kind::Slurm) return out;  // known inside the job only
    if (cluster.kind == ClusterSettings::Kind::Local) {
        for (int rank = 0; rank < cluster.nodes; ++rank) out << QString("127.0.0.1:%1").arg(udp_port + rank);
    } else {
        QHash<QString, int> on_address;  // nodes so far per address: they need distinct ports
        for (const auto& host : cluster.all_hosts())
            out << QString("%1:%2").arg(host.address).arg(udp_port + on_address[host.address]++);
    }
    return out;
}

QStringList RunSpec::engine_arguments(int node_rank, const EngineFiles& files) const {
    const int nodes = node_count();
    if (node_rank < 0 || node_rank >= nodes)
        throw std::logic_error("engine_arguments: node rank " + std::to_string(node_rank) + " outside 0.." +
                               std::to_string(nodes - 1));
    const QString model = files.model.isEmpty() ? model_file() : files.model;
    if (model.isEmpty()) throw std::logic_error("engine_arguments: the inline model must be written to a file first");
    if (nodes > 1 && files.secret.isEmpty() && !files.secret_on_stdin)
        throw std::logic_error("engine_arguments: a multi-node run needs a secret file");

    // Threads 0 (automatic): local nodes share this machine's cores (2 nodes on 8 cores: 4
    // each, never oversubscribed); a Slurm task uses the CPUs it asked for (cpus_per_task); an
    // SSH node uses all of its host's.
    int threads = training.threads;
    if (threads == 0 && cluster.kind == ClusterSettings::Kind::Local)
        threads = std::max(1, int(std::thread::hardware_concurrency()) / nodes);
    if (threads == 0 && cluster.kind == ClusterSettings::Kind::Slurm) threads = cluster.slurm.cpus_per_task;
    if (cluster.kind == ClusterSettings::Kind::Slurm && nodes > 1 && files.nodes.isEmpty())
        throw std::logic_error("engine_arguments: a Slurm run's --nodes list is made inside the job (EngineFiles::nodes)");

    QStringList a{"train", "--model", model, "--data", files.data.isEmpty() ? data_argument() : files.data, "--epochs", QString::number(training.epochs),
                  "--batch", QString::number(training.batch)};
    if (model_steps) a << "--steps" << QString::number(*model_steps);
    if (training.seed) a << "--seed" << QString::number(*training.seed);
    if (training.limit) a << "--limit" << QString::number(*training.limit);
    if (training.augment.active()) a << "--augment" << QString::fromStdString(training.augment.text());
    if (training.normalize != "none") a << "--normalize" << training.normalize;
    if (training.top_k) a << "--top-k" << QString::number(*training.top_k);
    // Every launcher passes it: locally and on Slurm each node opens only its own files of the
    // one folder; over SSH its host holds only those (ssh/staged_tree.h shard_subset_tree).
    if (training.shard_placement == ShardPlacement::PerNode) a << "--shard-placement" << placement_text(training.shard_placement);
    a << "--threads" << QString::number(threads) << "--workers-per-node" << QString::number(workers_per_node());
    if (training.device != DeviceList{}) a << "--device" << QString::fromStdString(training.device.text());
    a << "--strategy" << training.strategy;
    if (training.strategy == "gradient-sharing") {
        if (training.threshold) a << "--threshold" << QString::number(*training.threshold, 'g', 17);
        a << "--threshold-algorithm" << QString::fromStdString(dist::to_text(training.threshold_algorithm)) << "--residual" << training.residual
          << "--max-staleness" << (training.max_staleness ? QString::number(*training.max_staleness) : QString("off"));
        if (training.overlap_comm != "off") a << "--overlap-comm" << training.overlap_comm;
    } else if (training.strategy == "parameter-averaging") {
        a << "--averaging-frequency" << QString::number(training.averaging_frequency) << "--save-updater"
          << (training.save_updater ? "true" : "false");
    }
    if (nodes > 1) {
        if (files.nodes.isEmpty())
            a << "--nodes" << node_endpoints().join(',') << "--node-rank" << QString::number(node_rank);
        else
            a << "--nodes" << files.nodes;  // each Slurm task appends its own --node-rank
        if (cluster.topology != "auto") a << "--topology" << cluster.topology;
        if (cluster.topology == "tree") a << "--fanout" << QString::number(cluster.fanout);
        if (cluster.link.rate_mbit > 0) a << "--link-rate" << QString::number(cluster.link.rate_mbit * 1e6, 'f', 0);
        if (cluster.link.delay_ms > 0) a << "--link-delay" << QString::number(cluster.link.delay_ms * 1000, 'f', 0) + "us";
        if (cluster.link.loss > 0) a << "--link-loss" << QString::number(cluster.link.loss, 'g', 17);
        if (!files.secret_on_stdin) a << "--secret-file" << files.secret;
        if (!files.run_nonce.isEmpty()) a << "--run-nonce" << files.run_nonce;
    }
    // Even for one node: with --secret-stdin the engine also ends when its stdin closes, which
    // is how a stopped or lost SSH connection ends a remote engine (engine/cli/stdin_control.h).
    if (files.secret_on_stdin) a << "--secret-stdin";
    // Slurm tasks share one command line: the task of rank 0 appends --save itself.
    if (node_rank == 0 && !save.isEmpty() && files.nodes.isEmpty()) a << "--save" << (files.save.isEmpty() ? save_file() : files.save);
    return a;
}

}  // namespace thresher::launcher
