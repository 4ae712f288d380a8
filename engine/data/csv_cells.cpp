// CSV cells with std::from_chars: locale-independent (a German locale would otherwise read "1.5"
// as 1) and allocation-free per cell. Quoted cells are unwrapped but may not contain the
// delimiter: these readers are for numeric tables, not general CSV.
#include "data/csv_cells.h"

#include "core/error.h"

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace thresher::data::csv {

std::string_view trim(std::string_view s, char delimiter) {
    auto blank = [&](char c) { return (c == ' ' || c == '\t' || c == '\r') && c != delimiter; };
    while (!s.empty() && blank(s.front())) s.remove_prefix(1);
    while (!s.empty() && blank(s.back())) s.remove_suffix(1);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return s;
}

bool is_blank(std::string_view line) {
    return std::all_of(line.begin(), line.end(),
                       [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

void split(std::string_view line, char delimiter, std::vector<std::string_view>& cells) {
    cells.clear();
    std::size_t start = 0;
    while (true) {
        const std::size_t end = line.find(delimiter, start);
        if (end == std::string_view::npos) {
            cells.push_back(trim(line.substr(start), delimiter));
            return;
        }
        cells.push_back(trim(line.substr(start, end - start), delimiter));
        start = end + 1;
    }
}

std::string_view skip_bom(std::string_view text) {
    if (text.size() >= 3 && std::memcmp(text.data(), "\xEF\xBB\xBF", 3) == 0) text.remove_prefix(3);
    return text;
}

NumberStatus parse_number(std::string_view cell, double& value) {
    if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);  // from_chars rejects '+'
    if (cell.empty()) return NumberStatus::not_a_number;
    const auto [ptr, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (ptr != cell.data() + cell.size()) return NumberStatus::not_a_number;
    if (ec == std::errc::result_out_of_range) return NumberStatus::not_finite;
    if (ec != std::errc()) return NumberStatus::not_a_number;
    if (!std::isfinite(value) || std::fabs(value) > FLT_MAX) return NumberStatus::not_finite;
    return NumberStatus::ok;
}

std::string quoted(std::string_view cell) {
    constexpr std::size_t kShown = 40;
    std::string s = "\"";
    s.append(cell.substr(0, kShown));
    if (cell.size() > kShown) s += "...";
    return s + "\"";
}

std::string place(const std::string& name, std::size_t line, std::size_t column) {
    return name + ": line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
}

std::string read_file(const std::string& path, const char* expected) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw DataError(path + ": cannot open: is a directory, expected " + expected);
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int err = errno;
        throw DataError(path + ": cannot open: " + (err ? std::strerror(err) : "unknown error"));
    }
    std::ostringstream buf;
    buf << in.rdbuf();
    if (in.bad()) throw DataError(path + ": read error");
    return std::move(buf).str();
}

}  // namespace thresher::data::csv
