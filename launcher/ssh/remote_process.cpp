// RemoteProcess: exec on a channel, stdin writes and EOF, output polled in slices, and the exit
// status or signal (the latter through libssh's channel callback: libssh 0.10 has no getter).
#include "remote_process.h"

#include <libssh/callbacks.h>

#include <algorithm>
#include <map>
#include <vector>

namespace thresher::launcher::ssh {

namespace {

// SSH names signals without "SIG" (RFC 4254 6.10); the numbers are Linux's.
int signal_number(const std::string& name) {
    static const std::map<std::string, int> numbers{{"HUP", 1},   {"INT", 2},   {"QUIT", 3},  {"ILL", 4},
                                                    {"ABRT", 6},  {"FPE", 8},   {"KILL", 9},  {"SEGV", 11},
                                                    {"PIPE", 13}, {"ALRM", 14}, {"TERM", 15}, {"USR1", 10},
                                                    {"USR2", 12}, {"BUS", 7}};
    const auto it = numbers.find(name);
    return it == numbers.end() ? 0 : it->second;
}

}  // namespace

struct RemoteProcess::Callbacks {
    ssh_channel_callbacks_struct cb{};
    std::string* signal = nullptr;
};

RemoteProcess::RemoteProcess(SshSession& session, const std::string& command) : session_(session) {
    ssh_session s = session.handle();
    channel_.reset(ssh_channel_new(s));
    if (!channel_) session.fail(SshStep::Exec, std::string("cannot open a channel: ") + ssh_get_error(s));
    callbacks_ = std::make_unique<Callbacks>();
    callbacks_->signal = &signal_;
    callbacks_->cb.userdata = callbacks_.get();
    callbacks_->cb.channel_exit_signal_function = [](ssh_session, ssh_channel, const char* signal, int, const char*,
                                                     const char*, void* userdata) {
        *static_cast<Callbacks*>(userdata)->signal = signal != nullptr ? signal : "?";
    };
    ssh_callbacks_init(&callbacks_->cb);
    ssh_set_channel_callbacks(channel_.get(), &callbacks_->cb);
    if (ssh_channel_open_session(channel_.get()) != SSH_OK)
        session.fail(SshStep::Exec, std::string("cannot open a channel: ") + ssh_get_error(s));
    if (ssh_channel_request_exec(channel_.get(), command.c_str()) != SSH_OK)
        session.fail(SshStep::Exec, std::string("cannot start the remote command: ") + ssh_get_error(s));
}

RemoteProcess::~RemoteProcess() {
    // The channel (and with it the callbacks' user) goes first: ChannelPtr frees it.
    if (channel_) {
        ssh_remove_channel_callbacks(channel_.get(), &callbacks_->cb);
        channel_.reset();
    }
}

void RemoteProcess::write_stdin(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
        const int n = ssh_channel_write(channel_.get(), bytes.data() + done, static_cast<uint32_t>(bytes.size() - done));
        if (n == SSH_ERROR)
            session_.fail(SshStep::Exec, std::string("writing to the remote command's stdin: ") + ssh_get_error(session_.handle()));
        done += static_cast<size_t>(n);
    }
}

void RemoteProcess::close_stdin() {
    if (stdin_closed_) return;
    stdin_closed_ = true;
    if (ssh_channel_is_open(channel_.get())) ssh_channel_send_eof(channel_.get());
}

bool RemoteProcess::poll(int timeout_ms, std::string& out, std::string& err) {
    if (ended_) return false;
    std::vector<char> buffer(32768);
    // Reading stdout with a timeout processes every packet that arrives meanwhile, stderr's
    // included (libssh buffers them per stream); stderr is then drained without waiting.
    const int n = ssh_channel_read_timeout(channel_.get(), buffer.data(), static_cast<uint32_t>(buffer.size()), 0,
                                           std::max(1, timeout_ms));
    if (n == SSH_ERROR)
        session_.fail(SshStep::Exec, std::string("connection lost: ") + ssh_get_error(session_.handle()));
    if (n > 0) out.append(buffer.data(), static_cast<size_t>(n));
    int m = 0;
    while ((m = ssh_channel_read_nonblocking(channel_.get(), buffer.data(), static_cast<uint32_t>(buffer.size()), 1)) > 0)
        err.append(buffer.data(), static_cast<size_t>(m));
    if (m == SSH_ERROR)
        session_.fail(SshStep::Exec, std::string("connection lost: ") + ssh_get_error(session_.handle()));
    if (n <= 0 && ssh_channel_is_eof(channel_.get())) {
        // Both streams are at EOF once the channel is; drain what is left of stdout.
        int k = 0;
        while ((k = ssh_channel_read_nonblocking(channel_.get(), buffer.data(), static_cast<uint32_t>(buffer.size()), 0)) > 0)
            out.append(buffer.data(), static_cast<size_t>(k));
        ended_ = true;
        return false;
    }
    return true;
}

int RemoteProcess::exit_status() {
    const int status = ssh_channel_get_exit_status(channel_.get());
    if (!signal_.empty()) {
        const int number = signal_number(signal_);
        return number > 0 ? 128 + number : (status >= 0 ? status : -1);
    }
    return status;
}

}  // namespace thresher::launcher::ssh
