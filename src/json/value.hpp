// A JSON value as Python's json module builds it (dict/list/str/int/float/bool/None).
// Strings are WTF-8: UTF-8 that may also hold lone surrogates (U+D800..DFFF, 3 bytes each), so every
// Python str that json.loads can return is representable; byte order == code point order.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/key_hash.hpp"

#include "json/slim_vector.hpp"

namespace w4a8::json {

enum class Kind { Null, Bool, Int, Float, String, Array, Object };

struct Value;
// Insertion-ordered members with unique keys (a duplicate key replaces the value, keeps the first
// position, as a Python dict does).
// (SlimVector: one pointer wide, see slim_vector.hpp.)
using Members = SlimVector<std::pair<std::string, Value>>;
using Items = SlimVector<Value>;

struct Value {
  Kind kind = Kind::Null;
  bool boolean = false;          // Kind::Bool
  double number = 0.0;           // Kind::Float (may be NaN or +-inf, as Python's json yields)
  std::string text;              // Kind::Int: canonical decimal ("-12", "0"; no "+", no leading 0)
                                 // Kind::String: WTF-8 text
                                 // Kind::Float: the literal (serde dialect), or the token of a Python
                                 // constant (NaN, Infinity, -Infinity: one shared object each in Python)
  Items items;                   // Kind::Array
  Members members;               // Kind::Object

  // Declared here, defaulted below the class: with Value still incomplete, clang 14 cannot check the
  // implicit ones through std::pair<std::string, Value>.
  Value();
  Value(const Value&);
  Value(Value&&) noexcept;
  Value& operator=(const Value&);
  Value& operator=(Value&&) noexcept;
  ~Value();

  bool is_null() const { return kind == Kind::Null; }
  bool is_object() const { return kind == Kind::Object; }
  bool is_string() const { return kind == Kind::String; }
  // Object member lookup; nullptr when absent or not an object.
  const Value* get(std::string_view key) const;
  Value* get(std::string_view key);
  // Insert or replace, Python dict style (replacement keeps position). Searches: O(members), so
  // building an object of n members with set() is O(n^2); use append() for keys known to be new.
  void set(std::string key, Value v);
  // set(key, from_bool(b)) without building a key string and a Value first: the validator adds two
  // such keys to every layer's marker.
  void set_bool(std::string_view key, bool b);
  // Adds a member without looking for an existing one (linear object building).
  // pre: kind == Object and key is not a member yet (a repeated key would stay twice: get() and
  // MemberIndex find the first, dump() prints both).
  void append(std::string key, Value v) { members.emplace_back(std::move(key), std::move(v)); }

  static Value null() { return {}; }
  static Value from_bool(bool b) { Value v; v.kind = Kind::Bool; v.boolean = b; return v; }
  static Value from_int(long long i) { Value v; v.kind = Kind::Int; v.text = std::to_string(i); return v; }
  static Value from_float(double d) { Value v; v.kind = Kind::Float; v.number = d; return v; }
  static Value from_string(std::string s) { Value v; v.kind = Kind::String; v.text = std::move(s); return v; }
  // System text (a path, a message naming one): see wtf8_from_os.
  static Value from_os_string(std::string_view bytes);
  static Value object() { Value v; v.kind = Kind::Object; return v; }
  static Value array() { Value v; v.kind = Kind::Array; return v; }
};

// O(1) member lookup in a large object, for callers that look up many keys (get() is O(members)).
// The object must outlive the index and stay unmodified while it is used.
class MemberIndex {
 public:
  explicit MemberIndex(const Value& object);
  // The first member with this key (as Value::get), or nullptr.
  const Value* get(std::string_view key) const;

 private:
  std::unordered_map<std::string_view, const Value*, KeyHash> map_;  // (keys from files: keyed hash)
};

// Python's `a == b` on the objects json.loads built: 1 == 1.0 == True; int/float compared exactly;
// NaN equals NaN inside lists/dicts (json's NaN is one shared object, and containers compare by
// identity first) but not at the top level (nan == nan is False); dicts ignore order.
// Objects are compared as dicts, so members must have unique keys (Python-dialect values do).
bool py_equal(const Value& a, const Value& b);

// Python's `a != b` (a and b from two json.loads calls) as CPython evaluates it: whether they are
// equal (py_equal), and how deep the comparison recurses, counted in PyObject_RichCompare calls (the
// outermost 1). A list or dict compares its items in order up to the first unequal one, and stops
// there (`==`/`!=` need no second call); items that are one object are skipped (None, True,
// False, ints -5..256, json's NaN and +-Infinity constants, "" and one-character strings below
// U+0100); lists or dicts of different lengths compare no item. The depth is what a RecursionError
// "in comparison" depends on (py::InterpreterFacts::merge_compare_max_depth).
struct Compared {
  bool equal = false;
  std::size_t depth = 0;
};
Compared py_compare(const Value& a, const Value& b);

// The same value in every respect a reader can observe: kinds (1, 1.0 and true differ), a float's
// bits (0.0 and -0.0 differ; a NaN from "NaN" matches itself), string bytes, and members in order.
// What two equal texts parse to; stricter than py_equal. Lets equal objects be shared, as the
// validator shares markers.
bool identical(const Value& a, const Value& b);

// Defaulted out of the class body, where Value is complete (see above), but inline: the parser
// moves and destroys a Value per JSON value, and a call each time showed in profiles.
inline Value::Value() = default;
inline Value::Value(const Value&) = default;
inline Value::Value(Value&&) noexcept = default;
inline Value& Value::operator=(const Value&) = default;
inline Value& Value::operator=(Value&&) noexcept = default;
inline Value::~Value() = default;

}  // namespace w4a8::json
