// Sequence CSVs: every file is parsed into a table (rows with their line numbers) first, so the
// sequence length T, the feature count and the class count are known over all files, train and
// test, before one padded row is allocated; that allocation is checked against the memory budget.
#include "data/sequence_csv.h"

#include "core/error.h"
#include "data/csv_cells.h"
#include "data/memory_budget.h"
#include "data/sequence_pack.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

namespace thresher::data {

namespace fs = std::filesystem;

namespace {

// One file's sequence: its steps and, for a labels file, its label rows.
struct Sequence {
    Table features;
    std::optional<Table> labels;  // none: the label is a column of `features`
    std::size_t label_col = 0;    // column mode: which column of `features`
};

std::size_t resolve_label_column(const Table& t, int label_column) {
    if (t.columns < 2)
        throw DataError(csv::place(t.name, t.lines.front(), 1) + "found " + std::to_string(t.columns) +
                        " column; with the label in a column a sequence file needs at least 2 (features and the label)");
    const long long col = label_column < 0 ? static_cast<long long>(t.columns) + label_column : label_column;
    if (col < 0 || col >= static_cast<long long>(t.columns))
        throw DataError(csv::place(t.name, t.lines.front(), 1) + "label column " + std::to_string(label_column) +
                        " is out of range for " + std::to_string(t.columns) + " columns");
    return static_cast<std::size_t>(col);
}

std::vector<Sequence> parse_all(const std::vector<SequenceText>& texts, const SequenceCsvOptions& o) {
    std::vector<Sequence> out;
    out.reserve(texts.size());
    for (const auto& t : texts) {
        Sequence s{parse_table(t.features, t.features_name, o.header, o.delimiter), std::nullopt, 0};
        if (t.labels_name.empty())
            s.label_col = resolve_label_column(s.features, o.label_column);
        else
            s.labels = parse_table(t.labels, t.labels_name, o.header, o.delimiter);
        out.push_back(std::move(s));
    }
    return out;
}

// What the sequences of one data set (train and test together) have in common.
struct Plan {
    bool per_step = false;
    std::size_t steps = 0;     // T
    std::size_t features = 0;  // C
    std::size_t classes = 0;   // K per step (classification: the class count; regression: columns)
};

std::size_t feature_columns(const Sequence& s) { return s.labels ? s.features.columns : s.features.columns - 1; }

// Checks one label cell (classification) and returns the class.
int class_label(const Table& t, std::size_t row, std::size_t col, const SequenceCsvOptions& o) {
    const float v = t.values[row * t.columns + col];
    return check_class_label(v, t.name, t.lines[row], col + 1, o.num_classes);
}

void plan_sequences(const std::vector<Sequence>& seqs, const SequenceCsvOptions& o, Plan& p, int& max_label) {
    for (const auto& s : seqs) {
        const std::size_t c = feature_columns(s);
        if (p.features == 0) p.features = c;
        if (c != p.features)
            throw DataError(csv::place(s.features.name, s.features.lines.front(), 1) + std::to_string(c) +
                            " features per step, but the sequences before it have " + std::to_string(p.features));
        const std::size_t len = s.features.rows();
        if (o.max_steps <= 0) p.steps = std::max(p.steps, len);
        if (!s.labels) {
            if (!o.classification) {
                // A label column is one target per step; labels files beside it must agree.
                if (p.classes == 0) p.classes = 1;
                if (p.classes != 1)
                    throw DataError(csv::place(s.features.name, s.features.lines.front(), s.label_col + 1) +
                                    "one target column, but the labels files before it have " + std::to_string(p.classes));
                continue;
            }
            for (std::size_t r = 0; r < len; ++r) max_label = std::max(max_label, class_label(s.features, r, s.label_col, o));
            continue;
        }
        const Table& l = *s.labels;
        if (o.classification && l.columns != 1)
            throw DataError(csv::place(l.name, l.lines.front(), 2) + "a class label file has one column; found " +
                            std::to_string(l.columns));
        if (!o.classification) {
            if (p.classes == 0) p.classes = l.columns;
            if (l.columns != p.classes)
                throw DataError(csv::place(l.name, l.lines.front(), 1) + std::to_string(l.columns) +
                                " target columns, but the labels files before it have " + std::to_string(p.classes));
        }
        if (p.per_step && l.rows() > len)
            throw DataError(csv::place(l.name, l.lines[len], 1) + std::to_string(l.rows()) + " label rows for a sequence of " +
                            std::to_string(len) + " steps (" + s.features.name + ")");
        if (!p.per_step && l.rows() != 1)
            throw DataError(csv::place(l.name, l.lines[1], 1) + "a per-sequence label is one row; found " +
                            std::to_string(l.rows()) + " (per-step labels need a model with a per-step output)");
        if (o.classification)
            for (std::size_t r = 0; r < l.rows(); ++r) max_label = std::max(max_label, class_label(l, r, 0, o));
    }
}

// Per step when asked, when the label is a column (DL4J's one-reader form), or when a labels
// file has more than one row.
bool decide_per_step(const std::vector<Sequence>& seqs, SequenceLabels mode) {
    if (mode != SequenceLabels::automatic) return mode == SequenceLabels::per_step;
    return std::any_of(seqs.begin(), seqs.end(), [](const Sequence& s) { return !s.labels || s.labels->rows() > 1; });
}

Dataset pack(const std::vector<Sequence>& seqs, const Plan& p, const SequenceCsvOptions& o, std::string name) {
    const std::size_t n = seqs.size(), T = p.steps, C = p.features, K = p.classes;
    std::uint64_t input_bytes = 0;
    for (const auto& s : seqs) input_bytes += s.features.text_bytes + (s.labels ? s.labels->text_bytes : 0);
    SequenceRows rows(std::move(name), n, T, C, p.per_step, o.classification, K, input_bytes);
    for (std::size_t i = 0; i < n; ++i) {
        const Sequence& s = seqs[i];
        const Table& f = s.features;
        const std::size_t len = f.rows();
        std::size_t first = 0;  // the first kept step
        if (len > T) {
            if (!o.truncate)
                throw DataError(csv::place(f.name, f.lines[T], 1) + "the sequence has " + std::to_string(len) +
                                " steps, more than the " + std::to_string(T) +
                                " the model takes (max_steps); shorten it, or ask for truncation");
            first = o.align == SequenceAlign::end ? len - T : 0;
        }
        const std::size_t kept = std::min(len, T);
        float* row = rows.begin_sample(i, kept);
        for (std::size_t k = 0; k < kept; ++k) {
            const float* src = f.values.data() + (first + k) * f.columns;
            float* dst = row + k * C;
            for (std::size_t c = 0, d = 0; c < f.columns; ++c)
                if (s.labels || c != s.label_col) dst[d++] = src[c];
        }
        // Label rows and the (untruncated) step each belongs to.
        const Table& lt = s.labels ? *s.labels : f;
        const std::size_t lcol = s.labels ? 0 : s.label_col;
        auto put = [&](std::size_t label_row, std::size_t step) {
            const float* v = lt.values.data() + label_row * lt.columns;
            if (o.classification)
                rows.set_class(i, step, static_cast<int>(v[lcol]));
            else if (s.labels)
                rows.set_targets(i, step, v);
            else
                rows.set_targets(i, step, v + lcol);
        };
        if (!p.per_step) {
            const std::size_t r = s.labels ? 0 : (o.align == SequenceAlign::end ? len - 1 : 0);
            put(r, 0);
            continue;
        }
        const std::size_t m = lt.rows();
        const std::size_t offset = o.align == SequenceAlign::end ? len - m : 0;  // m <= len (plan)
        for (std::size_t r = 0; r < m; ++r) {
            const std::size_t step = offset + r;
            if (step >= first && step < first + kept) put(r, step - first);
        }
    }
    return rows.finish();
}

}  // namespace

Dataset parse_sequences(const std::vector<SequenceText>& texts, const SequenceCsvOptions& o) {
    if (texts.empty()) throw DataError("no sequences: a sequence data set needs at least one file");
    const auto seqs = parse_all(texts, o);
    Plan p;
    p.per_step = decide_per_step(seqs, o.labels);
    if (o.max_steps > 0) p.steps = static_cast<std::size_t>(o.max_steps);
    int max_label = -1;
    plan_sequences(seqs, o, p, max_label);
    if (o.classification) p.classes = o.num_classes > 0 ? o.num_classes : std::max(max_label + 1, 2);
    if (!o.classification && p.classes == 0) p.classes = 1;  // a label column: one target
    return pack(seqs, p, o, texts.front().features_name);
}

namespace {

// Regular files of `dir` not starting with ".", numbered names numerically first.
std::vector<std::string> sequence_files(const fs::path& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) throw DataError(dir.string() + ": cannot list the folder: " + ec.message());
    for (const auto& e : it) {
        const std::string n = e.path().filename().string();
        if (!n.empty() && n[0] != '.' && e.is_regular_file(ec)) names.push_back(n);
    }
    auto number = [](const std::string& n) -> std::optional<unsigned long long> {
        const std::string stem = fs::path(n).stem().string();
        if (stem.empty() || stem.size() > 18 || !std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return std::nullopt;
        return std::stoull(stem);
    };
    std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
        const auto x = number(a), y = number(b);
        if (x && y && *x != *y) return *x < *y;
        if (x.has_value() != y.has_value()) return x.has_value();
        return a < b;
    });
    if (names.empty()) throw DataError(dir.string() + ": no sequence files in the folder (one CSV per sequence)");
    return names;
}

