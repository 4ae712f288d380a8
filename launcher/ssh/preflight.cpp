// check_host / check_hosts: the remote half of `thresher-launch check` (see preflight.h). Each
// remote probe is one short shell command; what it prints is parsed here.
#include "preflight.h"

#include <QString>
#include <QStringList>
#include <chrono>
#include <cstdio>
#include <future>
#include <sys/utsname.h>

namespace thresher::launcher::ssh {

namespace {

using Clock = std::chrono::steady_clock;

std::string trimmed(const std::string& s) { return QString::fromStdString(s).trimmed().toStdString(); }

std::string first_line(const std::string& s) {
    const QString t = QString::fromStdString(s).trimmed();
    return t.section('\n', 0, 0).toStdString();
}

std::string human_bytes(long long bytes) {
    char text[32];
    if (bytes >= (1LL << 30)) std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1LL << 30));
    else std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / (1LL << 20));
    return text;
}

// Listening sockets on `port`, printed as "udp N tcp M via ss|proc". Without ss, /proc/net
// lists local addresses as HEXIP:HEXPORT (port 40123 → :9CBB) and TCP listeners in state 0A.
std::string port_probe(int port) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%04X", port);
    const std::string p = std::to_string(port);
    return "if command -v ss >/dev/null 2>&1; then "
           "echo udp $(ss -Hlun 'sport = :" + p + "' | wc -l) tcp $(ss -Hltn 'sport = :" + p + "' | wc -l) via ss; "
           "else "
           "echo udp $(cat /proc/net/udp /proc/net/udp6 2>/dev/null | awk '$2 ~ /:" + hex + "$/' | wc -l) "
           "tcp $(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$2 ~ /:" + hex + "$/ && $4 == \"0A\"' | wc -l) "
           "via /proc/net; fi";
}

class Budget {
public:
    explicit Budget(int seconds) : deadline_(Clock::now() + std::chrono::seconds(seconds)) {}
    // Seconds left, at least 1 (a probe that gets 1 s and needs more fails with a clear error).
    int left_s() const {
        const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline_ - Clock::now()).count();
        return left < 1 ? 1 : static_cast<int>(left);
    }

private:
    Clock::time_point deadline_;
};

Check probe_system(SshSession& session, const Budget& budget) {
    const ExecResult r = session.exec("uname -sm", budget.left_s());
    const std::string text = trimmed(r.out);
    if (r.exit_status != 0 || text.empty()) return {"system", CheckStatus::Fail, "uname -sm failed: " + first_line(r.err)};
    const QStringList parts = QString::fromStdString(text).split(' ');
    utsname local{};
    ::uname(&local);
    if (parts.value(0) != "Linux") return {"system", CheckStatus::Fail, text + " (the engine runs on Linux only)"};
    if (parts.value(1) != local.machine)
        return {"system", CheckStatus::Warn, text + " (this machine is " + local.machine + ": its engine bundle will not run there)"};
    return {"system", CheckStatus::Ok, text};
}

Check probe_gpus(SshSession& session, const Budget& budget) {
    const ExecResult r = session.exec(
        "if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi --query-gpu=name,memory.total "
        "--format=csv,noheader; else echo none; fi",
        budget.left_s());
    const QString text = QString::fromStdString(r.out).trimmed();
    if (r.exit_status != 0) return {"gpus", CheckStatus::Warn, "nvidia-smi failed: " + first_line(r.err + r.out)};
    if (text == "none" || text.isEmpty()) return {"gpus", CheckStatus::Ok, "none (CPU only)"};
    const QStringList gpus = text.split('\n', Qt::SkipEmptyParts);
    return {"gpus", CheckStatus::Ok, QString("%1: %2").arg(gpus.size()).arg(gpus.join("; ")).toStdString()};
}

Check probe_port(SshSession& session, int port, const Budget& budget) {
    const std::string name = "port " + std::to_string(port);
    const ExecResult r = session.exec(port_probe(port), budget.left_s());
    const QStringList f = QString::fromStdString(r.out).trimmed().split(' ');
    bool udp_ok = false, tcp_ok = false;
    const int udp = f.value(1).toInt(&udp_ok), tcp = f.value(3).toInt(&tcp_ok);
    if (r.exit_status != 0 || f.size() != 6 || !udp_ok || !tcp_ok)
        return {name, CheckStatus::Warn, "could not tell: " + first_line(r.err + r.out)};
    const std::string via = std::string("(") + f.value(5).toStdString() + ")";
    if (udp == 0 && tcp == 0) return {name, CheckStatus::Ok, "UDP and TCP free " + via};
    std::string busy = udp > 0 && tcp > 0 ? "UDP and TCP" : udp > 0 ? "UDP" : "TCP";
    return {name, CheckStatus::Fail, busy + " in use " + via};
}

