// SshSession: options → connect → known host → authenticate, then exec with a read loop and a
// deadline. libssh status codes become SshError here and nowhere else (STYLE.md item 6).
#include "ssh_session.h"

#include <QByteArray>
#include <QDir>
#include <QFileInfo>
#include <chrono>
#include <cstring>
#include <cerrno>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace thresher::launcher::ssh {

namespace {

using Clock = std::chrono::steady_clock;

std::string home_dir() {
    const QByteArray home = qgetenv("HOME");
    return home.isEmpty() ? QDir::homePath().toStdString() : home.toStdString();
}

std::string local_user() {
    const passwd* pw = ::getpwuid(::getuid());
    return pw != nullptr ? pw->pw_name : "?";
}

// A string option as libssh resolved it (after ~/.ssh/config), or `fallback`.
std::string option_string(ssh_session s, ssh_options_e option, const std::string& fallback) {
    char* value = nullptr;
    if (ssh_options_get(s, option, &value) != SSH_OK || value == nullptr) return fallback;
    std::string result = value;
    ssh_string_free_char(value);
    return result;
}

void wipe(std::string& secret) {
    if (!secret.empty()) ::explicit_bzero(secret.data(), secret.size());
    secret.clear();
}

// Asks for a secret into `out`; false when there is no callback or it gave no answer.
bool ask(const AskSecret& ask_secret, const std::string& prompt, std::string& out) {
    if (!ask_secret) return false;
    std::optional<std::string> answer = ask_secret(prompt);
    if (!answer) return false;
    out.assign(*answer);
    wipe(*answer);
    return true;
}

std::string methods_text(int methods) {
    std::vector<std::string> names;
    if (methods & SSH_AUTH_METHOD_PUBLICKEY) names.emplace_back("publickey");
    if (methods & SSH_AUTH_METHOD_PASSWORD) names.emplace_back("password");
    if (methods & SSH_AUTH_METHOD_INTERACTIVE) names.emplace_back("keyboard-interactive");
    if (methods & SSH_AUTH_METHOD_GSSAPI_MIC) names.emplace_back("gssapi");
    std::string text;
    for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
    return text.empty() ? "none" : text;
}

}  // namespace

void SessionDeleter::operator()(ssh_session s) const {
    ssh_disconnect(s);
    ssh_free(s);
}

void ChannelDeleter::operator()(ssh_channel c) const { ssh_channel_free(c); }  // closes an open channel

const char* to_string(SshStep step) {
    switch (step) {
    case SshStep::Connect: return "connect";
    case SshStep::HostKey: return "host key";
    case SshStep::Auth: return "auth";
    case SshStep::Exec: return "exec";
    case SshStep::Sftp: return "sftp";
    }
    return "?";
}

void SshSession::fail(SshStep step, const std::string& what) const {
    throw SshError(step, where_, "ssh " + where_ + ": " + to_string(step) + ": " + what, fingerprint_);
}

void SshSession::refuse_host_key(HostKeyState state, const std::string& what) const {
    throw SshError(SshStep::HostKey, where_, "ssh " + where_ + ": " + to_string(SshStep::HostKey) + ": " + what,
                   fingerprint_, state);
}

void SshSession::enable_keepalive() {
    // Probes after 15 s of silence, every 5 s, 3 unanswered: a host that vanished (power, cable,
    // a firewall dropping the flow) is noticed in about 30 s; unacknowledged writes give up after
    // 60 s (TCP_USER_TIMEOUT) instead of retransmitting for a quarter of an hour.
    const int fd = ssh_get_fd(session_.get());
    if (fd < 0) return;
    const int on = 1, idle = kKeepaliveIdleS, interval = kKeepaliveIntervalS, probes = kKeepaliveProbes;
    const unsigned int user_timeout_ms = kUserTimeoutMs;
    if (::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0 ||
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) != 0 ||
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes) != 0 ||
        ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms) != 0)
        fail(SshStep::Connect, std::string("cannot enable TCP keepalive: ") + std::strerror(errno));
}

SshSession::SshSession(const SshTarget& target, const AskSecret& ask_secret) {
    where_ = (target.user.empty() ? std::string("?") : target.user) + "@" + target.host + ":" +
             (target.port > 0 ? std::to_string(target.port) : std::string("?"));
    set_options(target);
    const auto started = Clock::now();
    if (ssh_connect(session_.get()) != SSH_OK) {
        std::string why = ssh_get_error(session_.get());
        if (Clock::now() - started >= std::chrono::milliseconds(target.connect_timeout_s * 1000 - 500))
            why += " (no answer within the " + std::to_string(target.connect_timeout_s) + " s connect timeout)";
        fail(SshStep::Connect, why);
    }
    enable_keepalive();
    verify_host_key(target);
    authenticate(target, ask_secret);
}

