// Reads the #include lines of a source tree and judges each against layer_rules.h: a quoted
// include is resolved to the file it names (beside the including file, then in the include
// roots) and its layer must be one the including file's layer may reach; an angle-bracket include
// must not start with a prefix a header rule forbids there. Text only: nothing is compiled, so
// the check runs in a second and sees files no configuration builds (the CUDA backend).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace layering {

struct IncludeLine {
    int line = 0;          // 1-based
    std::string name;      // between the quotes or the brackets
    bool angled = false;   // <name> rather than "name"
};

// Every #include of a file (directives only: a commented-out line does not start with '#').
std::vector<IncludeLine> read_includes(const std::filesystem::path& file);

struct TreeReport {
    std::size_t files = 0, includes = 0;
    // "file:line: #include "name" ...: the rule it breaks", sorted by file and line.
    std::vector<std::string> violations;
};

// Checks every .h/.cpp/.cu/.cuh under `top_folders` of `root` (paths relative to it).
TreeReport check_tree(const std::filesystem::path& root,
                      const std::vector<std::string>& top_folders = {"engine", "launcher", "ui", "app"});

}  // namespace layering
