// What a model is trained to do, which follows from its output layer (as in DL4J and Keras):
//   classification  K >= 2 outputs with a cross-entropy loss; labels are class indices
//   binary          one sigmoid output with xent (binary cross-entropy); labels 0/1
//   regression      mse or mae on any element-wise activation; the label column is a real target
// The data is read for that task (a CSV's last column as classes or as a real number) and shaped
// for it (a binary set keeps its 0/1 labels, with one target column holding the label). A model
// with one image output reads a CSV's last columns as its targets: a class per pixel (mcxent) or
// the C x H x W values (engine/config/README.md, image outputs).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/model_config.h"
#include "data/csv_reader.h"
#include "data/data_source.h"

namespace thresher::train {

enum class Task { Classification, Binary, Regression };

Task task_of(const config::ModelConfig&);
std::string_view to_string(Task);

// How a CSV is read for the task.
data::CsvOptions csv_options_for(Task);
// Loads `spec` for the model's task: load_data with csv_options_for, image folders decoded to the
// model's input shape (images.shape is set from the model), and a binary set's one-hot targets
// folded into its one 0/1 column.
// Sequence models (an input with steps): sequence CSV folders are padded to the input's steps
// (classes: the main output's units, so a label past them is refused by file and line),
// labels per step when the main output is per step; a .txt corpus gives windows of those steps,
// one-hot characters or ids (input features 1); a .csv is read as token ids when the input has
// one feature. `vocabulary` is a saved model's character vocabulary (evaluate, predict, resume):
// the text is read with it instead of its own.
data::DataSplit load_data_for(const std::string& spec, const config::ModelConfig&,
                              data::ImageFolderOptions images = {}, std::vector<std::string> vocabulary = {},
                              const data::SequenceReadOptions& sequences = {});

// The checks load_data_for makes of loaded data against the model (sequence steps and features,
// per-step labels), for data read another way (a streamed shard set: only its description).
void check_data_for_model(const data::Dataset&, const config::ModelConfig&);

}  // namespace thresher::train
