// JSON for the EP: nlohmann/json (third_party/nlohmann-json, fetched by
// tools/release/fetch_third_party.sh) with the limits every document the EP reads
// must respect, and tolerant accessors for the formats the EP reads.
//
// Every JSON document the EP reads can come from someone else: an EPContext
// model's notes, the compiler's answers, the files of the cache folder.  Each
// is parsed with a size bound chosen for its kind and a nesting bound; a
// document that breaks either, or is not JSON, is refused with an EpError
// naming it.  Documents are written with the library's writer, never by
// string concatenation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "hipdnn_ep/bounded_json.h"  // packages/abi/include: the parse both the runtime and the EP use

namespace hipdnn_ep::json {

using Json = nlohmann::json;
// Keeps the insertion order of object members, for text that is compared or
// hashed (cache keys, entry.json).
using OrderedJson = nlohmann::ordered_json;

// The formats the EP reads nest at most 4 levels deep; anything near the
// bound is hostile, and the bound keeps every walk over a document shallow.
constexpr int kMaxDepth = bounded_json::kMaxDepth;

// Size bounds per document (bytes of text).
constexpr size_t kMaxNotesBytes = 64 * 1024;            // EPContext notes: a tag and a compatibility string
constexpr size_t kMaxEntryBytes = 64 * 1024;            // a cache entry's entry.json: the key's inputs and a MAC
constexpr size_t kMaxAnswerBytes = 32 * 1024 * 1024;    // a compiler answer, support/*.json, compilers/*.json
constexpr size_t kMaxMetadataBytes = 64 * 1024 * 1024;  // an artifact's metadata (lists every input and weight)

// Parses `text` as one JSON document of at most `max_bytes` bytes nested at
// most kMaxDepth deep.  Throws EpError("hipdnn-ep: <what> ...") otherwise;
// `what` names the document ("the notes attribute of EPContext node 'x'").
Json Parse(const std::string& text, size_t max_bytes, const std::string& what);

// Compact text of `value` (no spaces).  Throws EpError naming `what` when a
// string in it is not valid UTF-8.
std::string Dump(const Json& value, const std::string& what);
std::string Dump(const OrderedJson& value, const std::string& what);

// Tolerant reads, for fields a format may leave out: a missing member, or a
// value of another type, reads as the fallback.
const Json& Member(const Json& object, const char* key);  // null when absent or not an object
std::string String(const Json& v, const std::string& fallback = std::string());
bool Bool(const Json& v, bool fallback = false);
// An integral number that fits int64 (an integral double too), else fallback.
int64_t Int(const Json& v, int64_t fallback = 0);
// The items of an array (none when `v` is not an array).
const Json::array_t& Items(const Json& v);

}  // namespace hipdnn_ep::json
