// Readers that load a whole data set into a Dataset (IDX, CSV, libsvm), map it (NumPy) or read
// only its shape (IDX), and generators of synthetic ones (Gaussian blobs, a linear teacher).
//
//   Result<Dataset> train = ReadIdx(dir + "/train-images-idx3-ubyte.gz",
//                                   dir + "/train-labels-idx1-ubyte.gz");
//
// A reader either returns the complete data set or one error whose message names the file, the
// place (line and column, or the part of an IDX file) and what was wrong — never the bytes or text
// found there: a job may name a file its submitter must not learn through an error, and messages
// reach logs and job states. A data set with no rows is an error. Generators are pure functions of
// their options. All functions are safe for concurrent use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/status.h"

namespace dtrain::data {

// IDX image and label files (MNIST, Fashion-MNIST), plain or gzip-compressed. Pixels stay uint8
// (Dataset::bytes); labels become class indices. Checks the magic numbers (0x00000803 images,
// 0x00000801 labels), the dimensions, that both files hold the same number of items, and that
// neither is truncated nor followed by extra data. An empty labels_path reads the images alone,
// for prediction: every label 0, num_classes 0.
Result<Dataset> ReadIdx(const std::string& images_path, const std::string& labels_path);

// What a data set's files say about it without its feature values.
struct DatasetShape {
  std::size_t rows = 0, features = 0;
  int num_classes = 0;  // 0 for regression sets; max label + 1 for classification
  std::string source;   // as Dataset::source
  std::size_t image_height = 0, image_width = 0, image_channels = 1;  // as Dataset's
};
// The shape ReadIdx's data set would have, from the image file's header and the label file only
// (the pixels are not read, so a truncated or over-long image file goes unnoticed). Checks and
// messages as ReadIdx.
Result<DatasetShape> ReadIdxShape(const std::string& images_path, const std::string& labels_path);

// Delimited text: one row per line, numeric cells only. Blank lines are skipped; cells may be
// padded with spaces or wrapped in double quotes (which may not contain the delimiter).
struct CsvOptions {
  bool header = true;        // the first non-blank line names the columns
  std::string label_column;  // name (needs header)
  int label_index = -1;      // 0-based; used when label_column empty; -1 = last column
  char delimiter = ',';
  bool classification = true;  // labels are class indices (see ReadLibsvm for the rule)
  // false: no column is a label (rows to predict): every column is a feature, every label 0.
  bool labels = true;
};
// A non-numeric or non-finite cell, or a short/long row, is an error naming line and column.
Result<Dataset> ReadCsv(const std::string& path, const CsvOptions& options);

// The cells of a CSV file's first non-blank line (its header, when it has one), trimmed and
// unquoted. Unlike every message of the readers, these are the file's own text: only for a
// caller that opened the file with the rights of whoever sees what it shows (the dtrain client).
Result<std::vector<std::string>> ReadCsvFirstLine(const std::string& path, char delimiter);

// libsvm/svmlight text: "label idx:val idx:val ... [# comment]" with 1-based indices, densified
// into `features` float columns (absent entries are 0; sparse_rows.h keeps them sparse). An index
// of 0 or > features is an error naming the line. Class labels: if every label is -1 or +1 they map
// to 0 and 1; otherwise they must be non-negative integers. Regression labels may be any finite
// number.
Result<Dataset> ReadLibsvm(const std::string& path, std::size_t features,
                           bool classification = true);

// NumPy arrays (format 1.0, 2.0, 3.0; npy_header.h) from .npy files or stored (numpy.savez, not
// savez_compressed) members of .npz archives (npz_directory.h), told apart by their first bytes.
// Memory-mapped: the features stay in the file (Dataset::mapped) and are converted a batch at a
// time, so a file larger than memory trains; its pages count against an address-space limit.
// Features: float32, float64 or uint8, C order, little-endian, shape (rows, features), (rows,
// height, width) or (rows, channels, height, width) (images keep their shape; channels are read
// in place, each row presented in the height, width, channel order of every image set: see
// MappedRows). Their values are not checked (a NaN reaches the model as it is: checking would
// read the whole file).
// Labels: one per row, shape (rows,) or (rows, 1), any integer dtype or float32/float64, read
// whole; class labels follow ReadLibsvm's rule. A malformed header or archive, another dtype or
// shape, a file shorter or longer than its header declares, or labels for another number of rows
// are errors naming the file (and "[array]" in an archive).
struct NpyOptions {
  std::string features_array = "x", labels_array = "y";  // the arrays of a .npz
  bool labels = true;  // false: none read (rows to predict), every label 0, num_classes 0
  bool classification = true;
};
// The features of `path` (a .npy, or a .npz's features_array) and the labels of `labels_path`
// (a .npy, or a .npz's labels_array) or, when it is empty, of path's labels_array when path is a
// .npz; a .npy with no labels_path reads unlabelled.
Result<Dataset> ReadNpy(const std::string& path, const std::string& labels_path,
                        const NpyOptions& options);

struct BlobsOptions {
  std::size_t rows = 1000, features = 2;
  int classes = 3;      // > 0
  float spread = 1.0f;  // standard deviation of each blob
  std::uint64_t seed = 1;
};
// Gaussian blobs: class centres uniform in [-5, 5]^features from the seed; each row picks a
// class uniformly at random and adds N(0, spread^2) noise to its centre. Source "synthetic:blobs".
Dataset MakeBlobs(const BlobsOptions& o);

struct TeacherOptions {
  std::size_t rows = 1000, features = 8;
  float noise = 0.1f;  // standard deviation of the label noise
  std::uint64_t seed = 1;
};
// Regression (num_classes = 0): x ~ N(0, I), y = w.x + b + noise * N(0, 1), with w ~ N(0,
// 1/features) and b ~ N(0, 1) drawn from the seed. Source "synthetic:teacher".
Dataset MakeLinearTeacher(const TeacherOptions& o);

}  // namespace dtrain::data
