// SftpClient: the few SFTP operations staging needs (libssh's sftp API), on an SshSession, with
// RAII handles and one error path: every failure is an SshError (step "sftp") naming the host,
// the operation, the remote path and SFTP's status. Paths are remote absolute paths (SFTP does
// not expand "~"). Same thread rule as the session it runs on.
#pragma once

#include <libssh/sftp.h>

#include <QByteArray>
#include <QString>
#include <functional>
#include <memory>
#include <string>

#include "ssh_session.h"

namespace thresher::launcher::ssh {

struct SftpSessionDeleter {
    void operator()(sftp_session s) const { sftp_free(s); }
};
struct SftpFileDeleter {
    void operator()(sftp_file f) const { sftp_close(f); }
};
using SftpSessionPtr = std::unique_ptr<std::remove_pointer_t<sftp_session>, SftpSessionDeleter>;
using SftpFilePtr = std::unique_ptr<std::remove_pointer_t<sftp_file>, SftpFileDeleter>;

class SftpClient {
public:
    explicit SftpClient(SshSession& session);  // opens the sftp subsystem; throws SshError

    bool exists(const std::string& path);
    // mkdir -p: creates `path` and its missing parents (mode 0755).
    void make_dirs(const std::string& path);
    // Copies the local file to `remote` (created or truncated) with permissions `mode`.
    void upload(const QString& local, const std::string& remote, int mode);
    // Writes `bytes` to `remote` (created or truncated) with permissions `mode`.
    void write_file(const std::string& remote, const QByteArray& bytes, int mode);
    // Copies `remote` to the local file `local` (written to a temporary name, then renamed).
    void download(const std::string& remote, const QString& local);
    // Renames `from` to `to`; false when `to` exists already (a directory that is not empty,
    // or a file) — the caller decides what that means; throws on any other failure.
    bool rename(const std::string& from, const std::string& to);
    void remove_file(const std::string& path);  // a missing file is no error
    void remove_dir(const std::string& path);   // must be empty; a missing one is no error

private:
    [[noreturn]] void fail(const std::string& what, const std::string& path) const;

    SshSession& session_;
    SftpSessionPtr sftp_;
};

}  // namespace thresher::launcher::ssh
