// The table of DESIGN.md's layers. From the bottom up: core → vocab → codec → backend (cpu, cuda)
// → nn, data, eval, events → train → dist masters and net → cli; config on core and vocab only,
// export (models written for other runtimes) on config;
// launcher on vocab, codec, config and spec; ui on launcher, config and data (the data preview);
// app on ui. Where the design
// names a level but not an edge inside it, the table allows what the code needs and no more:
// nn reads data (a model file keeps its feature transform), masters use net, ui's widgets use
// ui/model; ui/model (the widget-free library tests reach) and the two command lines are layers
// of their own, so nothing below includes them.
#include "layer_rules.h"

#include <algorithm>

namespace layering {

const std::vector<Layer>& layers() {
    static const std::vector<Layer> table = {
        {"engine/core", {}},
        {"engine/vocab", {"engine/core"}},
        // Settings a user writes that both the engine and the launcher parse (augmentation).
        {"engine/spec", {"engine/core"}},
        {"engine/codec", {"engine/vocab"}},
        {"engine/backend", {"engine/codec"}},
        // The backends see the interface; neither sees the other (the registry is generated).
        {"engine/backend/cpu", {"engine/backend"}},
        {"engine/backend/cuda", {"engine/backend"}},
        // The program that runs libhdf5 out of process; config reads its snapshot format.
        {"engine/hdf5_reader", {"engine/core"}},
        {"engine/config", {"engine/vocab", "engine/hdf5_reader"}},
        // Exporters read configs and parameter vectors, like the importers: no backend.
        {"engine/export", {"engine/config"}},
        // Data readers need no backend (the design puts them beside nn; they include core alone),
        // so the app can show decoded samples without linking one.
        {"engine/data", {"engine/spec"}},
        {"engine/eval", {"engine/backend"}},
        {"engine/events", {"engine/backend"}},
        {"engine/nn", {"engine/backend", "engine/config", "engine/data"}},
        {"engine/train", {"engine/nn", "engine/data", "engine/eval", "engine/events"}},
        {"engine/dist/net", {"engine/train"}},
        {"engine/dist/masters", {"engine/train", "engine/dist/net"}},
        {"engine/cli", {"engine/dist/masters", "engine/dist/net", "engine/export"}},
        {"launcher", {"engine/vocab", "engine/codec", "engine/config", "engine/spec"}},
        {"launcher/cli", {"launcher"}},
        {"ui/model", {"launcher", "engine/config"}},
        // The data preview reads a few samples with the engine's data library (Qt-free, no backend).
        {"ui", {"ui/model", "launcher", "engine/config", "engine/data"}},
        {"app", {"ui"}},
    };
    return table;
}

const std::vector<NeverRule>& never_rules() {
    static const std::vector<NeverRule> rules = {
        {{"engine/config"}, {"engine/backend"},
         "config → backend: configs are read where no backend is linked (the app links config)"},
        {{"engine/export"}, {"engine/backend", "engine/nn"},
         "export → backend or nn: an exporter reads a config and its parameters, so whatever links "
         "config (the app included) can export without linking a backend"},
        {{"engine/backend"}, {"engine/dist"},
         "backend → dist: kernels know nothing of the network (a worker's encoder is handed to it)"},
        {{"launcher", "ui", "app"}, {"engine/backend", "engine/nn", "engine/dist"},
         "launcher or ui → backend, nn or dist: they see the engine only through its command line "
         "and events"},
    };
    return rules;
}

const std::vector<HeaderRule>& header_rules() {
    static const std::vector<HeaderRule> rules = {
        {{"engine"}, {"Q"}, "anything in engine/ → Qt: the engine is copied to bare cluster nodes"},
        {{"launcher", "ui", "app"}, {"dnnl", "oneapi/", "cuda", "cudnn", "cublas"},
         "launcher or ui → oneDNN or CUDA: the launcher and the UI never link them"},
        {{"engine/vocab", "engine/codec", "engine/config", "engine/export"}, {"dnnl", "oneapi/", "cuda", "cudnn", "cublas"},
         "vocab, codec, config or export → oneDNN or CUDA: they are linked where no backend is"},
    };
    return rules;
}

const std::vector<std::string>& include_roots() {
    static const std::vector<std::string> roots = {
        "engine", "launcher", "launcher/ssh", "launcher/slurm", "launcher/sweep", "ui", "ui/model"};
    return roots;
}

bool under(std::string_view path, std::string_view folder) {
    return path.starts_with(folder) && (path.size() == folder.size() || path[folder.size()] == '/');
}

std::optional<std::string> layer_of(std::string_view file) {
    std::optional<std::string> best;
    for (const auto& layer : layers())
        if (under(file, layer.folder) && (!best || layer.folder.size() > best->size())) best = layer.folder;
    return best;
}

std::set<std::string> allowed_from(const std::string& folder) {
    std::set<std::string> seen{folder};
    std::vector<std::string> todo{folder};
    while (!todo.empty()) {
        const std::string f = todo.back();
        todo.pop_back();
        const auto it = std::ranges::find(layers(), f, &Layer::folder);
        if (it == layers().end()) continue;
        for (const auto& below : it->sits_on)
            if (seen.insert(below).second) todo.push_back(below);
    }
    return seen;
}

const NeverRule* broken_never_rule(const std::string& from, const std::string& to) {
    const auto any_under = [](const std::string& path, const std::vector<std::string>& folders) {
        return std::ranges::any_of(folders, [&](const std::string& f) { return under(path, f); });
    };
    for (const auto& rule : never_rules())
        if (any_under(from, rule.from) && any_under(to, rule.to)) return &rule;
    return nullptr;
}

}  // namespace layering
