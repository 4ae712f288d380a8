// SftpClient: see sftp_client.h. Writes go in 128 KiB requests (OpenSSH's sftp-server takes up
// to 256 KiB per request; libssh 0.10 waits for each reply, so bigger requests mean fewer waits).
#include "sftp_client.h"

#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <algorithm>
#include <fcntl.h>
#include <vector>

namespace thresher::launcher::ssh {

namespace {

constexpr qint64 kChunk = 128 * 1024;

struct AttributesDeleter {
    void operator()(sftp_attributes a) const { sftp_attributes_free(a); }
};
using AttributesPtr = std::unique_ptr<std::remove_pointer_t<sftp_attributes>, AttributesDeleter>;

std::string status_text(int code) {
    switch (code) {
    case SSH_FX_OK: return "ok";
    case SSH_FX_EOF: return "end of file";
    case SSH_FX_NO_SUCH_FILE: return "no such file";
    case SSH_FX_PERMISSION_DENIED: return "permission denied";
    case SSH_FX_FAILURE: return "failure";
    case SSH_FX_BAD_MESSAGE: return "bad message";
    case SSH_FX_NO_CONNECTION: return "no connection";
    case SSH_FX_CONNECTION_LOST: return "connection lost";
    case SSH_FX_OP_UNSUPPORTED: return "unsupported";
    case SSH_FX_FILE_ALREADY_EXISTS: return "already exists";
    case SSH_FX_WRITE_PROTECT: return "write protected";
    case SSH_FX_NO_MEDIA: return "no media";
    }
    return "status " + std::to_string(code);
}

std::string parent_of(const std::string& path) {
    const auto slash = path.find_last_of('/');
    if (slash == std::string::npos || slash == 0) return slash == 0 ? "/" : "";
    return path.substr(0, slash);
}

}  // namespace

SftpClient::SftpClient(SshSession& session) : session_(session) {
    sftp_.reset(sftp_new(session.handle()));
    if (!sftp_) session.fail(SshStep::Sftp, std::string("cannot open an SFTP channel: ") + ssh_get_error(session.handle()));
    if (sftp_init(sftp_.get()) != SSH_OK)
        session.fail(SshStep::Sftp, "the server refused the SFTP subsystem (" + status_text(sftp_get_error(sftp_.get())) +
                                        "): is sftp-server enabled in sshd_config?");
}

void SftpClient::fail(const std::string& what, const std::string& path) const {
    const int code = sftp_get_error(sftp_.get());
    session_.fail(SshStep::Sftp, what + " " + path + ": " + status_text(code) + " (" + ssh_get_error(session_.handle()) + ")");
}

bool SftpClient::exists(const std::string& path) {
    const AttributesPtr a(sftp_stat(sftp_.get(), path.c_str()));
    if (a) return true;
    if (sftp_get_error(sftp_.get()) == SSH_FX_NO_SUCH_FILE) return false;
    fail("stat", path);
}

void SftpClient::make_dirs(const std::string& path) {
    if (path.empty() || path == "/" || exists(path)) return;
    make_dirs(parent_of(path));
    if (sftp_mkdir(sftp_.get(), path.c_str(), 0755) != SSH_OK && !exists(path)) fail("mkdir", path);
}

void SftpClient::upload(const QString& local, const std::string& remote, int mode) {
    QFile in(local);
    if (!in.open(QIODevice::ReadOnly))
        session_.fail(SshStep::Sftp, "cannot read " + local.toStdString() + ": " + in.errorString().toStdString());
    const SftpFilePtr out(sftp_open(sftp_.get(), remote.c_str(), O_WRONLY | O_CREAT | O_TRUNC, static_cast<mode_t>(mode)));
    if (!out) fail("cannot create", remote);
    std::vector<char> buffer(kChunk);
    for (;;) {
        const qint64 n = in.read(buffer.data(), kChunk);
        if (n < 0) session_.fail(SshStep::Sftp, "reading " + local.toStdString() + ": " + in.errorString().toStdString());
        if (n == 0) break;
        qint64 done = 0;
        while (done < n) {
            const ssize_t w = sftp_write(out.get(), buffer.data() + done, static_cast<size_t>(n - done));
            if (w <= 0) fail("writing", remote);
            done += w;
        }
    }
    // The umask may have narrowed `mode` at creation: set it exactly (executables need +x).
    if (sftp_chmod(sftp_.get(), remote.c_str(), static_cast<mode_t>(mode)) != SSH_OK) fail("chmod", remote);
}

void SftpClient::write_file(const std::string& remote, const QByteArray& bytes, int mode) {
    const SftpFilePtr out(sftp_open(sftp_.get(), remote.c_str(), O_WRONLY | O_CREAT | O_TRUNC, static_cast<mode_t>(mode)));
    if (!out) fail("cannot create", remote);
    qsizetype done = 0;
    while (done < bytes.size()) {
        const ssize_t w = sftp_write(out.get(), bytes.constData() + done, static_cast<size_t>(std::min<qsizetype>(kChunk, bytes.size() - done)));
        if (w <= 0) fail("writing", remote);
        done += w;
    }
}

void SftpClient::download(const std::string& remote, const QString& local) {
    const SftpFilePtr in(sftp_open(sftp_.get(), remote.c_str(), O_RDONLY, 0));
    if (!in) fail("cannot open", remote);
    QSaveFile out(local);
    if (!out.open(QIODevice::WriteOnly))
        session_.fail(SshStep::Sftp, "cannot write " + local.toStdString() + ": " + out.errorString().toStdString());
    std::vector<char> buffer(kChunk);
    for (;;) {
        const ssize_t n = sftp_read(in.get(), buffer.data(), buffer.size());
        if (n < 0) fail("reading", remote);
        if (n == 0) break;
        if (out.write(buffer.data(), n) != n)
            session_.fail(SshStep::Sftp, "writing " + local.toStdString() + ": " + out.errorString().toStdString());
    }
    if (!out.commit()) session_.fail(SshStep::Sftp, "writing " + local.toStdString() + ": " + out.errorString().toStdString());
}

bool SftpClient::rename(const std::string& from, const std::string& to) {
    if (sftp_rename(sftp_.get(), from.c_str(), to.c_str()) == SSH_OK) return true;
    if (exists(to)) return false;
    fail("rename " + from + " to", to);
}

void SftpClient::remove_file(const std::string& path) {
    if (sftp_unlink(sftp_.get(), path.c_str()) != SSH_OK && sftp_get_error(sftp_.get()) != SSH_FX_NO_SUCH_FILE)
        fail("remove", path);
}

void SftpClient::remove_dir(const std::string& path) {
    if (sftp_rmdir(sftp_.get(), path.c_str()) != SSH_OK && sftp_get_error(sftp_.get()) != SSH_FX_NO_SUCH_FILE)
        fail("rmdir", path);
}

}  // namespace thresher::launcher::ssh
