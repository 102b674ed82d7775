// Pieces the readers share (readers.cpp, typed_readers.cpp): path helpers, text columns, labels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "datasets/readers.hpp"

namespace shardgnn {

// A dataset name from an input path: its last component without a known extension.
std::string default_name(const std::string& path);
// dir/rel.csv.gz or dir/rel.csv, whichever exists; empty when neither.
std::string ogb_file(const std::string& dir, const std::string& rel);
// The same, an InputError naming dir/rel.csv.gz when neither exists.
std::string require_ogb_file(const std::string& dir, const std::string& rel);
// A CSV of one integer per line. "nan" is allowed only when nan_value is given (OGB marks
// unlabelled nodes so); integral floats ("3.0") are accepted because OGB writes some label files
// that way.
std::vector<std::int64_t> read_int_column(const std::string& path, const char* what, const std::int64_t* nan_value = nullptr);
// A text edge list ("u v" or "u,v" lines, plain or gzip), ids below id_limit.
RawEdges parse_edge_file(const std::string& path, std::int64_t id_limit);

// The OGB split folder (split/<name>, the only one or options.ogb_split); empty when there is none.
std::string ogb_split_dir(const std::string& dir, const ReadOptions& options);
// sdir/<file>.csv[.gz]: ids in [0, n), each plus `first` (a node type's first global id).
std::vector<NodeId> read_ogb_split_ids(const std::string& sdir, const char* file, NodeId first, std::int64_t n);

// Rows of comma-separated floats, as many on every row as on the first; every value finite.
struct FeatureCsv {
  std::vector<float> values;
  std::int64_t rows = 0, dim = 0;
};
FeatureCsv read_feature_csv(const std::string& path);

// Sets ds.labels and ds.num_classes from one label per node (-1 unlabelled); errors name `path`
// and pos_prefix + the position, `first` being the position of labels[0].
void set_labels(Dataset& ds, std::vector<std::int64_t> labels, const std::string& path, const std::string& pos_prefix, std::size_t first = 0);

}  // namespace shardgnn
