// ReadIdx and ReadIdxShape: IDX image/label files, gzipped or plain (codec::GzipOrPlainFile).
#include <algorithm>
#include <climits>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/codec/gzip_or_plain_file.h"
#include "core/data/readers.h"

namespace dtrain::data {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
// Items are read into a buffer of at most this size before it grows to the declared total, so a
// corrupt header cannot make us allocate much more than the file really holds.
constexpr std::size_t kFirstChunk = std::size_t{16} << 20;

std::string Hex32(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", v);
  return text;
}

// One open IDX file. Every error it produces starts with the file's path.
class IdxFile {
 public:
  static Result<IdxFile> Open(const std::string& path) {
    Result<codec::GzipOrPlainFile> f = codec::GzipOrPlainFile::Open(path);
    if (!f.ok()) return Status::Error(path + ": " + f.status().message());
    return IdxFile(path, std::move(f).value());
  }

  Status Error(const std::string& what) const { return Status::Error(path_ + ": " + what); }

  // Reads up to n bytes into dst; fewer only at the end of the data.
  Result<std::size_t> Read(void* dst, std::size_t n) {
    Result<std::size_t> got = file_.Read(dst, n);
    if (!got.ok()) return Error(got.status().message());
    return got;
  }

  // Reads the magic number and the big-endian dimension sizes that follow it.
  Result<std::vector<std::uint32_t>> ReadHeader(std::uint32_t expected_magic, const char* kind) {
    const int dims = static_cast<int>(expected_magic & 0xFF);
    std::vector<unsigned char> raw(4 * static_cast<std::size_t>(dims + 1));
    Result<std::size_t> got = Read(raw.data(), raw.size());
    if (!got.ok()) return got.status();
    if (got.value() < 4) return Error("truncated: no IDX magic number (file too short)");
    const std::uint32_t magic = BigEndian(raw.data());
    if (magic != expected_magic) {  // its value is the file's content: not named
      return Error(std::string("not an IDX ") + kind + " file: bad magic number (expected " +
                   Hex32(expected_magic) + ")");
    }
    if (got.value() < raw.size()) {
      return Error("truncated header: " + std::to_string(got.value()) + " of " +
                   std::to_string(raw.size()) + " bytes");
    }
    std::vector<std::uint32_t> sizes(static_cast<std::size_t>(dims));
    for (int d = 0; d < dims; ++d) sizes[d] = BigEndian(raw.data() + 4 * (d + 1));
    return sizes;
  }

  // Reads `count` items of `item_bytes` each into `out` and checks that nothing follows them.
  Status ReadItems(std::size_t count, std::size_t item_bytes, const char* item,
                   math::ByteBuffer& out) {
    const std::size_t total = count * item_bytes;
    out.resize(std::min(total, kFirstChunk));
    Result<std::size_t> got = Read(out.data(), out.size());
    if (!got.ok()) return got.status();
    std::size_t done = got.value();
    if (done == out.size() && total > out.size()) {
      out.resize(total);
      got = Read(out.data() + done, total - done);
      if (!got.ok()) return got.status();
      done += got.value();
    }
    if (done < total) {
      return Error("truncated: the data ends in " + std::string(item) + " " +
                   std::to_string(done / item_bytes) + " (0-based), before the last one " +
                   "the header declares (" + std::to_string(done) + " data bytes present)");
    }
    unsigned char extra = 0;
    got = Read(&extra, 1);
    if (!got.ok()) return got.status();
    if (got.value() != 0) {
      return Error("unexpected data after the last " + std::string(item) + " the header declares");
    }
    return Status::Ok();
  }

 private:
  IdxFile(std::string path, codec::GzipOrPlainFile f)
      : path_(std::move(path)), file_(std::move(f)) {}

  static std::uint32_t BigEndian(const unsigned char* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
           std::uint32_t{p[3]};
  }

