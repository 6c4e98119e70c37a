// ReadNpy: NumPy .npy files and .npz archives, the features memory-mapped in place
// (Dataset::mapped), the labels converted to floats. Headers are parsed by ParseNpyHeader
// (npy_header.h), archives' directories by FindNpzMember (npz_directory.h).
#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "core/data/mapped_file.h"
#include "core/data/npy_header.h"
#include "core/data/npz_directory.h"
#include "core/data/readers.h"
#include "core/data/text_lines.h"

namespace dtrain::data {
namespace {

constexpr std::string_view kZipMagic = "PK\x03\x04";

bool IsArchive(const MappedFile& f) {
  const std::span<const std::uint8_t> b = f.bytes();
  return b.size() >= kZipMagic.size() &&
         std::memcmp(b.data(), kZipMagic.data(), kZipMagic.size()) == 0;
}

// One mapped array: its file, header and data bytes (exactly the header's, checked present).
struct MappedArray {
  std::shared_ptr<const MappedFile> file;
  std::string name;  // the file's path, and "[array]" for a member of an archive
  NpyHeader header;
  const std::uint8_t* data = nullptr;

  Status Error(const std::string& what) const { return Status::Error(name + ": " + what); }
};

// The array in `file`: the whole file, or the archive's member `array`.
Result<MappedArray> OpenArray(std::shared_ptr<const MappedFile> file, const std::string& array) {
  MappedArray a{std::move(file), {}, {}, nullptr};
  a.name = a.file->path();
  std::span<const std::uint8_t> bytes = a.file->bytes();
  if (IsArchive(*a.file)) {
    Result<NpzMember> member = FindNpzMember(bytes, array);
    if (!member.ok()) return a.Error(member.status().message());
    bytes = bytes.subspan(member.value().offset, member.value().size);
    a.name += "[" + array + "]";
  }
  Result<NpyHeader> header = ParseNpyHeader(bytes);
  if (!header.ok()) return a.Error(header.status().message());
  a.header = std::move(header).value();
  const std::uint64_t present = bytes.size() - a.header.data_offset;
  if (present < a.header.DataBytes()) {
    return a.Error("truncated: the header declares " + std::to_string(a.header.DataBytes()) +
                   " bytes of data, " + std::to_string(present) + " present");
  }
  if (present > a.header.DataBytes()) {
    return a.Error("unexpected data after the array the header declares");
  }
  a.data = bytes.data() + a.header.data_offset;
  return a;
}

Result<MappedArray> OpenArray(const std::string& path, const std::string& array) {
  Result<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  return OpenArray(std::move(file).value(), array);
}

std::string ShapeText(const std::vector<std::uint64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

// The features of `a` as a Dataset's rows, shape and mapping; labels still to come.
Result<Dataset> MapFeatures(const MappedArray& a) {
  const NpyHeader& h = a.header;
  auto mapped = std::make_shared<MappedRows>();
  if (h.dtype == NpyDtype{NpyKind::kFloat, 4}) {
    mapped->type = MappedRows::Type::kFloat32;
  } else if (h.dtype == NpyDtype{NpyKind::kFloat, 8}) {
    mapped->type = MappedRows::Type::kFloat64;
  } else if (h.dtype == NpyDtype{NpyKind::kUnsigned, 1}) {
    mapped->type = MappedRows::Type::kUint8;
  } else {
    return a.Error("features of dtype " + NpyDtypeName(h.dtype) +
                   " are not read: convert them to float32, float64 or uint8");
  }
  const std::vector<std::uint64_t>& s = h.shape;
  const std::size_t dims = s.size();
  if (dims < 2 || dims > 4) {
    return a.Error("features of shape " + ShapeText(s) +
                   " are not read: they must be rows x features, rows x height x width or "
                   "rows x channels x height x width");
  }
  Dataset d;
  d.rows = s[0];
  d.features = 1;
  for (std::size_t i = 1; i < dims; ++i) d.features *= s[i];
  if (dims >= 3) {
    d.image_height = s[dims - 2];
    d.image_width = s[dims - 1];
  }
  if (dims == 4) {  // read in height, width, channel order (MappedRows::FileFeature)
    d.image_channels = s[1];
    mapped->channels = s[1];
    mapped->plane = s[2] * s[3];
  }
  if (d.rows == 0 || d.features == 0) {
    return a.Error("the array of shape " + ShapeText(s) + " holds no rows or no features");
  }
  if (d.rows > UINT32_MAX || d.features > static_cast<std::size_t>(INT_MAX)) {
    return a.Error("the array of shape " + ShapeText(s) +
                   " has more than 2^32 rows or 2^31 features per row");
  }
  mapped->file = a.file;
  mapped->data = a.data;
  d.mapped = std::move(mapped);
  d.source = a.name;
  return d;
}

// Element i of `a`, any numeric dtype, as a float.
float LoadLabel(const MappedArray& a, std::uint64_t i) {
  const NpyDtype t = a.header.dtype;
  const std::uint8_t* p = a.data + i * static_cast<std::uint64_t>(t.bytes);
  const auto load = [p]<typename T>(T value) {
    std::memcpy(&value, p, sizeof(T));
    return static_cast<float>(value);
  };
  switch (t.kind) {
    case NpyKind::kFloat:
      return t.bytes == 4 ? load(float{}) : load(double{});
    case NpyKind::kSigned:
      switch (t.bytes) {
        case 1:
          return load(std::int8_t{});
        case 2:
          return load(std::int16_t{});
        case 4:
          return load(std::int32_t{});
        default:
          return load(std::int64_t{});
      }
    case NpyKind::kUnsigned:
      switch (t.bytes) {
        case 1:
          return load(std::uint8_t{});
        case 2:
          return load(std::uint16_t{});
        case 4:
          return load(std::uint32_t{});
        default:
          return load(std::uint64_t{});
      }
  }
  return 0.0f;
}

// Reads the labels in `a` into d: one per row of d, checked by the text readers' label rule.
Status ReadLabels(const MappedArray& a, bool classification, Dataset& d) {
  const std::vector<std::uint64_t>& s = a.header.shape;
  if (s.empty() || s.size() > 2 || (s.size() == 2 && s[1] != 1)) {
    return a.Error("labels of shape " + ShapeText(s) +
                   " are not read: they must be one per row, shape (rows,) or (rows, 1)");
  }
  if (s[0] != d.rows) {
    return a.Error("holds " + std::to_string(s[0]) + " labels but " + d.source + " holds " +
                   std::to_string(d.rows) + " rows");
  }
  text::LabelRule rule(classification);
  d.labels.resize(d.rows);
  for (std::size_t i = 0; i < d.rows; ++i) {
    const float label = LoadLabel(a, i);
    const std::string where = "label " + std::to_string(i) + " (0-based)";
    if (!std::isfinite(label)) return a.Error(where + " is not a finite number");
    if (std::string problem = rule.Check(label, where); !problem.empty()) {
      return a.Error(where + ": " + problem);
    }
    d.labels[i] = label;
  }
  Result<int> classes = rule.Finish(d.labels, a.name);
  if (!classes.ok()) return classes.status();
  d.num_classes = classes.value();
  return Status::Ok();
}

}  // namespace

Result<Dataset> ReadNpy(const std::string& path, const std::string& labels_path,
                        const NpyOptions& options) {
  Result<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  const bool archive = IsArchive(*file.value());
  Result<MappedArray> features = OpenArray(file.value(), options.features_array);
  if (!features.ok()) return features.status();
  Result<Dataset> d = MapFeatures(features.value());
  if (!d.ok()) return d;
  if (!options.labels || (labels_path.empty() && !archive)) {
    d.value().labels.assign(d.value().rows, 0.0f);
    return d;
  }
  Result<MappedArray> labels = labels_path.empty()
                                   ? OpenArray(std::move(file).value(), options.labels_array)
                                   : OpenArray(labels_path, options.labels_array);
  if (!labels.ok()) return labels.status();
  if (Status s = ReadLabels(labels.value(), options.classification, d.value()); !s.ok()) return s;
  return d;
}

}  // namespace dtrain::data
