#include "config/job_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "config/cluster_section.h"
#include "config/early_stopping_key.h"
#include "config/embedded_job.h"
#include "config/job_memory.h"
#include "config/layer_list.h"
#include "config/mode_traits.h"
#include "config/slurm_job.h"
#include "config/sparse_job.h"
#include "config/tags_key.h"
#include "config/toml_reader.h"
#include "config/toml_text.h"
#include "core/codec/regular_file.h"
#include "core/data/readers.h"
#include "core/data/sparse_rows.h"

namespace dtrain::config {
namespace {

namespace fs = std::filesystem;
using internal::Closed;
using internal::ClosedOpen;
using internal::Describe;
using internal::FromOverride;
using internal::Guarded;
using internal::Interval;
using internal::IntIn;
using internal::kOverrideFile;
using internal::NumberIn;
using internal::OpenClosed;
using internal::ParseDocument;
using internal::ParseToml;
using internal::ReadLayerList;
using internal::ReadMemorySize;
using internal::ReadWholeFile;
using internal::RejectUnknown;
using internal::SectionTable;
using internal::Sink;
using internal::SizeOf;
using internal::SyntaxError;
using internal::TableReader;

// Upper limits far beyond any sensible job: they catch a typo (three digits too many) at load
// time instead of as an allocation failure or a run that never ends.
constexpr std::int64_t kMaxLayerWidth = 1 << 24;  // the engine's own limit (core/model/spec.cc)
constexpr std::size_t kMaxHiddenLayers = 64;
constexpr std::int64_t kMaxCropPadding = 1024;
constexpr std::int64_t kMaxEpochs = 1'000'000;
constexpr std::int64_t kMaxSteps = 10'000'000'000;
constexpr std::int64_t kMaxBatchSize = 1 << 20;
constexpr std::int64_t kMaxRows = 100'000'000;
constexpr std::int64_t kMaxClasses = 1 << 16;
constexpr std::int64_t kMaxThreads = 1024;
constexpr std::int64_t kMaxKeep = 10'000;
constexpr std::int64_t kMaxSeed = std::numeric_limits<std::int64_t>::max();

// ---------------------------------------------------------------------------------------------
// Names and files.

// The job file's stem with every character a name may not hold replaced by '-'.
std::string DefaultName(const std::string& display_path) {
  std::string name = fs::path(display_path).stem().string();
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !LabelChar(c); }, '-');
  if (name.size() > kMaxLabelLength) name.resize(kMaxLabelLength);
  return name.empty() ? "job" : name;
}

// Empty when `path` is a readable file; otherwise what is wrong, naming the path.
std::string FileProblem(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return "cannot access " + path.string() + ": " + ec.message();
  }
  if (!fs::exists(status)) return "no such file: " + path.string();
  if (fs::is_directory(status)) return "is a directory, not a file: " + path.string();
  // A FIFO or a device would hang or never end its reader (core/codec/regular_file.h).
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return "is " + codec::NotRegularKind(st.st_mode) + ", not a regular file: " + path.string();
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return "cannot read " + path.string() + ": " + std::generic_category().message(errno);
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Sections.

// Where relative data paths are resolved from, and whether the files are looked at.
struct PathBase {
  fs::path file;      // the job file's directory
  fs::path override;  // the current directory, for paths given with --set
  DataFiles files = DataFiles::kCheck;
};

// Reads the data path `key`: made absolute, normalised, checked to be a readable file.
// `unused` is empty when the format reads this path, else why the key may not be given.
void ReadPath(TableReader& r, std::string_view key, const std::string& unused, const PathBase& base,
              std::string* out) {
  std::string text;
  const toml::node* node = r.String(key, &text);
  if (node == nullptr) return;
  if (!unused.empty()) {
    r.Report(*node, key, unused);
    return;
  }
  if (text.empty()) {
    r.Report(*node, key, "must name a file, got an empty string");
    return;
  }
  fs::path path(text);
  if (path.is_relative()) path = (FromOverride(node->source()) ? base.override : base.file) / path;
  path = path.lexically_normal();
  if (std::string problem = base.files == DataFiles::kCheck ? FileProblem(path) : "";
      !problem.empty()) {
    r.Report(*node, key, std::move(problem));
    return;
  }
  *out = path.string();
}

