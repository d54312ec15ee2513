// Recursive descent over the literal grammar; errors carry the byte column so that the caller can
// prefix file:line. Numbers go through absl's round-trip conversions, so a float printed by
// Python's repr parses to the same double.
#include "sim/placement/py_literal.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::sim {
namespace {

constexpr int kMaxDepth = 32;

class LiteralParser {
 public:
  explicit LiteralParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<PyValue> ParseAll() {
    SLUICE_ASSIGN_OR_RETURN(PyValue v, ParseValue(0));
    SkipSpace();
    if (pos_ != text_.size())
      return Error("unexpected text after the literal");
    return v;
  }

 private:
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat("column ", pos_ + 1, ": ", message));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  absl::StatusOr<PyValue> ParseValue(int depth) {
    SkipSpace();
    if (AtEnd())
      return Error("expected a value, found the end of the line");
    const char c = Peek();
    if (c == '{' || c == '[') {
      if (depth >= kMaxDepth)
        return Error("nesting deeper than 32 levels");
      if (c == '{')
        return ParseDict(depth + 1);
      return ParseList(depth + 1);
    }
    if (c == '\'' || c == '"') {
      SLUICE_ASSIGN_OR_RETURN(std::string s, ParseString());
      return PyValue{std::move(s)};
    }
    if (c == '-' || c == '+' || c == '.' || absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return ParseNumber();
    }
    return Error(absl::StrCat("unexpected character '", absl::string_view(&text_[pos_], 1),
                              "' (only strings, numbers, lists and dicts are accepted)"));
  }

  absl::StatusOr<std::string> ParseString() {
    const char quote = text_[pos_++];
    std::string out;
    while (!AtEnd() && Peek() != quote) {
      char c = text_[pos_++];
      if (c == '\\') {
        if (AtEnd())
          break;
        const char e = text_[pos_++];
        switch (e) {
          case '\\':
          case '\'':
          case '"':
            c = e;
            break;
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          default:
            --pos_;
            return Error(absl::StrCat("unsupported escape '\\", absl::string_view(&e, 1), "'"));
        }
      }
      out.push_back(c);
    }
    if (AtEnd())
      return Error("unterminated string");
    ++pos_;  // closing quote
    return out;
  }

  absl::StatusOr<PyValue> ParseNumber() {
    const size_t start = pos_;
    bool is_float = false;
    while (!AtEnd()) {
      const char c = Peek();
      if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
      } else if (!(absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-')) {
        break;
      }
      ++pos_;
    }
    const absl::string_view token = text_.substr(start, pos_ - start);
    if (!is_float) {
      int64_t i = 0;
      if (!absl::SimpleAtoi(token, &i)) {
        pos_ = start;
        return Error(absl::StrCat("malformed or out-of-range integer '", token, "'"));
      }
      return PyValue{i};
    }
    double d = 0;
    if (!absl::SimpleAtod(token, &d) || !std::isfinite(d)) {
      pos_ = start;
      return Error(absl::StrCat("malformed number '", token, "'"));
    }
    return PyValue{d};
  }

  // After an element: ',' (then maybe the closer) or the closer. Returns true at the closer.
  absl::StatusOr<bool> AfterElement(char closer) {
    SkipSpace();
    if (AtEnd())
      return Error(absl::StrCat("expected ',' or '", absl::string_view(&closer, 1), "'"));
    if (Peek() == closer) {
      ++pos_;
      return true;
    }
    if (Peek() != ',') {
      return Error(absl::StrCat("expected ',' or '", absl::string_view(&closer, 1), "'"));
    }
    ++pos_;
    SkipSpace();
    if (!AtEnd() && Peek() == closer) {  // trailing comma
      ++pos_;
      return true;
    }
    return false;
  }

  absl::StatusOr<PyValue> ParseList(int depth) {
    ++pos_;  // '['
    PyList list;
    SkipSpace();
    if (!AtEnd() && Peek() == ']') {
      ++pos_;
      return PyValue{std::move(list)};
    }
    while (true) {
      SLUICE_ASSIGN_OR_RETURN(PyValue v, ParseValue(depth));
      list.push_back(std::move(v));
      SLUICE_ASSIGN_OR_RETURN(bool done, AfterElement(']'));
      if (done)
        return PyValue{std::move(list)};
    }
  }

  absl::StatusOr<PyValue> ParseDict(int depth) {
    ++pos_;  // '{'
    PyDict dict;
    SkipSpace();
    if (!AtEnd() && Peek() == '}') {
      ++pos_;
      return PyValue{std::move(dict)};
    }
    while (true) {
      SkipSpace();
      if (AtEnd() || (Peek() != '\'' && Peek() != '"'))
        return Error("expected a string key");
      const size_t key_pos = pos_;
      SLUICE_ASSIGN_OR_RETURN(std::string key, ParseString());
      if (dict.Find(key) != nullptr) {
        pos_ = key_pos;
        return Error(absl::StrCat("repeated key '", key, "'"));
      }
      SkipSpace();
      if (AtEnd() || Peek() != ':')
        return Error("expected ':' after the key");
      ++pos_;
      SLUICE_ASSIGN_OR_RETURN(PyValue v, ParseValue(depth));
      dict.keys.push_back(std::move(key));
      dict.values.push_back(std::move(v));
      SLUICE_ASSIGN_OR_RETURN(bool done, AfterElement('}'));
      if (done)
        return PyValue{std::move(dict)};
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

const PyValue* PyDict::Find(absl::string_view key) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key)
      return &values[i];
  }
  return nullptr;
}

double PyValue::AsNumber() const {
  return is_int() ? static_cast<double>(AsInt()) : std::get<double>(value);
}

const char* PyValue::TypeName() const {
  switch (value.index()) {
    case 0:
      return "string";
    case 1:
      return "int";
    case 2:
      return "float";
    case 3:
      return "list";
    default:
      return "dict";
  }
}

absl::StatusOr<PyValue> ParsePyLiteral(absl::string_view text) {
  return LiteralParser(text).ParseAll();
}

}  // namespace sluice::sim
