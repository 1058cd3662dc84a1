#include "json.h"

#include <cmath>
#include <limits>

#include "ep_utils.h"

namespace hipdnn_ep::json {

namespace {

using bounded_json::Printable;

template <typename J>
std::string DumpText(const J& value, const std::string& what) {
  try {
    return value.dump();
  } catch (const nlohmann::json::exception& e) {
    throw EpError("hipdnn-ep: cannot write " + what + " as JSON: " + Printable(e.what()));
  }
}

}  // namespace

Json Parse(const std::string& text, size_t max_bytes, const std::string& what) {
  Json out;
  std::string detail;
  switch (bounded_json::Parse(text, max_bytes, &out, &detail)) {
    case bounded_json::Failure::kNone: return out;
    case bounded_json::Failure::kTooLarge:
      throw EpError("hipdnn-ep: " + what + " is " + detail + " bytes of JSON, more than the " +
                    std::to_string(max_bytes) + " bytes such a document may have; refusing it");
    case bounded_json::Failure::kTooDeep:
      throw EpError("hipdnn-ep: " + what + " nests JSON more than " + std::to_string(kMaxDepth) +
                    " levels deep; refusing it");
    case bounded_json::Failure::kInvalid: break;
  }
  throw EpError("hipdnn-ep: " + what + " is not valid JSON (" + detail + ")");
}

std::string Dump(const Json& value, const std::string& what) { return DumpText(value, what); }
std::string Dump(const OrderedJson& value, const std::string& what) { return DumpText(value, what); }

const Json& Member(const Json& object, const char* key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string String(const Json& v, const std::string& fallback) {
  return v.is_string() ? v.get_ref<const std::string&>() : fallback;
}

bool Bool(const Json& v, bool fallback) { return v.is_boolean() ? v.get<bool>() : fallback; }

int64_t Int(const Json& v, int64_t fallback) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? static_cast<int64_t>(u) : fallback;
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // 2^63 is exact as a double; [-2^63, 2^63) converts without overflow.
    if (std::isfinite(d) && std::floor(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
      return static_cast<int64_t>(d);
    }
  }
  return fallback;
}

const Json::array_t& Items(const Json& v) {
  static const Json::array_t kNone;
  return v.is_array() ? v.get_ref<const Json::array_t&>() : kNone;
}

}  // namespace hipdnn_ep::json