void SshSession::set_options(const SshTarget& target) {
    session_.reset(ssh_new());
    if (!session_) fail(SshStep::Connect, "cannot create a libssh session");
    ssh_session s = session_.get();
    const std::string ssh_dir = home_dir() + "/.ssh";
    if (ssh_options_set(s, SSH_OPTIONS_HOST, target.host.c_str()) != SSH_OK ||
        ssh_options_set(s, SSH_OPTIONS_SSH_DIR, ssh_dir.c_str()) != SSH_OK)
        fail(SshStep::Connect, std::string("bad host: ") + ssh_get_error(s));
    // ~/.ssh/config first (it may turn an alias into HostName, Port, User, IdentityFile), then
    // what the target says explicitly, which wins. libssh must not parse config files again in
    // ssh_connect: that would override the explicit options.
    const std::string config = target.ssh_config_file.empty() ? ssh_dir + "/config" : target.ssh_config_file;
    if (QFileInfo::exists(QString::fromStdString(config)) && ssh_options_parse_config(s, config.c_str()) != SSH_OK)
        fail(SshStep::Connect, "cannot read " + config + ": " + ssh_get_error(s));
    const bool process_config = false;
    ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &process_config);
    if (target.port > 0) {
        const unsigned int port = static_cast<unsigned int>(target.port);
        ssh_options_set(s, SSH_OPTIONS_PORT, &port);
    }
    if (!target.user.empty() && ssh_options_set(s, SSH_OPTIONS_USER, target.user.c_str()) != SSH_OK)
        fail(SshStep::Connect, std::string("bad user: ") + ssh_get_error(s));
    known_hosts_ = target.known_hosts_file.empty() ? ssh_dir + "/known_hosts" : target.known_hosts_file;
    ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, known_hosts_.c_str());
    const long timeout = target.connect_timeout_s > 0 ? target.connect_timeout_s : 10;
    ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);

    unsigned int port = 0;
    if (ssh_options_get_port(s, &port) != SSH_OK || port == 0) port = 22;
    where_ = option_string(s, SSH_OPTIONS_USER, target.user.empty() ? local_user() : target.user) + "@" +
             option_string(s, SSH_OPTIONS_HOST, target.host) + ":" + std::to_string(port);
}

void SshSession::verify_host_key(const SshTarget& target) {
    ssh_session s = session_.get();
    ssh_key raw_key = nullptr;
    if (ssh_get_server_publickey(s, &raw_key) != SSH_OK) fail(SshStep::HostKey, ssh_get_error(s));
    const KeyPtr key(raw_key);
    unsigned char* hash = nullptr;
    size_t hash_len = 0;
    if (ssh_get_publickey_hash(key.get(), SSH_PUBLICKEY_HASH_SHA256, &hash, &hash_len) != SSH_OK)
        fail(SshStep::HostKey, "cannot hash the server's key");
    char* fingerprint = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hash_len);
    ssh_clean_pubkey_hash(&hash);
    fingerprint_ = fingerprint != nullptr ? fingerprint : "?";
    ssh_string_free_char(fingerprint);
    const std::string offered = std::string(ssh_key_type_to_char(ssh_key_type(key.get()))) + " key " + fingerprint_;

    switch (ssh_session_is_known_server(s)) {
    case SSH_KNOWN_HOSTS_OK:
        return;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
        refuse_host_key(HostKeyState::Changed, "host key changed: the server now offers " + offered + ", which " + known_hosts_ +
                                   " does not list for it. Refused: this may be a man-in-the-middle; if the host "
                                   "was reinstalled, remove its old line (ssh-keygen -R HOST -f " + known_hosts_ +
                                   ") and check again");
    case SSH_KNOWN_HOSTS_NOT_FOUND:
    case SSH_KNOWN_HOSTS_UNKNOWN:
        if (!target.accept_new_host_key)
            refuse_host_key(HostKeyState::Unknown, "unknown host key (" + offered + ", not in " + known_hosts_ +
                                       "). Refused: accept it with --accept-new-host-keys after checking the "
                                       "fingerprint");
        if (!target.expected_host_key_fingerprint.empty() && target.expected_host_key_fingerprint != fingerprint_)
            refuse_host_key(HostKeyState::NotApproved, "the server offers " + offered + ", not the key " +
                                       target.expected_host_key_fingerprint +
                                       " that was approved for it. Refused: this may be a man-in-the-middle; check "
                                       "the host again and compare fingerprints");
        QDir().mkpath(QFileInfo(QString::fromStdString(known_hosts_)).absolutePath());
        if (ssh_session_update_known_hosts(s) != SSH_OK)
            fail(SshStep::HostKey, "cannot add " + offered + " to " + known_hosts_ + ": " + ssh_get_error(s));
        host_key_added_ = true;
        return;
    case SSH_KNOWN_HOSTS_ERROR:
        break;
    }
    fail(SshStep::HostKey, "cannot check " + known_hosts_ + ": " + ssh_get_error(s));
}