// Whether a data path names a NumPy archive (.npz), whose labels may be one of its arrays.
bool IsNpz(const std::string& path) { return path.ends_with(".npz"); }

// data.train, train_labels, test and test_labels, each required or refused by the format.
void ReadDataFiles(TableReader& r, const PathBase& base, bool format_known, DataConfig* d) {
  const std::string format = "format \"" + std::string(DataFormatName(d->format)) + "\"";
  const bool idx = format_known && d->format == DataFormat::kIdx;
  const bool npy = format_known && d->format == DataFormat::kNpy;
  const bool synthetic = format_known && d->format == DataFormat::kSynthetic;
  std::string labels_not_read;
  if (format_known && !idx && !npy) {
    labels_not_read = "is only used with format \"idx\" or \"npy\", not " + format;
    if (d->format == DataFormat::kCsv) {
      labels_not_read += " (csv labels are a column: label_column or label_index)";
    }
  }
  const std::string not_read = synthetic ? "is not used with format \"synthetic\"" : "";
  ReadPath(r, "train", not_read, base, &d->train);
  ReadPath(r, "train_labels", labels_not_read, base, &d->train_labels);
  ReadPath(r, "test", not_read, base, &d->test);
  ReadPath(r, "test_labels", labels_not_read, base, &d->test_labels);
  if (format_known && !synthetic && !r.Present("train")) {
    r.Missing("train", "is required for " + format + " (the training data file)");
  }
  // npy labels come from their own .npy, or from a .npz's labels_array when it has none.
  if ((idx || (npy && r.Present("train") && !IsNpz(d->train))) && !r.Present("train_labels")) {
    r.Missing("train_labels", "is required for " + format + " (the training labels file" +
                                  (npy ? ", unless data.train is a .npz that holds them)" : ")"));
  }
  if ((idx || (npy && !IsNpz(d->test))) && r.Present("test") && !r.Present("test_labels")) {
    r.Missing("test_labels", "is required with data.test for " + format +
                                 (npy ? " (unless data.test is a .npz that holds them)" : ""));
  }
  if (const toml::node* labels = r.Find("test_labels");
      labels != nullptr && !r.Failed("test_labels") && !r.Present("test")) {
    r.Report(*labels, "test_labels", "is given without data.test");
  }
}

// data.features_array and labels_array: names of a .npz's arrays, format "npy" only.
void ReadNpyKeys(TableReader& r, bool format_known, DataConfig* d) {
  for (auto [key, out] : {std::pair{"features_array", &d->features_array},
                          std::pair{"labels_array", &d->labels_array}}) {
    std::string name;
    const toml::node* node = r.String(key, &name);
    if (node == nullptr) continue;
    if (format_known && d->format != DataFormat::kNpy) {
      r.Report(*node, key, "is only used with format \"npy\" (an array of a .npz file)");
    } else if (name.empty() || name.find_first_of("/\\") != std::string::npos) {
      r.Report(*node, key,
               "must name an array of the .npz (as given to numpy.savez, e.g. \"x\" or "
               "\"arr_0\"), got " +
                   TomlString(name));
    } else {
      *out = std::move(name);
    }
  }
}

// data.header, label_column, label_index and delimiter.
void ReadCsvKeys(TableReader& r, DataConfig* d) {
  r.Bool("header", &d->header);
  const toml::node* column = r.String("label_column", &d->label_column);
  if (column != nullptr && d->label_column.empty()) {
    column = r.Report(*column, "label_column", "must name a column, got an empty string");
  }
  const toml::node* index = r.Int("label_index", -1, kMaxLayerWidth - 1, &d->label_index);
  if (column != nullptr && index != nullptr) {
    r.Report(*index, "label_index", "conflicts with data.label_column: give one of them");
  }
  if (column != nullptr && !d->header && !r.Failed("header")) {
    r.Report(*column, "label_column",
             "needs data.header = true (columns are named by the header line)");
  }
  std::string delimiter;
  if (const toml::node* node = r.String("delimiter", &delimiter)) {
    if (delimiter.size() != 1 || delimiter == "\"" || delimiter == "\n" || delimiter == "\r") {
      r.Report(*node, "delimiter",
               "must be one character other than a double quote or a line break, got " +
                   TomlString(delimiter));
    } else {
      d->delimiter = delimiter[0];
    }
  }
}

