// The tables of a markdown file, for tests that hold code to its documentation: each table as
// rows of cells (header row included, the |---| row left out), and the `code` spans of a cell.
#pragma once

#include <string>
#include <vector>

namespace events_fixture {

using Row = std::vector<std::string>;
using Table = std::vector<Row>;

// Every table under the first heading that contains `section` (up to the next heading of the
// same or a higher level); the whole file when `section` is empty. Empty when the file is absent.
std::vector<Table> markdown_tables(const std::string& path, const std::string& section = {});

// The `code` spans of `cell`, outside parentheses: "`status` (`ok`, `failed`), `iters`" gives
// status and iters (a parenthesis explains a field; it names values, not fields).
std::vector<std::string> code_spans(const std::string& cell);

}  // namespace events_fixture
