#include "datasets/json_util.hpp"

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"

namespace shardgnn {

boost::json::value read_json_file(const std::string& path) {
  MappedFile m = map_file(path);
  if (m.bytes.empty()) throw InputError(path, at_byte(0), "empty file, expected a JSON object");
  boost::json::stream_parser p;
  boost::system::error_code ec;
  std::size_t used = p.write(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size(), ec);
  if (!ec) p.finish(ec);
  if (ec) throw InputError(path, at_byte(ec ? used : m.bytes.size()), "invalid JSON: " + ec.message());
  return p.release();
}

namespace {
void pretty(std::string& out, const boost::json::value& v, int indent) {
  const std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
  if (v.is_object()) {
    const auto& o = v.get_object();
    if (o.empty()) { out += "{}"; return; }
    out += "{\n";
    std::size_t i = 0;
    for (const auto& kv : o) {
      out += pad + "  " + boost::json::serialize(boost::json::value(kv.key())) + ": ";
      pretty(out, kv.value(), indent + 1);
      out += (++i < o.size() ? ",\n" : "\n");
    }
    out += pad + "}";
  } else if (v.is_array() && !v.get_array().empty() && !v.get_array()[0].is_primitive()) {
    const auto& a = v.get_array();
    out += "[\n";
    for (std::size_t i = 0; i < a.size(); ++i) {
      out += pad + "  ";
      pretty(out, a[i], indent + 1);
      out += (i + 1 < a.size() ? ",\n" : "\n");
    }
    out += pad + "]";
  } else {
    out += boost::json::serialize(v);
  }
}
}  // namespace

std::string pretty_json(const boost::json::value& v) {
  std::string out;
  pretty(out, v, 0);
  out += "\n";
  return out;
}

void write_json_file(const std::string& path, const boost::json::value& v) { write_text_file_atomic(path, pretty_json(v)); }

namespace {
// What is wrong with a key's value (null: absent), or "": one message whether the file is known or not.
std::string int_problem(const boost::json::value* v) {
  if (!v) return "missing, expected an integer";
  if (v->is_int64() || (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))) return "";
  return "expected an integer, found " + boost::json::serialize(*v);
}
std::string string_problem(const boost::json::value* v) {
  if (!v) return "missing, expected a string";
  return v->is_string() ? "" : "expected a string, found " + boost::json::serialize(*v);
}
std::int64_t as_int(const boost::json::value& v) { return v.is_int64() ? v.get_int64() : static_cast<std::int64_t>(v.get_uint64()); }
std::string key_of(const char* key) { return std::string("key '") + key + "'"; }
}  // namespace

std::int64_t json_int(const boost::json::object& o, const char* key, const std::string& file) {
  auto* v = o.if_contains(key);
  if (const std::string p = int_problem(v); !p.empty()) throw InputError(file, key_of(key), p);
  return as_int(*v);
}

std::string json_string(const boost::json::object& o, const char* key, const std::string& file) {
  auto* v = o.if_contains(key);
  if (const std::string p = string_problem(v); !p.empty()) throw InputError(file, key_of(key), p);
  return std::string(v->get_string());
}

const boost::json::object& json_object(const boost::json::object& o, const char* key, const std::string& file) {
  auto* v = o.if_contains(key);
  if (!v || !v->is_object()) throw InputError(file, key_of(key), "missing, expected an object");
  return v->get_object();
}

std::int64_t json_int(const boost::json::object& o, const char* key) {
  auto* v = o.if_contains(key);
  if (const std::string p = int_problem(v); !p.empty()) throw InputError(key_of(key) + ": " + p);
  return as_int(*v);
}

std::string json_string(const boost::json::object& o, const char* key) {
  auto* v = o.if_contains(key);
  if (const std::string p = string_problem(v); !p.empty()) throw InputError(key_of(key) + ": " + p);
  return std::string(v->get_string());
}

const boost::json::object& json_object(const boost::json::object& o, const char* key) {
  auto* v = o.if_contains(key);
  if (!v || !v->is_object()) throw InputError(key_of(key) + ": missing, expected an object");
  return v->get_object();
}

}  // namespace shardgnn
