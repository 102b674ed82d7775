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

std::int64_t json_int(const boost::json::object& o, const char* key) {
  const boost::json::value* v = o.if_contains(key);
  const std::string name = std::string("key '") + key + "'";
  if (!v) throw InputError(name + ": missing, expected an integer");
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(v->get_uint64());
  throw InputError(name + ": expected an integer, found " + boost::json::serialize(*v));
}

std::string json_string(const boost::json::object& o, const char* key) {
  const boost::json::value* v = o.if_contains(key);
  const std::string name = std::string("key '") + key + "'";
  if (!v) throw InputError(name + ": missing, expected a string");
  if (!v->is_string()) throw InputError(name + ": expected a string, found " + boost::json::serialize(*v));
  return std::string(v->get_string());
}

const boost::json::object& json_object(const boost::json::object& o, const char* key) {
  const boost::json::value* v = o.if_contains(key);
  if (!v || !v->is_object()) throw InputError(std::string("key '") + key + "': missing, expected an object");
  return v->get_object();
}

namespace {
// The file-less reader's error, with the file named in front ("<file>: key 'k': ...").
template <class Read>
decltype(auto) naming(const std::string& file, Read&& read) {
  try {
    return read();
  } catch (const InputError& e) {
    throw InputError(file, "", e.what());
  }
}
}  // namespace

std::int64_t json_int(const boost::json::object& o, const char* key, const std::string& file) { return naming(file, [&] { return json_int(o, key); }); }
std::string json_string(const boost::json::object& o, const char* key, const std::string& file) { return naming(file, [&] { return json_string(o, key); }); }
const boost::json::object& json_object(const boost::json::object& o, const char* key, const std::string& file) {
  return naming(file, [&]() -> const boost::json::object& { return json_object(o, key); });
}

}  // namespace shardgnn
