// The layers of DESIGN.md ("Layers: what may include what") as data: every source folder of
// engine/, launcher/, ui/ and app/ with the folders it sits on directly. A folder may include its
// own files and those of every folder below it (the transitive closure), nothing else. The
// "never" rules are DESIGN.md's explicit prohibitions: the table must not allow any of them (a
// test checks), and a violation that breaks one is reported with its reason.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace layering {

struct Layer {
    std::string folder;                 // "engine/config": every file under it, less deeper layers
    std::vector<std::string> sits_on;   // the folders it includes directly
};

// One of DESIGN.md's "Never: X → Y", over folders and everything under them.
struct NeverRule {
    std::vector<std::string> from, to;
    std::string why;
};

// Angle-bracket includes a folder may not use (Qt in the engine; oneDNN and CUDA outside the
// engine's compute layers), by the start of the header's name.
struct HeaderRule {
    std::vector<std::string> folders;
    std::vector<std::string> prefixes;
    std::string why;
};

const std::vector<Layer>& layers();
const std::vector<NeverRule>& never_rules();
const std::vector<HeaderRule>& header_rules();

// Where a quoted include is looked for after the including file's own folder, in this order:
// the PUBLIC include directories of the CMake targets (engine/ for every engine library).
const std::vector<std::string>& include_roots();

// True when `path` (a file or folder, relative to the source root) is `folder` or under it.
bool under(std::string_view path, std::string_view folder);

// The layer of a file: the deepest table folder that holds it; nullopt for a file in no layer.
std::optional<std::string> layer_of(std::string_view file);

// Every folder `folder` may include: itself and the closure of its sits_on.
std::set<std::string> allowed_from(const std::string& folder);

// The never rule a (from layer, to layer) pair breaks, if any.
const NeverRule* broken_never_rule(const std::string& from, const std::string& to);

}  // namespace layering
