// EventStream: one node's stdout, as bytes arrive from a pipe or an SSH channel, turned into
// events (DESIGN.md "The event contract"). Reads split lines anywhere, so a line is held until
// its '\n' arrives. Every event is tagged with the node it came from ("node" is set to this
// stream's node). stdout is only JSON by contract, so any other line becomes a `warning` event
// quoting it rather than being dropped silently -- the first kMaxQuotedLines of them: an engine
// (or a library in it) printing to stdout in a loop would otherwise send the UI and the run
// history one warning per line (a 1 MiB read of short lines: ~500,000 warnings at once). Later
// ones are counted, and finish() reports how many there were.
//
// A recorded events file (the app's --replay: a whole run, every node's events in one file) is
// read with node kRecorded: each event keeps its own "node", and warnings name the file's line.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QList>

namespace thresher::launcher {

class EventStream {
public:
    // A line longer than this without a '\n' is reported as a warning and discarded.
    static constexpr qsizetype kMaxLineBytes = 4 * 1024 * 1024;
    // Lines that are not events (or too long) quoted in warnings; the rest are only counted.
    static constexpr int kMaxQuotedLines = 20;

    // `node` for one engine's stdout; kRecorded for a recording of several nodes.
    static constexpr int kRecorded = -1;

    explicit EventStream(int node) : node_(node) {}

    // Appends `bytes` and returns the events of every line they complete.
    QList<QJsonObject> feed(const QByteArray& bytes);
    // End of stream: a last line without '\n' still counts.
    QList<QJsonObject> finish();

    int node() const { return node_; }
    // Warnings this stream made itself over its life (not those the engine printed): at most
    // kMaxQuotedLines + 1 per finish(), however many lines were not events.
    int warnings_made() const { return warnings_made_; }

private:
    void take_line(QByteArray line, QList<QJsonObject>& out);
    // A line that is not an event: a warning with `message`, or only counted past kMaxQuotedLines.
    void bad_line(const QString& message, QList<QJsonObject>& out);
    QJsonObject warning(const QString& message);

    QString where() const;  // "node N" or "line N" (recorded), for warnings

    int node_;
    long line_ = 0;  // lines taken so far (recorded mode's warnings)
    QByteArray pending_;
    double last_t_ = 0.0;  // the `t` a synthesised warning carries
    bool skipping_ = false;  // inside an over-long line, until its '\n'
    qint64 bad_lines_ = 0;    // lines that were not events, quoted or not
    int warnings_made_ = 0;
};

}  // namespace thresher::launcher