Check probe_disk(SshSession& session, const Budget& budget) {
    // POSIX df: "Filesystem 1024-blocks Used Available Capacity Mounted-on"; ~ is the login home.
    const ExecResult r = session.exec("cd && df -Pk . | tail -n 1 && pwd", budget.left_s());
    const QStringList lines = QString::fromStdString(r.out).trimmed().split('\n');
    const QStringList f = lines.value(0).simplified().split(' ');
    bool ok = false;
    const long long available = f.value(3).toLongLong(&ok) * 1024;
    if (r.exit_status != 0 || !ok) return {"disk", CheckStatus::Warn, "df failed: " + first_line(r.err + r.out)};
    const std::string detail = human_bytes(available) + " free in " + lines.value(1).toStdString();
    if (available < kDiskFailBytes) return {"disk", CheckStatus::Fail, detail + " (needs " + human_bytes(kDiskFailBytes) + ")"};
    if (available < kDiskWarnBytes) return {"disk", CheckStatus::Warn, detail + " (little room)"};
    return {"disk", CheckStatus::Ok, detail};
}

}  // namespace

const char* to_string(CheckStatus status) {
    switch (status) {
    case CheckStatus::Ok: return "ok";
    case CheckStatus::Warn: return "warn";
    case CheckStatus::Fail: return "FAIL";
    }
    return "?";
}

bool HostVerdict::failed() const {
    for (const Check& c : checks)
        if (c.status == CheckStatus::Fail) return true;
    return false;
}

HostVerdict check_host(const SshTarget& target, int udp_port, const AskSecret& ask_secret, int timeout_s) {
    HostVerdict verdict;
    verdict.where = (target.user.empty() ? std::string() : target.user + "@") + target.host +
                    (target.port > 0 ? std::string(":") + std::to_string(target.port) : std::string());
    const Budget budget(timeout_s);
    SshTarget t = target;
    t.connect_timeout_s = std::min(target.connect_timeout_s > 0 ? target.connect_timeout_s : 10, timeout_s);
    std::optional<SshSession> session;
    try {
        session.emplace(t, ask_secret);
    } catch (const SshError& e) {
        const char* name = e.step() == SshStep::Connect ? "reachable" : e.step() == SshStep::HostKey ? "host key" : "authenticated";
        verdict.where = e.where();
        verdict.host_key_fingerprint = e.host_key_fingerprint();
        verdict.host_key = e.host_key();
        verdict.checks.push_back({name, CheckStatus::Fail, e.what()});
        return verdict;
    }
    verdict.where = session->where();
    verdict.host_key_fingerprint = session->host_key_fingerprint();
    verdict.host_key = session->host_key();
    verdict.checks.push_back({"reachable", CheckStatus::Ok, "connected, host key " + session->host_key_fingerprint() +
                                                                  (session->host_key_added() ? " (new: added to known_hosts)" : " known")});
    verdict.checks.push_back({"authenticated", CheckStatus::Ok, "as " + verdict.where.substr(0, verdict.where.find('@'))});
    using Probe = Check (*)(SshSession&, const Budget&);
    const auto run = [&](const std::string& name, auto&& probe) {
        try {
            verdict.checks.push_back(probe());
        } catch (const SshError& e) {
            verdict.checks.push_back({name, CheckStatus::Fail, e.what()});
        }
    };
    for (const auto& [name, probe] : {std::pair<const char*, Probe>{"system", probe_system}, std::pair<const char*, Probe>{"gpus", probe_gpus}})
        run(name, [&, probe = probe] { return probe(*session, budget); });
    run("port " + std::to_string(udp_port), [&] { return probe_port(*session, udp_port, budget); });
    run("disk", [&] { return probe_disk(*session, budget); });
    return verdict;
}

std::vector<HostVerdict> check_hosts(const std::vector<SshTarget>& targets, int udp_port, const AskSecret& ask_secret,
                                     int timeout_s) {
    // Each check bounds itself (connect timeout, exec deadlines); the wait below is the backstop.
    std::vector<std::future<HostVerdict>> running;
    for (const SshTarget& target : targets)
        running.push_back(std::async(std::launch::async, check_host, target, udp_port, ask_secret, timeout_s));
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s + 5);
    std::vector<HostVerdict> verdicts;
    for (size_t i = 0; i < running.size(); ++i) {
        if (running[i].wait_until(deadline) == std::future_status::ready) {
            verdicts.push_back(running[i].get());
            continue;
        }
        HostVerdict late;
        late.where = targets[i].host;
        late.checks.push_back({"reachable", CheckStatus::Fail, "no verdict within " + std::to_string(timeout_s) + " s"});
        verdicts.push_back(late);
    }
    return verdicts;  // a late check's future is waited for here, as its thread must end first
}

SshTarget target_for(const SshHost& host, bool accept_new_host_key) {
    SshTarget t;
    t.host = host.address.toStdString();
    t.port = host.port == 22 ? 0 : host.port;
    t.user = host.user.toStdString();
    t.identity_file = host.identity_file.toStdString();
    if (t.identity_file.starts_with("~/")) t.identity_file = qgetenv("HOME").toStdString() + t.identity_file.substr(1);
    t.accept_new_host_key = accept_new_host_key;
    return t;
}

}  // namespace thresher::launcher::ssh
