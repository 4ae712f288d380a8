// Run secrets: generation and the mode-0600 file; see run_secret.h.
#include "run_secret.h"

#include <QFile>
#include <QRandomGenerator>
#include <array>
#include <stdexcept>

namespace thresher::launcher {

QByteArray make_run_secret() {
    std::array<quint32, 8> words{};  // 8 × 32 bits = 32 bytes
    QRandomGenerator::system()->fillRange(words.data(), words.size());
    const QByteArray bytes(reinterpret_cast<const char*>(words.data()), sizeof words);
    return bytes.toHex();
}

QByteArray make_run_nonce() {
    std::array<quint32, 4> words{};  // 4 × 32 bits = 16 bytes
    QRandomGenerator::system()->fillRange(words.data(), words.size());
    return QByteArray(reinterpret_cast<const char*>(words.data()), sizeof words).toHex();
}

void write_secret_file(const QString& path, const QByteArray& secret) {
    QFile f(path);
    // open() with permissions creates the file with exactly these (Qt ≥ 6.3).
    if (!f.open(QIODevice::WriteOnly | QIODevice::NewOnly, QFile::ReadOwner | QFile::WriteOwner) ||
        f.write(secret + '\n') != secret.size() + 1 || !f.flush())
        throw std::runtime_error("cannot write the run secret to " + path.toStdString() + ": " +
                                 f.errorString().toStdString());
}

}  // namespace thresher::launcher