  std::string path_;
  codec::GzipOrPlainFile file_;
};

// An image file whose header has been read and checked; its items come next.
struct ImageFile {
  IdxFile file;
  std::uint32_t count = 0;            // images
  std::size_t height = 0, width = 0;  // pixels
};

// Opens an IDX image file and reads its header: at least one image of non-empty size.
Result<ImageFile> OpenImages(const std::string& path) {
  Result<IdxFile> images = IdxFile::Open(path);
  if (!images.ok()) return images.status();
  Result<std::vector<std::uint32_t>> dims = images.value().ReadHeader(kImagesMagic, "image");
  if (!dims.ok()) return dims.status();
  const std::uint32_t count = dims.value()[0];
  const std::size_t height = dims.value()[1];
  const std::size_t width = dims.value()[2];
  if (count == 0) return images.value().Error("the header declares no images");
  if (height == 0 || width == 0 || height * width > static_cast<std::size_t>(INT_MAX)) {
    return images.value().Error(
        "the header declares an invalid image size (a dimension of 0, "
        "or more than 2^31 pixels)");
  }
  return ImageFile{std::move(images).value(), count, height, width};
}

// Reads the whole label file, which must hold one label for each of `count` images (of
// images_path, for the message).
Result<math::ByteBuffer> ReadLabels(const std::string& labels_path, std::uint32_t count,
                                    const std::string& images_path) {
  Result<IdxFile> labels = IdxFile::Open(labels_path);
  if (!labels.ok()) return labels.status();
  Result<std::vector<std::uint32_t>> dims = labels.value().ReadHeader(kLabelsMagic, "label");
  if (!dims.ok()) return dims.status();
  if (dims.value()[0] != count) {
    return labels.value().Error("its header declares another number of labels than " + images_path +
                                " declares images");
  }
  math::ByteBuffer raw;
  Status s = labels.value().ReadItems(count, 1, "label", raw);
  if (!s.ok()) return s;
  return raw;
}

// An image file with its header read and all its labels; the pixels are still to be read.
struct LabelledImages {
  ImageFile images;
  math::ByteBuffer labels;  // one per image; empty when unlabelled (all 0, once the pixels are in)
  int num_classes = 0;      // the largest label + 1
};

// Opens the image file and reads its header, then the label file, checking that they match.
Result<LabelledImages> OpenLabelledImages(const std::string& images_path,
                                          const std::string& labels_path) {
  Result<ImageFile> images = OpenImages(images_path);
  if (!images.ok()) return images.status();
  if (labels_path.empty()) {  // unlabelled: no classes, and nothing sized by the header alone
    return LabelledImages{std::move(images).value(), {}, 0};
  }
  Result<math::ByteBuffer> labels = ReadLabels(labels_path, images.value().count, images_path);
  if (!labels.ok()) return labels.status();
  const int num_classes = 1 + *std::max_element(labels.value().begin(), labels.value().end());
  return LabelledImages{std::move(images).value(), std::move(labels).value(), num_classes};
}

}  // namespace

Result<Dataset> ReadIdx(const std::string& images_path, const std::string& labels_path) {
  Result<LabelledImages> opened = OpenLabelledImages(images_path, labels_path);
  if (!opened.ok()) return opened.status();
  LabelledImages& in = opened.value();
  Dataset d;
  d.rows = in.images.count;
  d.features = in.images.height * in.images.width;
  d.image_height = in.images.height;
  d.image_width = in.images.width;
  d.source = images_path;
  d.num_classes = in.num_classes;
  Status s = in.images.file.ReadItems(d.rows, d.features, "image", d.bytes);
  if (!s.ok()) return s;
  if (in.labels.empty()) {
    d.labels.assign(d.rows, 0.0f);  // as many as the pixels really hold
  } else {
    d.labels.assign(in.labels.begin(), in.labels.end());
  }
  return d;
}

Result<DatasetShape> ReadIdxShape(const std::string& images_path, const std::string& labels_path) {
  Result<LabelledImages> opened = OpenLabelledImages(images_path, labels_path);
  if (!opened.ok()) return opened.status();
  const LabelledImages& in = opened.value();
  return DatasetShape{in.images.count,  in.images.height * in.images.width,
                      in.num_classes,   images_path,
                      in.images.height, in.images.width};
}

}  // namespace dtrain::data
