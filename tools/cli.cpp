#include "tools/cli.hpp"

#include <iostream>

namespace shardgnn::cli {

std::string g_command = "shardgnn";

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

}  // namespace shardgnn::cli
