// Minimal JSON reader and string escaping, for the compiler protocol, the
// artifact metadata and the EPContext compatibility strings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hipdnn_ep::json {

class Value {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;

  bool is_null() const { return kind == Kind::kNull; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const { return kind == Kind::kNumber; }
  bool is_array() const { return kind == Kind::kArray; }
  bool is_object() const { return kind == Kind::kObject; }

  // Member access; a missing key yields a null value.
  const Value& operator[](const std::string& key) const;
  bool has(const std::string& key) const { return object.count(key) != 0; }
  int64_t as_int() const { return static_cast<int64_t>(number); }
};

// Parses `text`; throws std::runtime_error naming the offset on bad input.
Value Parse(const std::string& text);

// `s` as a quoted JSON string.
std::string Quote(const std::string& s);

}  // namespace hipdnn_ep::json