// data.scale: a divisor, or "standardize".
void ReadScale(TableReader& r, DataConfig* d) {
  const toml::node* node = r.Find("scale");
  if (node == nullptr) return;
  const Interval range = OpenClosed(0, 1e9);
  std::string problem;
  if (node->is_string() && node->as_string()->get() == "standardize") {
    d->standardize = true;
    d->scale = 1.0f;
  } else if (!node->is_number()) {
    r.Report(*node, "scale",
             "must be a number in " + range.Text() + " (the divisor) or \"standardize\", got " +
                 Describe(*node));
  } else if (const std::optional<float> divisor = NumberIn<float>(*node, range, &problem)) {
    d->scale = *divisor;
  } else {
    r.Report(*node, "scale", problem);
  }
}

void ReadData(TableReader& r, const PathBase& base, DataConfig* d) {
  r.Enum("format", ParseDataFormat, DataFormatChoices(), &d->format);
  r.Enum("synthetic", ParseSyntheticKind, SyntheticKindChoices(), &d->synthetic);
  // Requirements depend on the format; with an invalid one only types and ranges are checked.
  const bool format_known = !r.Failed("format");
  const bool libsvm = format_known && d->format == DataFormat::kLibsvm;
  const bool synthetic = format_known && d->format == DataFormat::kSynthetic;
  const bool linear = d->synthetic == SyntheticKind::kLinear;

  // Defaults that depend on the format or the generator, before the keys that override them.
  d->scale = format_known && d->format == DataFormat::kIdx ? 255.0f : 1.0f;
  d->noise = linear ? data::TeacherOptions{}.noise : data::BlobsOptions{}.spread;
  if (synthetic && !r.Failed("synthetic")) {
    d->features = static_cast<std::int64_t>(linear ? data::TeacherOptions{}.features
                                                   : data::BlobsOptions{}.features);
  }

  ReadDataFiles(r, base, format_known, d);
  ReadNpyKeys(r, format_known, d);
  ReadCsvKeys(r, d);
  internal::ReadSparseData(r, d);
  const auto max_features = static_cast<std::int64_t>(
      d->sparse ? static_cast<std::int64_t>(data::kMaxSparseFeatures) : kMaxLayerWidth);
  const toml::node* features = r.Int("features", 0, max_features, &d->features);
  if (features != nullptr && ((libsvm && !d->sparse) || synthetic) && d->features == 0) {
    r.Report(*features, "features",
             "must be at least 1 for format \"" + std::string(DataFormatName(d->format)) + "\"");
  }
  if (libsvm && !d->sparse && !r.Present("features")) {
    r.Missing("features", "is required for format \"libsvm\" (the number of feature columns)");
  }
  ReadScale(r, d);
  r.Number("validation_fraction", Closed(0, 0.9), &d->validation_fraction);
  r.Int("rows", 1, kMaxRows, &d->rows);
  r.Int("test_rows", 0, kMaxRows, &d->test_rows);
  r.Int("classes", 2, kMaxClasses, &d->classes);
  r.Number("noise", Closed(0, 1e6), &d->noise);
  r.Int("seed", 0, kMaxSeed, &d->data_seed);
  r.Int("augment_crop", 0, kMaxCropPadding, &d->augment.crop_padding);
  r.Bool("augment_flip", &d->augment.flip);
}

// Output counts a model type allows or a loss needs.
enum class Arity { kAny, kOne, kMany };

Arity TypeArity(model::ModelType type) {
  switch (type) {
    case model::ModelType::kLogistic:
      return Arity::kOne;
    case model::ModelType::kSoftmax:
      return Arity::kMany;
    case model::ModelType::kLinear:
    case model::ModelType::kMlp:
    case model::ModelType::kSequential:
      break;
  }
  return Arity::kAny;
}

Arity LossArity(model::LossType loss) {
  return loss == model::LossType::kSoftmaxCrossEntropy ? Arity::kMany : Arity::kOne;
}

std::string ArityText(Arity arity) {
  switch (arity) {
    case Arity::kOne:
      return "exactly 1 output";
    case Arity::kMany:
      return "at least 2 outputs";
    case Arity::kAny:
      break;
  }
  return "any number of outputs";
}

