// EventFile: a recorded run (the app's --replay: JSON lines, one event per line, as
// thresher-engine writes them; every node's events in one file) read through the launcher's own
// parser, as a live run's stdout is: lines bounded in length, a line that is not an event turned
// into a warning naming its line, each event keeping the node it came from. Read in chunks and
// handed on one at a time, so a long recording never sits in memory twice.
#pragma once

#include <QFile>
#include <QJsonObject>
#include <QString>
#include <functional>

namespace thresher::ui {

class EventFile {
public:
    // Opens the file; throws std::runtime_error "PATH: cannot open: why".
    explicit EventFile(const QString& path);

    // Hands every event to `sink` in file order (the parser's warnings included) and returns how
    // many were the engines' own. Throws std::runtime_error naming the file when it cannot be
    // read, or when it held no event at all (after handing on the warnings that say why).
    long read(const std::function<void(const QJsonObject&)>& sink);

private:
    QString path_;
    QFile file_;
};

}  // namespace thresher::ui
