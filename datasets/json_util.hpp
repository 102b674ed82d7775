// Reading JSON files with errors that name the file, the position and the key.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>

namespace shardgnn {

// Parses a whole JSON file; a syntax error names the byte offset.
boost::json::value read_json_file(const std::string& path);
// Writes `v` pretty-printed (two-space indent, keys in insertion order), atomically.
void write_json_file(const std::string& path, const boost::json::value& v);
std::string pretty_json(const boost::json::value& v);

// Typed access to a key of an object, with an InputError naming the file and key on mismatch.
std::int64_t json_int(const boost::json::object& o, const char* key, const std::string& file);
std::string json_string(const boost::json::object& o, const char* key, const std::string& file);
const boost::json::object& json_object(const boost::json::object& o, const char* key, const std::string& file);
// The same for Boost.JSON conversions (tag_invoke value_to), which know no file: the InputError
// reads "key '<key>': ..." and the file's reader rethrows it as InputError(file, "", e.what()).
std::int64_t json_int(const boost::json::object& o, const char* key);
std::string json_string(const boost::json::object& o, const char* key);
const boost::json::object& json_object(const boost::json::object& o, const char* key);

}  // namespace shardgnn