bool Fits(Arity arity, int outputs) {  // outputs 0: inferred from the data later
  return outputs == 0 || arity == Arity::kAny || (arity == Arity::kOne) == (outputs == 1);
}

const toml::node* ReadHidden(TableReader& r, std::vector<int>* hidden) {
  const toml::node* node = r.Find("hidden");
  if (node == nullptr) return nullptr;
  const toml::array* layers = node->as_array();
  if (layers == nullptr) {
    return r.Report(*node, "hidden",
                    "must be an array of layer sizes such as [256, 128], got " + Describe(*node));
  }
  if (layers->size() > kMaxHiddenLayers) {
    return r.Report(*node, "hidden",
                    "must have at most " + std::to_string(kMaxHiddenLayers) + " layers, got " +
                        std::to_string(layers->size()));
  }
  std::vector<int> sizes;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    std::string problem;
    if (const std::optional<std::int64_t> width =
            IntIn((*layers)[i], 1, kMaxLayerWidth, &problem)) {
      sizes.push_back(static_cast<int>(*width));
    } else {
      r.Report((*layers)[i], "hidden", "layer " + std::to_string(i + 1) + " " + problem);
    }
  }
  if (r.Failed("hidden")) return nullptr;
  *hidden = std::move(sizes);
  return node;
}

// The output count the data will have, where the job alone tells it: generated data. 0: unknown.
int GeneratedOutputs(const DataConfig& d) {
  if (d.format != DataFormat::kSynthetic) return 0;
  return d.synthetic == SyntheticKind::kLinear ? 1 : d.classes;
}

// Reads [model]; a loss that is not given becomes model::DefaultLoss of the type and of the
// output count, the given one or else the one `data` is known to have.
void ReadModel(TableReader& r, Sink& sink, const DataConfig& data, model::ModelSpec* m,
               std::vector<SourcePlace>* layer_places) {
  m->inputs = 0;  // 0: from the data
  m->outputs = 0;
  if (const toml::node* type = r.Find("type");
      type != nullptr && type->value<std::string_view>() == "fm") {
    r.Report(*type, "type",
             "\"fm\" is a sparse model: it needs data.format = \"libsvm\" with data.sparse = "
             "true");
    return;
  }
  r.Enum("type", model::ParseModelType, model::ModelTypeChoices(), &m->type);
  const toml::node* hidden = ReadHidden(r, &m->hidden);
  const toml::node* activation =
      r.Enum("activation", model::ParseActivation, model::ActivationChoices(), &m->activation);
  const toml::node* loss = r.Enum("loss", model::ParseLoss, model::LossChoices(), &m->loss);
  r.Enum("init", model::ParseInit, model::InitChoices(), &m->init);
  const toml::node* inputs = r.Int("inputs", 0, kMaxLayerWidth, &m->inputs);
  const toml::node* outputs = r.Int("outputs", 0, kMaxLayerWidth, &m->outputs);
  if (!r.Failed("type")) ReadLayerList(r, sink, m, layer_places);
  if (m->type == model::ModelType::kSequential) {
    if (activation != nullptr) {
      r.Report(*activation, "activation",
               "is not used by type \"sequential\": give each layer its own activation");
    }
    if (inputs != nullptr) {
      r.Report(*inputs, "inputs", "is not used by type \"sequential\": set input_shape");
    }
  }
  if (!r.Present("loss")) {
    m->loss = model::DefaultLoss(m->type, m->outputs != 0 ? m->outputs : GeneratedOutputs(data));
  }
  if (r.Failed("type")) return;  // the checks below hold a valid type against the rest

  const std::string type = "type \"" + std::string(model::ModelTypeName(m->type)) + "\"";
  if (hidden != nullptr && !m->hidden.empty() && m->type != model::ModelType::kMlp) {
    r.Report(*hidden, "hidden", "is only allowed for type \"mlp\", not " + type);
  }
  const Arity type_arity = TypeArity(m->type);
  if (outputs != nullptr && !Fits(type_arity, m->outputs)) {
    r.Report(*outputs, "outputs",
             type + " has " + ArityText(type_arity) + ", got " + std::to_string(m->outputs));
  }
  if (loss != nullptr) {
    const Arity loss_arity = LossArity(m->loss);
    const std::string needs =
        "loss \"" + std::string(model::LossName(m->loss)) + "\" needs " + ArityText(loss_arity);
    if (type_arity != Arity::kAny && type_arity != loss_arity) {
      r.Report(*loss, "loss", needs + ", but " + type + " has " + ArityText(type_arity));
    } else if (outputs != nullptr && !Fits(loss_arity, m->outputs)) {
      r.Report(*loss, "loss", needs + ", got outputs = " + std::to_string(m->outputs));
    }
  }
}