void SshSession::authenticate(const SshTarget& target, const AskSecret& ask_secret) {
    ssh_session s = session_.get();
    int rc = ssh_userauth_none(s, nullptr);
    if (rc == SSH_AUTH_SUCCESS) return;
    if (rc == SSH_AUTH_ERROR) fail(SshStep::Auth, ssh_get_error(s));
    const int methods = ssh_userauth_list(s, nullptr);
    std::vector<std::string> tried;

    if (methods & SSH_AUTH_METHOD_PUBLICKEY) {
        rc = ssh_userauth_publickey_auto(s, nullptr, nullptr);
        if (rc == SSH_AUTH_SUCCESS) return;
        if (rc == SSH_AUTH_ERROR) fail(SshStep::Auth, ssh_get_error(s));
        tried.emplace_back("ssh-agent and default keys");
        if (const std::string& file = target.identity_file; !file.empty()) {
            if (!QFileInfo(QString::fromStdString(file)).isReadable())
                fail(SshStep::Auth, "identity file " + file + " does not exist or cannot be read");
            ssh_key raw = nullptr;
            if (ssh_pki_import_privkey_file(file.c_str(), nullptr, nullptr, nullptr, &raw) != SSH_OK) {
                // Encrypted (or not a key): ask for the passphrase once.
                std::string passphrase;
                if (!ask(ask_secret, "Passphrase for " + file + " (" + where_ + "): ", passphrase))
                    fail(SshStep::Auth, "identity file " + file + " is encrypted (or not a private key) and no "
                                        "passphrase was given");
                raw = nullptr;
                const int imported = ssh_pki_import_privkey_file(file.c_str(), passphrase.c_str(), nullptr, nullptr, &raw);
                wipe(passphrase);
                if (imported != SSH_OK)
                    fail(SshStep::Auth, "cannot read identity file " + file + ": wrong passphrase or not a private key");
            }
            const KeyPtr key(raw);
            rc = ssh_userauth_publickey(s, nullptr, key.get());
            if (rc == SSH_AUTH_SUCCESS) return;
            if (rc == SSH_AUTH_ERROR) fail(SshStep::Auth, ssh_get_error(s));
            tried.push_back("identity file " + file);
        }
    }
    if (methods & SSH_AUTH_METHOD_PASSWORD) {
        std::string password;
        if (ask(ask_secret, "Password for " + where_ + ": ", password)) {
            rc = ssh_userauth_password(s, nullptr, password.c_str());
            wipe(password);
            if (rc == SSH_AUTH_SUCCESS) return;
            if (rc == SSH_AUTH_ERROR) fail(SshStep::Auth, ssh_get_error(s));
            tried.emplace_back("password");
        }
    }
    std::string tried_text;
    for (const auto& t : tried) tried_text += (tried_text.empty() ? "" : ", ") + t;
    fail(SshStep::Auth, "refused (tried: " + (tried_text.empty() ? std::string("nothing") : tried_text) +
                            "; the server accepts: " + methods_text(methods) + ")");
}

ExecResult SshSession::exec(const std::string& command, int timeout_s) {
    ssh_session s = session_.get();
    const ChannelPtr channel(ssh_channel_new(s));
    if (!channel) fail(SshStep::Exec, std::string("cannot open a channel: ") + ssh_get_error(s));
    if (ssh_channel_open_session(channel.get()) != SSH_OK)
        fail(SshStep::Exec, std::string("cannot open a channel: ") + ssh_get_error(s));
    if (ssh_channel_request_exec(channel.get(), command.c_str()) != SSH_OK)
        fail(SshStep::Exec, "cannot run `" + command + "`: " + ssh_get_error(s));

    ExecResult result;
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    std::vector<char> buffer(16384);
    while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) fail(SshStep::Exec, "`" + command + "` did not finish within " + std::to_string(timeout_s) + " s");
        const int n = ssh_channel_read_timeout(channel.get(), buffer.data(), static_cast<uint32_t>(buffer.size()), 0,
                                               static_cast<int>(std::min<long long>(left, 100)));
        if (n == SSH_ERROR) fail(SshStep::Exec, "reading `" + command + "`'s output: " + ssh_get_error(s));
        if (n > 0) result.out.append(buffer.data(), static_cast<size_t>(n));
        const int m = ssh_channel_read_nonblocking(channel.get(), buffer.data(), static_cast<uint32_t>(buffer.size()), 1);
        if (m == SSH_ERROR) fail(SshStep::Exec, "reading `" + command + "`'s errors: " + ssh_get_error(s));
        if (m > 0) result.err.append(buffer.data(), static_cast<size_t>(m));
        if (n <= 0 && m <= 0 && ssh_channel_is_eof(channel.get())) break;
    }
    result.exit_status = ssh_channel_get_exit_status(channel.get());
    return result;
}

}  // namespace thresher::launcher::ssh
