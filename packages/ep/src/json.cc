#include "json.h"

#include <cstdlib>
#include <stdexcept>

namespace hipdnn_ep::json {

const Value& Value::operator[](const std::string& key) const {
  static const Value kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : it->second;
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  Value ParseDocument() {
    Value v = ParseValue();
    SkipSpace();
    if (i_ != t_.size()) Fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw std::runtime_error("invalid JSON at offset " + std::to_string(i_) + ": " + what);
  }
  void SkipSpace() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
  }
  bool Consume(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (t_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }
  Value ParseValue() {
    SkipSpace();
    if (i_ >= t_.size()) Fail("unexpected end");
    Value v;
    char c = t_[i_];
    if (c == '{') {
      v.kind = Value::Kind::kObject;
      ++i_;
      SkipSpace();
      if (i_ < t_.size() && t_[i_] == '}') { ++i_; return v; }
      while (true) {
        SkipSpace();
        if (i_ >= t_.size() || t_[i_] != '"') Fail("expected a key");
        std::string key = ParseString();
        SkipSpace();
        if (i_ >= t_.size() || t_[i_] != ':') Fail("expected ':'");
        ++i_;
        v.object[key] = ParseValue();
        SkipSpace();
        if (i_ < t_.size() && t_[i_] == ',') { ++i_; continue; }
        if (i_ < t_.size() && t_[i_] == '}') { ++i_; return v; }
        Fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.kind = Value::Kind::kArray;
      ++i_;
      SkipSpace();
      if (i_ < t_.size() && t_[i_] == ']') { ++i_; return v; }
      while (true) {
        v.array.push_back(ParseValue());
        SkipSpace();
        if (i_ < t_.size() && t_[i_] == ',') { ++i_; continue; }
        if (i_ < t_.size() && t_[i_] == ']') { ++i_; return v; }
        Fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v.kind = Value::Kind::kString;
      v.string = ParseString();
      return v;
    }
    if (Consume("true")) { v.kind = Value::Kind::kBool; v.boolean = true; return v; }
    if (Consume("false")) { v.kind = Value::Kind::kBool; return v; }
    if (Consume("null")) return v;
    const char* begin = t_.c_str() + i_;
    char* end = nullptr;
    v.number = std::strtod(begin, &end);
    if (end == begin) Fail("unexpected character");
    i_ += static_cast<size_t>(end - begin);
    v.kind = Value::Kind::kNumber;
    return v;
  }
  static void AppendUtf8(std::string& out, unsigned cp) {
    if (cp < 0x80) { out += static_cast<char>(cp); }
    else if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  unsigned ParseHex4() {
    if (i_ + 4 > t_.size()) Fail("short \\u escape");
    unsigned cp = std::stoul(t_.substr(i_, 4), nullptr, 16);
    i_ += 4;
    return cp;
  }
  std::string ParseString() {
    ++i_;  // opening quote
    std::string out;
    while (i_ < t_.size() && t_[i_] != '"') {
      char c = t_[i_++];
      if (c != '\\') { out += c; continue; }
      if (i_ >= t_.size()) Fail("unterminated escape");
      char e = t_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = ParseHex4();
          if (cp >= 0xD800 && cp < 0xDC00 && Consume("\\u")) {
            unsigned lo = ParseHex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(out, cp);
          break;
        }
        default: Fail("bad escape");
      }
    }
    if (i_ >= t_.size()) Fail("unterminated string");
    ++i_;
    return out;
  }

  const std::string& t_;
  size_t i_ = 0;
};

}  // namespace

Value Parse(const std::string& text) { return Parser(text).ParseDocument(); }

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace hipdnn_ep::json