// train.precision; with `host_cpu`, "bf16" only where this CPU multiplies bf16 natively (every
// worker checks its own host again at start).
void ReadPrecision(TableReader& r, bool host_cpu, math::Precision* precision) {
  std::string name = math::PrecisionName(*precision);
  const toml::node* node = r.OneOf("precision", "fp32, bf16", &name);
  if (node == nullptr) return;
  *precision = name == "bf16" ? math::Precision::kBf16 : math::Precision::kFp32;
  if (*precision != math::Precision::kBf16 || !host_cpu) return;
  if (const math::Bf16Support bf16 = math::NativeBf16(); !bf16.native) {
    r.Report(*node, "precision", math::Bf16Refusal(bf16) + ": use \"fp32\"");
  }
}

void ReadTrain(TableReader& r, train::TrainOptions* t, int* threads, float* clip_norm) {
  const toml::node* epochs = r.Int("epochs", 0, kMaxEpochs, &t->epochs);
  const toml::node* steps = r.Int("steps", 0, kMaxSteps, &t->steps);
  r.Int("batch_size", 1, kMaxBatchSize, &t->batch_size);
  r.Int("seed", 0, kMaxSeed, &t->seed);
  r.Int("threads", 0, kMaxThreads, threads);
  r.Int("eval_every", 0, kMaxSteps, &t->eval_every);
  r.Int("log_every", 1, kMaxSteps, &t->log_every);
  r.Number("target_accuracy", Closed(0, 1), &t->target_accuracy);
  std::string on_divergence = t->fail_on_divergence ? "fail" : "continue";
  r.OneOf("on_divergence", "fail, continue", &on_divergence);
  t->fail_on_divergence = on_divergence == "fail";
  r.Number("weight_decay", Closed(0, 1), &t->weight_decay);
  r.Number("clip_norm", Closed(0, 1e9), clip_norm);
  if (t->epochs == 0 && t->steps == 0 && !r.Failed("epochs") && !r.Failed("steps")) {
    const std::string message =
        "train.epochs and train.steps are both 0, so the run would never end: set at least one";
    if (epochs != nullptr) {
      r.Report(*epochs, "epochs", message);
    } else if (steps != nullptr) {
      r.Report(*steps, "steps", message);
    } else {
      r.Missing("epochs", message);
    }
  }
}

void ReadOptimizer(TableReader& r, optim::OptimizerOptions* o, optim::ScheduleOptions* s,
                   optim::LbfgsOptions* lbfgs, std::int64_t* sample_rows) {
  r.Enum("type", optim::ParseOptimizerType, optim::OptimizerTypeChoices(), &o->type);
  r.Number("lr", OpenClosed(0, 1000), &s->lr);
  r.Number("momentum", ClosedOpen(0, 1), &o->momentum);
  const toml::node* nesterov = r.Bool("nesterov", &o->nesterov);
  r.Number("beta1", ClosedOpen(0, 1), &o->beta1);
  r.Number("beta2", ClosedOpen(0, 1), &o->beta2);
  r.Number("eps", OpenClosed(0, 1), &o->eps);
  r.Number("initial_accumulator", Closed(0, 1e6), &o->initial_accumulator);
  r.Number("alpha", OpenClosed(0, 1000), &o->alpha);
  r.Number("beta", OpenClosed(0, 1e6), &o->beta);
  r.Number("l1", Closed(0, 1e6), &o->l1);
  r.Number("l2", Closed(0, 1e6), &o->l2);
  r.Int("history", 1, 1000, &lbfgs->history);
  r.Int("max_iterations", 1, kMaxSteps, &lbfgs->max_iterations);
  r.Number("gradient_tolerance", Closed(0, 1e9), &lbfgs->gradient_tolerance);
  r.Number("loss_tolerance", Closed(0, 1), &lbfgs->loss_tolerance);
  r.Int("max_evaluations", 1, 1000, &lbfgs->max_evaluations);
  r.Int("sample_rows", 0, kMaxRows, sample_rows);
  r.Enum("schedule", optim::ParseScheduleType, optim::ScheduleTypeChoices(), &s->type);
  r.Int("warmup_steps", 0, kMaxSteps, &s->warmup_steps);
  r.Int("step_size", 1, kMaxSteps, &s->step_size);
  r.Number("gamma", OpenClosed(0, 1), &s->gamma);
  const toml::node* min_lr = r.Number("min_lr", Closed(0, 1000), &s->min_lr);
  if (min_lr != nullptr && !r.Failed("lr") && s->min_lr > s->lr) {
    r.Report(
        *min_lr, "min_lr",
        "must not exceed optimizer.lr (" + TomlFloat(s->lr) + "), got " + TomlFloat(s->min_lr));
  }
  if (nesterov != nullptr && o->nesterov && o->type == optim::OptimizerType::kMomentum &&
      o->momentum == 0.0f && !r.Failed("momentum")) {
    r.Report(*nesterov, "nesterov", "needs optimizer.momentum > 0");
  }
}

