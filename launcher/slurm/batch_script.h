// The one shell script a Slurm run is: `sbatch` submits it (its #SBATCH lines ask for the
// allocation), and inside an allocation (`salloc`, SLURM_JOB_ID set) the launcher runs it with
// bash; either way it starts every engine as ONE `srun` step. `thresher-launch script SPEC`
// prints it for users who submit by hand. What it does, in order:
//   1. makes the run folder (mode 0700) and a fresh 256-bit run secret in it (mode 0600, from
//      /dev/urandom) unless the launcher already wrote one: the engines get --secret-file, so the
//      secret is never on a command line or in the environment;
//   2. expands the job's node list with Slurm's own `scontrol show hostnames`, and takes each
//      node's address from Slurm (`scontrol show node`: NodeAddr) — or, with
//      cluster.network_mask, from a one-task-per-node probe step (`ip -o -4 addr show`), the address
//      inside the mask;
//   3. builds --nodes: node n, task l (SLURM_LOCALID) → ADDRESS_n:(udp_port + l); with
//      --distribution=block task ids run node by node, so rank r = SLURM_PROCID is entry r
//      (2 hosts × 2 tasks, port 40123: a:40123,a:40124,b:40123,b:40124);
//   4. stages the files the engines read (cluster.stage): with `auto`, a probe step (one task per
//      node) lists those some node cannot read; those (`always`: all) are copied to every node
//      with Slurm's `sbcast` into a private /tmp/thresher-stage-JOB-PID folder, and the engine's
//      command line points there (a staged engine takes the thresher-hdf5-reader beside it along,
//      which it reads .h5 models with); the folder goes when the step ends;
//   5. `srun --kill-on-bad-exit=1 --label …`: one step, each task's lines prefixed "r: " so
//      the launcher tags events by node. Run by the launcher inside an allocation
//      (exec_srun), srun replaces bash: the launcher's parent-death signal stays on srun (a
//      killed launcher takes srun, and Slurm then the step, with it). The task of rank 0
//      appends --save.
// Everything from the spec reaches the script through shell_quote(): nothing in a spec is ever
// run as shell code.
#pragma once

#include <QString>

#include "run_spec.h"

namespace thresher::launcher::slurm {

struct ScriptOptions {
    QString engine;   // absolute path of thresher-engine as the nodes see it
    // The run folder as the nodes see it (model, secret, output). Empty (a script for `sbatch` by
    // hand): "${THRESHER_RUN_DIR:-$HOME/.cache/thresher/slurm}/job-$SLURM_JOB_ID".
    QString run_dir;
    QString model;  // the model file the engines read; empty: the spec's (an inline one: run_dir/model.json)
    // The launcher follows the job: batch output goes to run_dir/job-%j.out|err, and a watchdog
    // cancels the job when run_dir/heartbeat (touched by the launcher) is older than this many
    // seconds — a launcher killed outright must not leave a job training for nobody. 0: none.
    int heartbeat_timeout_s = 0;
    // Every node saves its replica, not only node 0: node r > 0 writes SAVE's name with
    // ".node-r" before the extension (lenet.thr → lenet.node-1.thr), to check with
    // `thresher-engine compare` that the replicas agree. Needs the spec's `save`.
    bool save_every_node = false;
    // The launcher runs this script with bash as its child inside an allocation (step mode):
    // the last line is `exec srun`, so srun keeps the parent-death signal the launcher set, and
    // a background watcher cleans up (secret, staged files) once that pid ends. False (sbatch,
    // or by hand): srun runs in the foreground and the script cleans up after it.
    bool exec_srun = false;
};

// The script for `spec` (a Slurm cluster); throws std::logic_error for other clusters.
QString batch_script(const RunSpec& spec, const ScriptOptions& options);

// `text` as one bash word: single-quoted, with each ' written as '\''.
QString shell_quote(const QString& text);

}  // namespace thresher::launcher::slurm
