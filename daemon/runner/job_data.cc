#include "daemon/runner/job_data.h"

#include <utility>

#include "core/data/readers.h"

namespace dtrain::runner {
namespace {

// Synthetic sets are generated as one set of `total` rows and split, so train and test share
// class centres (or the teacher's weights). With total 0 it generates no rows, only the sets'
// features, classes and names.
std::pair<data::Dataset, data::Dataset> MakeSynthetic(const config::DataConfig& d,
                                                      std::size_t total) {
  const auto features = static_cast<std::size_t>(d.features > 0 ? d.features : 2);
  data::Dataset all;
  if (d.synthetic == config::SyntheticKind::kBlobs) {
    all = data::MakeBlobs({total, features, d.classes, d.noise, d.data_seed});
  } else {
    all = data::MakeLinearTeacher({total, features, d.noise, d.data_seed});
  }
  const double fraction =
      total > 0 ? static_cast<double>(d.test_rows) / static_cast<double>(total) : 0.0;
  return data::SplitValidation(std::move(all), fraction, d.data_seed);
}

// The shape of a data set in memory, for ResolveModelShape.
data::DatasetShape ShapeOf(const data::Dataset& d) {
  return {d.rows,         d.features,    d.num_classes,   d.source,
          d.image_height, d.image_width, d.image_channels};
}

// The training set's name after LoadJobData's held-out choice: a validation split renames it.
std::string TrainingSource(const config::JobConfig& job, std::string file) {
  if (job.data.test.empty() && job.data.validation_fraction > 0.0) {
    data::Dataset unread;
    unread.source = std::move(file);
    return data::SplitValidation(std::move(unread), job.data.validation_fraction, job.train.seed)
        .first.source;
  }
  return file;
}

// The shape of one of the job's files (`path`, and `labels` for idx): from the header and the
// labels for idx.
Result<data::DatasetShape> ReadShape(const config::JobConfig& job, const std::string& path,
                                     const std::string& labels) {
  if (job.data.format == config::DataFormat::kIdx) return data::ReadIdxShape(path, labels);
  // csv and libsvm have no header that tells the feature count and the classes: read it all.
  // npy features are only mapped, so reading the set costs its labels.
  const bool classification = job.model.loss != model::LossType::kMeanSquaredError;
  Result<data::Dataset> set = ReadJobDataset(job.data, path, labels, classification);
  if (!set.ok()) return set.status();
  return ShapeOf(set.value());
}

// The training file's shape, named as LoadJobData names the training set.
Result<data::DatasetShape> ReadTrainingShape(const config::JobConfig& job) {
  Result<data::DatasetShape> train = ReadShape(job, job.data.train, job.data.train_labels);
  if (train.ok()) train.value().source = TrainingSource(job, std::move(train.value().source));
  return train;
}

// A held-out set must have the training set's features.
Status SameFeatures(const data::DatasetShape& eval, const data::DatasetShape& train) {
  if (eval.rows == 0 || eval.features == train.features) return Status::Ok();
  return Status::Error(eval.source + " has " + std::to_string(eval.features) + " features but " +
                       train.source + " has " + std::to_string(train.features));
}

// The key that gave the model its outputs: a layer list's last dense layer's units, when set.
std::string OutputsKey(const config::JobConfig& job) {
  const std::vector<model::LayerSpec>& layers = job.model.layers;
  if (job.model.type == model::ModelType::kSequential && !layers.empty() &&
      layers.back().kind == model::LayerKind::kDense && layers.back().units > 0) {
    return "model.layers[" + std::to_string(layers.size()) + "].units";
  }
  return "model.outputs";
}

// Whether a set with labels 0..num_classes-1 (from `source`) suits the model's outputs: softmax
// needs an output per class, binary cross-entropy (one output) labels 0 and 1; a regression
// model takes any target.
Status LabelsFit(const config::JobConfig& job, const model::ModelSpec& spec, int num_classes,
                 const std::string& source) {
  if (spec.loss == model::LossType::kSoftmaxCrossEntropy && num_classes > spec.outputs) {
    return Status::Error(OutputsKey(job) + " is " + std::to_string(spec.outputs) + " but " +
                         source + " has labels up to " + std::to_string(num_classes - 1) +
                         " (" + std::to_string(num_classes) + " classes)");
  }
  if (spec.loss == model::LossType::kBinaryCrossEntropy && num_classes > 2) {
    return Status::Error("model.loss 'bce' needs labels 0/1, but " + source + " has " +
                         std::to_string(num_classes) + " classes");
  }
  return Status::Ok();
}

}  // namespace

Result<data::Dataset> ReadJobDataset(const config::DataConfig& data, const std::string& path,
                                     const std::string& labels_path, bool classification) {
  switch (data.format) {
    case config::DataFormat::kIdx:
      return data::ReadIdx(path, labels_path);
    case config::DataFormat::kCsv: {
      data::CsvOptions csv;
      csv.header = data.header;
      csv.label_column = data.label_column;
      csv.label_index = data.label_index;
      csv.delimiter = data.delimiter;
      csv.classification = classification;
      return data::ReadCsv(path, csv);
    }
    case config::DataFormat::kLibsvm:
      return data::ReadLibsvm(path, static_cast<std::size_t>(data.features), classification);
    case config::DataFormat::kNpy: {
      data::NpyOptions npy;
      npy.features_array = data.features_array;
      npy.labels_array = data.labels_array;
      npy.classification = classification;
      return data::ReadNpy(path, labels_path, npy);
    }
    case config::DataFormat::kSynthetic:
      break;
  }
  return Status::Error(path + ": synthetic data has no file to read");
}

Result<model::ModelSpec> ResolveModelShape(const config::JobConfig& job,
                                           const data::DatasetShape& train) {
  model::ModelSpec spec = job.model;
  const auto features = static_cast<int>(train.features);
  if (spec.type == model::ModelType::kSequential) {
    const model::Shape image{static_cast<int>(train.image_channels),
                             static_cast<int>(train.image_height),
                             static_cast<int>(train.image_width)};
    if (spec.input_shape.Size() == 0) {
      spec.input_shape = train.image_height > 0 ? image : model::Shape{features, 1, 1};
    } else if (train.image_channels > 1 && !spec.input_shape.Flat() && spec.input_shape != image) {
      // The rows are the array's channels x height x width, read as height, width, channel.
      return Status::Error(
          "model.input_shape " + model::FormatShape(spec.input_shape) + " does not match " +
          train.source + ", images of " + model::FormatShape(image) +
          " (channels x height x width): set input_shape = [" + std::to_string(image.channels) +
          ", " + std::to_string(image.height) + ", " + std::to_string(image.width) + "]");
    } else if (spec.input_shape.Size() != train.features) {
      return Status::Error("model.input_shape " + model::FormatShape(spec.input_shape) + " holds " +
                           std::to_string(spec.input_shape.Size()) + " values but " + train.source +
                           " has " + std::to_string(features) + " features");
    }
    spec.inputs = static_cast<int>(spec.input_shape.Size());
  }
  if (spec.inputs == 0) spec.inputs = features;
  if (spec.inputs != features) {
    return Status::Error("model.inputs is " + std::to_string(spec.inputs) + " but " + train.source +
                         " has " + std::to_string(features) + " features");
  }
  const bool classifies = spec.loss == model::LossType::kSoftmaxCrossEntropy;
  if (spec.outputs == 0) spec.outputs = classifies ? train.num_classes : 1;
  if (Status fits = LabelsFit(job, spec, train.num_classes, train.source); !fits.ok()) return fits;
  Status valid = model::ValidateModelSpec(spec);
  if (!valid.ok()) {
    std::optional<model::LayerMisfit> misfit = model::FindLayerMisfit(spec);
    if (!misfit || misfit->index >= job.layer_places.size()) return valid;
    const config::SourcePlace at = job.layer_places[misfit->index];
    return Status::Error(
        config::FormatDiagnostic({job.source_path, at.line, at.column,
                                  "model.layers[" + std::to_string(misfit->index + 1) + "].type",
                                  std::move(misfit->reason)}));
  }
  return spec;
}

Result<model::ModelSpec> ResolveJobShape(const config::JobConfig& job) {
  if (job.data.format == config::DataFormat::kSynthetic) {
    return ResolveModelShape(job, ShapeOf(MakeSynthetic(job.data, 0).first));
  }
  // A layer list's input_shape is held against the data, so it is read even when given.
  if (job.model.inputs != 0 && job.model.outputs != 0 &&
      job.model.type != model::ModelType::kSequential) {
    Status valid = model::ValidateModelSpec(job.model);
    if (!valid.ok()) return valid;
    return job.model;
  }
  Result<data::DatasetShape> train = ReadTrainingShape(job);
  if (!train.ok()) return train.status();
  return ResolveModelShape(job, train.value());
}

Result<model::ModelSpec> CheckJobShapes(const config::JobConfig& job) {
  const config::DataConfig& d = job.data;
  if (d.format == config::DataFormat::kSynthetic) return ResolveJobShape(job);
  Result<data::DatasetShape> train = ReadTrainingShape(job);
  if (!train.ok()) return train.status();
  Result<model::ModelSpec> spec = ResolveModelShape(job, train.value());
  if (!spec.ok() || d.test.empty()) return spec;
  Result<data::DatasetShape> test = ReadShape(job, d.test, d.test_labels);
  if (!test.ok()) return test.status();
  if (Status same = SameFeatures(test.value(), train.value()); !same.ok()) return same;
  if (Status fits = LabelsFit(job, spec.value(), test.value().num_classes, test.value().source);
      !fits.ok()) {
    return fits;
  }
  return spec;
}

Result<JobData> LoadJobData(const config::JobConfig& job) {
  const config::DataConfig& d = job.data;
  JobData out;
  const bool classification = job.model.loss != model::LossType::kMeanSquaredError;
  if (d.format == config::DataFormat::kSynthetic) {
    std::tie(out.train, out.eval) =
        MakeSynthetic(d, static_cast<std::size_t>(d.rows + d.test_rows));
    out.eval_name = "test";
  } else {
    auto train = ReadJobDataset(d, d.train, d.train_labels, classification);
    if (!train.ok()) return train.status();
    out.train = std::move(train).value();
    if (!d.test.empty()) {
      auto test = ReadJobDataset(d, d.test, d.test_labels, classification);
      if (!test.ok()) return test.status();
      out.eval = std::move(test).value();
      out.eval_name = "test";
    } else if (d.validation_fraction > 0.0) {
      std::tie(out.train, out.eval) =
          data::SplitValidation(std::move(out.train), d.validation_fraction, job.train.seed);
      out.eval_name = "validation";
    }
  }
  if (Status same = SameFeatures(ShapeOf(out.eval), ShapeOf(out.train)); !same.ok()) return same;
  auto spec = ResolveModelShape(job, ShapeOf(out.train));
  if (!spec.ok()) return spec.status();
  out.spec = spec.value();
  if (Status fits = LabelsFit(job, out.spec, out.eval.num_classes, out.eval.source); !fits.ok()) {
    return fits;
  }
  out.scaling = d.standardize ? data::FitStandardize(out.train) : data::ConstantScaling(d.scale);
  return out;
}

}  // namespace dtrain::runner
