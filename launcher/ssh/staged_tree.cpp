// engine_bundle / data_tree: which local files a tree holds, and its content hash.
#include "staged_tree.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <algorithm>
#include <mutex>

#include "launcher.h"
#include "shard_placement.h"

namespace thresher::launcher::ssh {

namespace {

[[noreturn]] void fail(const QString& message) { throw LaunchError(message.toStdString()); }

// The program the engine runs libhdf5 in (engine/config/hdf5_reader_location.h); it looks for it
// beside itself first, so it travels beside it.
constexpr const char* kHdf5Reader = "thresher-hdf5-reader";

// Sorts, sums and hashes `tree.files`: what is hashed is, per file, "relative\0mode\0size\0"
// then the contents, so a renamed file or a lost +x changes the hash too.
void seal(StagedTree& tree) {
    std::sort(tree.files.begin(), tree.files.end(), [](const auto& a, const auto& b) { return a.relative < b.relative; });
    QCryptographicHash hash(QCryptographicHash::Sha256);
    tree.bytes = 0;
    for (auto& f : tree.files) {
        QFile in(f.local);
        if (!in.open(QIODevice::ReadOnly)) fail("cannot read " + f.local + ": " + in.errorString());
        f.size = in.size();
        tree.bytes += f.size;
        QByteArray header = f.relative.toUtf8();
        header.append('\0').append(f.executable ? 'x' : '-').append('\0').append(QByteArray::number(f.size)).append('\0');
        hash.addData(header);
        if (!hash.addData(&in)) fail("cannot read " + f.local + ": " + in.errorString());
    }
    tree.hash = QString::fromLatin1(hash.result().toHex());
}

}  // namespace

bool is_glibc_library(const QString& soname) {
    // The libraries glibc installs; anything else (libstdc++, libgcc_s, libgomp, …) travels.
    static const QRegularExpression glibc(
        "^(ld-linux[^/]*|ld64[^/]*|linux-vdso|linux-gate|libc|libm|libmvec|libdl|libpthread|librt|libresolv|libutil|"
        "libanl|libnsl|libBrokenLocale|libthread_db|libc_malloc_debug|libmemusage|libpcprofile|libnss_[a-z0-9]+)"
        "\\.so(\\.[0-9.]+)?$");
    return glibc.match(soname).hasMatch();
}

QList<QPair<QString, QString>> shared_libraries(const QString& program) {
    QProcess ldd;
    ldd.start("ldd", {program});
    if (!ldd.waitForStarted(10000)) fail("cannot run ldd to list " + program + "'s libraries: " + ldd.errorString());
    if (!ldd.waitForFinished(30000) || ldd.exitStatus() != QProcess::NormalExit || ldd.exitCode() != 0)
        fail("ldd " + program + " failed: " + QString::fromUtf8(ldd.readAllStandardError() + ldd.readAllStandardOutput()).trimmed());
    QList<QPair<QString, QString>> libraries;
    QStringList missing;
    // Lines: "\tlibdnnl.so.2 => /lib/x86_64-linux-gnu/libdnnl.so.2 (0x…)", "\tlinux-vdso.so.1 (0x…)",
    // "\t/lib64/ld-linux-x86-64.so.2 (0x…)", "\tlibfoo.so.1 => not found".
    static const QRegularExpression arrow("^\\s*(\\S+)\\s+=>\\s+(.*?)(\\s+\\(0x[0-9a-f]+\\))?$");
    static const QRegularExpression plain("^\\s*(\\S+)\\s+\\(0x[0-9a-f]+\\)$");
    for (const QString& line : QString::fromUtf8(ldd.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts)) {
        if (const auto m = arrow.match(line); m.hasMatch()) {
            if (m.captured(2) == "not found") missing << m.captured(1);
            else libraries.append({m.captured(1), m.captured(2)});
        } else if (const auto p = plain.match(line); p.hasMatch()) {
            libraries.append({QFileInfo(p.captured(1)).fileName(), p.captured(1)});
        }
    }
    if (!missing.isEmpty()) fail(program + " needs libraries this machine lacks: " + missing.join(", "));
    return libraries;
}

StagedTree engine_bundle(const QString& engine) {
    const QFileInfo info(engine);
    if (!info.isFile() || !info.isExecutable()) fail("the engine " + engine + " is not an executable file");
    // Where the engine looks for it first: beside its own file (/proc/self/exe), links resolved.
    const QFileInfo reader(info.canonicalPath() + "/" + kHdf5Reader);
    if (!reader.isFile() || !reader.isExecutable())
        fail("the engine " + engine + " has no " + kHdf5Reader + " beside it (" + reader.filePath() +
             "), which the hosts need to read Keras .h5 models: install it beside the engine (Thresher's "
             "package does; in a build folder, build the " + kHdf5Reader + " target)");
    static std::mutex mutex;
    static QHash<QString, StagedTree> cache;
    QString key;
    for (const QFileInfo& f : {info, reader})
        key += QString("%1|%2|%3|").arg(f.canonicalFilePath()).arg(f.size()).arg(f.lastModified().toMSecsSinceEpoch());
    {
        const std::lock_guard lock(mutex);
        if (const auto it = cache.constFind(key); it != cache.constEnd()) return *it;
    }
    StagedTree tree;
    tree.kind = "bundles";
    QSet<QString> sonames;
    for (const auto& [file, relative] : {std::pair{info, QString("bin/thresher-engine")}, std::pair{reader, "bin/" + QString(kHdf5Reader)}}) {
        tree.files.append({file.canonicalFilePath(), relative, true, 0});
        for (const auto& [soname, path] : shared_libraries(file.canonicalFilePath())) {
            if (is_glibc_library(soname) || sonames.contains(soname)) continue;
            sonames.insert(soname);
            // Under its soname (what the loader looks for), with the contents of the real file.
            tree.files.append({QFileInfo(path).canonicalFilePath(), "lib/" + soname, false, 0});
        }
    }
    seal(tree);
    const std::lock_guard lock(mutex);
    cache.insert(key, tree);
    return tree;
}

StagedTree data_tree(const QString& path) {
    const QFileInfo info(path);
    StagedTree tree;
    tree.kind = "data";
    if (info.isDir()) {
        QDirIterator it(info.absoluteFilePath(), QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
        const QDir root(info.absoluteFilePath());
        while (it.hasNext()) {
            const QString file = it.next();
            tree.files.append({QFileInfo(file).canonicalFilePath(), root.relativeFilePath(file), false, 0});
        }
        if (tree.files.isEmpty()) fail("the data folder " + path + " holds no files");
    } else if (info.isFile()) {
        tree.files.append({info.canonicalFilePath(), info.fileName(), false, 0});
        tree.entry = info.fileName();
    } else {
        fail("the data " + path + " does not exist here, so it cannot be copied to the hosts");
    }
    seal(tree);
    return tree;
}

StagedTree shard_subset_tree(const QString& folder, int rank, int world) {
    const QString root = QFileInfo(folder).absoluteFilePath();
    StagedTree tree;
    tree.kind = "data";
    QStringList relative{kShardIndexName};
    relative += shard_files_of_node(read_shard_set_files(root), rank, world, folder);
    for (const QString& file : relative) {
        const QFileInfo info(root + "/" + file);
        if (!info.isFile()) fail("the shard set " + folder + " lists " + file + ", which is not there");
        tree.files.append({info.canonicalFilePath(), file, false, 0});
    }
    seal(tree);
    return tree;
}

}  // namespace thresher::launcher::ssh
