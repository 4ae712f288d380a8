// One string names a data source on the command line and in run configs; this resolves it.
//   "fashion-mnist"          the installed Fashion-MNIST (folder overridable:
//   THRESHER_FASHION_MNIST)
//   "/data/mnist"            a folder of IDX files: train-images*idx3*, train-labels*idx1*, and
//                            optionally t10k-* or test-* images and labels (plain or .gz)
//   "/data/iris.csv"         a CSV table (data/csv_reader.h); no test set
//   "/data/flowers"          a folder of images in class folders, DIR/train/<class>/ (+ test/)
//                            or DIR/<class>/ split by a fraction (data/image_folder.h)
//   "/data/seqs"             sequence CSVs: DIR/features/ (+ labels/), or DIR/train/features/
//                            (+ test/) (data/sequence_csv.h); checked before image folders
//   "/data/book.txt"         a character corpus (data/text_corpus.h); needs a sequence input
//   "/data/COPYING"          a file without an extension, with a sequence input: the same
//   "/data/shards"           a shard set written by thresher-engine export (index.json; data/shard_reader.h),
//                            read whole here; training streams it (data/shard_stream.h)
//   "/data/reviews.csv"      with a sequence model input of 1 feature (token ids): a token CSV
//                            (data/token_csv.h) instead of a table
#pragma once

#include "data/csv_reader.h"
#include "data/dataset.h"
#include "data/image_folder.h"
#include "data/sequence_csv.h"
#include "data/text_corpus.h"
#include "data/token_csv.h"

#include <string>

namespace thresher::data {

struct IdxFiles {
    std::string train_images, train_labels;
    std::string test_images, test_labels;  // both empty when the folder has no test set
};

// Finds the IDX files in `folder`. Where a plain and a .gz copy both exist the plain one wins
// (no decompression). Throws thresher::DataError when the train pair is missing, when only half
// of the test pair exists, or when a pattern matches two different files.
IdxFiles find_idx_files(const std::string& folder);

// What the user chooses for sequence sources (thresher-engine --sequence-align, --truncate-sequences,
// --text-stride); steps, features and label mode come from the model (train/task.h).
struct SequenceReadOptions {
    SequenceAlign align = SequenceAlign::start;
    bool truncate = false;
    int text_stride = 0;  // 0: the window length
};

// How each kind of source is read; a source uses only its own part.
struct DataOptions {
    CsvOptions csv;
    ImageFolderOptions images;  // images.shape comes from the model (train/task.h)
    SequenceCsvOptions sequences;
    TextCorpusOptions text;     // text.steps and one_hot come from the model
    TokenCsvOptions tokens;
    // A .csv is read as token ids (token_csv.h) rather than a table: the model's input is a
    // sequence of one feature (train/task.cpp sets it).
    bool csv_as_tokens = false;
};

// Whether load_data reads `spec` as a CSV file (a table, or token ids): it ends in .csv, any case.
bool is_csv_file(const std::string& spec);

// Throws thresher::DataError saying what was expected when `spec` names nothing usable.
DataSplit load_data(const std::string& spec, const DataOptions& options);
DataSplit load_data(const std::string& spec, const CsvOptions& csv = {});

}  // namespace thresher::data
