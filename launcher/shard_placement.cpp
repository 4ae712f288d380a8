// Shard placement: see shard_placement.h.
#include "shard_placement.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <stdexcept>
#include <string>

#include "launcher.h"

namespace thresher::launcher {

namespace {

// The engine's bounds (engine/data/shard_format.{h,cpp}): a million shards per part, an index
// of at most 256 MiB.
constexpr qsizetype kMaxShardsPerPart = 1'000'000;
constexpr qint64 kMaxIndexBytes = qint64(256) << 20;

[[noreturn]] void fail(const QString& message) { throw LaunchError(message.toStdString()); }

// One part's file list; `part` is "train" or "test". A name must be "<part>/<plain name>", as the
// engine requires (letters, digits, '-', '_', '.'; not "." or ".."), so a listed file can never
// point outside the set's folder.
QStringList part_files(const QJsonObject& index, const QString& part, const QString& where) {
    const QJsonValue p = index.value(part);
    if (!p.isObject()) fail(where + ": $." + part + ": expected an object");
    const QJsonValue shards = p.toObject().value("shards");
    if (!shards.isArray() || shards.toArray().isEmpty()) fail(where + ": $." + part + ".shards: expected a non-empty array");
    const QJsonArray list = shards.toArray();
    if (list.size() > kMaxShardsPerPart)
        fail(where + QString(": $.%1.shards: %2 shards, more than 1000000").arg(part).arg(list.size()));
    static const QRegularExpression plain("^[A-Za-z0-9._-]+$");
    QStringList files;
    files.reserve(list.size());
    for (qsizetype i = 0; i < list.size(); ++i) {
        const QString file = list[i].toObject().value("file").toString();
        const QString name = file.section('/', 1);
        if (!file.startsWith(part + "/") || name == "." || name == ".." || !plain.match(name).hasMatch())
            fail(where + QString(": $.%1.shards[%2].file: \"%3\" is not a plain file name inside %1/").arg(part).arg(i).arg(file));
        files << file;
    }
    return files;
}

}  // namespace

QString placement_text(ShardPlacement placement) {
    const auto text = spec::to_string(placement);
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

std::optional<ShardPlacement> parse_shard_placement(const QString& text) { return spec::parse_shard_placement(text.toStdString()); }

bool is_shard_folder(const QString& folder) {
    return QFileInfo(folder).isDir() && QFileInfo(folder + "/" + kShardIndexName).isFile();
}

ShardSetFiles read_shard_set_files(const QString& folder) {
    const QString where = folder + "/" + kShardIndexName;
    QFile in(where);
    if (!in.open(QIODevice::ReadOnly)) fail(where + ": cannot be read: " + in.errorString());
    if (in.size() > kMaxIndexBytes) fail(where + ": larger than 256 MiB; not an index written by thresher-engine export");
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(in.readAll(), &error);
    if (error.error != QJsonParseError::NoError) fail(where + ": invalid JSON: " + error.errorString());
    const QJsonObject index = doc.object();
    if (index.value("format").toString() != "thresher-shards")
        fail(where + ": $.format: expected \"thresher-shards\" (an index written by thresher-engine export)");
    ShardSetFiles files;
    files.train = part_files(index, "train", where);
    if (index.contains("test")) files.test = part_files(index, "test", where);
    return files;
}

QStringList shard_files_of_node(const ShardSetFiles& files, int rank, int world, const QString& folder) {
    if (world < 1 || rank < 0 || rank >= world)
        throw std::logic_error("shard_files_of_node: rank " + std::to_string(rank) + " of " + std::to_string(world));
    if (files.train.size() < world)
        fail(QString("the shard set %1 has %2 training shard file(s) for %3 nodes: with the shard placement \"per node\" "
                     "node %4 would get none; export it again with --shards %3 or more, or use a shared folder")
                 .arg(folder).arg(files.train.size()).arg(world).arg(files.train.size()));
    QStringList own;
    for (const QStringList* part : {&files.train, &files.test})
        for (qsizetype i = 0; i < part->size(); ++i)
            if (shard_owner(static_cast<std::size_t>(i), world) == rank) own << (*part)[i];
    return own;
}

}  // namespace thresher::launcher
