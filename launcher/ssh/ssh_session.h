// SshSession: one authenticated libssh connection to one host, for the launcher's pre-flight
// (preflight.h) and, later, for starting engines. STYLE.md item 10, in this order, one cleanup
// path: options (~/.ssh/config honoured) → connect (with a timeout; TCP keepalive on the socket,
// so a vanished host ends the session within about a minute instead of hanging) → verify the
// known host (a changed key is always refused; an unknown one only with accept_new_host_key, and
// only the approved one when a fingerprint is pinned) → authenticate
// (ssh-agent and default keys, then the identity file, then a password) → exec → read to EOF.
// libssh handles live in unique_ptrs with deleters (STYLE.md item 5). Every failure is an
// SshError naming user@host:port and the step, e.g.
//   ssh root@127.0.0.1:2222: auth: no method succeeded (server offers: publickey) …
// Secrets (passphrases, passwords) come only through AskSecret, are used once, and are wiped.
#pragma once

#include <libssh/libssh.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "launcher.h"

namespace thresher::launcher::ssh {

// RAII owners for libssh's C handles.
struct SessionDeleter {
    void operator()(ssh_session s) const;
};
struct ChannelDeleter {
    void operator()(ssh_channel c) const;
};
struct KeyDeleter {
    void operator()(ssh_key k) const { ssh_key_free(k); }
};
using SessionPtr = std::unique_ptr<std::remove_pointer_t<ssh_session>, SessionDeleter>;
using ChannelPtr = std::unique_ptr<std::remove_pointer_t<ssh_channel>, ChannelDeleter>;
using KeyPtr = std::unique_ptr<std::remove_pointer_t<ssh_key>, KeyDeleter>;

// Where SshSession failed.
enum class SshStep { Connect, HostKey, Auth, Exec, Sftp };
const char* to_string(SshStep step);

// What became of the server's host key: a structured answer for whoever asks the user (the GUI's
// approval dialog), so nobody matches message text.
enum class HostKeyState {
    Unchecked,    // never got that far (connect failed), or another failure of the check itself
    Known,        // in known_hosts
    Added,        // unknown, accepted (and pinned, when a fingerprint was given) and added
    Unknown,      // unknown and refused: the user may approve its fingerprint
    Changed,      // known_hosts lists another key for this host: always refused
    NotApproved,  // unknown, and not the key whose fingerprint was approved: refused
};

// A failure of one step with one host; what() is the complete message.
class SshError : public LaunchError {
public:
    SshError(SshStep step, const std::string& where, const std::string& message, std::string fingerprint = {},
             HostKeyState host_key = HostKeyState::Unchecked)
        : LaunchError(message), step_(step), where_(where), fingerprint_(std::move(fingerprint)), host_key_(host_key) {}
    SshStep step() const { return step_; }
    const std::string& where() const { return where_; }  // user@host:port
    // "SHA256:…" of the key the server offered, when it got that far (empty otherwise): what a
    // user approves after an "unknown host key" refusal, and then pins (SshTarget).
    const std::string& host_key_fingerprint() const { return fingerprint_; }
    // For step HostKey: why the key was refused (Unknown, Changed, NotApproved; else Unchecked).
    HostKeyState host_key() const { return host_key_; }

private:
    SshStep step_;
    std::string where_;
    std::string fingerprint_;
    HostKeyState host_key_;
};

// Asks the user for a secret (a key's passphrase, a password); nullopt: none given. Called from
// the thread that connects, possibly from several hosts' threads at once: serialise inside.
using AskSecret = std::function<std::optional<std::string>(const std::string& prompt)>;

// One host to connect to. "~" below is $HOME. Empty user/identity and port 0 leave the choice to
// ~/.ssh/config (Host aliases, HostName, Port, User, IdentityFile), else to 22 and the local user.
struct SshTarget {
    std::string host;  // address, name, or a Host alias of ssh_config_file
    int port = 0;      // 0: ssh_config_file's Port, else 22
    std::string user;
    std::string identity_file;          // tried after ssh-agent and the default keys
    std::string known_hosts_file;       // empty: ~/.ssh/known_hosts
    std::string ssh_config_file;        // empty: ~/.ssh/config (read when it exists)
    int connect_timeout_s = 10;
    bool accept_new_host_key = false;   // add an unknown host's key to known_hosts (never a changed one)
    // With accept_new_host_key: add the unknown key only if its fingerprint is this one ("SHA256:…",
    // the key the user was shown and approved); another key is refused, as a changed key is. The
    // GUI always pins: a second connection may reach a different machine than the first did.
    std::string expected_host_key_fingerprint;
};

struct ExecResult {
    int exit_status = -1;  // the remote command's status; -1 when the server sent none (a signal)
    std::string out, err;
};

class SshSession {
public:
    // TCP keepalive on every session's socket (see enable_keepalive()).
    static constexpr int kKeepaliveIdleS = 15;
    static constexpr int kKeepaliveIntervalS = 5;
    static constexpr int kKeepaliveProbes = 3;
    static constexpr unsigned int kUserTimeoutMs = 60000;

    // Connects, verifies the host key and authenticates; throws SshError.
    explicit SshSession(const SshTarget& target, const AskSecret& ask_secret = {});
    SshSession(SshSession&&) noexcept = default;
    SshSession& operator=(SshSession&&) noexcept = default;
    ~SshSession() = default;

    // Runs `command` through the remote user's shell and reads stdout and stderr to EOF. Throws
    // SshError (step exec) when the channel fails or the command outlives `timeout_s`.
    ExecResult exec(const std::string& command, int timeout_s);

    // user@host:port as resolved (config applied): what every error message names.
    const std::string& where() const { return where_; }
    // "SHA256:…" of the server's host key.
    const std::string& host_key_fingerprint() const { return fingerprint_; }
    // True when this connect added the (unknown) host key to known_hosts.
    bool host_key_added() const { return host_key_added_; }
    HostKeyState host_key() const { return host_key_added_ ? HostKeyState::Added : HostKeyState::Known; }
    ssh_session handle() const { return session_.get(); }
    // Throws SshError for `step` naming this host (for helpers working on this session).
    [[noreturn]] void fail(SshStep step, const std::string& what) const;
    // fail(SshStep::HostKey, what) for a key refused as `state`.
    [[noreturn]] void refuse_host_key(HostKeyState state, const std::string& what) const;

private:
    void set_options(const SshTarget& target);
    void enable_keepalive();
    void verify_host_key(const SshTarget& target);
    void authenticate(const SshTarget& target, const AskSecret& ask_secret);

    SessionPtr session_;
    std::string where_;
    std::string known_hosts_;
    std::string fingerprint_;
    bool host_key_added_ = false;
};

}  // namespace thresher::launcher::ssh
