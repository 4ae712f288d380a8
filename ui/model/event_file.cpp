#include "event_file.h"

#include <stdexcept>

#include "event_stream.h"

namespace thresher::ui {

namespace {
[[noreturn]] void fail(const QString& message) { throw std::runtime_error(message.toStdString()); }
}  // namespace

EventFile::EventFile(const QString& path) : path_(path), file_(path) {
    if (!file_.open(QIODevice::ReadOnly)) fail(path + ": cannot open: " + file_.errorString());
}

long EventFile::read(const std::function<void(const QJsonObject&)>& sink) {
    launcher::EventStream stream(launcher::EventStream::kRecorded);
    long events = 0;
    const auto hand_on = [&](const QList<QJsonObject>& batch) {
        for (const auto& e : batch) {
            sink(e);
            if (e.value("source").toString() != "launcher") ++events;
        }
    };
    while (!file_.atEnd()) {
        const QByteArray chunk = file_.read(1 << 16);
        if (chunk.isEmpty() && file_.error() != QFileDevice::NoError) fail(path_ + ": cannot read: " + file_.errorString());
        hand_on(stream.feed(chunk));
    }
    hand_on(stream.finish());
    if (events == 0) fail(path_ + ": no events (a recorded run is one JSON event per line, as thresher-engine writes them)");
    return events;
}

}  // namespace thresher::ui
