// DL4J exports of Thresher's models (issue 25): the zip DL4J's ModelSerializer.writeModel writes
// for a MultiLayerNetwork (a layer stack) or a ComputationGraph (a graph), so a JVM service can
// call ModelSerializer.restoreMultiLayerNetwork / restoreComputationGraph(file, true) and predict
// or go on training.
//
//   configuration.json  a MultiLayerConfiguration in DL4J 1.0's JSON ("confs": one
//                       NeuralNetConfiguration per layer with its "layer" object, "@class" for
//                       every polymorphic value, "inputPreProcessors", "iterationCount", ...), or
//                       a ComputationGraphConfiguration ("vertices" in the model's order,
//                       "vertexInputs", "networkInputs", "networkOutputs", "topologicalOrder(Str)")
//   coefficients.bin    every parameter as one ND4J row vector [1, N] FLOAT (nd4j_writer.h), in
//                       DL4J's flattened order (config/dl4j_layout.h): layer after layer (a graph's
//                       in DL4J's topological order), each as its ParamInitializer views it
//   updaterState.bin    the updater state in DL4J's UpdaterBlocks (when the model has state)
//   normalizer.bin      the input normalisation (`train --normalize`), as NormalizerSerializer
//                       writes a NormalizerStandardize / NormalizerMinMaxScaler
//
// Thresher's DL4J importer (config/weight_import.cpp) is the inverse: import(export(m)) has m's
// layers and bit-identical parameters, up to what it folds (an activation layer after a dense or
// convolution without one, a symmetric zero padding before a Truncate convolution).
// engine/export/README.md has the table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/exportable_model.h"

namespace thresher::model_export {

// Why DL4J cannot express the model, naming the first layer or setting that
// is the reason ("layers[2] (add \"sum\"): ..."); nullopt when it can. From the config and the
// normalisation alone, before anything is written.
std::optional<std::string> dl4j_refusal(const ExportableModel&);

// configuration.json (dl4j_config_writer.cpp); the caller has ruled out dl4j_refusal(). A
// parsed nlohmann::json sorts keys: for a graph, dl4j_configuration_text keeps "vertices" and
// "vertexInputs" in dl4j_vertex_order (DL4J numbers the vertices in the file's order).
nlohmann::json dl4j_configuration(const ExportableModel&);
std::string dl4j_configuration_text(const ExportableModel&);
// A graph's vertex names in the order written (empty for a layer stack): a layer's name, or
// "layer<i>" for an unnamed one, and "<input>_image" for the PreprocessorVertex in front of the
// vertices that read an image input.
std::vector<std::string> dl4j_vertex_order(const ExportableModel&);
// Thresher's layers in DL4J's flattening order: a stack's as they are, a graph's in DL4J's
// topological order of the vertices written (config/dl4j_graph.h).
std::vector<std::size_t> dl4j_layer_order(const ExportableModel&);

// The parameters in DL4J's flattened order (dl4j_params.cpp), and the updater state in DL4J's
// UpdaterBlock order: empty when the model has no state (none saved, or only Sgd layers) or
// when it does not fit the config (`why` then says so).
std::vector<float> dl4j_coefficients(const ExportableModel&);
std::vector<float> dl4j_updater_state(const ExportableModel&, std::string& why);

// normalizer.bin (dl4j_normalizer_writer.cpp): why DL4J's normalizers cannot hold the model's
// normalisation (nullopt: they can, or there is none), and the file's bytes.
std::optional<std::string> dl4j_normalizer_refusal(const InputNormalization&);
std::string dl4j_normalizer_bytes(const InputNormalization&);

struct Dl4jBytes {
    std::string bytes;               // the whole zip
    std::size_t layers = 0;          // layers written (a stack's confs; a graph's layer and vertex vertices)
    std::vector<std::string> notes;  // what was left out and why ("updaterState.bin: ...")
};

// The zip's bytes (dl4j_zip_writer.cpp); the caller has ruled out dl4j_refusal().
Dl4jBytes dl4j_zip_bytes(const ExportableModel&);

}  // namespace thresher::model_export
