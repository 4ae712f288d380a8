// RemoteProcess: one long-running command on a host, on its own channel of an SshSession —
// what SshLauncher runs each engine with. Unlike SshSession::exec (run to EOF, then return),
// the caller drives it: write to its stdin, close stdin, poll for output in small slices while
// it checks its own deadlines and stop requests, and read the exit status at the end.
//
// libssh sessions are not thread-safe: a RemoteProcess and its SshSession are used from one
// thread only (each host has its own thread in SshLauncher). Other channels of the same
// session (SshSession::exec, an SFTP client) may be used in between: libssh buffers what
// arrives for this channel meanwhile.
#pragma once

#include <string>

#include "ssh_session.h"

namespace thresher::launcher::ssh {

class RemoteProcess {
public:
    // Opens a channel and runs `command` through the remote user's shell; throws SshError (exec).
    RemoteProcess(SshSession& session, const std::string& command);
    ~RemoteProcess();
    RemoteProcess(const RemoteProcess&) = delete;
    RemoteProcess& operator=(const RemoteProcess&) = delete;

    // Writes all of `bytes` to the process's stdin; throws SshError when the channel fails.
    void write_stdin(const std::string& bytes);
    // Sends EOF: the process reads end-of-file on stdin (the channel stays open for output).
    void close_stdin();
    bool stdin_closed() const { return stdin_closed_; }

    // Waits up to `timeout_ms` for output and appends what arrived to `out` / `err`. Returns
    // false once the process has ended and everything it wrote was read. Throws SshError when
    // the connection is lost.
    bool poll(int timeout_ms, std::string& out, std::string& err);

    // After poll() returned false: the exit status, or 128 + N when signal N ended it (the
    // server reports the signal by name; `signal_name` then holds it, e.g. "KILL"); -1 when the
    // server sent neither.
    int exit_status();
    const std::string& signal_name() const { return signal_; }

private:
    SshSession& session_;
    ChannelPtr channel_;
    bool stdin_closed_ = false;
    bool ended_ = false;
    std::string signal_;
    struct Callbacks;
    std::unique_ptr<Callbacks> callbacks_;
};

}  // namespace thresher::launcher::ssh
