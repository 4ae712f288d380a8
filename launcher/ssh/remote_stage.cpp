// stage_tree: see remote_stage.h.
#include "remote_stage.h"

#include <QRandomGenerator>
#include <QSet>
#include <chrono>

namespace thresher::launcher::ssh {

namespace {

constexpr const char* kMarker = ".complete";

std::string random_suffix() {
    return QString::number(QRandomGenerator::system()->generate64(), 16).toStdString();
}

// Every folder the tree's files need below `root`, parents before children.
QStringList folders_of(const StagedTree& tree) {
    QStringList folders;
    QSet<QString> seen;
    for (const auto& f : tree.files) {
        const QStringList parts = f.relative.split('/');
        QString path;
        for (qsizetype i = 0; i + 1 < parts.size(); ++i) {
            path += (path.isEmpty() ? "" : "/") + parts[i];
            if (!seen.contains(path)) {
                seen.insert(path);
                folders << path;
            }
        }
    }
    return folders;
}

// Removes a copy this call made: its files, then its folders deepest first.
void remove_copy(SftpClient& sftp, const std::string& root, const StagedTree& tree) {
    sftp.remove_file(root + "/" + kMarker);
    for (const auto& f : tree.files) sftp.remove_file(root + "/" + f.relative.toStdString());
    QStringList folders = folders_of(tree);
    for (qsizetype i = folders.size() - 1; i >= 0; --i) sftp.remove_dir(root + "/" + folders[i].toStdString());
    sftp.remove_dir(root);
}

}  // namespace

StageResult stage_tree(SftpClient& sftp, const std::string& cache, const StagedTree& tree) {
    StageResult result;
    const std::string kind_dir = cache + "/" + tree.kind.toStdString();
    result.dir = kind_dir + "/" + tree.hash.toStdString();
    if (sftp.exists(result.dir + "/" + kMarker)) return result;

    const auto began = std::chrono::steady_clock::now();
    const std::string part = result.dir + ".part-" + random_suffix();
    sftp.make_dirs(part);
    for (const QString& folder : folders_of(tree)) sftp.make_dirs(part + "/" + folder.toStdString());
    for (const auto& f : tree.files) sftp.upload(f.local, part + "/" + f.relative.toStdString(), f.executable ? 0755 : 0644);
    // The marker, written last: an empty file (/dev/null reads as one).
    sftp.upload("/dev/null", part + "/" + kMarker, 0644);
    if (!sftp.rename(part, result.dir)) {
        // Someone else's rename came first. Theirs is whole if it has the marker (ours is then
        // redundant); a folder without one is no tree of ours, and is not touched.
        if (!sftp.exists(result.dir + "/" + kMarker)) {
            remove_copy(sftp, part, tree);
            throw SshError(SshStep::Sftp, "", result.dir + " exists on the host but is not a complete upload (no " + kMarker +
                                                  "); remove it and start again");
        }
        remove_copy(sftp, part, tree);
    }
    result.uploaded = true;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return result;
}

}  // namespace thresher::launcher::ssh