struct FolderTexts {
    std::vector<std::string> storage;  // owns the bytes the views point at
    std::vector<SequenceText> texts;
};

FolderTexts read_folder(const fs::path& root) {
    const fs::path fdir = root / "features", ldir = root / "labels";
    std::error_code ec;
    const bool has_labels = fs::is_directory(ldir, ec);
    const auto names = sequence_files(fdir);
    FolderTexts out;
    out.storage.reserve(names.size() * 2);
    if (has_labels) {
        const auto labels = sequence_files(ldir);
        for (const auto& l : labels)
            if (std::find(names.begin(), names.end(), l) == names.end())
                throw DataError((ldir / l).string() + ": a labels file without a features file " + (fdir / l).string());
    }
    for (const auto& n : names) {
        SequenceText t;
        t.features_name = (fdir / n).string();
        out.storage.push_back(csv::read_file(t.features_name, "a sequence CSV file"));
        if (has_labels) {
            t.labels_name = (ldir / n).string();
            if (!fs::is_regular_file(t.labels_name, ec))
                throw DataError(t.features_name + ": no labels file " + t.labels_name);
            out.storage.push_back(csv::read_file(t.labels_name, "a labels CSV file"));
        }
        out.texts.push_back(std::move(t));
    }
    // Views into storage only now: it no longer grows.
    for (std::size_t i = 0, k = 0; i < out.texts.size(); ++i) {
        out.texts[i].features = out.storage[k++];
        if (has_labels) out.texts[i].labels = out.storage[k++];
    }
    return out;
}

}  // namespace

