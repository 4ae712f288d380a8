// The Slurm pre-flight of `thresher-launch check SPEC` for a Slurm cluster: before a job waits in
// a queue, ask Slurm whether it could run at all —
//   slurm      the commands answer (sinfo --version)
//   partition  exists (the default one when the spec names none) and is up
//   nodes      enough nodes that are not down or drained; CPUs per node for tasks × cpus_per_task
//   time       the spec's time limit within the partition's MaxTime
//   gpus       gpus_per_node within the nodes' gpu gres
//   device     the spec's GPUs and its Training device agree (a warning: GPUs asked for a run on
//              the CPU sit idle; a CUDA run without them may not see any, Slurm hiding them)
//   account    the spec's account has an association for this user (sacctmgr), where the
//              cluster keeps accounting (else a warning: Slurm accepts any name there)
//   engine     `ENGINE devices` runs on the nodes (srun, one task per node; outside an allocation
//              with --immediate, so a busy queue is reported, not waited for)
// Each check names the Slurm command and what it said when it fails.
#pragma once

#include <QList>
#include <QString>
#include <optional>

#include "run_spec.h"

namespace thresher::launcher::slurm {

struct SlurmCheck {
    enum class Status { Ok, Warning, Failed };
    QString name;
    Status status = Status::Ok;
    QString detail;
};

const char* to_string(SlurmCheck::Status status);

// The `device` check alone (no Slurm command): nullopt when the spec asks for no GPUs and runs on
// the CPU.
std::optional<SlurmCheck> check_gpus_for_device(const RunSpec& spec);

// `engine`: the absolute path the nodes should run. `timeout_s`: each Slurm command.
QList<SlurmCheck> check_slurm(const RunSpec& spec, const QString& engine, int timeout_s);

}  // namespace thresher::launcher::slurm
