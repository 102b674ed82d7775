#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "datasets/error.hpp"
#include "datasets/npz.hpp"
#include "datasets/readers.hpp"
#include "test_paths.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;
using Catch::Matchers::Contains;

TEST_CASE("npz members of a stored archive are listed and read zero-copy", "[npz]") {
  NpzArchive z(test::sample("cora.npz"));
  const std::vector<std::string> expected = {"adj_data", "adj_indices", "adj_indptr", "adj_shape", "attr_data", "attr_indices",
                                             "attr_indptr", "attr_shape", "labels", "idx_train", "idx_val", "idx_test"};
  CHECK(z.members() == expected);
  NpyBuffer labels = z.read("labels");
  CHECK(labels.header.descr == "<i8");
  CHECK(labels.header.shape == std::vector<std::int64_t>{2708});
  CHECK(labels.keeper != nullptr);
  CHECK(labels.base_offset > 0);  // a view into the mapped archive, not a copy
  auto l = npy_to_vector<std::int64_t>(labels, 1);
  CHECK(*std::min_element(l.begin(), l.end()) == 0);
  CHECK(*std::max_element(l.begin(), l.end()) == 6);
  CHECK_THROWS_WITH(z.read("features"), Contains("cora.npz") && Contains("member 'features.npy'") && Contains("missing"));
}

TEST_CASE("npz deflated members are inflated and give numpy's values", "[npz]") {
  // tests/fixtures/deflated.npz: 4 nodes, 0 - 1 - 2, 3 isolated; see tests/fixtures/README.md.
  Dataset ds = read_npz_dataset(test::fixture("deflated.npz"), {});
  CHECK(ds.num_nodes() == 4);
  CHECK(std::vector<EdgeId>(ds.graph.indptr().begin(), ds.graph.indptr().end()) == std::vector<EdgeId>{0, 1, 3, 4, 4});
  CHECK(ids_of(ds.graph) == std::vector<NodeId>{1, 0, 2, 1});
  REQUIRE(ds.feature_dim == 3);
  CHECK(std::vector<float>(ds.features.begin(), ds.features.end()) ==
        std::vector<float>{1.5f, 0, 0, 0, 0, 2.0f, 0, -3.0f, 0, 0, 0, 0});
  CHECK(ds.num_classes == 2);
  CHECK(ds.labels.widened() == std::vector<std::int64_t>{0, 1, -1, 1});
  CHECK(ds.train_idx.size() == 1);
  CHECK(ds.test_idx[0] == 3);
}

TEST_CASE("npz object members are skipped unless asked for, and never unpickled", "[npz]") {
  Dataset ds = read_npz_dataset(test::fixture("object_member.npz"), {});
  CHECK(ds.num_nodes() == 4);
  CHECK(ds.feature_dim == 0);
  NpzArchive z(test::fixture("object_member.npz"));
  REQUIRE(z.contains("node_info"));
  NpyBuffer obj = z.read("node_info");
  CHECK_THROWS_WITH(npy_to_vector<std::int64_t>(obj, 1), Contains("node_info.npy") && Contains("unpickling"));
}

TEST_CASE("npz corruption is detected by the member CRC", "[npz]") {
  test::ScratchDir dir;
  const std::string copy = dir / "cora.npz";
  std::filesystem::copy_file(test::sample("cora.npz"), copy);
  NpzArchive z0(copy);
  const std::uint64_t off = z0.read("labels").base_offset + 200;  // inside the labels data
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(off));
    f.put('\x7f');
  }
  NpzArchive z(copy);
  CHECK_THROWS_WITH(z.read("labels"), Contains("CRC mismatch") && Contains("labels"));
  CHECK_NOTHROW(z.read("adj_indptr"));  // other members still fine
}

TEST_CASE("npz members stream in pieces, stored or deflated, with the CRC checked at the end", "[npz]") {
  for (const std::string path : {test::sample("cora.npz"), test::fixture("deflated.npz")}) {
    NpzArchive z(path);
    for (const auto& m : z.members()) {
      const NpyBuffer whole = z.read(m);
      if (whole.header.dtype == DType::kOther) continue;
      const NpyStream s = z.stream(m);
      CHECK(s.header.shape == whole.header.shape);
      std::vector<double> got;
      npy_for_each<double>(s, -1, 100, [&](std::span<const double> x, std::uint64_t) { got.insert(got.end(), x.begin(), x.end()); });
      CHECK(got == npy_to_vector<double>(whole));
    }
  }
  // A corrupt byte in a stored member: the stream hands the pieces over, then refuses at the end.
  test::ScratchDir dir;
  const std::string copy = dir / "cora.npz";
  std::filesystem::copy_file(test::sample("cora.npz"), copy);
  const std::uint64_t off = NpzArchive(copy).read("labels").base_offset + 200;
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(off));
    f.put('\x01');
  }
  NpzArchive z(copy);
  CHECK_THROWS_WITH(npy_for_each<std::int64_t>(z.stream("labels"), 1, 100, [](std::span<const std::int64_t>, std::uint64_t) {}),
                    Contains("CRC mismatch") && Contains("labels"));
}