// Augmentation needs rows that are images: IDX data, or a layer list's input_shape with a height
// and width (as train::ImageOf finds them).
void CheckAugment(const JobConfig& job, TableReader& data) {
  if (!job.data.augment.enabled()) return;
  const bool images = job.data.format == DataFormat::kIdx ||
                      (job.model.type == model::ModelType::kSequential &&
                       job.model.input_shape.Size() > 0 && !job.model.input_shape.Flat());
  if (images) return;
  for (std::string_view key : {"augment_crop", "augment_flip"}) {
    if (const toml::node* node = data.Find(key); node != nullptr && !data.Failed(key)) {
      data.Report(*node, key,
                  "needs images: format \"idx\", or model.type = \"sequential\" with an "
                  "input_shape of [channels, height, width]");
      return;
    }
  }
}

void ReadCheckpoint(TableReader& r, CheckpointConfig* c) {
  r.Int("every_steps", 0, kMaxSteps, &c->every_steps);
  r.Number("every_seconds", Closed(0, 1e7), &c->every_seconds);
  r.Int("keep", 1, kMaxKeep, &c->keep);
}

// A cosine schedule ends at the run's last step, which must come after the warm-up.
void CheckWarmup(TableReader& optimizer, const train::TrainOptions& t) {
  const optim::ScheduleOptions& s = t.schedule;
  const toml::node* warmup = optimizer.Find("warmup_steps");
  if (warmup != nullptr && !optimizer.Failed("warmup_steps") &&
      s.type == optim::ScheduleType::kCosine && t.steps > 0 && s.warmup_steps >= t.steps) {
    optimizer.Report(*warmup, "warmup_steps",
                     "must be less than train.steps (" + std::to_string(t.steps) +
                         ") for schedule \"cosine\", got " + std::to_string(s.warmup_steps));
  }
}

// The top-level name: kept simple, because it names the job in listings, paths and logs.
void ReadName(TableReader& top, std::string* name) {
  std::string given;
  const toml::node* node = top.String("name", &given);
  if (node == nullptr) return;
  if (std::string why = LabelProblem(given); !why.empty()) {
    top.Report(*node, "name", std::move(why));
  } else {
    *name = given;
  }
}

// Refuses a model that cannot fit [train] memory_limit (with a BLAS thread's overhead, at least)
// or, when `host_memory` is known, the memory of the host that would run it.
void CheckMemory(const JobConfig& job, TableReader& train, TableReader& model,
                 const toml::node* memory_limit, std::uint64_t host_memory) {
  const JobMemory m = EstimateJobMemory(job);
  const std::uint64_t process = std::max(m.replica, m.shard);
  if (memory_limit != nullptr && job.memory_limit > 0) {
    const std::uint64_t overhead = ProcessOverhead(std::max(job.threads, 1));
    if (process > job.memory_limit || process + overhead > job.memory_limit) {
      train.Report(*memory_limit, "memory_limit",
                   "is " + FormatBytes(job.memory_limit) + ", but each process needs at least " +
                       FormatBytes(process + overhead) + ": " + m.breakdown + ", and " +
                       FormatBytes(overhead) + " for its program and BLAS buffers");
    }
  }
  if (host_memory > 0 && m.host > host_memory) {
    const char* key = model.Present("hidden") || !model.Present("inputs") ? "hidden" : "inputs";
    const toml::node* at = model.Find(key);
    const std::string message =
        "the model needs at least " + FormatBytes(m.replica) + " per replica (" + m.breakdown +
        ")" +
        (m.host > process ? ", " + FormatBytes(m.host) + " for the job's processes on one host"
                          : std::string()) +
        ", more than this host's memory (" + FormatBytes(host_memory) + ")";
    if (at != nullptr) {
      model.Report(*at, key, message);
    } else {
      model.Missing(key, message);
    }
  }
}

