// Parses mpirun/DeepSpeed-style hostfiles (`host slots=N`) into SSH hosts; see hostfile.h.
#include "hostfile.h"

#include <QFile>

namespace thresher::launcher {

QList<SshHost> parse_hostfile(const QByteArray& text, const QString& source) {
    QList<SshHost> hosts;
    const QList<QByteArray> lines = text.split('\n');
    for (int i = 0; i < lines.size(); ++i) {
        QString line = QString::fromUtf8(lines[i]);
        if (const auto hash = line.indexOf('#'); hash >= 0) line.truncate(hash);
        const QStringList words = line.simplified().split(' ', Qt::SkipEmptyParts);
        if (words.isEmpty()) continue;
        const QString where = QString("%1:%2: ").arg(source).arg(i + 1);
        SshHost host;
        host.address = words[0];
        if (host.address.contains('='))
            throw SpecError((where + "expected a host name first, got \"%1\"").arg(host.address).toStdString());
        for (const QString& word : words.mid(1)) {
            const auto eq = word.indexOf('=');
            const QString key = word.left(eq), value = eq < 0 ? QString() : word.mid(eq + 1);
            bool ok = false;
            const int n = value.toInt(&ok);
            if (key == "slots" || key == "max_slots") {
                if (!ok || n < 1)
                    throw SpecError((where + "%1 must be a positive integer, got \"%2\"").arg(key, value).toStdString());
                if (key == "slots") host.workers = n;
            } else {
                throw SpecError((where + "unknown entry \"%1\" (expected `host slots=N`)").arg(word).toStdString());
            }
        }
        hosts.append(host);
    }
    if (hosts.isEmpty()) throw SpecError((source + ": no hosts (expected lines like `node1 slots=2`)").toStdString());
    return hosts;
}

QList<SshHost> read_hostfile(const QString& path, const QString& shown) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        throw SpecError((shown + ": cannot read: " + f.errorString()).toStdString());
    return parse_hostfile(f.readAll(), shown);
}

}  // namespace thresher::launcher
