// Character corpora: UTF-8 code points as characters, the sorted vocabulary, windows with their
// next-character targets and lengths, the test tail, a given vocabulary, and the GPL-3 text that
// Debian ships as a real English book.
#include "data_error.h"
#include "core/error.h"
#include "data/data_source.h"
#include "data/text_corpus.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace thresher::data;
using test_support::data_error;

namespace {

TextCorpusOptions windows(int steps, int stride = 0, bool one_hot = true, double test = 0.0) {
    TextCorpusOptions o;
    o.steps = steps;
    o.stride = stride;
    o.one_hot = one_hot;
    o.test_fraction = test;
    return o;
}

constexpr const char* kGpl = "/usr/share/common-licenses/GPL-3";

}  // namespace

class TestTextCorpus : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void smallTextOneHot();
    void idsAndStride();
    void utf8CodePoints();
    void invalidUtf8_data();
    void invalidUtf8();
    void givenVocabulary();
    void gpl3();
    void errors();
    void dataSourceTxt();
    void moreClassesThanCharacters();
};

// A model that predicts more classes per step than the text has characters (a template sized for
// 128) reads it: the targets are one-hot over all of them, the next character's class set; fewer
// classes than characters is refused naming both counts.
void TestTextCorpus::moreClassesThanCharacters() {
    TextCorpusOptions o = windows(2);
    o.classes = 5;
    const DataSplit s = parse_text_corpus("abcab", "t.txt", o);
    QCOMPARE(s.train.target_size, std::size_t(2 * 5));
    QCOMPARE(s.train.shape.size(), std::size_t(1 + 2 * 3));  // features: still the text's 3 characters
    // Window "ab" -> targets "bc": b is class 1, c class 2, over 5 classes per step.
    const std::vector<float> first(s.train.targets.begin(), s.train.targets.begin() + 10);
    QCOMPARE(first, (std::vector<float>{0, 1, 0, 0, 0, 0, 0, 1, 0, 0}));
    o.classes = 2;
    const QString msg = data_error([&] { parse_text_corpus("abcab", "t.txt", o); });
    QVERIFY2(msg.contains("t.txt: the text has 3 distinct characters, but the model predicts 2 per step"), qPrintable(msg));
}

void TestTextCorpus::dataSourceTxt() {
    // --data book.txt: a .txt file is a corpus; its windows come from options.text (the model).
    QTemporaryDir dir;
    const std::string p = dir.filePath("book.TXT").toStdString();
    std::ofstream(p, std::ios::binary) << "to be, or not to be.";
    DataOptions options;
    options.text = windows(4, 0, true, 0.1);
    const DataSplit s = load_data(p, options);
    QCOMPARE(s.vocabulary, (std::vector<std::string>{" ", ",", ".", "b", "e", "n", "o", "r", "t"}));
    QCOMPARE(s.train.steps, 4);
    QVERIFY(s.has_test);  // 10% of 20 characters: "e."
    QCOMPARE(s.test.count, std::size_t{1});
}

void TestTextCorpus::smallTextOneHot() {
    // "abcab": vocabulary a b c; windows of 2 from 0 and 2: "ab"->"bc", "ca"->"ab"; "b" at 4 has no
    // next character, so no third window.
    const DataSplit s = parse_text_corpus("abcab", "t.txt", windows(2));
    QCOMPARE(s.vocabulary, (std::vector<std::string>{"a", "b", "c"}));
    const Dataset& ds = s.train;
    QVERIFY(!s.has_test);
    QCOMPARE(ds.count, std::size_t{2});
    QCOMPARE(ds.steps, 2);
    QCOMPARE(ds.step_features, 3);
    QCOMPARE(ds.target_steps, 2);
    QCOMPARE(ds.num_classes, 3);
    QCOMPARE(ds.features, (std::vector<float>{2, 1, 0, 0, 0, 1, 0, /**/ 2, 0, 0, 1, 1, 0, 0}));
    QCOMPARE(ds.targets, (std::vector<float>{0, 1, 0, 0, 0, 1, /**/ 1, 0, 0, 0, 1, 0}));
    QCOMPARE(ds.labels, (std::vector<std::int32_t>{1, 2, 0, 1}));
}

