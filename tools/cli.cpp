#include "tools/cli.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <thread>

namespace shardgnn::cli {

std::string g_command = "shardgnn";

int report_errors(const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << g_command << ": error: " << e.what() << " (see '" << g_command << " --help')\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << g_command << ": error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {  // InputError and the rest: one line, exit 1
    std::cerr << g_command << ": error: " << e.what() << "\n";
    return 1;
  }
}

bool parse(const std::vector<std::string>& args, const std::string& usage, po::options_description& opts,
           const std::vector<std::string>& positional, po::variables_map& vm) {
  opts.add_options()("help,h", "show this help");
  po::options_description hidden;
  po::positional_options_description pos;
  for (const auto& name : positional) {
    hidden.add_options()(name.c_str(), po::value<std::string>());
    pos.add(name.c_str(), 1);
  }
  po::options_description all;
  all.add(opts).add(hidden);
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: " << usage << "\n\n" << opts << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  } catch (const InputError& e) {  // an option's value that its parser rejected
    throw UsageError(e.what());
  }
  for (const auto& name : positional)
    if (!vm.count(name)) throw UsageError("missing argument <" + name + ">");
  return true;
}

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  std::stringstream in(text);
  if (!text.empty() && text.back() == ',') throw UsageError(option + ": an empty item in '" + text + "'");  // getline yields no empty last item
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) throw UsageError(option + ": an empty item in '" + text + "'");
    out.push_back(item);
  }
  if (out.empty()) throw UsageError(option + " needs at least one item");
  return out;
}

std::vector<int> split_int_list(const std::string& text, const std::string& option, int least) {
  std::vector<int> out;
  for (const std::string& item : split_list(text, option)) {
    if (item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos || std::stoi(item) < least)
      throw UsageError(option + " must list integers >= " + std::to_string(least) + ", got '" + item + "'");
    out.push_back(std::stoi(item));
  }
  return out;
}

FeatureDtype parse_feature_dtype_option(const std::string& text) {
  const auto t = feature_dtype_named(text);
  if (!t) throw UsageError("unknown --feature-dtype '" + text + "', expected float32, float16 or bfloat16");
  return *t;
}

std::uint64_t parse_byte_size(const std::string& text, const std::string& option) {
  std::size_t end = 0;
  double value = -1;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  std::string unit = text.substr(end);
  double scale = 1;
  if (unit == "k" || unit == "K") scale = 1024.0;
  else if (unit == "m" || unit == "M") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) end = 0;
  if (end == 0 || !(value > 0) || !std::isfinite(value * scale))
    throw UsageError(option + " '" + text + "': expected a size such as 4G, 512M or a byte count");
  return static_cast<std::uint64_t>(value * scale);
}

}  // namespace shardgnn::cli
