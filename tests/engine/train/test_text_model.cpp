// A character model on real English: the char_lstm template (embedding, LSTM over 64 steps,
// a softmax per step) trained on the GPL-3 text Debian ships in every installation
// (/usr/share/common-licenses/GPL-3, base-files) must predict the held-out tail's next characters
// clearly better than the characters' own frequencies do (the unigram cross-entropy, computed here
// from the text, not by the engine). Then text is sampled from it (train/text_sampling.h): greedy
// draws are the argmax chain, seeds repeat, temperature reshapes the probabilities as documented,
// and what it writes has English's character frequencies. A fixed number of iterations, no clock.
#include <QtTest>

#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "backend/registry.h"
#include "config/model_config.h"
#include "core/error.h"
#include "data/text_corpus.h"
#include "nn/network.h"
#include "source_dir.h"
#include "train/evaluation.h"
#include "train/text_sampling.h"

using namespace thresher;

namespace {

constexpr char kText[] = "/usr/share/common-licenses/GPL-3";

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

class TestTextModel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void learns_english_below_unigram_entropy();
    void greedy_sampling_is_the_argmax_chain();
    void seeds_repeat_and_differ();
    void sampled_text_has_english_frequencies();
    void temperature_reshapes_probabilities_data();
    void temperature_reshapes_probabilities();
    void refusals();

private:
    std::unique_ptr<backend::Backend> backend_;
    std::unique_ptr<nn::Network> net_;
    data::DataSplit split_;
    std::u32string text_;
};

void TestTextModel::initTestCase() {
    const auto raw = read_file(kText);
    QVERIFY2(raw.size() > 30000, "GPL-3 from Debian's base-files is missing");
    text_ = data::decode_utf8(raw, kText);
    auto config = config::ModelConfig::from_json(
        nlohmann::json::parse(read_file((test_support::source_dir() + "/resources/models/char_lstm.json").toStdString())),
        "char_lstm.json");
    data::TextCorpusOptions o;
    o.steps = config.input.t;
    o.one_hot = false;  // the template reads ids through its embedding
    o.stride = 16;
    o.classes = config.main_output().units;
    split_ = data::read_text_corpus(kText, o);
    QVERIFY(split_.has_test);
    backend_ = backend::create_backend("cpu", {2});
    net_ = std::make_unique<nn::Network>(config, *backend_);
    // Batches of windows in a seeded random order, as training shuffles them (consecutive windows
    // overlap: in text order a batch would be one stretch of the text).
    const auto& train = split_.train;
    const int batch = 32, iterations = 200;
    const std::size_t row = train.shape.size(), width = train.target_size;
    std::vector<std::size_t> order(train.count);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937 rng(5);
    std::vector<float> x(batch * row), t(batch * width);
    std::size_t next = order.size();
    for (int it = 0; it < iterations; ++it) {
        for (int b = 0; b < batch; ++b, ++next) {
            if (next == order.size()) std::shuffle(order.begin(), order.end(), rng), next = 0;
            std::copy_n(train.features.data() + order[next] * row, row, x.data() + static_cast<std::size_t>(b) * row);
            std::copy_n(train.targets.data() + order[next] * width, width, t.data() + static_cast<std::size_t>(b) * width);
        }
        net_->compute_gradients(x.data(), t.data(), batch, static_cast<std::uint64_t>(it));
        net_->compute_update(it);
        net_->apply_update();
    }
}

void TestTextModel::learns_english_below_unigram_entropy() {
    // The unigram model: each character's frequency in the first 90% (the engine's train part),
    // scored on the last 10% as the engine's per-step loss scores it (nats per character).
    const std::size_t cut = text_.size() - static_cast<std::size_t>(static_cast<double>(text_.size()) * 0.1);
    std::map<char32_t, double> counts;
    for (std::size_t i = 0; i < cut; ++i) counts[text_[i]] += 1;
    double unigram = 0;
    std::size_t scored = 0;
    for (std::size_t i = cut + 1; i < text_.size(); ++i, ++scored) {
        const auto it = counts.find(text_[i]);
        unigram -= std::log((it == counts.end() ? 0.5 : it->second) / static_cast<double>(cut));
    }
    unigram /= static_cast<double>(scored);
    const auto r = train::evaluate(*net_, split_.test, 64);
    qInfo("held-out loss %.3f nats/char against the unigram cross-entropy %.3f (%.0f%%), next-character accuracy %.3f",
          r.loss, unigram, 100 * r.loss / unigram, r.classification->accuracy());
    QVERIFY(unigram > 3.0);  // English letters: about 4.5 bits
    QVERIFY2(r.loss < 0.75 * unigram, qPrintable(QString("loss %1 vs unigram %2").arg(r.loss).arg(unigram)));
}

void TestTextModel::greedy_sampling_is_the_argmax_chain() {
    // A prime longer than the window, so the window slides from the first draw.
    std::string prime = "This License applies to any program or other work which contains a notice placed by the owner";
    train::TextSampleOptions o;
    o.prime = prime;
    o.length = 40;
    o.temperature = 0;
    const auto s = train::sample_text(*net_, split_.vocabulary, o);
    QCOMPARE(s.prime, prime);
    // The chain by hand: the ids of the last 64 characters, the per-step output's last row.
    const auto& vocab = split_.vocabulary;
    std::string text = prime, expected;
    const auto& cfg = net_->config();
    const int T = cfg.input.t, K = cfg.output_size();
    for (int k = 0; k < o.length; ++k) {
        const auto chars = data::decode_utf8(text, "chain");
        const std::size_t L = std::min<std::size_t>(chars.size(), static_cast<std::size_t>(T));
        std::vector<float> x(cfg.input_size(), 0.f), y(cfg.target_size());
        x[0] = static_cast<float>(L);
        for (std::size_t i = 0; i < L; ++i) {
            const auto c = data::encode_utf8(chars[chars.size() - L + i]);
            x[1 + i] = static_cast<float>(std::find(vocab.begin(), vocab.end(), c) - vocab.begin());
        }
        net_->predict(x.data(), 1, y.data());
        const float* p = y.data() + (L - 1) * static_cast<std::size_t>(K);
        const auto best = std::max_element(p, p + vocab.size()) - p;
        text += vocab[static_cast<std::size_t>(best)];
        expected += vocab[static_cast<std::size_t>(best)];
    }
    qInfo("greedy: \"%s\"", s.text.c_str());
    QCOMPARE(s.text, expected);
}

