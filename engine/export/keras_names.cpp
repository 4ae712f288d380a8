// Layer names in Keras exports. Keras names a layer the user did not name after its class, in
// snake_case, numbered per class from the second on ("dense", "dense_1", "dense_2"); a .keras
// file's weights are grouped by the same snake_case of the class (saving_lib's container state),
// so one function serves both. Names kept from the model (an imported Keras file's own, or the
// names a Thresher config gives) win over automatic ones: a user's code that looks a layer up by
// name finds it.
#include <regex>

#include "export/keras_model.h"

namespace thresher::model_export {

std::string keras_snake_case(std::string_view class_name) {
    // Keras's naming.to_snake_case, step by step.
    static const std::regex non_word(R"(\W+)"), word_start("(.)([A-Z][a-z]+)"), case_change("([a-z])([A-Z])");
    std::string s = std::regex_replace(std::string(class_name), non_word, "");
    s = std::regex_replace(s, word_start, "$1_$2");
    s = std::regex_replace(s, case_change, "$1_$2");
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool KerasNames::usable(const std::string& name) {
    // "/" would nest HDF5 groups (and Keras 3 refuses it); a name must be printable text.
    if (name.empty() || name.size() > 200 || name.find('/') != std::string::npos || name == "." || name == "..")
        return false;
    for (const unsigned char c : name)
        if (c < 0x20 || c == 0x7f) return false;
    return true;
}

std::string KerasNames::keep_or_fresh(const std::string& wanted, std::string_view class_name) {
    if (usable(wanted) && taken_.contains(wanted) && !handed_out_.contains(wanted)) {
        handed_out_.insert(wanted);
        return wanted;
    }
    return fresh(class_name);
}

std::string KerasNames::fresh(std::string_view class_name) {
    const std::string base = keras_snake_case(class_name);
    std::string name = base;
    for (int k = 1; taken_.contains(name) || handed_out_.contains(name); ++k) name = base + "_" + std::to_string(k);
    taken_.insert(name);
    handed_out_.insert(name);
    return name;
}

}  // namespace thresher::model_export
