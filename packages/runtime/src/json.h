// A compact JSON reader for artifact metadata and the runtime's own manifest.
// Parses RFC 8259 JSON into a tree; numbers are doubles (integers up to 2^53
// are exact, which covers dims and versions).
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

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }
  // Whether this is a number with an integral value that fits int64.
  bool is_integer() const;

  bool as_bool() const { return bool_; }
  double as_number() const { return number_; }
  int64_t as_int() const { return static_cast<int64_t>(number_); }
  const std::string& as_string() const { return string_; }
  const std::vector<Value>& items() const { return array_; }
  const std::map<std::string, Value>& members() const { return object_; }
  // Member by key, or nullptr (also when this is not an object).
  const Value* find(const std::string& key) const;

 private:
  friend class Parser;
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Value> array_;
  std::map<std::string, Value> object_;
};

// Parses text; on failure returns false and sets *error (with the offset).
bool parse(const std::string& text, Value* out, std::string* error);

}  // namespace hipdnn_ep::json