void TestTextModel::seeds_repeat_and_differ() {
    train::TextSampleOptions o;
    o.prime = "the ";
    o.length = 120;
    o.seed = 7;
    const auto a = train::sample_text(*net_, split_.vocabulary, o);
    const auto b = train::sample_text(*net_, split_.vocabulary, o);
    QCOMPARE(a.text, b.text);
    o.seed = 8;
    const auto c = train::sample_text(*net_, split_.vocabulary, o);
    QVERIFY(a.text != c.text);
    // No prime: one character drawn from the vocabulary, reported as the prime.
    o.prime.clear();
    const auto d = train::sample_text(*net_, split_.vocabulary, o);
    QVERIFY(std::find(split_.vocabulary.begin(), split_.vocabulary.end(), d.prime) != split_.vocabulary.end());
}

void TestTextModel::sampled_text_has_english_frequencies() {
    // 3000 characters at temperature 1: the share of spaces and of 'e' (GPL-3: about 16% and 10%)
    // come out near the text's, which an untrained model (uniform over 76 characters) would not.
    train::TextSampleOptions o;
    o.prime = "You may ";
    o.length = 3000;
    o.seed = 3;
    const auto s = train::sample_text(*net_, split_.vocabulary, o);
    const auto drawn = data::decode_utf8(s.text, "sample");
    auto share = [](const std::u32string& t, char32_t c) {
        return static_cast<double>(std::count(t.begin(), t.end(), c)) / static_cast<double>(t.size());
    };
    qInfo("spaces %.3f (text %.3f), e %.3f (text %.3f): \"%s\"", share(drawn, U' '), share(text_, U' '), share(drawn, U'e'),
          share(text_, U'e'), s.text.substr(0, 160).c_str());
    QVERIFY(std::abs(share(drawn, U' ') - share(text_, U' ')) < 0.04);
    QVERIFY(std::abs(share(drawn, U'e') - share(text_, U'e')) < 0.03);
}

void TestTextModel::temperature_reshapes_probabilities_data() {
    QTest::addColumn<double>("temperature");
    QTest::newRow("1: as given") << 1.0;
    QTest::newRow("0.5: sharper") << 0.5;
    QTest::newRow("2: flatter") << 2.0;
    QTest::newRow("0: greedy") << 0.0;
}

void TestTextModel::temperature_reshapes_probabilities() {
    QFETCH(double, temperature);
    const std::vector<float> p{0.05f, 0.5f, 0.3f, 0.15f, 0.0f};
    std::vector<double> expected(p.size());
    double sum = 0;
    for (std::size_t i = 0; i < p.size(); ++i) sum += expected[i] = temperature == 0 ? (i == 1) : std::pow(p[i], 1 / temperature);
    std::mt19937_64 rng(11);
    const int draws = 40000;
    std::vector<int> seen(p.size());
    for (int k = 0; k < draws; ++k) ++seen[static_cast<std::size_t>(train::draw_character(p.data(), p.size(), temperature, rng))];
    for (std::size_t i = 0; i < p.size(); ++i) {
        const double want = expected[i] / sum, got = static_cast<double>(seen[i]) / draws;
        // Five standard deviations of a binomial share over 40000 draws, and never a zero-probability class.
        const double slack = 5 * std::sqrt(want * (1 - want) / draws) + 1e-9;
        QVERIFY2(std::abs(got - want) <= slack, qPrintable(QString("class %1: %2 drawn, %3 expected").arg(i).arg(got).arg(want)));
    }
}

void TestTextModel::refusals() {
    train::TextSampleOptions o;
    o.prime = "ab\xce\xa9";  // Ω: not in GPL-3
    auto message = [&](nn::Network& net, const std::vector<std::string>& vocab) -> QString {
        try {
            train::sample_text(net, vocab, o);
        } catch (const Error& e) {
            return QString::fromUtf8(e.what());
        }
        return {};
    };
    QVERIFY2(message(*net_, split_.vocabulary).contains("character 3 of the prime (\"\xce\xa9\", U+03A9) is not in the model's vocabulary"),
             qPrintable(message(*net_, split_.vocabulary)));
    o.prime = "ab";
    QVERIFY(message(*net_, {}).contains("has no character vocabulary"));
    o.prime = "\xff";
    QVERIFY2(message(*net_, split_.vocabulary).contains("invalid UTF-8"), qPrintable(message(*net_, split_.vocabulary)));
    o.prime = "ab";
    o.length = 0;
    QVERIFY(message(*net_, split_.vocabulary).contains("length 0 is outside"));
    o.length = 5;
    // Not a character model: flat input.
    const auto flat = config::ModelConfig::parse(
        R"({"input":{"size":4},"layers":[{"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})", "flat.json");
    nn::Network net(flat, *backend_);
    QVERIFY(message(net, {"a", "b", "c"}).contains("not a sequence of characters"));
}

QTEST_GUILESS_MAIN(TestTextModel)
#include "test_text_model.moc"
