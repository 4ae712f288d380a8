#include "layer_check.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>

#include "layer_rules.h"

namespace layering {
namespace fs = std::filesystem;
namespace {

bool is_source(const fs::path& p) {
    const auto ext = p.extension();
    return ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".cuh";
}

std::string_view skip_blanks(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    return s;
}

std::string join(const std::set<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
    return out;
}

std::string join(const std::vector<std::string>& items) {
    return join(std::set<std::string>(items.begin(), items.end()));
}

// The file a quoted include names, relative to root; nullopt when no file of the tree matches.
std::optional<std::string> resolve(const fs::path& root, const std::string& includer, const std::string& name) {
    std::vector<fs::path> candidates{fs::path(includer).parent_path() / name};
    for (const auto& r : include_roots()) candidates.push_back(fs::path(r) / name);
    for (const auto& c : candidates) {
        const fs::path rel = c.lexically_normal();
        if (!rel.empty() && *rel.begin() != ".." && fs::is_regular_file(root / rel)) return rel.generic_string();
    }
    return std::nullopt;
}

std::string where(const std::string& file, const IncludeLine& inc) {
    const std::string spelled = inc.angled ? "<" + inc.name + ">" : "\"" + inc.name + "\"";
    return file + ":" + std::to_string(inc.line) + ": #include " + spelled;
}

std::optional<std::string> judge_angled(const std::string& file, const std::string& layer, const IncludeLine& inc) {
    for (const auto& rule : header_rules()) {
        const bool here = std::ranges::any_of(rule.folders, [&](const auto& f) { return under(layer, f); });
        const bool named = std::ranges::any_of(rule.prefixes, [&](const auto& p) { return inc.name.starts_with(p); });
        if (here && named) return where(file, inc) + ": never " + rule.why;
    }
    return std::nullopt;
}

std::optional<std::string> judge_quoted(const fs::path& root, const std::string& file, const std::string& layer,
                                        const IncludeLine& inc) {
    const auto target = resolve(root, file, inc.name);
    if (!target)
        return where(file, inc) + ": names no file of the tree (looked beside " + file + " and in " +
               join(include_roots()) + "), so its layer is unknown";
    const auto to = layer_of(*target);
    const auto allowed = allowed_from(layer);
    if (to && allowed.contains(*to)) return std::nullopt;
    // A file in no layer may still sit in a folder a never rule names (engine/dist).
    const std::string reached = to.value_or(*target);
    if (const NeverRule* rule = broken_never_rule(layer, reached))
        return where(file, inc) + " reaches " + reached + ": never " + rule->why;
    if (!to) return where(file, inc) + " reaches " + *target + ", which is in no layer";
    return where(file, inc) + " reaches " + *to + ", which " + layer + " does not sit on (it may include " +
           join(allowed) + ")";
}

}  // namespace

std::vector<IncludeLine> read_includes(const fs::path& file) {
    std::vector<IncludeLine> out;
    std::ifstream in(file);
    std::string text;
    for (int n = 1; std::getline(in, text); ++n) {
        std::string_view s = skip_blanks(text);
        if (!s.starts_with('#')) continue;
        s = skip_blanks(s.substr(1));
        if (!s.starts_with("include")) continue;
        s = skip_blanks(s.substr(7));
        if (s.empty() || (s.front() != '"' && s.front() != '<')) continue;
        const char close = s.front() == '"' ? '"' : '>';
        const std::size_t end = s.find(close, 1);
        if (end == std::string_view::npos) continue;
        out.push_back({n, std::string(s.substr(1, end - 1)), close == '>'});
    }
    return out;
}

TreeReport check_tree(const fs::path& root, const std::vector<std::string>& top_folders) {
    TreeReport report;
    std::vector<std::string> files;
    for (const auto& top : top_folders) {
        if (!fs::is_directory(root / top)) continue;
        for (const auto& entry : fs::recursive_directory_iterator(root / top))
            if (entry.is_regular_file() && is_source(entry.path()))
                files.push_back(entry.path().lexically_relative(root).generic_string());
    }
    std::ranges::sort(files);
    for (const auto& file : files) {
        ++report.files;
        const auto layer = layer_of(file);
        if (!layer) {
            report.violations.push_back(file + ": in no layer of tests/layering/layer_rules.cpp (add its folder there)");
            continue;
        }
        for (const auto& inc : read_includes(root / file)) {
            ++report.includes;
            const auto v = inc.angled ? judge_angled(file, *layer, inc) : judge_quoted(root, file, *layer, inc);
            if (v) report.violations.push_back(*v);
        }
    }
    return report;
}

}  // namespace layering
