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
        bad_line(QString("%1: line longer than %2 bytes without a newline; discarded").arg(where()).arg(kMaxLineBytes), out);
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
    if (bad_lines_ > kMaxQuotedLines)
        out.append(warning(node_ == kRecorded
                               ? QString("%1 lines in all were not JSON events; the first %2 were quoted")
                                     .arg(bad_lines_).arg(kMaxQuotedLines)
                               : QString("node %1: %2 stdout lines in all were not JSON events; the first %3 were quoted")
                                     .arg(node_).arg(bad_lines_).arg(kMaxQuotedLines)));
    bad_lines_ = 0;
    return out;
}

void EventStream::take_line(QByteArray line, QList<QJsonObject>& out) {
    ++line_;
    line = std::move(line).trimmed();  // in place; also drops a '\r' of CRLF output (SSH pseudo-terminals)
    if (line.isEmpty()) return;
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(line, &err);
    QJsonObject event = doc.object();
    if (err.error != QJsonParseError::NoError || !doc.isObject() || !event.value("event").isString()) {
        if (bad_lines_ >= kMaxQuotedLines) {
            ++bad_lines_;  // past the quota: not even the quote is made
            return;
        }
        const QString text = QString::fromUtf8(line.left(300)) + (line.size() > 300 ? "..." : "");
        bad_line(QString("%1: %2 is not a JSON event: %3")
                     .arg(where(), node_ == kRecorded ? "the line" : "stdout line", text),
                 out);
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

void EventStream::bad_line(const QString& message, QList<QJsonObject>& out) {
    ++bad_lines_;
    if (bad_lines_ < kMaxQuotedLines) {
        out.append(warning(message));
    } else if (bad_lines_ == kMaxQuotedLines) {
        out.append(warning(message + QString(" (the last line quoted: further lines that are not JSON events are only "
                                             "counted, and the count comes at the end of the stream)")));
    }
}

QJsonObject EventStream::warning(const QString& message) {
    ++warnings_made_;
    return QJsonObject{{"event", "warning"}, {"t", last_t_}, {"node", node_ == kRecorded ? 0 : node_}, {"message", message}, {"source", "launcher"}};
}

}  // namespace thresher::launcher
