// EventStream: engine stdout bytes -> node-tagged events; see event_stream.h.
#include "event_stream.h"

#include <QJsonDocument>
#include <QJsonParseError>

namespace thresher::launcher {

QList<QJsonObject> EventStream::feed(const QByteArray& bytes) {
    QList<QJsonObject> out;
    qsizetype start = 0;
    for (;;) {
        const qsizetype nl = bytes.indexOf('\n', start);
        if (nl < 0) break;
        if (skipping_) {
            skipping_ = false;  // the over-long line ends here; it was reported already
            ++line_;
        } else {
            pending_.append(bytes.constData() + start, nl - start);
            take_line(std::move(pending_), out);
        }
        pending_.clear();
        start = nl + 1;
    }
    if (!skipping_) pending_.append(bytes.constData() + start, bytes.size() - start);
    if (pending_.size() > kMaxLineBytes) {
        out.append(warning(QString("%1: line longer than %2 bytes without a newline; discarded")
                               .arg(where()).arg(kMaxLineBytes)));
        pending_.clear();
        skipping_ = true;
    }
    return out;
}

QList<QJsonObject> EventStream::finish() {
    QList<QJsonObject> out;
    if (!skipping_ && !pending_.isEmpty()) take_line(std::move(pending_), out);
    pending_.clear();
    skipping_ = false;
    return out;
}

void EventStream::take_line(QByteArray line, QList<QJsonObject>& out) {
    ++line_;
    line = line.trimmed();  // also drops a '\r' of CRLF output (SSH pseudo-terminals)
    if (line.isEmpty()) return;
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(line, &err);
    QJsonObject event = doc.object();
    if (err.error != QJsonParseError::NoError || !doc.isObject() || !event.value("event").isString()) {
        const QString text = QString::fromUtf8(line.left(300)) + (line.size() > 300 ? "..." : "");
        out.append(warning(QString("%1: %2 is not a JSON event: %3")
                               .arg(where(), node_ == kRecorded ? "the line" : "stdout line", text)));
        return;
    }
    if (event.value("t").isDouble()) last_t_ = event.value("t").toDouble();
    if (node_ != kRecorded) event["node"] = node_;
    else if (!event.value("node").isDouble()) event["node"] = 0;  // a one-node recording
    out.append(event);
}

QString EventStream::where() const {
    return node_ == kRecorded ? QString("line %1").arg(line_ + (pending_.isEmpty() ? 0 : 1)) : QString("node %1").arg(node_);
}

QJsonObject EventStream::warning(const QString& message) const {
    return QJsonObject{{"event", "warning"}, {"t", last_t_}, {"node", node_ == kRecorded ? 0 : node_}, {"message", message},
                       {"source", "launcher"}};
}

}  // namespace thresher::launcher