void TestTextCorpus::idsAndStride() {
    // Windows of 3 from 0, 3, 6; the one at 6 ("g" -> "h") is 1 step long.
    DataSplit s = parse_text_corpus("abcdefgh", "t.txt", windows(3, 0, false));
    QCOMPARE(s.train.step_features, 1);
    QCOMPARE(s.train.count, std::size_t{3});
    QCOMPARE(s.train.features, (std::vector<float>{3, 0, 1, 2, /**/ 3, 3, 4, 5, /**/ 1, 6, 0, 0}));
    QCOMPARE(s.train.labels, (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6, 7, -1, -1}));
    // Stride 2: starts 0 and 2; the window at 2 reaches the end ("cde" -> "def"), so none after it.
    s = parse_text_corpus("abcdef", "t.txt", windows(3, 2, false));
    QCOMPARE(s.train.count, std::size_t{2});
    QCOMPARE(s.train.features, (std::vector<float>{3, 0, 1, 2, /**/ 3, 2, 3, 4}));
    // A quarter of "abcdefgh" as the test tail: train "abcdef", test "gh" (one window, 1 step).
    s = parse_text_corpus("abcdefgh", "t.txt", windows(3, 0, false, 0.25));
    QVERIFY(s.has_test);
    QCOMPARE(s.train.count, std::size_t{2});
    QCOMPARE(s.test.features, (std::vector<float>{1, 6, 0, 0}));
    QCOMPARE(s.test.labels, (std::vector<std::int32_t>{7, -1, -1}));
}

void TestTextCorpus::utf8CodePoints() {
    // é and ö are one character each (two bytes); € three bytes, 𝄞 four; "\r\n" reads as "\n".
    const DataSplit s = parse_text_corpus("\xEF\xBB\xBFh\xC3\xA9\r\n\xE2\x82\xAC\xF0\x9D\x84\x9E\xC3\xB6", "u.txt", windows(5));
    QCOMPARE(s.vocabulary, (std::vector<std::string>{"\n", "h", "\xC3\xA9", "\xC3\xB6", "\xE2\x82\xAC", "\xF0\x9D\x84\x9E"}));
    QCOMPARE(s.train.count, std::size_t{1});
    QCOMPARE(s.train.labels, (std::vector<std::int32_t>{2, 0, 4, 5, 3}));
    QCOMPARE(decode_utf8("a\xC3\xA9", "x").size(), std::size_t{2});
    for (char32_t c : {U'a', U'\u00e9', U'\u20ac', U'\U0001D11E'}) QCOMPARE(decode_utf8(encode_utf8(c), "x"), std::u32string(1, c));
}

void TestTextCorpus::invalidUtf8_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message");
    QTest::newRow("stray continuation") << QByteArray("ab\ncd\x80") << "b.txt: line 2, column 3: invalid UTF-8 (not a first byte) at byte 5, starting 0x80";
    QTest::newRow("truncated") << QByteArray("abc\xC3") << "b.txt: line 1, column 4: invalid UTF-8 (truncated sequence) at byte 3, starting 0xC3";
    QTest::newRow("overlong") << QByteArray("\xC0\xAF") << "b.txt: line 1, column 1: invalid UTF-8 (overlong form) at byte 0, starting 0xC0";
    QTest::newRow("surrogate") << QByteArray("x\xED\xA0\x80") << "b.txt: line 1, column 2: invalid UTF-8 (surrogate) at byte 1, starting 0xED";
    QTest::newRow("past 10FFFF") << QByteArray("\xF4\x90\x80\x80") << "b.txt: line 1, column 1: invalid UTF-8 (past U+10FFFF) at byte 0, starting 0xF4";
    QTest::newRow("missing continuation") << QByteArray("\xE2\x82x") << "b.txt: line 1, column 1: invalid UTF-8 (missing continuation byte) at byte 0, starting 0xE2";
}

void TestTextCorpus::invalidUtf8() {
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    const std::string t(text.constData(), static_cast<std::size_t>(text.size()));
    const QString e = data_error([&] { parse_text_corpus(t, "b.txt", windows(2)); });
    QVERIFY2(e.startsWith(message), qPrintable(e));
}

