#include "json.h"

#include <cmath>

namespace hipdnn_ep::json {

bool parse(const std::string& text, size_t max_bytes, Value* out, std::string* error) {
  std::string detail;
  switch (bounded_json::Parse(text, max_bytes, out, &detail)) {
    case bounded_json::Failure::kNone: return true;
    case bounded_json::Failure::kTooLarge:
      *error = detail + " bytes, more than the " + std::to_string(max_bytes) + " allowed";
      return false;
    case bounded_json::Failure::kTooDeep:
      *error = "nested more than " + std::to_string(kMaxDepth) + " levels deep";
      return false;
    case bounded_json::Failure::kInvalid: *error = detail; return false;
  }
  return false;
}

const Value* find(const Value& v, const std::string& key) {
  if (!v.is_object()) return nullptr;
  auto it = v.find(key);
  return it == v.end() ? nullptr : &*it;
}

bool is_integer(const Value& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX);
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

int64_t as_int(const Value& v) {
  if (!is_integer(v)) return 0;
  if (v.is_number_float()) return static_cast<int64_t>(v.get<double>());
  return v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
}

const std::string& as_string(const Value& v) {
  static const std::string kEmpty;
  return v.is_string() ? v.get_ref<const std::string&>() : kEmpty;
}

const Value::array_t& items(const Value& v) {
  static const Value::array_t kNone;
  return v.is_array() ? v.get_ref<const Value::array_t&>() : kNone;
}

}  // namespace hipdnn_ep::json
