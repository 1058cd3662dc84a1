// Bounded JSON parsing on nlohmann/json, shared by the runtime and the EP (header-only; both include
// it from packages/abi/include). Every document either of them reads can come from someone else: an
// artifact's metadata, an EPContext model's notes, a compiler's answer, the files of a cache folder.
// Each is parsed with a size bound chosen by the caller and a nesting bound; the caller words the
// refusal (the runtime sets an error status, the EP throws).
#ifndef HIPDNN_EP_BOUNDED_JSON_H
#define HIPDNN_EP_BOUNDED_JSON_H

#include <cstddef>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace hipdnn_ep::bounded_json {

// The formats the wheels exchange nest at most 4 levels deep; anything near the bound is hostile,
// and the bound keeps every walk over a document shallow.
constexpr int kMaxDepth = 64;

enum class Failure { kNone, kTooLarge, kTooDeep, kInvalid };

// The library's message quotes the text it stopped at: kept short, and in printable ASCII (a message
// that is not UTF-8 does not even reach a Python caller).
inline std::string Printable(const std::string& message) {
  constexpr size_t kMax = 300;
  std::string out;
  for (unsigned char c : message.substr(0, kMax)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return message.size() > kMax ? out + "..." : out;
}

// Parses `text` (at most `max_bytes`, nested at most kMaxDepth deep) into *out. On failure *out is
// null and *detail says why: the byte count (kTooLarge), or the parser's message (kInvalid).
template <class Json>
Failure Parse(const std::string& text, size_t max_bytes, Json* out, std::string* detail) {
  struct TooDeep {};  // thrown from the callback at the first container beyond the bound
  *out = Json();
  if (text.size() > max_bytes) {
    *detail = std::to_string(text.size());
    return Failure::kTooLarge;
  }
  // The library's parser keeps its own stack on the heap; the callback bounds the depth of the tree
  // it builds (`depth` counts the enclosing containers).
  auto bound = [](int depth, typename Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxDepth) {
      throw TooDeep{};
    }
    return true;
  };
  try {
    *out = Json::parse(text, bound);
    return Failure::kNone;
  } catch (const TooDeep&) {
    *out = Json();
    return Failure::kTooDeep;
  } catch (const nlohmann::json::exception& e) {
    *out = Json();
    *detail = Printable(e.what());
    return Failure::kInvalid;
  }
}

}  // namespace hipdnn_ep::bounded_json

#endif  // HIPDNN_EP_BOUNDED_JSON_H
