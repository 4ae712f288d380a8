// Puts a StagedTree (staged_tree.h) on a host under its hash, once:
//   CACHE/KIND/HASH/             e.g. ~/.cache/thresher/bundles/3fa9…/bin/thresher-engine
//   CACHE/KIND/HASH/.complete    written last: the folder is whole
// A folder with .complete is used as it is and nothing is sent. Otherwise the files go to
// CACHE/KIND/HASH.part-RANDOM/ first, .complete last, and that folder is renamed to HASH in one
// step, so no reader ever sees half a tree — not even when two launchers (or two nodes on one
// host) upload the same tree at once: the first rename wins and the other copy is removed.
#pragma once

#include <string>

#include "sftp_client.h"
#include "staged_tree.h"

namespace thresher::launcher::ssh {

struct StageResult {
    std::string dir;        // CACHE/KIND/HASH on the host
    bool uploaded = false;  // this call sent the files
    double seconds = 0.0;   // time spent uploading
};

// `cache` is the remote cache folder as an absolute path (no "~"). Throws SshError.
StageResult stage_tree(SftpClient& sftp, const std::string& cache, const StagedTree& tree);

}  // namespace thresher::launcher::ssh
