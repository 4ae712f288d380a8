// The SSH pre-flight behind `thresher-launch check` for SSH clusters: can each host run a node?
// One SshSession per host, then a few short remote commands; every host in parallel, each within
// its own time budget. A verdict is a list of checks, each ok/warn/fail with a one-line detail:
//   reachable       ok    connected, host key SHA256:… known
//   authenticated   ok    as root
//   system          ok    Linux x86_64
//   gpus            ok    none (CPU only)
//   port 40123      ok    UDP and TCP free (ss)
//   disk            ok    52.1 GiB free in /root
// A host that cannot be reached or logged into gets that one failing check and no others.
#pragma once

#include <string>
#include <vector>

#include "run_spec.h"
#include "ssh_session.h"

namespace thresher::launcher::ssh {

enum class CheckStatus { Ok, Warn, Fail };
const char* to_string(CheckStatus status);  // "ok", "warn", "FAIL"

struct Check {
    std::string name;  // reachable, host key, authenticated, system, gpus, port N, disk
    CheckStatus status = CheckStatus::Ok;
    std::string detail;
};

struct HostVerdict {
    std::string where;  // user@host:port as resolved (or as given, when connecting failed early)
    std::vector<Check> checks;
    std::string host_key_fingerprint;  // "SHA256:…" the host offered (empty: it never got that far)
    HostKeyState host_key = HostKeyState::Unchecked;
    bool failed() const;  // any check failed
    // Refused only because its key is unknown: the user may approve host_key_fingerprint (then
    // check again with that fingerprint pinned: SshTarget::expected_host_key_fingerprint).
    bool awaits_approval() const { return host_key == HostKeyState::Unknown && !host_key_fingerprint.empty(); }
};

// Disk space below these in the remote home: fail / warn (the engine bundle and data go there).
constexpr long long kDiskFailBytes = 256LL << 20;
constexpr long long kDiskWarnBytes = 2LL << 30;

// Checks one host; never throws. `timeout_s` bounds the whole check (connect included).
HostVerdict check_host(const SshTarget& target, int udp_port, const AskSecret& ask_secret = {}, int timeout_s = 30);

// check_host for every target at once, one thread each; verdicts in the targets' order.
std::vector<HostVerdict> check_hosts(const std::vector<SshTarget>& targets, int udp_port,
                                     const AskSecret& ask_secret = {}, int timeout_s = 30);

// A spec host as a target: port 22 (the spec's default) leaves the port to ~/.ssh/config.
SshTarget target_for(const SshHost& host, bool accept_new_host_key);

}  // namespace thresher::launcher::ssh
