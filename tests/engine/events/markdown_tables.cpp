#include "markdown_tables.h"

#include <fstream>

namespace events_fixture {

namespace {

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

Row cells(const std::string& line) {
    Row out;
    std::string cell;
    bool in_code = false;
    for (std::size_t i = 1; i < line.size(); ++i) {  // past the leading '|'
        const char c = line[i];
        if (c == '`') in_code = !in_code;
        if (c == '|' && !in_code) {
            out.push_back(trim(cell));
            cell.clear();
        } else {
            cell += c;
        }
    }
    return out;
}

int heading_level(const std::string& line) {
    std::size_t n = 0;
    while (n < line.size() && line[n] == '#') ++n;
    return n > 0 && n < line.size() && line[n] == ' ' ? static_cast<int>(n) : 0;
}

}  // namespace

std::vector<Table> markdown_tables(const std::string& path, const std::string& section) {
    std::ifstream in(path);
    std::vector<Table> tables;
    bool inside = section.empty();
    int level = 0;
    bool in_table = false;
    for (std::string line; std::getline(in, line);) {
        if (const int h = heading_level(line)) {
            if (!section.empty()) {
                if (!inside && line.find(section) != std::string::npos) {
                    inside = true;
                    level = h;
                } else if (inside && h <= level) {
                    break;
                }
            }
            in_table = false;
            continue;
        }
        if (!inside) continue;
        if (line.rfind("|", 0) != 0) {
            in_table = false;
            continue;
        }
        if (line.find("---") != std::string::npos && line.find_first_not_of("|-: ") == std::string::npos) continue;
        if (!in_table) tables.emplace_back();
        in_table = true;
        tables.back().push_back(cells(line));
    }
    return tables;
}

std::vector<std::string> code_spans(const std::string& cell) {
    std::vector<std::string> out;
    int depth = 0;
    for (std::size_t i = 0; i < cell.size(); ++i) {
        if (cell[i] == '(') ++depth;
        if (cell[i] == ')' && depth > 0) --depth;
        if (cell[i] != '`') continue;
        const auto end = cell.find('`', i + 1);
        if (end == std::string::npos) break;
        if (depth == 0) out.push_back(cell.substr(i + 1, end - i - 1));
        i = end;
    }
    return out;
}

}  // namespace events_fixture