void TestTextCorpus::givenVocabulary() {
    TextCorpusOptions o = windows(2);
    o.vocabulary = {"c", "a", "b", "\n"};  // a saved model's order, not sorted: ids follow it
    const DataSplit s = parse_text_corpus("abca", "t.txt", o);
    QCOMPARE(s.vocabulary, o.vocabulary);
    QCOMPARE(s.train.labels, (std::vector<std::int32_t>{2, 0, 1, -1}));
    QCOMPARE(data_error([&] { parse_text_corpus("ab\nax", "t.txt", o); }),
             QString("t.txt: line 2, column 2: character \"x\" (U+0078) is not in the model's vocabulary of 4"));
}

void TestTextCorpus::gpl3() {
    std::ifstream in(kGpl, std::ios::binary);
    if (!in) QSKIP("no /usr/share/common-licenses/GPL-3 (base-files)");
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string text = buf.str();
    const DataSplit s = read_text_corpus(kGpl, windows(100, 0, true, 0.1));
    // The vocabulary: the distinct bytes of this ASCII text, sorted.
    std::string bytes = text;
    std::sort(bytes.begin(), bytes.end());
    bytes.erase(std::unique(bytes.begin(), bytes.end()), bytes.end());
    QCOMPARE(s.vocabulary.size(), bytes.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) QCOMPARE(s.vocabulary[i], std::string(1, bytes[i]));
    const std::size_t V = bytes.size();
    QVERIFY(V > 60 && V < 100);
    // A tenth of the characters is the test tail; windows of 100 (the last one shorter).
    const std::size_t n_test = text.size() / 10, n_train = text.size() - n_test;
    QVERIFY(s.has_test);
    QCOMPARE(s.train.count, (n_train - 1 + 99) / 100);
    QCOMPARE(s.test.count, (n_test - 1 + 99) / 100);
    QCOMPARE(s.train.step_features, int(V));
    // Every step: the feature is the character, the target the next one, in train and test.
    auto id = [&](char c) { return std::lower_bound(bytes.begin(), bytes.end(), c) - bytes.begin(); };
    for (const auto* part : {&s.train, &s.test}) {
        const std::size_t base = part == &s.train ? 0 : n_train;
        const std::size_t row = 1 + 100 * V;
        for (std::size_t i = 0; i < part->count; ++i) {
            const float* r = part->sample(i);
            const auto len = static_cast<std::size_t>(r[0]);
            QVERIFY(len >= 1 && len <= 100);
            for (std::size_t t = 0; t < len; ++t) {
                const std::size_t at = base + i * 100 + t;
                QCOMPARE(r[1 + t * V + static_cast<std::size_t>(id(text[at]))], 1.0f);
                QCOMPARE(part->labels[i * 100 + t], std::int32_t(id(text[at + 1])));
                QCOMPARE(part->targets[(i * 100 + t) * V + static_cast<std::size_t>(id(text[at + 1]))], 1.0f);
            }
            QCOMPARE(std::count(r + 1, r + row, 1.0f), std::ptrdiff_t(len));  // one-hot, zeros after len
        }
    }
    // One-hot with stride 1 over the book: T x V floats per character is too much for 35 KB.
    const QString e = data_error([&] { read_text_corpus(kGpl, windows(1000, 1, true)); });
    QVERIFY2(e.contains("would take") && e.contains("padded to 1000 steps"), qPrintable(e));
}

void TestTextCorpus::errors() {
    QCOMPARE(data_error([] { parse_text_corpus("a", "t.txt", windows(2)); }),
             QString("t.txt: line 1: the text has 1 character(s); next-character prediction needs at least 2"));
    QCOMPARE(data_error([] { parse_text_corpus("", "t.txt", windows(2)); }),
             QString("t.txt: line 1: the text has 0 character(s); next-character prediction needs at least 2"));
    QCOMPARE(data_error([] { parse_text_corpus("aaaa", "t.txt", windows(2)); }),
             QString("t.txt: the text has 1 distinct character; a classifier needs 2"));
    bool config_error = false;
    try {
        parse_text_corpus("abc", "t.txt", windows(0));
    } catch (const thresher::ConfigError&) {
        config_error = true;
    }
    QVERIFY(config_error);
}

QTEST_APPLESS_MAIN(TestTextCorpus)
#include "test_text_corpus.moc"
