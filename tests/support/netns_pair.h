// Two network namespaces this test process makes, joined by a veth pair with an address on each
// end (a /24 only inside them), loopback up: two hosts on one machine for tests of what crosses a
// network. The namespaces carry the pid in their names, so parallel suites never share one, and
// they go away with the object (deleting a namespace removes its end of the veth pair too).
#pragma once

#include <QString>
#include <QStringList>

namespace test_support {

// `name` on PATH, or in the sbin folders a non-root PATH lacks; empty when not installed.
QString find_tool(const QString& name);
// `program args...` to completion (timeout_ms at most); what went wrong in `error`. True on exit 0.
bool run_tool(const QString& program, const QStringList& args, QString* error = nullptr, int timeout_ms = 30000);

class NetnsPair {
public:
    // "<prefix>-a-<pid>" and "<prefix>-b-<pid>".
    explicit NetnsPair(const QString& prefix);
    ~NetnsPair();
    NetnsPair(const NetnsPair&) = delete;
    NetnsPair& operator=(const NetnsPair&) = delete;

    // Creates both namespaces and the link. False with skip_reason set when this machine cannot
    // (not root, no ip tool, no namespaces: the caller skips), or with error set when a later
    // step failed (the caller fails).
    bool create(const QString& addr_a, const QString& addr_b);
    // Deletes namespaces of these names a crashed earlier run may have left (cleanupTestCase).
    void remove_leftovers() const;

    QString ip;      // the ip tool
    QString a, b;    // namespace names
    QString skip_reason, error;

private:
    QStringList made_;
};

}  // namespace test_support
