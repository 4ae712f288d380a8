// The one JSON entry of the engine (parse_json_text) and the value summaries in its messages:
// depth is refused before anything recurses, and no message quotes more than a bounded piece of
// a value, however large or deep.
#include <QtTest>

#include "config/json_fields.h"
#include "core/error.h"

using namespace thresher;
using config::json_summary;
using config::parse_json_text;

namespace {
QString config_error(const std::function<void()>& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no ConfigError)";
}
}  // namespace

class TestJsonFields : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void depth_limit();
    void deep_text_is_refused_before_recursion();
    void brackets_in_strings_do_not_count();
    void summaries_are_bounded();
    void field_messages_quote_a_summary();
};

void TestJsonFields::depth_limit() {
    const std::string at_limit = std::string(config::kMaxJsonDepth, '[') + std::string(config::kMaxJsonDepth, ']');
    QVERIFY(parse_json_text(at_limit, "ok.json").is_array());
    std::string over = "[\n ";
    over.append(config::kMaxJsonDepth, '{');
    const QString msg = config_error([&] { parse_json_text(over, "deep.json"); });
    // The 65th opening bracket: line 2, column 65 (after one space and 63 '{').
    QCOMPARE(msg, QString("deep.json:2:65: invalid JSON: nested deeper than 64 levels"));
}

void TestJsonFields::deep_text_is_refused_before_recursion() {
    // 400 KB of '[' used to overflow the stack; mismatched closers are still the parser's to report.
    const std::string deep(400 * 1024, '[');
    QVERIFY(config_error([&] { parse_json_text(deep, "big.json"); }).startsWith("big.json:1:65: "));
    QVERIFY(config_error([&] { parse_json_text("]]]", "x.json"); }).startsWith("x.json:1:1: invalid JSON: parse error"));
}

void TestJsonFields::brackets_in_strings_do_not_count() {
    const std::string s = "{\"a\": \"" + std::string(200, '[') + "\\\"" + std::string(200, '{') + "\"}";
    const auto j = parse_json_text(s, "s.json");
    QCOMPARE(j.at("a").get<std::string>().size(), std::size_t{401});
}

void TestJsonFields::summaries_are_bounded() {
    nlohmann::json big = nlohmann::json::array();
    for (int i = 0; i < 100000; ++i) big.push_back(i);
    const std::string s = json_summary(big);
    QVERIFY2(s.size() <= 83 && s.rfind("[0,1,2,3,", 0) == 0 && s.ends_with("..."), s.c_str());

    nlohmann::json deep = 1;
    for (int i = 0; i < 60; ++i) deep = nlohmann::json::array({deep});
    QCOMPARE(json_summary(deep), std::string("[[[[...]]]]"));

    QCOMPARE(json_summary(nlohmann::json{{"k", "v"}}), std::string("{\"k\":\"v\"}"));
    QCOMPARE(json_summary(nlohmann::json(2.5)), std::string("2.5"));
    // A long string is cut at a whole UTF-8 character.
    std::string text;
    for (int i = 0; i < 100; ++i) text += "\xC3\xA9";  // é
    const std::string cut = json_summary(nlohmann::json(text));
    QVERIFY(cut.size() <= 83);
    QVERIFY(nlohmann::json::accept("\"" + cut.substr(1, cut.size() - 4) + "\""));
}

void TestJsonFields::field_messages_quote_a_summary() {
    nlohmann::json big = nlohmann::json::object();
    big["units"] = nlohmann::json::array();
    for (int i = 0; i < 100000; ++i) big["units"].push_back(i);
    config::JsonFields f(big, "m.json", "layers[0]");
    const QString msg = config_error([&] { f.integer("units", 1, 100); });
    QVERIFY2(msg.startsWith("m.json: layers[0]: \"units\": must be an integer, got [0,1,2,"), qPrintable(msg));
    QVERIFY2(msg.size() < 160, qPrintable(msg));
}

QTEST_APPLESS_MAIN(TestJsonFields)
#include "test_json_fields.moc"
