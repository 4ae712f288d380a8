// ModelDocument's model inputs: "input" is one object ({"name"?, "channels"/"height"/"width" or
// "size"}) or, with several inputs, a list of named objects (engine/config/README.md, "Several
// inputs and outputs"). These edits keep that form: a second input turns the object into a list,
// removing down to one turns it back, so a one-input model's JSON stays as the user wrote it.
#include <QJsonArray>
#include <QRegularExpression>

#include "model_document.h"

namespace thresher::ui {


int ModelDocument::input_count() const {
    const QJsonValue input = model_.value("input");
    return input.isArray() ? static_cast<int>(input.toArray().size()) : 1;
}

QJsonObject ModelDocument::model_input(int k) const {
    const QJsonValue input = model_.value("input");
    if (input.isArray()) return k >= 0 && k < input.toArray().size() ? input.toArray().at(k).toObject() : QJsonObject{};
    return k == 0 ? input.toObject() : QJsonObject{};
}

QString ModelDocument::model_input_name(int k) const {
    return k == 0 ? input_name() : model_input(k).value("name").toString();
}

void ModelDocument::set_model_input(int k, const QJsonObject& in) {
    if (k < 0 || k >= input_count()) return;
    const QString old = model_input_name(k);
    const QString name = in.value("name").toString(k == 0 ? QStringLiteral("input") : QString());
    // Readers follow a rename when both names are unambiguous (no layer or other input has them).
    auto layers = model_.value("layers").toArray();
    bool clash = name.isEmpty() || old == name;
    for (int i = 0; i < layers.size() && !clash; ++i) {
        const QString n = layers[i].toObject().value("name").toString();
        clash = n == old || n == name;
    }
    for (int j = 0; j < input_count() && !clash; ++j)
        if (j != k) clash = model_input_name(j) == name;
    if (!clash) {
        for (int i = 0; i < layers.size(); ++i) {
            QJsonObject l = layers[i].toObject();
            QStringList names = inputs(i);  // the layer as it stands in model_ (not yet rewritten)
            if (!names.contains(old)) continue;
            names.replaceInStrings(QRegularExpression("^" + QRegularExpression::escape(old) + "$"), name);
            l["inputs"] = QJsonArray::fromStringList(names);  // a list, as the engine writes it
            layers[i] = l;
        }
        model_["layers"] = layers;
    }
    const QJsonValue input = model_.value("input");
    if (input.isArray()) {
        QJsonArray all = input.toArray();
        all[k] = in;
        set_field("input", all);
    } else {
        set_field("input", in);
    }
}

int ModelDocument::add_model_input() {
    QJsonArray all;
    const QJsonValue input = model_.value("input");
    if (input.isArray()) {
        all = input.toArray();
    } else {
        // The list names every input; the first keeps the name layers already call it.
        QJsonObject first = input.toObject();
        if (!first.contains("name")) first["name"] = input_name();
        all.append(first);
    }
    QStringList taken;
    for (const auto& v : all) taken << v.toObject().value("name").toString();
    for (const auto& v : model_.value("layers").toArray()) taken << v.toObject().value("name").toString();
    QString name;
    for (int n = static_cast<int>(all.size()) + 1; name.isEmpty() || taken.contains(name); ++n)
        name = QString("input_%1").arg(n);
    all.append(QJsonObject{{"name", name}, {"size", 10}});
    set_field("input", all);
    return static_cast<int>(all.size()) - 1;
}

void ModelDocument::remove_model_input(int k) {
    if (input_count() < 2 || k < 0 || k >= input_count()) return;
    const QString gone = model_input_name(k);
    auto layers = model_.value("layers").toArray();
    for (int i = 0; i < layers.size(); ++i) {
        QJsonObject l = layers[i].toObject();
        QStringList names = inputs(i);
        if (!names.removeAll(gone)) continue;
        if (names.isEmpty()) l.remove("inputs");
        else l["inputs"] = QJsonArray::fromStringList(names);
        layers[i] = l;
    }
    model_["layers"] = layers;
    QJsonArray all = model_.value("input").toArray();
    all.removeAt(k);
    set_field("input", all.size() == 1 ? QJsonValue(all.at(0).toObject()) : QJsonValue(all));
}

}  // namespace thresher::ui