JobConfig ReadJob(const toml::table& root, const std::string& display_path, const PathBase& base,
                  const JobChecks& checks, Sink& sink) {
  JobConfig job;
  job.source_path = display_path;
  TableReader top(&root, "", sink);
  job.name = DefaultName(display_path);
  ReadName(top, &job.name);
  internal::ReadTags(top, &job.tags);
  top.Int("priority", kMinPriority, kMaxPriority, &job.priority);
  TableReader data(SectionTable(top, "data"), "data", sink);
  TableReader model(SectionTable(top, "model"), "model", sink);
  TableReader train(SectionTable(top, "train"), "train", sink);
  TableReader optimizer(SectionTable(top, "optimizer"), "optimizer", sink);
  TableReader cluster(SectionTable(top, "cluster"), "cluster", sink);
  TableReader checkpoint(SectionTable(top, "checkpoint"), "checkpoint", sink);
  TableReader restart(SectionTable(top, "restart"), "restart", sink);
  TableReader slurm(SectionTable(top, "slurm"), "slurm", sink);

  ReadData(data, base, &job.data);
  if (job.data.sparse) {
    internal::ReadSparseModel(model, &job.sparse_model);
  } else {
    ReadModel(model, sink, job.data, &job.model, &job.layer_places);
  }
  CheckAugment(job, data);
  ReadTrain(train, &job.train, &job.threads, &job.clip_norm);
  const toml::node* early_stopping =
      internal::ReadEarlyStopping(train, sink, &job.train.early_stopping);
  ReadPrecision(train, checks.host_cpu, &job.precision);
  const toml::node* memory_limit = ReadMemorySize(train, "memory_limit", &job.memory_limit);
  ReadOptimizer(optimizer, &job.optimizer, &job.train.schedule, &job.lbfgs, &job.sample_rows);
  internal::ReadCluster(cluster, &job.cluster);
  internal::ReadSlurm(cluster, slurm, &job.cluster, &job.slurm);
  internal::CheckElastic(job.cluster, cluster);
  internal::CheckModelParallel(job, cluster);
  internal::CheckLbfgs(job, optimizer, cluster);
  // A mode may have its own default optimizer (Downpour's is Adagrad); an explicit type wins.
  const std::optional<optim::OptimizerType> mode_default =
      TraitsOf(job.cluster.mode).default_optimizer;
  if (mode_default && !optimizer.Present("type")) job.optimizer.type = *mode_default;
  ReadCheckpoint(checkpoint, &job.checkpoint);
  const toml::node* keep_best = internal::ReadKeepBest(checkpoint, &job.checkpoint);
  restart.Int("max_restarts", 0, kMaxRestartsLimit, &job.max_restarts);
  CheckWarmup(optimizer, job.train);
  internal::CheckEarlyStopping(job, train, early_stopping);
  internal::CheckKeepBest(job, checkpoint, keep_best);
  internal::CheckSparseJob(job, {data, model, train, optimizer, cluster});
  // A sparse model's size is the features the data touches, known once it is read.
  if (sink.size() == 0 && !job.data.sparse) {
    CheckMemory(job, train, model, memory_limit, checks.host_memory);
  }

  const TableReader* const readers[] = {&top,     &data,       &model,   &train, &optimizer,
                                        &cluster, &checkpoint, &restart, &slurm};
  RejectUnknown(readers, sink);
  return job;
}

// ---------------------------------------------------------------------------------------------
// Text, overrides and files.

std::string Trim(std::string_view text) {
  const std::size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return "";
  return std::string(text.substr(begin, text.find_last_not_of(" \t") - begin + 1));
}

