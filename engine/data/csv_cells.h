// The cell-level pieces of CSV parsing, shared by the table reader (csv_reader.h) and the
// sequence readers (sequence_csv.h, token_csv.h), so every CSV Thresher reads splits, trims and
// parses numbers the same way and names a bad cell the same way.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace thresher::data::csv {

// Blanks around a cell (not the delimiter itself) and one pair of surrounding quotes removed.
std::string_view trim(std::string_view s, char delimiter);
bool is_blank(std::string_view line);
// Splits one line at `delimiter` into trimmed cells (cells is cleared first).
void split(std::string_view line, char delimiter, std::vector<std::string_view>& cells);
// A UTF-8 byte-order mark at the start is skipped (spreadsheets write one).
std::string_view skip_bom(std::string_view text);

enum class NumberStatus { ok, not_a_number, not_finite };
// Locale-independent (std::from_chars); a value beyond FLT_MAX is not_finite, since converting it
// to float would be undefined.
NumberStatus parse_number(std::string_view cell, double& value);

// A cell for an error message: quoted and cut to 40 characters.
std::string quoted(std::string_view cell);
// "<name>: line L, column C: " (1-based), the prefix of every located error.
std::string place(const std::string& name, std::size_t line, std::size_t column);

// Calls f(line_number, line) for every non-blank line of `text` (1-based numbers; "\r\n" ends
// are trimmed with the cells).
template <class F>
void for_each_line(std::string_view text, F&& f) {
    std::size_t line_no = 0, pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (!is_blank(line)) f(line_no, line);
    }
}

// The whole file as bytes; throws DataError naming it when it cannot be read or is a folder.
std::string read_file(const std::string& path, const char* expected);

}  // namespace thresher::data::csv
