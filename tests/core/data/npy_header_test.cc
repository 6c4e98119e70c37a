// ParseNpyHeader (every dtype, the three versions, what is refused and the messages),
// NpyHeaderBytes read back, and FindNpzMember over handmade archives.
#include "core/data/npy_header.h"

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/npy_files.h"
#include "core/data/npz_directory.h"

namespace dtrain::data {
namespace npy_header_test {

using testing::NpyBytes;
using testing::NpyDict;
using testing::NpzBytes;

std::span<const std::uint8_t> Span(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

Result<NpyHeader> Parse(const std::string& bytes) { return ParseNpyHeader(Span(bytes)); }

void CheckRefused(const std::string& bytes, const std::string& fragment) {
  const Result<NpyHeader> h = Parse(bytes);
  BOOST_TEST_REQUIRE(!h.ok(), "accepted, expected: " + fragment);
  BOOST_TEST(h.status().message().find(fragment) != std::string::npos, h.status().message());
}

BOOST_AUTO_TEST_SUITE(npy_header)

BOOST_AUTO_TEST_CASE(reads_every_dtype_numpy_writes_for_numbers) {
  struct Case {
    const char* descr;
    NpyKind kind;
    int bytes;
    const char* name;
  };
  for (const Case& c :
       {Case{"<f4", NpyKind::kFloat, 4, "float32"}, Case{"<f8", NpyKind::kFloat, 8, "float64"},
        Case{"|u1", NpyKind::kUnsigned, 1, "uint8"}, Case{"<u2", NpyKind::kUnsigned, 2, "uint16"},
        Case{"<u4", NpyKind::kUnsigned, 4, "uint32"}, Case{"<u8", NpyKind::kUnsigned, 8, "uint64"},
        Case{"|i1", NpyKind::kSigned, 1, "int8"}, Case{"<i2", NpyKind::kSigned, 2, "int16"},
        Case{"<i4", NpyKind::kSigned, 4, "int32"}, Case{"<i8", NpyKind::kSigned, 8, "int64"},
        Case{"|b1", NpyKind::kUnsigned, 1, "uint8"}}) {
    const Result<NpyHeader> h = Parse(NpyBytes(NpyDict(c.descr, "(3, 4)"), ""));
    BOOST_TEST_REQUIRE(h.ok(), c.descr << ": " << h.status().message());
    BOOST_TEST((h.value().dtype == NpyDtype{c.kind, c.bytes}), c.descr);
    BOOST_TEST(NpyDtypeName(h.value().dtype) == c.name);
    BOOST_TEST(h.value().shape == (std::vector<std::uint64_t>{3, 4}),
               boost::test_tools::per_element());
    BOOST_TEST(h.value().DataBytes() == 12u * static_cast<unsigned>(c.bytes));
  }
}

BOOST_AUTO_TEST_CASE(versions_1_2_and_3_place_the_data_after_their_length_fields) {
  for (int major : {1, 2, 3}) {
    const std::string bytes = NpyBytes(NpyDict("<f8", "(5,)"), std::string(40, '\0'), major);
    const Result<NpyHeader> h = Parse(bytes);
    BOOST_TEST_REQUIRE(h.ok(), h.status().message());
    BOOST_TEST(h.value().major_version == major);
    BOOST_TEST(h.value().data_offset == bytes.size() - 40);
    BOOST_TEST(h.value().data_offset % 64 == 0u);
    BOOST_TEST(h.value().shape == std::vector<std::uint64_t>{5}, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(accepts_the_spellings_python_may_write) {
  // Keys in any order, double quotes, no trailing comma, a scalar's empty shape, Python 2 longs.
  const Result<NpyHeader> a =
      Parse(NpyBytes("{\"shape\": (2,3), \"fortran_order\": False, \"descr\": \"<f4\"}", ""));
  BOOST_TEST_REQUIRE(a.ok(), a.status().message());
  BOOST_TEST(a.value().Elements() == 6u);
  const Result<NpyHeader> scalar = Parse(NpyBytes(NpyDict("<f4", "()"), ""));
  BOOST_TEST_REQUIRE(scalar.ok(), scalar.status().message());
  BOOST_TEST(scalar.value().Elements() == 1u);
  const Result<NpyHeader> longs = Parse(NpyBytes(NpyDict("<i8", "(3L, 4L)"), ""));
  BOOST_TEST_REQUIRE(longs.ok(), longs.status().message());
  BOOST_TEST(longs.value().Elements() == 12u);
}

BOOST_AUTO_TEST_CASE(refuses_other_files_versions_and_truncated_headers) {
  CheckRefused("", "does not start with NumPy's magic string");
  CheckRefused("PK\x03\x04 a zip", "does not start with NumPy's magic string");
  std::string future = NpyBytes(NpyDict("<f4", "(1,)"), "");
  future[6] = 4;
  CheckRefused(future, "format version 4.0 is not one of 1.0, 2.0 and 3.0");
  CheckRefused(std::string("\x93NUMPY\x01", 7), "truncated before the format version");
  CheckRefused(std::string("\x93NUMPY\x02\x00\x10", 9), "truncated before the header length");
  const std::string whole = NpyBytes(NpyDict("<f4", "(1,)"), "");
  CheckRefused(whole.substr(0, whole.size() - 1), "truncated: the header declares 118 bytes, 117");
  std::string huge = whole;
  huge[8] = huge[9] = huge[10] = huge[11] = '\x7f';
  huge[6] = 2;
  CheckRefused(huge, "more than 1048576");
}

BOOST_AUTO_TEST_CASE(refuses_malformed_dicts_naming_what_is_wrong) {
  CheckRefused(NpyBytes("['descr']", ""), "the header is not a dict");
  CheckRefused(NpyBytes("{descr: '<f4'}", ""), "a key of the header's dict is not a plain string");
  CheckRefused(NpyBytes("{'descr' '<f4'}", ""), "no ':' after it");
  CheckRefused(NpyBytes("{'descr': '<f4', 'fortran_order': False}", ""),
               "lacks one of 'descr', 'fortran_order' and 'shape'");
  CheckRefused(
      NpyBytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", ""),
      "one of them twice");
  CheckRefused(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}", ""),
               "a key other than");
  CheckRefused(NpyBytes(NpyDict("<f4", "(5)"), ""), "'shape' is not a tuple");
  CheckRefused(NpyBytes(NpyDict("<f4", "(-1, 2)"), ""), "'shape' is not a tuple");
  CheckRefused(NpyBytes(NpyDict("<f4", "(99999999999999999999,)"), ""), "'shape' is not a tuple");
  CheckRefused(NpyBytes(NpyDict("<f4", "(4294967296, 4294967296)"), ""), "more than 2^64 elements");
  CheckRefused(NpyBytes(NpyDict("<f8", "(4294967296, 1073741824)"), ""),
               "more bytes than a file can");
  CheckRefused(NpyBytes("{'descr': '<f4', 'fortran_order': 0, 'shape': ()}", ""),
               "'fortran_order' is neither True nor False");
  CheckRefused(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': ()} extra", ""),
               "text follows the header's dict");
  CheckRefused(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': ()", ""), "not closed");
}

BOOST_AUTO_TEST_CASE(refuses_fortran_order_big_endian_and_other_dtypes_saying_why) {
  CheckRefused(NpyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", ""),
               "Fortran (column-major) order: only C order is read");
  CheckRefused(NpyBytes(NpyDict(">f4", "(2,)"), ""), "dtype '>f4' is big-endian");
  CheckRefused(NpyBytes(NpyDict(">i8", "(2,)"), ""), "big-endian");
  CheckRefused(NpyBytes(NpyDict("=f4", "(2,)"), ""), "no stated byte order");
  CheckRefused(NpyBytes(NpyDict("<c8", "(2,)"), ""), "dtype '<c8' is not supported");
  CheckRefused(NpyBytes(NpyDict("<f2", "(2,)"), ""), "dtype '<f2' is not supported");
  CheckRefused(NpyBytes(NpyDict("<f16", "(2,)"), ""), "dtype '<f16' is not supported");
  CheckRefused(NpyBytes(NpyDict("<U10", "(2,)"), ""), "dtype '<U10' is not supported");
  CheckRefused(NpyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", ""),
               "structured and string dtypes are not supported");
  CheckRefused(NpyBytes(NpyDict("<f4 whatever", "(2,)"), ""), "is not a plain dtype");
}

BOOST_AUTO_TEST_CASE(npz_members_are_found_by_name_and_compressed_ones_refused) {
  const std::string x = NpyBytes(NpyDict("<f4", "(1,)"), std::string(4, '\1'));
  const std::string y = NpyBytes(NpyDict("<i8", "(1,)"), std::string(8, '\2'));
  const std::string archive = NpzBytes({{"x", x}, {"y", y}});
  for (const auto& [name, bytes] : {std::pair{"x", x}, std::pair{"y", y}}) {
    const Result<NpzMember> m = FindNpzMember(Span(archive), name);
    BOOST_TEST_REQUIRE(m.ok(), m.status().message());
    BOOST_TEST(archive.substr(m.value().offset, m.value().size) == bytes);
  }
  const Result<NpzMember> missing = FindNpzMember(Span(archive), "arr_0");
  BOOST_TEST_REQUIRE(!missing.ok());
  BOOST_TEST(missing.status().message() == "has no array 'arr_0' (no member arr_0.npy)");
  const Result<NpzMember> deflated = FindNpzMember(Span(NpzBytes({{"x", x}}, true)), "x");
  BOOST_TEST_REQUIRE(!deflated.ok());
  BOOST_TEST(deflated.status().message().find("is compressed (numpy.savez_compressed)") !=
                 std::string::npos,
             deflated.status().message());
  // Cut anywhere, the archive is refused or its member still lies inside what is left.
  for (std::size_t keep = 0; keep < archive.size(); ++keep) {
    const std::string cut = archive.substr(0, keep);
    const Result<NpzMember> m = FindNpzMember(Span(cut), "y");
    if (m.ok()) BOOST_TEST(m.value().offset + m.value().size <= keep);
  }
  const Result<NpzMember> none = FindNpzMember(Span(std::string("PK\x03\x04")), "x");
  BOOST_TEST_REQUIRE(!none.ok());
  BOOST_TEST(none.status().message().find("not a valid .npz (zip) file") != std::string::npos);
}

// What NpyHeaderBytes writes is NumPy's own text (the dict numpy.save writes, padded as it
// pads) and reads back to the dtype and shape it was given, for no, one and several dimensions.
BOOST_AUTO_TEST_CASE(writes_headers_numpy_writes_and_reads_them_back) {
  const std::vector<std::uint64_t> rows{5};
  BOOST_TEST(NpyHeaderBytes({NpyKind::kSigned, 8}, rows) == NpyBytes(NpyDict("<i8", "(5,)"), ""));
  const std::vector<std::uint64_t> matrix{3, 10};
  BOOST_TEST(NpyHeaderBytes({NpyKind::kFloat, 4}, matrix) ==
             NpyBytes(NpyDict("<f4", "(3, 10)"), ""));
  BOOST_TEST(NpyHeaderBytes({NpyKind::kUnsigned, 1}, {}) == NpyBytes(NpyDict("|u1", "()"), ""));
  for (const std::vector<std::uint64_t>& shape :
       {std::vector<std::uint64_t>{}, rows, matrix, std::vector<std::uint64_t>{0, 2, 28, 28}}) {
    const std::string header = NpyHeaderBytes({NpyKind::kFloat, 8}, shape);
    BOOST_TEST(header.size() % 64 == 0);
    const Result<NpyHeader> back = Parse(header);
    BOOST_TEST_REQUIRE(back.ok(), back.status().message());
    BOOST_TEST(back.value().shape == shape);
    BOOST_TEST((back.value().dtype == NpyDtype{NpyKind::kFloat, 8}));
    BOOST_TEST(back.value().data_offset == header.size());
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace npy_header_test
}  // namespace dtrain::data