// A value that --set takes as a string when it is not TOML: no whitespace, quotes or brackets.
bool IsBareWord(std::string_view value) {
  return !value.empty() && value.find_first_of(" \t\"'[]{}#,=") == std::string_view::npos;
}

// Each override as a one-key document whose nodes carry the source path "--set".
std::vector<toml::table> ParseOverrides(const std::vector<std::string>& overrides, Sink& sink) {
  std::vector<toml::table> documents;
  for (const std::string& text : overrides) {
    const std::size_t equals = text.find('=');
    const std::string key = Trim(std::string_view(text).substr(0, equals));
    if (equals == std::string::npos || key.empty()) {
      sink.InOverride(key, "expected key=value, got " + TomlString(text));
      continue;
    }
    if (text.find_first_of("\r\n") != std::string::npos) {
      sink.InOverride(key, "must be one line, got " + TomlString(text));
      continue;
    }
    const std::string value = Trim(std::string_view(text).substr(equals + 1));
    SyntaxError error;
    std::optional<toml::table> document = ParseToml(key + " = " + value, kOverrideFile, &error);
    if (!document && IsBareWord(value)) {
      document = ParseToml(key + " = " + TomlString(value), kOverrideFile, &error);
    }
    if (document) {
      documents.push_back(std::move(*document));
    } else {
      sink.InOverride(key, "cannot parse " + TomlString(text) + " as key=value (TOML value or " +
                               "bare word): " + error.description);
    }
  }
  return documents;
}

// Sets every value of `from` in `into`, replacing what was there; tables merge key by key.
void Merge(toml::table& into, toml::table&& from) {
  for (auto&& [key, node] : from) {
    toml::node* existing = into.get(key.str());
    if (existing != nullptr && existing->is_table() && node.is_table()) {
      Merge(*existing->as_table(), std::move(*node.as_table()));
    } else {
      into.insert_or_assign(key, std::move(node));
    }
  }
}

// `without`: a top-level key of the document that is not the job's (empty: none).
LoadResult Load(std::string_view text, const std::string& display_path,
                const std::vector<std::string>& overrides, const std::string& base_dir,
                const JobChecks& checks, std::string_view without = {}) {
  Sink sink(display_path);
  std::optional<toml::table> root = ParseDocument(text, display_path, sink);
  std::vector<toml::table> documents = ParseOverrides(overrides, sink);
  if (!root) return {std::nullopt, std::move(sink).Take()};
  if (!without.empty()) root->erase(without);
  for (toml::table& document : documents) Merge(*root, std::move(document));

  std::error_code ec;
  PathBase base{fs::absolute(fs::path(base_dir), ec), fs::current_path(ec), checks.files};
  JobConfig job = ReadJob(*root, display_path, base, checks, sink);
  if (sink.size() > 0) return {std::nullopt, std::move(sink).Take()};
  return {std::move(job), {}};
}

}  // namespace

LoadResult ParseJobText(std::string_view toml_text, const std::string& display_path,
                        const std::vector<std::string>& overrides, const std::string& base_dir,
                        const JobChecks& checks) {
  return Guarded<LoadResult>(
      display_path, [&] { return Load(toml_text, display_path, overrides, base_dir, checks); });
}

LoadResult internal::ParseEmbeddedJob(std::string_view toml_text, std::string_view without,
                                      const std::string& display_path,
                                      const std::vector<std::string>& overrides,
                                      const std::string& base_dir, const JobChecks& checks) {
  return Guarded<LoadResult>(display_path, [&] {
    return Load(toml_text, display_path, overrides, base_dir, checks, without);
  });
}

LoadResult LoadJobFile(const std::string& path, const std::vector<std::string>& overrides,
                       const JobChecks& checks) {
  return Guarded<LoadResult>(path, [&]() -> LoadResult {
    std::string text, problem;
    if (!ReadWholeFile(path, "the job file", &text, &problem)) {
      return {std::nullopt, {Diagnostic{path, 0, 0, "", problem}}};
    }
    std::error_code ec;
    const fs::path directory = fs::absolute(fs::path(path), ec).parent_path();
    return Load(text, path, overrides, directory.string(), checks);
  });
}

}  // namespace dtrain::config
