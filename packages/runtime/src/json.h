// JSON for the runtime: nlohmann/json (third_party/nlohmann-json, fetched by
// tools/release/fetch_third_party.sh, the same library the EP uses) with the bounds a
// document from an artifact must respect, and null-safe reads.
//
// Artifact metadata comes from a file anyone may hand to
// hipdnn_ep_artifact_open: it is parsed with a size bound and a nesting bound
// and refused, with the reason, when it breaks either or is not JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "hipdnn_ep/bounded_json.h"  // packages/abi/include: the parse both the runtime and the EP use

namespace hipdnn_ep::json {

using Value = nlohmann::json;

// The metadata nests 3 levels deep; anything near the bound is hostile.
constexpr int kMaxDepth = bounded_json::kMaxDepth;
// An artifact's metadata lists every input, weight, output and kernel call.
constexpr size_t kMaxMetadataBytes = 64 * 1024 * 1024;

// Parses `text` (at most `max_bytes`, nested at most kMaxDepth deep); on
// failure returns false and sets *error.
bool parse(const std::string& text, size_t max_bytes, Value* out, std::string* error);

// Member `key`, or nullptr (also when `v` is not an object).
const Value* find(const Value& v, const std::string& key);
// Whether `v` is a number with an integral value that fits int64.
bool is_integer(const Value& v);
// The value of an integer (is_integer), else 0.
int64_t as_int(const Value& v);
// The text of a string, else "".
const std::string& as_string(const Value& v);
// The items of an array, else none.
const Value::array_t& items(const Value& v);

}  // namespace hipdnn_ep::json