bool is_sequence_folder(const std::string& dir) {
    std::error_code ec;
    const fs::path root(dir);
    return fs::is_directory(root / "features", ec) || fs::is_directory(root / "train" / "features", ec);
}

DataSplit load_sequence_folder(const std::string& dir, const SequenceCsvOptions& o) {
    const fs::path root(dir);
    std::error_code ec;
    const bool split_layout = !fs::is_directory(root / "features", ec);
    const FolderTexts train = read_folder(split_layout ? root / "train" : root);
    std::optional<FolderTexts> test;
    if (split_layout && fs::is_directory(root / "test" / "features", ec)) test = read_folder(root / "test");

    // One plan over train and test: the same T, feature count, classes and label mode.
    const auto train_seqs = parse_all(train.texts, o);
    const auto test_seqs = test ? parse_all(test->texts, o) : std::vector<Sequence>{};
    std::vector<const std::vector<Sequence>*> sets{&train_seqs};
    if (test) sets.push_back(&test_seqs);
    Plan p;
    p.per_step = decide_per_step(train_seqs, o.labels) || (test && decide_per_step(test_seqs, o.labels));
    if (o.max_steps > 0) p.steps = static_cast<std::size_t>(o.max_steps);
    int max_label = -1;
    for (const auto* s : sets) plan_sequences(*s, o, p, max_label);
    if (o.classification) p.classes = o.num_classes > 0 ? o.num_classes : std::max(max_label + 1, 2);
    if (!o.classification && p.classes == 0) p.classes = 1;

    DataSplit split;
    split.train = pack(train_seqs, p, o, (split_layout ? root / "train" : root).string());
    if (test) {
        split.has_test = true;
        split.test = pack(test_seqs, p, o, (root / "test").string());
    }
    return split;
}

}  // namespace thresher::data
