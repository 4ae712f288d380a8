#include "netns_pair.h"

#include <QProcess>
#include <QStandardPaths>
#include <unistd.h>

namespace test_support {

QString find_tool(const QString& name) {
    QString found = QStandardPaths::findExecutable(name);
    if (found.isEmpty()) found = QStandardPaths::findExecutable(name, {"/usr/sbin", "/sbin", "/usr/bin", "/bin"});
    return found;
}

bool run_tool(const QString& program, const QStringList& args, QString* error, int timeout_ms) {
    QProcess p;
    p.start(program, args);
    const bool ok = p.waitForStarted(timeout_ms) && p.waitForFinished(timeout_ms) &&
                    p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
    if (!ok && p.state() != QProcess::NotRunning) {
        p.kill();
        p.waitForFinished(5000);
    }
    if (!ok && error)
        *error = program + " " + args.join(' ') + ": " + QString::fromUtf8(p.readAllStandardError()).trimmed();
    return ok;
}

NetnsPair::NetnsPair(const QString& prefix)
    : ip(find_tool("ip")),
      a(QString("%1-a-%2").arg(prefix).arg(::getpid())),
      b(QString("%1-b-%2").arg(prefix).arg(::getpid())) {}

NetnsPair::~NetnsPair() {
    for (const auto& n : made_) run_tool(ip, {"netns", "del", n});
}

bool NetnsPair::create(const QString& addr_a, const QString& addr_b) {
    if (::geteuid() != 0) {
        skip_reason = "needs root: creates network namespaces";
        return false;
    }
    if (ip.isEmpty()) {
        skip_reason = "needs the ip tool (Debian package iproute2; scripts/install-deps.sh installs it)";
        return false;
    }
    QString err;
    if (!run_tool(ip, {"netns", "add", a}, &err)) {
        skip_reason = "cannot create a network namespace here: " + err;
        return false;
    }
    made_ << a;
    const QList<QStringList> steps{
        {"netns", "add", b},
        {"-n", a, "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b", "netns", b},
        {"-n", a, "addr", "add", addr_a + "/24", "dev", "veth-a"},
        {"-n", b, "addr", "add", addr_b + "/24", "dev", "veth-b"},
        {"-n", a, "link", "set", "veth-a", "up"},
        {"-n", b, "link", "set", "veth-b", "up"},
        {"-n", a, "link", "set", "lo", "up"},
        {"-n", b, "link", "set", "lo", "up"},
    };
    for (const auto& step : steps) {
        if (!run_tool(ip, step, &error)) return false;
        if (step.first() == "netns") made_ << b;
    }
    return true;
}

void NetnsPair::remove_leftovers() const {
    if (ip.isEmpty() || ::geteuid() != 0) return;
    for (const auto& n : {a, b}) run_tool(ip, {"netns", "del", n});
}

}  // namespace test_support
