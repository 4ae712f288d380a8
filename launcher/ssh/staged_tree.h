// StagedTree: a set of local files that SshLauncher copies to cluster hosts once and then finds
// there again by content hash — the engine bundle and data sets. Only the local side lives here
// (which files, and their SHA-256); remote_stage.h puts a tree on a host.
//
// The engine bundle is thresher-engine and thresher-hdf5-reader (the program the engine reads
// Keras .h5 files with, found beside it) plus every shared library either loads that is not part
// of glibc (ldd decides; glibc's own libraries must come from the host, since they are tied to its
// dynamic loader). Example on a Debian build:
//   bin/thresher-engine  bin/thresher-hdf5-reader
//   lib/libdnnl.so.2  lib/libcrypto.so.3  lib/libgomp.so.1  lib/libstdc++.so.6  lib/libgcc_s.so.1
//   lib/libz.so.1  lib/libOpenCL.so.1  lib/libhdf5_serial.so.103  lib/libsz.so.2  lib/libcurl.so.4  …
// The engine runs there with LD_LIBRARY_PATH=<bundle>/lib: no binary is rewritten (no patchelf),
// and LD_LIBRARY_PATH wins over the build tree's RUNPATH.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>

namespace thresher::launcher::ssh {

struct StagedFile {
    QString local;     // absolute local path (symlinks resolved)
    QString relative;  // path inside the tree, '/'-separated, e.g. "lib/libdnnl.so.2"
    bool executable = false;
    qint64 size = 0;
};

struct StagedTree {
    QString kind;  // the cache folder it goes to: "bundles" or "data"
    QString hash;  // SHA-256 (hex) over every file's relative path, mode, size and contents
    QList<StagedFile> files;  // sorted by relative path
    qint64 bytes = 0;
    // For a single-file data set: the file's relative path (the engine is given DIR/that);
    // empty for a folder (the engine is given DIR itself).
    QString entry;
};

// glibc's own libraries by soname (libc.so.6, libm.so.6, ld-linux-x86-64.so.2, libpthread, …).
bool is_glibc_library(const QString& soname);

// The libraries `ldd` lists for `program` as (soname, resolved path), glibc's included. Throws
// LaunchError when ldd fails or a library is "not found" here already.
QList<QPair<QString, QString>> shared_libraries(const QString& program);

// The bundle for `engine`, whose folder must hold thresher-hdf5-reader too. Hashing reads every
// file (~50 MB with oneDNN), so results are kept for the life of the process, per path, size and
// modification time of both programs. Throws LaunchError.
StagedTree engine_bundle(const QString& engine);

// A data set: a folder (its files, recursively) or one file. Throws LaunchError.
StagedTree data_tree(const QString& path);

// What engine node `rank` of `world` needs of the shard set in `folder` with the shard placement
// "per-node" (shard_placement.h): index.json and the shard files that node owns, nothing else.
// Its hash covers exactly those files, so nodes owning different files get different folders on
// a host, and a run again with the same set and node count finds each node's folder there.
// Throws LaunchError (a bad index, fewer training shards than nodes, a listed file missing).
StagedTree shard_subset_tree(const QString& folder, int rank, int world);

}  // namespace thresher::launcher::ssh
