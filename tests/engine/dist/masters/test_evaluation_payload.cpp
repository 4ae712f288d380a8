// A node's evaluation part as it travels to the controller (dist/masters/evaluation_payload.h):
// the epoch in network byte order before the JSON, packed and parsed back; and a short payload,
// JSON that is not an object, invalid JSON and nesting past the parser's depth limit refused by
// name, never parsed into the controller's stack.
#include <QtTest>

#include <cstring>

#include "core/error.h"
#include "dist/masters/evaluation_payload.h"

using namespace thresher::dist;

namespace {
std::vector<std::uint8_t> bytes(std::int32_t epoch, const std::string& text) {
    std::vector<std::uint8_t> out(4 + text.size());
    for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(epoch >> (24 - 8 * i));
    std::memcpy(out.data() + 4, text.data(), text.size());  // (insert() trips GCC 12's -Warray-bounds)
    return out;
}
}  // namespace

class TestEvaluationPayload : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void round_trip() {
        const nlohmann::json counts{{"confusion", {{3, 1}, {0, 4}}}, {"loss_sum", 2.5}, {"count", 8}};
        const auto payload = pack_evaluation(3, counts);
        QCOMPARE(payload, bytes(3, counts.dump()));
        const auto part = parse_evaluation(payload, "node 1");
        QCOMPARE(part.epoch, 3);
        QVERIFY(part.counts == counts);
    }
    void refused_data() {
        QTest::addColumn<std::vector<std::uint8_t>>("payload");
        QTest::addColumn<QString>("reason");
        QTest::newRow("no epoch") << std::vector<std::uint8_t>{0, 0, 1} << "shorter than its epoch";
        QTest::newRow("an array") << bytes(0, "[1, 2]") << "not an object";
        QTest::newRow("invalid") << bytes(0, "{\"count\": }") << "node 1";
        QTest::newRow("empty JSON") << bytes(0, "") << "node 1";
        QTest::newRow("too deep") << bytes(0, std::string(100000, '[') + std::string(100000, ']')) << "node 1";
    }
    void refused() {
        QFETCH(std::vector<std::uint8_t>, payload);
        QFETCH(QString, reason);
        try {
            (void)parse_evaluation(payload, "node 1");
            QFAIL("accepted");
        } catch (const thresher::Error& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(reason), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestEvaluationPayload)
#include "test_evaluation_payload.moc"
