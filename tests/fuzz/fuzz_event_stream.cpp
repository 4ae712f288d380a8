// libFuzzer target for the launcher's event stream (launcher/event_stream.h), the parser of
// every engine's stdout: bytes arrive in arbitrary pieces (the first input byte picks the piece
// size, as pipes and SSH channels split them); every result is an event object with a string
// "event" tagged with the stream's node (a "warning" for a line that is not an event), and
// feeding the same bytes in one piece gives the same events, and each stream makes at most
// EventStream::kMaxQuotedLines + 1 warnings of its own however many lines are not events (a 1 MiB input of
// short junk lines once made ~500,000 warnings: seconds per input and a growing RSS). Pieces are
// views of the input (fromRawData), so the harness itself allocates nothing per piece.
#include <QByteArray>
#include <QJsonObject>
#include <algorithm>
#include <cstdint>

#include "event_stream.h"

namespace {
using thresher::launcher::EventStream;

void check(const QList<QJsonObject>& events, const EventStream& stream) {
    for (const auto& e : events)
        if (!e.value("event").isString() || e.value("node").toInt(-1) != 3) __builtin_trap();
    // Its own warnings only: the input may hold real "warning" events (any number).
    if (stream.warnings_made() > EventStream::kMaxQuotedLines + 1) __builtin_trap();
}
}  // namespace

// ASan keeps two frames of each allocation's stack here (SHORT_STACKS in tests/fuzz/CMakeLists.txt).

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::size_t piece = std::size_t{data[0]} + 1;
    const QByteArray bytes(reinterpret_cast<const char*>(data + 1), static_cast<qsizetype>(size - 1));
    thresher::launcher::EventStream pieces(3), whole(3);
    QList<QJsonObject> a;
    for (qsizetype at = 0; at < bytes.size(); at += static_cast<qsizetype>(piece))
        a += pieces.feed(QByteArray::fromRawData(bytes.constData() + at, std::min<qsizetype>(static_cast<qsizetype>(piece), bytes.size() - at)));
    a += pieces.finish();
    QList<QJsonObject> b = whole.feed(bytes);
    b += whole.finish();
    check(a, pieces);
    check(b, whole);
    if (a != b) __builtin_trap();
    return 0;
}
