// `shardgnn bench data`: edge-list parsing throughput per core against the machine's own limit
// (a memchr line scan of the same mapped bytes), and the load time of a converted dataset against
// a tiny one (memory-mapped loading must not grow with the dataset's size).
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "datasets/fileio.hpp"
#include "datasets/stopwatch.hpp"
#include "datasets/generators.hpp"
#include "datasets/json_util.hpp"
#include "datasets/readers.hpp"
#include "bench/bench.hpp"
#include "tools/cli.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {


template <class F>
double best_of(int repeat, F&& f) {
  double best = 1e300;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, since(t0));
  }
  return best;
}

std::uint64_t count_newlines(std::string_view s) {
  std::uint64_t n = 0;
  const char* p = s.data();
  const char* e = p + s.size();
  while ((p = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(e - p))))) ++n, ++p;
  return n;
}

}  // namespace

int bench_data_main(const std::vector<std::string>& args) {
  g_command = "shardgnn bench data";
  po::options_description o("options");
  o.add_options()
      ("scale", po::value<int>()->default_value(22), "R-MAT scale of the generated edge list (22 with edge factor 16: ~1 GB of text)")
      ("edge-factor", po::value<int>()->default_value(16), "R-MAT edge factor")
      ("repeat", po::value<int>()->default_value(3), "repetitions per measurement (best is reported)")
      ("workdir", po::value<std::string>()->default_value((fs::temp_directory_path() / "shardgnn-bench-data").string()), "scratch folder")
      ("keep", "keep the generated files")
      ("json", "print the results as JSON");
  po::variables_map vm;
  if (!parse(args, "shardgnn bench data [options]", o, {}, vm)) return 0;
  const int repeat = std::max(1, vm["repeat"].as<int>());
  const fs::path work = vm["workdir"].as<std::string>();
  fs::create_directories(work);
  const std::string edge_file = (work / "rmat.txt").string();
  const std::string big_dir = (work / "rmat-dataset").string();
  const std::string small_dir = (work / "small-dataset").string();

  RmatOptions r;
  r.scale = vm["scale"].as<int>();
  r.edge_factor = vm["edge-factor"].as<int>();
  std::fprintf(stderr, "generating R-MAT scale %d, edge factor %d ...\n", r.scale, r.edge_factor);
  {
    EdgeList el = generate_rmat_edges(r);
    write_edge_list(edge_file, el);
  }
  const double file_mb = static_cast<double>(fs::file_size(edge_file)) / 1e6;

  // Parse throughput on the mapped file, page cache warm (the first scan pulls it in).
  MappedFile text = map_file(edge_file);
  std::string_view sv(reinterpret_cast<const char*>(text.bytes.data()), text.bytes.size());
  std::uint64_t lines = count_newlines(sv);
  const double t_scan = best_of(repeat, [&] { lines = count_newlines(sv); });
  std::uint64_t parsed_edges = 0;
  const double t_parse = best_of(repeat, [&] {
    RawEdges raw;
    raw.src.reserve(lines);
    raw.dst.reserve(lines);
    parse_edge_list_text(sv, edge_file, 1, raw);
    parsed_edges = raw.src.size();
  });
  std::fprintf(stderr, "converting ...\n");
  const auto t0 = Clock::now();
  ReadOptions ro;
  ro.clean = {true, true, true};
  {
    Dataset ds = read_edge_list_dataset(edge_file, ro);
    save_dataset(ds, big_dir, true);
  }
  const double t_convert = since(t0);
  {
    RmatOptions tiny;
    tiny.scale = 8;
    tiny.edge_factor = 4;
    save_dataset(generate_rmat(tiny, {true, true, true}), small_dir, true);
  }
  std::int64_t big_edges = 0, small_edges = 0;
  const double t_load_big = best_of(repeat, [&] { big_edges = load_dataset(big_dir, Contents::trust).graph.num_edges(); });
  const double t_load_small = best_of(repeat, [&] { small_edges = load_dataset(small_dir, Contents::trust).graph.num_edges(); });
  std::uint64_t big_bytes = 0;
  for (const auto& e : fs::directory_iterator(big_dir)) big_bytes += e.file_size();

  const double parse_mbs = file_mb / t_parse, scan_mbs = file_mb / t_scan;
  if (vm.count("json")) {
    std::cout << pretty_json(boost::json::object{
        {"edge_list_mb", file_mb},
        {"edges", parsed_edges},
        {"parse_mb_per_s_per_core", parse_mbs},
        {"memchr_scan_mb_per_s", scan_mbs},
        {"parse_vs_scan", parse_mbs / scan_mbs},
        {"convert_s", t_convert},
        {"dataset_mb", static_cast<double>(big_bytes) / 1e6},
        {"load_s", t_load_big},
        {"load_small_s", t_load_small},
        {"load_ratio_big_vs_small", t_load_big / t_load_small}});
  } else {
    std::printf("edge list            %.1f MB, %llu edges (R-MAT scale %d, edge factor %d)\n", file_mb,
                static_cast<unsigned long long>(parsed_edges), r.scale, r.edge_factor);
    std::printf("parse (1 core)       %.1f MB/s  (%.3f s)\n", parse_mbs, t_parse);
    std::printf("memchr line scan     %.1f MB/s  (the limit: reading the bytes once)\n", scan_mbs);
    std::printf("parse / scan         %.2f\n", parse_mbs / scan_mbs);
    std::printf("convert + write      %.2f s  (relabel, symmetrise, dedupe, CSR, %.1f MB written)\n", t_convert, static_cast<double>(big_bytes) / 1e6);
    std::printf("load %-15s %.3f ms  (%lld entries, memory-mapped)\n", "big dataset", t_load_big * 1e3, static_cast<long long>(big_edges));
    std::printf("load %-15s %.3f ms  (%lld entries)\n", "tiny dataset", t_load_small * 1e3, static_cast<long long>(small_edges));
    std::printf("load big / tiny      %.2f  (O(1) in size means close to 1)\n", t_load_big / t_load_small);
  }
  if (!vm.count("keep")) fs::remove_all(work);
  return 0;
}

}  // namespace shardgnn::cli
